// Clean-up after nodes that left the cluster, after a grace period (PINTO_NODE_GC_GRACE_SECONDS): a Node gone
// from the cluster (kubectl delete node, or its pinto Node deleted) keeps its blocks, affinities and handles, and
// stays among the nodes the peers and the dataplane see, with its last resource, for the grace; one that comes back
// within it keeps everything. Past it, its pods' addresses and its blocks go back to the pools (Calico's
// kube-controllers do this) and it leaves `nodes()`, so its sessions are dropped and its routes leave the kernel.
// When to look is this controller's; what a deleted node left and how it is released is recovery's
// (agent/recovery/deleted-nodes.ts).

import type { Logger } from 'pino'
import type { Node } from '../../config/index.js'
import type { AllocationBlock, Ipam } from '../../ipam/index.js'
import { deletedNodes, releaseDeletedNodes } from '../recovery/index.js'
import { Coalescer } from './coalescer.js'
import { followResources, type AgentContext } from './context.js'

/** A Node gone from the cluster view: since when, and as it was last seen (undefined: gone before we started). */
interface Departure {
  readonly since: number
  readonly node: Node | undefined
}

/** A failed release is tried again after this long. */
const RETRY_MS = 5000

const hasBgpAddress = (n: Node | undefined): boolean => n?.spec.bgp?.ipv4Address !== undefined || n?.spec.bgp?.ipv6Address !== undefined

export class NodeGc {
  private readonly log: Logger
  private readonly job: Coalescer
  private readonly departures = new Map<string, Departure>()
  /** The cluster's Nodes by name, as last seen. */
  private live = new Map<string, Node>()
  private timer: NodeJS.Timeout | undefined
  private unsubscribe: (() => void) | undefined
  private stopped = false
  /** Every block was looked at once (a node's view lists them on demand). */
  private looked = false

  constructor(
    private readonly ctx: AgentContext,
    private readonly ipam: Ipam,
    /** Called when `nodes()` changed for another reason than a change of the cluster (a grace period ended). */
    private readonly onNodesChanged: () => void = () => undefined,
  ) {
    this.log = ctx.log
    this.job = new Coalescer(() => this.collect(), (err) => this.log.error({ err: err.message }, 'deleted node clean-up failed'))
    this.live = this.current()
  }

  private get graceMs(): number {
    return this.ctx.settings.nodeGcGraceSeconds * 1000
  }

  start(): void {
    // Departures are noted as each change comes, so none is missed between two runs of the job.
    this.unsubscribe = followResources(this.ctx, {
      trigger: () => {
        this.observe()
        this.job.trigger()
      },
    })
  }

  async stop(): Promise<void> {
    this.stopped = true
    clearTimeout(this.timer)
    this.unsubscribe?.()
    await this.job.idle()
  }

  settled(): Promise<void> {
    return this.job.idle()
  }

  /**
   * The Nodes as the peers and the dataplane see them: the cluster's, and those gone within the grace period as they
   * were last seen. A Node back without its BGP addresses (a kubelet registers it bare) is seen as it was until its
   * agent has written them again, so its sessions do not flap.
   */
  nodes(): Node[] {
    const out: Node[] = []
    for (const [name, n] of this.live) {
      const last = this.departures.get(name)?.node
      out.push(!hasBgpAddress(n) && hasBgpAddress(last) ? (last as Node) : n)
    }
    for (const [name, d] of this.departures) if (!this.live.has(name) && d.node !== undefined) out.push(d.node)
    return out
  }

  /**
   * The blocks to look for deleted nodes in. A node's view (which holds its own blocks only) lists every block at
   * the first look, for the nodes gone before the agent started, and then only while a node is departing.
   */
  private async blocks(): Promise<Iterable<AllocationBlock>> {
    const { cluster } = this.ctx
    if (!cluster.nodeScoped) return cluster.blocks()
    if (this.looked && this.departures.size === 0) return []
    const all = await cluster.allBlocks()
    this.looked = true
    return all
  }

  private current(): Map<string, Node> {
    return new Map(this.ctx.cluster.list('Node').map((n) => [n.metadata.name, n]))
  }

  /** Departures and returns, from the cluster's Nodes now against those last seen. */
  private observe(): void {
    const now = Date.now()
    const current = this.current()
    const grace = this.ctx.settings.nodeGcGraceSeconds
    for (const [name, node] of this.live) {
      if (current.has(name) || this.departures.has(name)) continue
      this.departures.set(name, { since: now, node })
      if (grace > 0) this.log.info({ node: name, graceSeconds: grace }, `Node ${JSON.stringify(name)} left the cluster: its IPAM is released and its sessions dropped in ${grace} s unless it comes back`)
    }
    for (const [name, d] of this.departures) {
      const back = current.get(name)
      if (back === undefined) continue
      if (!this.live.has(name)) this.log.info({ node: name, goneSeconds: Math.round((now - d.since) / 1000) }, `Node ${JSON.stringify(name)} came back within the grace period: it keeps its IPAM and sessions`)
      if (hasBgpAddress(back) || !hasBgpAddress(d.node)) this.departures.delete(name)
    }
    this.live = current
  }

  /** Nodes named by a block's affinity or by an allocation that no Node has any more, released once their grace is over. */
  private async collect(): Promise<void> {
    if (this.stopped) return
    clearTimeout(this.timer)
    const now = Date.now()
    let blocks: Iterable<AllocationBlock>
    try {
      blocks = await this.blocks()
    } catch (err) {
      this.log.error({ err: (err as Error).message }, `reading the IPAM blocks for deleted nodes failed; tried again in ${RETRY_MS / 1000} s`)
      if (!this.stopped) this.timer = setTimeout(() => this.job.trigger(), RETRY_MS)
      return
    }
    const gone = deletedNodes(blocks, new Set(this.live.keys()), this.ctx.settings.nodeName)
    // IPAM of a node gone before this agent started: its grace starts now.
    for (const node of gone.keys()) if (!this.departures.has(node)) this.departures.set(node, { since: now, node: undefined })
    let next = Infinity
    let changed = false
    for (const [node, d] of [...this.departures]) {
      const due = d.since + this.graceMs
      if (due > now) {
        next = Math.min(next, due)
        continue
      }
      if (this.live.has(node)) {
        // Back, but still without its BGP addresses after the whole grace: seen as it is now.
        this.departures.delete(node)
        changed = true
        continue
      }
      const handles = gone.get(node)
      if (handles !== undefined) {
        try {
          await releaseDeletedNodes(this.ipam, new Map([[node, handles]]), (n, count, blocks) => this.log.info({ node: n, handles: count, blocks }, 'released the IPAM of a deleted node'))
        } catch (err) {
          this.log.error({ node, err: (err as Error).message }, `releasing the IPAM of deleted node ${JSON.stringify(node)} failed; tried again in ${RETRY_MS / 1000} s`)
          next = Math.min(next, now + RETRY_MS)
          continue
        }
      }
      this.departures.delete(node)
      if (d.node !== undefined) {
        changed = true
        this.log.info({ node }, `Node ${JSON.stringify(node)} is gone for good: its sessions are dropped`)
      }
    }
    if (changed) this.onNodesChanged()
    if (next !== Infinity && !this.stopped) this.timer = setTimeout(() => this.job.trigger(), Math.max(0, next - Date.now()))
  }
}
