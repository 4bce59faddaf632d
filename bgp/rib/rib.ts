// The speaker's RIB as sessions and the agent see it: sections in (adj-rib-in.ts), our own routes, flush()
// to listeners and Adj-RIB-Outs (loc-rib-flush.ts, rib-outs.ts), reads of the Loc-RIB. Pure and
// synchronous: no sockets, no clocks; how paths are stored is destinations.ts's and never read here.

import { AttributeInterner } from '../codec/intern.js'
import { parseIpv4 } from '../../net/index.js'
import type { PathAttributes } from '../codec/attributes.js'
import type { Ipv4Prefixes, Ipv6Prefixes, Prefix } from '../codec/nlri.js'
import { DEFAULT_LOCAL_PREF } from './best-path.js'
import { Destinations, type PathSource } from './destinations.js'
import { AdjRibIn, type PeerCounts, type ReimportResult } from './adj-rib-in.js'
import type { Refusal } from './validate.js'
import type { ExportContext } from './export.js'
import type { AdjRibOut, BestPath, FamilyKey, LocRibChange, Path, PeerSessionInfo, RibPeer } from './types.js'
import { NextHopTable, type LocRibDeltas } from './loc-rib-delta.js'
import { LocRibFlush } from './loc-rib-flush.js'
import { RibOuts } from './rib-outs.js'
import type { RoundPacing } from './update-group.js'

export type { PeerCounts, ReimportResult } from './adj-rib-in.js'

export interface RibOptions {
  readonly localAsn: number
  readonly routerId: string
  /** Set when this speaker reflects routes (RFC 4456); usually the router id. */
  readonly clusterId?: string
  /** Keep the equal-cost set (ECMP) beside the best path. */
  readonly multipath?: boolean
  /** RFC 8212: nothing from or to an eBGP peer without a policy. Default true. */
  readonly rfc8212?: boolean
  /**
   * LOCAL_PREF of paths that carry none (default 100, RFC 4271). Calico's mesh carries priorities as
   * LOCAL_PREF = 2^31 - 1 - priority with default priority 1024: set 2147482623 to rank like Calico.
   */
  readonly defaultLocalPref?: number
  /** Addresses of this speaker besides each session's local address (refused as next hops). */
  readonly localAddresses?: Iterable<string>
  /** Peers that export alike share one Adj-RIB-Out table (default true; false: one each, as a reference). */
  readonly updateGroups?: boolean
  /** Prefixes an update group's member may leave unread before it catches up on its own (default 64,000). */
  readonly slowLimit?: number
  /** Spacing of each update group's rounds (default none); the speaker paces by its peer count. */
  readonly pacing?: RoundPacing
}

export interface OriginateOptions {
  /** The interface the route points at, for policies matching Calico's `interface`. */
  readonly interface?: string
}

/** The source of this speaker's own routes. */
const LOCAL_SOURCE: PathSource = { peer: undefined, session: undefined }
const LOCAL_ATTRS: PathAttributes = { origin: 0, asPath: [] }

export class Rib {
  private readonly interner = new AttributeInterner()
  private readonly table: Destinations
  private readonly adjIn: AdjRibIn
  private readonly outs: RibOuts
  private readonly output: LocRibFlush
  /** The next hops the Loc-RIB's deltas name by id. */
  readonly nextHops = new NextHopTable()
  /** The interface each of our own routes names (originate()), for export policies. */
  private readonly interfaces = new WeakMap<Path, string>()

  constructor(opts: RibOptions) {
    const id = parseIpv4(opts.routerId)
    if (id === undefined) throw new Error(`routerId ${JSON.stringify(opts.routerId)} is not an IPv4 address`)
    if (opts.clusterId !== undefined && parseIpv4(opts.clusterId) === undefined) {
      throw new Error(`clusterId ${JSON.stringify(opts.clusterId)} is not an IPv4 address`)
    }
    const defaultLocalPref = opts.defaultLocalPref ?? DEFAULT_LOCAL_PREF
    const rfc8212 = opts.rfc8212 ?? true
    this.table = new Destinations(this.interner, { localAsn: opts.localAsn, routerId: id, defaultLocalPref }, opts.multipath ?? false)
    const identity = { routerId: opts.routerId, clusterId: opts.clusterId, addresses: new Set(opts.localAddresses ?? []) }
    this.adjIn = new AdjRibIn(this.table, this.interner, identity, rfc8212)
    this.outs = new RibOuts(this.table, { clusterId: opts.clusterId, rfc8212, defaultLocalPref }, this.interfaces, {
      ...(opts.updateGroups !== undefined ? { updateGroups: opts.updateGroups } : {}),
      ...(opts.slowLimit !== undefined ? { slowLimit: opts.slowLimit } : {}),
      ...(opts.pacing !== undefined ? { pacing: opts.pacing } : {}),
    })
    this.output = new LocRibFlush(this.table, this.outs, this.nextHops)
  }

  get exportContext(): ExportContext {
    return this.outs.exportContext
  }

  /** Rounds the update groups have made: each is one write to every member. */
  get groupRounds(): number {
    return this.outs.rounds
  }

  /** Destinations in the table: those emptied since the last flush, and those an Adj-RIB-Out has yet to withdraw, included. */
  get size(): number {
    return this.table.size
  }

  /** Distinct attribute sets held. */
  get attributeSets(): number {
    return this.interner.size
  }

  // What peers send (adj-rib-in.ts).

