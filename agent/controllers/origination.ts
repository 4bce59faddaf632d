// The origination controller: what this node announces, from IPAM (the blocks it owns, the addresses it
// borrowed in other nodes' blocks), BGPConfiguration (service ranges, communities) and the Services controller
// (Service addresses), handed to the speaker as one change; and when End-of-RIB may follow our table after a restart.

import type { Logger } from 'pino'
import { parsePrefix, type BgpSpeaker, type OwnRoute, type PathAttributes, type Prefix } from '../../bgp/index.js'
import { deepEqual } from '../../config/index.js'
import { communitiesFor, compileCommunityRules, type CommunityRule } from '../advertisements.js'
import { originationFor } from '../origination.js'
import { originatedServiceRanges, serviceNode } from '../service-routes.js'
import { Coalescer } from './coalescer.js'
import { bgpConfig, tablesWait, type AgentContext } from './context.js'

export interface OriginationDeps {
  /** Started within the graceful-restart window of a previous run: peers hold our routes as stale. */
  readonly restarting: boolean
  /** Every peer has sent us its table. */
  tablesIn(): boolean
  /** Our blocks changed (each is a blackhole route for felix). */
  onBlocks(): void
  /** The Service addresses this node advertises, when the Kubernetes API is read (the Services controller). */
  readonly services?: { prefixes(): Iterable<string>; readonly synced: boolean }
}

export class OriginationController {
  private readonly log: Logger
  private readonly job: Coalescer
  private unsubscribe: (() => void) | undefined
  private eorTimer: NodeJS.Timeout | undefined
  /** End-of-RIB may follow our table (released once; the speaker holds it until then). */
  private endOfRibReleased = false
  /** Prefix -> the attributes it was originated with, so a change of communities re-originates it. */
  private readonly originated = new Map<string, Partial<PathAttributes>>()
  /** Blocks this node owns ("198.18.0.0/26"): announced, and blackholed locally. */
  blocks: readonly string[] = []

  constructor(
    private readonly ctx: AgentContext,
    private readonly speaker: BgpSpeaker,
    private readonly deps: OriginationDeps,
  ) {
    this.log = ctx.log
    this.job = new Coalescer(() => this.sync(), (err) => this.log.error({ err: err.message }, 'origination failed'))
  }

  start(): void {
    // Every change: BGPConfiguration's prefixAdvertisements and service ranges, and any block's allocations.
    this.unsubscribe = this.ctx.cluster.onChange(() => this.job.trigger())
    this.job.trigger()
  }

  async stop(): Promise<void> {
    clearTimeout(this.eorTimer)
    this.eorTimer = undefined
    this.unsubscribe?.()
    await this.job.idle()
  }

  settled(): Promise<void> {
    return this.job.idle()
  }

  /** Something we originate changed outside the cluster state (the Service addresses). */
  trigger(): void {
    this.job.trigger()
  }

  private async sync(): Promise<void> {
    const before = this.blocks
    const now = originationFor(this.ctx.settings.nodeName, this.ctx.cluster.blocks())
    this.blocks = now.blocks
    // A new or released block of ours is a blackhole route to write or remove now, as it is announced.
    if (!deepEqual(before, now.blocks)) this.deps.onBlocks()
    const config = bgpConfig(this.ctx)
    let rules: CommunityRule[] = []
    try {
      rules = compileCommunityRules(config)
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'BGPConfiguration prefixAdvertisements not usable: routes originated without communities')
    }
    // The service ranges every node originates whole, and this node's Service addresses (a /32 or /128 each).
    const me = this.ctx.cluster.get('Node', this.ctx.settings.nodeName)
    let ranges: string[] = []
    try {
      ranges = originatedServiceRanges(config, serviceNode(this.ctx.settings.nodeName, me?.metadata.labels), this.deps.services !== undefined)
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'BGPConfiguration service ranges not usable: none originated')
    }
    const want = new Set([...now.blocks, ...now.borrowed, ...ranges, ...(this.deps.services?.prefixes() ?? [])])
    const originate: OwnRoute[] = []
    for (const text of want) {
      const prefix = parsePrefix(text)
      const attrs = communitiesFor(prefix, rules)
      const had = this.originated.get(text)
      if (had === undefined || !deepEqual(had, attrs)) {
        originate.push({ prefix, attrs })
        this.originated.set(text, attrs)
      }
    }
    const withdraw: Prefix[] = []
    for (const text of [...this.originated.keys()]) {
      if (!want.has(text)) {
        withdraw.push(parsePrefix(text))
        this.originated.delete(text)
      }
    }
    this.speaker.updateOrigins(originate, withdraw)
    this.releaseEndOfRibWhenSynced()
  }

  /**
   * End-of-RIB follows our table once everything we own is in the RIB and the peers have sent us their
   * tables, or the sync deadline has passed (RFC 4724 §4.1, selection deferral): a restarting node that
   * ended its table to a top-of-rack router before its iBGP peers' routes were in would have the router
   * drop, as stale, the paths through us to the other nodes' blocks, and take them again a second later.
   * Only a restarting node defers: peers keep nothing of a node that starts afresh, and nodes starting
   * together would otherwise each wait for the others' End-of-RIB until the deadline.
   */
  private releaseEndOfRibWhenSynced(): void {
    clearTimeout(this.eorTimer)
    this.eorTimer = undefined
    if (this.endOfRibReleased) return
    const synced = this.deps.tablesIn()
    // A Local Service's address is ours to announce only once the Services are listed.
    const servicesIn = this.deps.services?.synced ?? true
    const wait = tablesWait(this.ctx, synced && servicesIn)
    if (this.deps.restarting && !wait.done) {
      this.eorTimer = setTimeout(() => this.releaseEndOfRibWhenSynced(), 100)
      return
    }
    this.endOfRibReleased = true
    this.speaker.releaseEndOfRib()
    if (this.deps.restarting) {
      this.log.info(
        { waitedMs: wait.waitedMs, peersSynced: synced, servicesListed: servicesIn },
        synced ? "every peer's table in: End-of-RIB follows ours" : 'not every peer sent its table in time: End-of-RIB follows ours anyway',
      )
    }
  }
}
