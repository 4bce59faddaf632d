// Clean-up after nodes that left the cluster: when a Node resource is deleted, its pods' addresses and
// its blocks go back to the pools (Calico's kube-controllers do this). Every agent may do it; the
// datastore's compare-and-swap makes doing it twice harmless. Never this node's own records.

import type { Logger } from 'pino'
import type { Ipam } from '../../ipam/index.js'
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

  /** Nodes named by a block's affinity or by an allocation that no Node resource has any more. */
  private async releaseDeletedNodes(): Promise<void> {
    const cluster = this.ctx.cluster
    const live = new Set(cluster.list('Node').map((n) => n.metadata.name))
    const gone = new Map<string, Set<string>>() // node -> handles
    for (const b of cluster.blocks()) {
      const owner = b.affinity?.startsWith('host:') ? b.affinity.slice(5) : undefined
      if (owner !== undefined && !live.has(owner) && !gone.has(owner)) gone.set(owner, new Set())
      for (const a of b.attributes) {
        const n = a.secondary['node']
        if (n !== undefined && !live.has(n) && a.handleId) {
          let set = gone.get(n)
          if (!set) gone.set(n, (set = new Set()))
          set.add(a.handleId)
        }
      }
    }
    for (const [node, handles] of gone) {
      if (node === this.ctx.settings.nodeName) continue
      for (const h of handles) await this.ipam.releaseByHandle(h)
      const released = await this.ipam.releaseHostAffinities(node)
      this.log.info({ node, handles: handles.size, blocks: released }, 'released the IPAM of a deleted node')
    }
  }
}
