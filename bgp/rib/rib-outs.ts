// The Adj-RIB-Outs of the established peers and what they read of the Loc-RIB (RibView): which peers
// are attached, the update groups and export results they share, and which tables a changed destination
// is offered to. It reads the destination table and never changes a path; what a peer is sent is
// adj-rib-out.ts's and update-group.ts's.

import { exportKey, newExportCache, PeerRibOut, type ExportCache, type RibView } from './adj-rib-out.js'
import type { Destinations } from './destinations.js'
import { mayExportFrom, type ExportContext } from './export.js'
import type { InternedAttributes } from '../codec/intern.js'
import type { Prefix } from '../codec/nlri.js'
import type { AdjRibOut, Path, PeerSessionInfo, RibPeer } from './types.js'
import { GroupMember } from './group-member.js'
import { groupKey, UpdateGroup, type GroupHost, type RoundPacing } from './update-group.js'

export interface RibOutsOptions {
  /** Share one table per update group (default); false gives every peer its own, as a reference. */
  readonly updateGroups?: boolean
  /** Prefixes a group member may leave unread before it catches up on its own. */
  readonly slowLimit?: number
  /** Spacing of each update group's rounds (default none: a round whenever a member asks). */
  readonly pacing?: RoundPacing
}

/** No source seen yet in this flush (undefined is a source: our own routes). */
const NO_PEER = Symbol('no peer')

export class RibOuts implements RibView, GroupHost {
  private readonly byPeer = new Map<number, PeerRibOut | GroupMember>()
  /** What a change is offered to: each update group's table and each peer sending on its own. */
  private readonly tables = new Set<PeerRibOut>()
  private readonly groups = new Map<string, UpdateGroup>()
  private nextGroupId = 1
  private roundsOfGone = 0
  readonly slowLimit: number
  readonly pacing: RoundPacing | undefined
  private readonly grouping: boolean
  /** Export results by exportKey: a few keys (iBGP clients, each eBGP AS), not one per peer. */
  private readonly exportCaches = new Map<string, ExportCache>()
  /** The same Adj-RIB-Outs as an array, walked once per changed destination. */
  private list: PeerRibOut[] = []
  /** Whether list[k] may take a best path from `mayTakePeer` in `mayTakeAfi` (see offer()). */
  private mayTake = new Uint8Array(0)
  private mayTakePeer: RibPeer | undefined | typeof NO_PEER = NO_PEER
  private mayTakeAfi = 0

  constructor(
    private readonly table: Destinations,
    readonly exportContext: ExportContext,
    private readonly interfaces: WeakMap<Path, string>,
    opts: RibOutsOptions = {},
  ) {
    this.grouping = opts.updateGroups ?? true
    this.slowLimit = Math.max(1, opts.slowLimit ?? 16 * 4000)
    this.pacing = opts.pacing
  }

  /** The rib as its Adj-RIB-Outs read it. */
  get rib(): RibView {
    return this
  }

  /** The session reached Established: its Adj-RIB-Out starts with the whole Loc-RIB to send. */
  attach(peer: RibPeer): AdjRibOut {
    this.detach(peer)
    if (this.grouping) {
      const member = new GroupMember(peer, this)
      this.byPeer.set(peer.id, member)
      return member
    }
    const out = new PeerRibOut(peer, this)
    this.byPeer.set(peer.id, out)
    this.soloStarted(out)
    this.queueAll(out)
    return out
  }

  detach(peer: RibPeer): void {
    const out = this.byPeer.get(peer.id)
    if (out === undefined) return
    out.clear()
    this.byPeer.delete(peer.id)
    if (out instanceof PeerRibOut) this.soloEnded(out)
  }

  private queueAll(out: PeerRibOut): void {
    for (const d of this.table.indices()) {
      this.table.settle(d)
      out.offer(d)
    }
  }

  // GroupHost, for the update groups.

  /** Rounds the update groups have made (groups gone included), for benches and tests. */
  get rounds(): number {
    let n = this.roundsOfGone
    for (const g of this.groups.values()) n += g.rounds
    return n
  }

  groupFor(peer: RibPeer): UpdateGroup {
    const key = groupKey(peer)
    let g = this.groups.get(key)
    if (g === undefined) {
      g = new UpdateGroup(key, peer, -this.nextGroupId++, this)
      this.groups.set(key, g)
      this.soloStarted(g.out)
      this.queueAll(g.out)
    }
    return g
  }

  groupEmpty(group: UpdateGroup): void {
    if (this.groups.get(group.key) !== group) return
    this.groups.delete(group.key)
    this.roundsOfGone += group.rounds
    group.out.clear()
    this.soloEnded(group.out)
  }

  soloStarted(out: PeerRibOut): void {
    this.tables.add(out)
    this.changed()
  }

