// The dataplane feed: what felix programs, from the cluster and the speaker. The Loc-RIB's deltas go
// to felix's learned-route feed as they come and are written at once; the cluster's view (pools, nodes,
// our blocks and pods, the peers' static routes, the rules for learned routes) goes to felix's
// dataplane whenever it changes. After a restart the kernel is left alone until the peers' tables are in.

import type { Logger } from 'pino'
import type { BgpSpeaker } from '../../bgp/index.js'
import { parsePrefix, formatPrefix } from '../../bgp/index.js'
import { nodeAddressNames, type Node } from '../../config/index.js'
import { LearnedFeed, type Dataplane, type LearnedRoute, type ProgramRules } from '../../felix/index.js'
import { blockCidr, ordinalAddress, type AllocationBlock } from '../../ipam/index.js'
import { serviceCidrs } from '../advertisements.js'
import type { AnnouncementRefusals } from '../refusals.js'
import { Coalescer } from './coalescer.js'
import { bgpConfig, cidrOf, tablesWait, type AgentContext } from './context.js'
import type { Tunnels } from './registration.js'

export interface DataplaneFeedDeps {
  readonly refusals: AnnouncementRefusals
  /** Every peer has sent us its table. */
  tablesIn(): boolean
  /** Blocks this node owns (blackholed locally). */
  localBlocks(): readonly string[]
  /** Static routes to peers (reachableBy). */
  staticRoutes(): readonly LearnedRoute[]
  tunnels(): Tunnels
  /** The cluster's Nodes, with those gone within their grace period (node-gc). */
  nodes(): readonly Node[]
}

export class DataplaneFeed {
  private readonly log: Logger
  private readonly feed: LearnedFeed
  /** The cluster's view into felix (devices, NAT, VTEPs, fixed routes, then a write or a resync). */
  private readonly job: Coalescer
  /** Writes what the Loc-RIB's deltas changed in felix's desired routes. */
  private readonly fibJob: Coalescer
  private readonly unsubscribe: (() => void)[] = []
  private syncTimer: NodeJS.Timeout | undefined
  private workloadsTimer: NodeJS.Timeout | undefined
  /** The peers' tables are in (or the deadline passed): felix programs the kernel. */
  synced = false
  /** Set once the first dataplane update after the sync has finished (devices, NAT, monitor, first write). */
  private started = false

  constructor(
    private readonly ctx: AgentContext,
    private readonly dataplane: Dataplane,
    speaker: BgpSpeaker,
    private readonly deps: DataplaneFeedDeps,
  ) {
    this.log = ctx.log
    const fail = (what: string) => (err: Error) => this.log.error({ err: err.message }, `${what} failed`)
    this.job = new Coalescer(() => this.sync(), fail('dataplane update'))
    this.fibJob = new Coalescer(async () => {
      if (this.synced) await this.dataplane.applyChanges()
    }, fail('route update'))
    this.feed = new LearnedFeed(speaker, dataplane.desired, (conflicts) => deps.refusals.setAffinityConflicts(conflicts))
    this.feed.reseed()
    // From now on: the deltas are not to be missed between the speaker's start and the cluster's first view.
    this.unsubscribe.push(
      speaker.subscribeDeltas((deltas) => {
        this.feed.apply(deltas)
        this.fibJob.trigger()
      }),
    )
  }

  start(): void {
    const me = this.ctx.settings.nodeName
    this.unsubscribe.push(
      this.ctx.cluster.onChange((topic, blocks) => {
        if (topic === 'resources') return this.job.trigger()
        // Another node's allocations change nothing in our kernel (its routes come over BGP); a change of owners
        // (no blocks named) does: the routes of a block narrow to its new owner's.
        if (blocks.length > 0 && !blocks.some((b) => b !== undefined && concerns(b, me))) return
        // IPAM writes come in bursts while pods start: origination follows at once (it is what other
        // nodes wait for); felix learns of new pods and our new blocks' blackholes within a second,
        // well inside its veth grace period (the pods' own /32s are more specific than a blackhole).
        this.workloadsTimer ??= setTimeout(() => {
          this.workloadsTimer = undefined
          this.job.trigger()
        }, 1000)
      }),
    )
    this.job.trigger()
  }

  /** Something felix renders changed (our blocks, the static routes): a new view now. */
  trigger(): void {
    this.job.trigger()
  }

