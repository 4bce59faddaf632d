// Clean-up after nodes that left the cluster: when a Node resource is deleted (and at start), its pods'
// addresses and its blocks go back to the pools. When to look is this controller's; what a deleted node
// left and how it is released is recovery's (agent/recovery/deleted-nodes.ts).

import type { Logger } from 'pino'
import type { Ipam } from '../../ipam/index.js'
import { deletedNodes, releaseDeletedNodes } from '../recovery/index.js'
import { Coalescer } from './coalescer.js'
import { followResources, type AgentContext } from './context.js'

export class NodeGc {
  private readonly log: Logger
  private readonly job: Coalescer
  private unsubscribe: (() => void) | undefined

  constructor(
    private readonly ctx: AgentContext,
    private readonly ipam: Ipam,
  ) {
    this.log = ctx.log
    this.job = new Coalescer(() => this.releaseDeletedNodes(), (err) => this.log.error({ err: err.message }, 'deleted node clean-up failed'))
  }

  start(): void {
    this.unsubscribe = followResources(this.ctx, this.job)
  }

  async stop(): Promise<void> {
    this.unsubscribe?.()
    await this.job.idle()
  }

  settled(): Promise<void> {
    return this.job.idle()
  }

  private async releaseDeletedNodes(): Promise<void> {
    const { cluster, settings } = this.ctx
    const gone = deletedNodes(cluster.blocks(), new Set(cluster.list('Node').map((n) => n.metadata.name)), settings.nodeName)
    await releaseDeletedNodes(this.ipam, gone, (node, handles, blocks) => this.log.info({ node, handles, blocks }, 'released the IPAM of a deleted node'))
  }
}