  /**
   * One UPDATE section from `peer`: `attrs` undefined withdraws `prefixes`. Returns why the section
   * was not accepted (its prefixes are then treated as withdrawn), or undefined.
   */
  receive(peer: RibPeer, session: PeerSessionInfo, prefixes: readonly Prefix[], attrs: PathAttributes | undefined, nextHop?: readonly string[]): Refusal | undefined {
    return this.adjIn.receive(peer, session, prefixes, attrs, nextHop)
  }

  /** receive() for IPv4 prefixes without path identifiers as columns, the hot path of a table dump. */
  receiveIpv4(peer: RibPeer, session: PeerSessionInfo, prefixes: Ipv4Prefixes, attrs: PathAttributes | undefined, nextHop?: readonly string[]): Refusal | undefined {
    return this.adjIn.receiveIpv4(peer, session, prefixes, attrs, nextHop)
  }

  /** receive() for IPv6 prefixes without path identifiers as columns (MP_REACH_NLRI of a table dump). */
  receiveIpv6(peer: RibPeer, session: PeerSessionInfo, prefixes: Ipv6Prefixes, attrs: PathAttributes | undefined, nextHop?: readonly string[]): Refusal | undefined {
    return this.adjIn.receiveIpv6(peer, session, prefixes, attrs, nextHop)
  }

  /** Import runs again over the peer's import table (its import policy changed); the caller flushes. */
  reimport(peer: RibPeer): ReimportResult {
    return this.adjIn.reimport(peer)
  }

  /** RFC 4724: the session went down; paths of the families in `keepStale` stay, stale, the others go. */
  peerDown(peer: RibPeer, keepStale: ReadonlySet<FamilyKey>): void {
    this.adjIn.peerDown(peer, keepStale)
  }

  /** RFC 4760 §7: every path of `family` from the peer goes (a malformed MP attribute); its other families stay. */
  dropFamily(peer: RibPeer, family: FamilyKey): void {
    this.adjIn.dropFamily(peer, family)
  }

  /** RFC 4724 §4.2: End-of-RIB from the restarted peer; what it did not re-send is gone. */
  endOfRib(peer: RibPeer, family: FamilyKey): void {
    this.adjIn.endOfRib(peer, family)
  }

  /** The restart timer expired: every stale path of the peer goes. */
  sweepStale(peer: RibPeer): void {
    this.adjIn.sweepStale(peer)
  }

  counts(peer: RibPeer): PeerCounts {
    return this.adjIn.counts(peer)
  }

  // Our own routes.

  /** A route of our own: ORIGIN IGP, empty AS_PATH, next hop filled per peer on export. */
  originate(prefix: Prefix, attrs?: Partial<PathAttributes>, opts?: OriginateOptions): void {
    const own = this.interner.intern({ ...LOCAL_ATTRS, ...attrs })
    const p = prefix.pathId === 0 ? prefix : { ...prefix, pathId: 0 }
    this.table.setPath(LOCAL_SOURCE, p, own)
    this.interner.release(own)
    const path = this.table.ownPath(p)
    if (path !== undefined) {
      if (opts?.interface !== undefined) this.interfaces.set(path, opts.interface)
      else this.interfaces.delete(path)
    }
  }

  withdrawOrigin(prefix: Prefix): void {
    this.table.removePath(undefined, prefix.pathId === 0 ? prefix : { ...prefix, pathId: 0 })
  }

  interfaceOf(path: Path): string | undefined {
    return this.interfaces.get(path)
  }

  // The Loc-RIB and its outputs (loc-rib-flush.ts).

  /** Decides the best paths changed since the last flush, queues them on every Adj-RIB-Out and tells the listeners. */
  flush(): void {
    this.output.flush()
  }

  subscribe(listener: (changes: readonly LocRibChange[]) => void): () => void {
    return this.output.subscribe(listener)
  }

  /** Calls `listener` with the Loc-RIB's changes of each flush as typed deltas, read during the call only. */
  subscribeDeltas(listener: (deltas: LocRibDeltas) => void): () => void {
    return this.output.subscribeDeltas(listener)
  }

  /**
   * Every destination with a best path, as deltas in batches of up to `batch` entries (one buffer, reused
   * from batch to batch): the streaming full walk, making no Path object for a compact destination.
   */
  walkLocRib(visit: (deltas: LocRibDeltas) => void, batch = 4096): void {
    this.output.walk(visit, batch)
  }

  best(prefix: Prefix): BestPath | undefined {
    const d = this.table.find(prefix)
    return d < 0 ? undefined : this.table.best(d)
  }

  /** Every path of the prefix, best or not. */
  paths(prefix: Prefix): readonly Path[] {
    const d = this.table.find(prefix)
    return d < 0 ? [] : this.table.paths(d)
  }

  *locRib(): IterableIterator<[Prefix, BestPath]> {
    for (const d of this.table.indices()) {
      const best = this.table.best(d)
      if (best !== undefined) yield [this.table.prefix(d), best]
    }
  }

  /** The prefix of every destination (those emptied since the last flush included). */
  *prefixes(): IterableIterator<Prefix> {
    for (const d of this.table.indices()) yield this.table.prefix(d)
  }

  *adjRibIn(peer: RibPeer): IterableIterator<Path> {
    for (const d of this.table.indices()) for (const p of this.table.paths(d)) if (p.peer?.id === peer.id) yield p
  }

  // Adj-RIB-Outs (rib-outs.ts).

  /** The session reached Established: its Adj-RIB-Out starts with the whole Loc-RIB queued. */
  attachPeer(peer: RibPeer): AdjRibOut {
    return this.outs.attach(peer)
  }

  detachPeer(peer: RibPeer): void {
    this.outs.detach(peer)
    this.adjIn.detach(peer)
  }
}