  /** Stops following the speaker and the cluster; felix's routes stay in the kernel. */
  async stop(): Promise<void> {
    clearTimeout(this.syncTimer)
    clearTimeout(this.workloadsTimer)
    for (const u of this.unsubscribe) u()
    await this.settled()
  }

  async settled(): Promise<void> {
    await this.job.idle()
    await this.fibJob.idle()
  }

  private async sync(): Promise<void> {
    const { settings, cluster, addresses } = this.ctx
    // Like BIRD's kernel protocol in graceful restart: routes left by our previous run stay untouched
    // until the peers have sent us their tables (End-of-RIB), or a deadline passes.
    if (!this.synced) {
      const tablesIn = this.deps.tablesIn()
      const wait = tablesWait(this.ctx, tablesIn)
      if (!wait.done) {
        this.syncTimer ??= setTimeout(() => {
          this.syncTimer = undefined
          this.job.trigger()
        }, 250)
        return
      }
      this.synced = true
      this.log.info({ waitedMs: wait.waitedMs, peersSynced: tablesIn }, tablesIn ? 'BGP tables in: programming the kernel' : 'not every peer sent its table in time: programming the kernel anyway')
    }
    const nodes = [...this.deps.nodes()]
    const staticRoutes = this.deps.staticRoutes()
    this.feed.setRules(this.programRules(nodes, staticRoutes))
    const { v4, v6 } = addresses
    const tunnels = this.deps.tunnels()
    const t0 = performance.now()
    await this.dataplane.update({
      nodeName: settings.nodeName,
      ipv4Address: v4 ? cidrOf(v4) : undefined,
      ipv6Address: v6 ? cidrOf(v6) : undefined,
      parentInterface: v4?.interface ?? v6?.interface ?? 'eth0',
      pools: cluster.list('IPPool'),
      nodes,
      localBlocks: this.deps.localBlocks(),
      workloads: this.workloads(),
      ...(tunnels.vxlan ? { vxlan: tunnels.vxlan } : {}),
      ...(tunnels.ipipAddress ? { ipipAddress: tunnels.ipipAddress } : {}),
      staticRoutes,
    })
    if (!this.started) {
      // Until this update finished, the Loc-RIB's deltas were not written (felix was not started): those
      // that came while it ran are written now, not at the next delta or the periodic resync.
      this.started = true
      this.fibJob.trigger()
      this.log.info({ ms: Math.round(performance.now() - t0), learnedRoutes: this.dataplane.desired.learnedCount }, 'dataplane started: devices, NAT and route monitor set up, first routes written')
    }
  }

  /** Addresses of this node's pods (from IPAM), so felix never removes their /32 routes. */
  private workloads(): string[] {
    const me = this.ctx.settings.nodeName
    const out: string[] = []
    for (const b of this.ctx.cluster.blocks()) {
      b.allocations.forEach((attrIndex, ordinal) => {
        if (attrIndex === null) return
        const attr = b.attributes[attrIndex]
        if (attr?.secondary['node'] === me && attr.handleId && !attr.handleId.includes('tunnel-addr')) out.push(ordinalAddress(blockCidr(b), ordinal))
      })
    }
    return out
  }

  /**
   * Which learned routes felix programs: service ranges other nodes originate never (kube-proxy owns
   * service addresses, as Calico's rejectcidrs); a block goes to the node holding its affinity; a peer's
   * reachableBy route wins over anything learned for the same /32.
   */
  private programRules(nodes: readonly Node[], staticRoutes: readonly LearnedRoute[]): ProgramRules {
    const nodeOfAddress = nodeAddressNames(nodes)
    const owners = new Map<string, string>()
    for (const [cidr, node] of this.ctx.cluster.blockOwners()) owners.set(formatPrefix(parsePrefix(cidr)), node)
    return { me: this.ctx.settings.nodeName, services: serviceCidrs(bgpConfig(this.ctx)), owners, fixed: staticRoutes.map((r) => r.prefix), nodeOfAddress }
  }
}

/** Whether a block is this node's or holds one of its pods. */
function concerns(b: AllocationBlock, me: string): boolean {
  if (b.affinity === `host:${me}`) return true
  return b.attributes.some((a) => a.secondary['node'] === me)
}