  soloEnded(out: PeerRibOut): void {
    if (this.tables.delete(out)) this.changed()
  }

  /**
   * A flush begins: the first change it offers works out again which Adj-RIB-Outs may take a path from its
   * source. Done per flush so that the branch which does it is taken in every flush, and V8's optimized
   * flush loop never meets it for the first time (a new peer's dump would throw that code away).
   */
  beginFlush(): void {
    this.mayTakePeer = NO_PEER
  }

  private changed(): void {
    this.list = [...this.tables]
    this.mayTake = new Uint8Array(this.list.length)
    this.mayTakePeer = NO_PEER
  }

  /**
   * `d`'s settled best changed: each Adj-RIB-Out that may take it, or holds it (and may have to withdraw
   * it), is offered it. Whether a peer may take a path depends on its source peer and family alone, and
   * a table dump's changes share one: that is worked out once per run of them.
   */
  offer(d: number): void {
    const src = this.table.bestSource(d)
    if (src !== undefined) return this.offerFrom(d, src.peer, this.table.afi(d))
    const outs = this.list
    for (let k = 0; k < outs.length; k++) if (outs[k]!.size > 0) outs[k]!.offer(d)
  }

  /** offer() for a destination whose settled best came from `peer` (undefined: ours), in `afi`. */
  offerFrom(d: number, peer: RibPeer | undefined, afi: number): void {
    const outs = this.list
    if (peer !== this.mayTakePeer || afi !== this.mayTakeAfi) this.mayTakeFrom(peer, afi)
    const mayTake = this.mayTake
    for (let k = 0; k < outs.length; k++) if (mayTake[k] !== 0 || outs[k]!.size > 0) outs[k]!.offer(d)
  }

  /** offerFrom() for a destination no Adj-RIB-Out holds: only those that may take it are offered it. */
  offerNew(d: number, peer: RibPeer | undefined, afi: number): void {
    const outs = this.list
    if (peer !== this.mayTakePeer || afi !== this.mayTakeAfi) this.mayTakeFrom(peer, afi)
    const mayTake = this.mayTake
    for (let k = 0; k < outs.length; k++) if (mayTake[k] !== 0) outs[k]!.offer(d)
  }

  /** offerNew() for destinations [from, to), all from `peer` in `afi`. */
  offerNewRun(from: number, to: number, peer: RibPeer | undefined, afi: number): void {
    const outs = this.list
    if (peer !== this.mayTakePeer || afi !== this.mayTakeAfi) this.mayTakeFrom(peer, afi)
    for (let k = 0; k < outs.length; k++) {
      if (this.mayTake[k] === 0) continue
      const out = outs[k]!
      for (let d = from; d < to; d++) out.offer(d)
    }
  }

  private mayTakeFrom(peer: RibPeer | undefined, afi: number): void {
    const outs = this.list
    for (let k = 0; k < outs.length; k++) this.mayTake[k] = mayExportFrom(afi, peer, outs[k]!.peer, this.exportContext) ? 1 : 0
    this.mayTakePeer = peer
    this.mayTakeAfi = afi
  }

  // RibView, for the Adj-RIB-Outs.

  exportCache(target: RibPeer): ExportCache {
    const key = exportKey(target)
    let c = this.exportCaches.get(key)
    if (c === undefined) this.exportCaches.set(key, (c = newExportCache()))
    return c
  }

  /** Whether `d`'s settled best may go to `target` at all (family, split horizon, RFC 8212), policy aside. */
  exportable(d: number, target: RibPeer): boolean {
    const src = this.table.bestSource(d)
    return src !== undefined && mayExportFrom(this.table.afi(d), src.peer, target, this.exportContext)
  }

  isLive(d: number): boolean {
    return this.table.isLive(d)
  }

  settle(d: number): void {
    this.table.settle(d)
  }

  bestPath(d: number): Path | undefined {
    return this.table.bestPath(d)
  }

  bestPeer(d: number): RibPeer | undefined {
    return this.table.bestSource(d)?.peer
  }

  bestSession(d: number): PeerSessionInfo | undefined {
    return this.table.bestSource(d)?.session
  }

  bestAttrs(d: number): InternedAttributes | undefined {
    return this.table.bestAttrs(d)
  }

  prefix(d: number): Prefix {
    return this.table.prefix(d)
  }

  afi(d: number): 1 | 2 {
    return this.table.afi(d)
  }

  indices(afi?: number): Iterable<number> {
    return this.table.indices(afi)
  }

  hold(d: number): void {
    this.table.hold(d)
  }

  unhold(d: number): void {
    this.table.unhold(d)
  }

  interfaceOf(path: Path): string | undefined {
    return this.interfaces.get(path)
  }
}
