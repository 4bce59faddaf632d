// The speaker's routing tables: Adj-RIB-In (each peer's accepted paths, kept inside the per-prefix
// destinations), the Loc-RIB (each destination's settled best) and the per-peer Adj-RIB-Outs it
// feeds. Pure and synchronous: sessions call in, flush() hands the changes out. No sockets, no clocks.

import { familyKey } from '../codec/constants.js'
import { AttributeInterner, type InternedAttributes } from '../codec/intern.js'
import { parseIpv4 } from '../codec/ip.js'
import type { PathAttributes } from '../codec/attributes.js'
import type { Prefix } from '../codec/nlri.js'
import { decide, DEFAULT_LOCAL_PREF, REASONS, type DecisionContext } from './best-path.js'
import { PeerRibOut, type RibView } from './adj-rib-out.js'
import { DIRTY, MULTIPATH, PrefixTable, REASON_MASK, UNSETTLED, type Destination, type PathSource } from './table.js'
import { validateReceived, type LocalIdentity } from './validate.js'
import type { ExportContext } from './export.js'
import type { AdjRibOut, BestPath, FamilyKey, LocRibChange, Path, PeerSessionInfo, RibPeer, RouteContext } from './types.js'

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
}

export interface OriginateOptions {
  /** The interface the route points at, for policies matching Calico's `interface`. */
  readonly interface?: string
}

export interface PeerCounts {
  /** Prefixes announced by the peer since its session came up, accepted or not. */
  readonly received: number
  /** Paths from the peer in the Adj-RIB-In now (after validation and import policy). */
  readonly accepted: number
}

/** A stored path, as an object literal so that V8 pretenures it (see newDestination in table.ts). */
function newPath(prefix: Prefix, peer: RibPeer | undefined, session: PeerSessionInfo | undefined, attrs: InternedAttributes): Path {
  return { prefix, peer, session, attrs, stale: false }
}

interface Counters {
  received: number
  accepted: number
  /** Stale paths held (graceful restart), by AFI: End-of-RIB sweeps only when there are any. */
  stale: number[]
}

const UNICAST = 1
const FROM_PEER: RouteContext = { fromPeer: true }
/** The source of this speaker's own routes. */
const LOCAL_SOURCE: PathSource = { peer: undefined, session: undefined }
const LOCAL_ATTRS: PathAttributes = { origin: 0, asPath: [] }

function sameMultipath(a: readonly Path[] | undefined, b: readonly Path[] | undefined): boolean {
  if (a === b) return true
  if (a === undefined || b === undefined || a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/**
 * Destinations touched since a flush, each with its best path and multipath set as of then. The arrays
 * keep their length from flush to flush and are written by index: a full table arrives in thousands of
 * flushes, and growing three arrays from empty in each made most of the RIB's short-lived garbage.
 */
class TouchedList {
  readonly dests: Destination[] = []
  readonly best: (Path | undefined)[] = []
  readonly multi: (Path[] | undefined)[] = []
  length = 0

  add(dest: Destination, best: Path | undefined, multi: Path[] | undefined): void {
    const i = this.length++
    this.dests[i] = dest
    this.best[i] = best
    this.multi[i] = multi
  }

  /** Empty again, holding no destination or path alive. */
  clear(): void {
    this.dests.fill(undefined as unknown as Destination, 0, this.length)
    this.best.fill(undefined, 0, this.length)
    this.multi.fill(undefined, 0, this.length)
    this.length = 0
  }
}

export class Rib implements RibView {
  private readonly table = new PrefixTable()
  private readonly interner = new AttributeInterner()
  private readonly decision: DecisionContext
  private readonly identity: LocalIdentity
  readonly exportContext: ExportContext
  private readonly multipath: boolean
  private readonly listeners = new Set<(changes: readonly LocRibChange[]) => void>()
  private readonly outs = new Map<number, PeerRibOut>()
  /** The same Adj-RIB-Outs as an array: flush() walks it once per changed prefix. */
  private outList: PeerRibOut[] = []
  private readonly counters = new Map<number, Counters>()
  private readonly interfaces = new WeakMap<Path, string>()
  /** Each peer's current source (peer and session), shared by the paths of its session. */
  private readonly sources = new Map<number, PathSource>()
  /** The multipath set of each destination that has one (flagged MULTIPATH in its bits). */
  private readonly multipaths = new Map<Destination, Path[]>()
  // Destinations touched since the last flush, with their best path as of that flush; two lists in turn,
  // so a flush can take one while touches during its listeners go to the other.
  private touched = new TouchedList()
  private spare = new TouchedList()

  constructor(opts: RibOptions) {
    const id = parseIpv4(opts.routerId)
    if (id === undefined) throw new Error(`routerId ${JSON.stringify(opts.routerId)} is not an IPv4 address`)
    if (opts.clusterId !== undefined && parseIpv4(opts.clusterId) === undefined) {
      throw new Error(`clusterId ${JSON.stringify(opts.clusterId)} is not an IPv4 address`)
    }
    const defaultLocalPref = opts.defaultLocalPref ?? DEFAULT_LOCAL_PREF
    this.decision = { localAsn: opts.localAsn, routerId: id, defaultLocalPref }
    this.identity = { routerId: opts.routerId, clusterId: opts.clusterId, addresses: new Set(opts.localAddresses ?? []) }
    this.exportContext = { clusterId: opts.clusterId, rfc8212: opts.rfc8212 ?? true, defaultLocalPref }
    this.multipath = opts.multipath ?? false
  }

  /** Destinations in the Loc-RIB (those emptied since the last flush included). */
  get size(): number {
    return this.table.size
  }

  /** Distinct attribute sets held. */
  get attributeSets(): number {
    return this.interner.size
  }

  private countersOf(peer: RibPeer): Counters {
    let c = this.counters.get(peer.id)
    if (c === undefined) this.counters.set(peer.id, (c = { received: 0, accepted: 0, stale: [0, 0, 0] }))
    return c
  }

  /**
   * One UPDATE section from `peer`: `attrs` undefined withdraws `prefixes`. Returns why the section
   * was not accepted (its prefixes are then treated as withdrawn), or undefined.
   */
  receive(
    peer: RibPeer,
    session: PeerSessionInfo,
    prefixes: readonly Prefix[],
    attrs: PathAttributes | undefined,
    nextHop?: readonly string[],
  ): string | undefined {
    const c = this.countersOf(peer)
    if (attrs === undefined) {
      for (const p of prefixes) this.removePath(peer.id, p, c)
      return undefined
    }
    c.received += prefixes.length
    const verdict = validateReceived(attrs, peer, this.identity, nextHop)
    let refused = verdict.ok ? undefined : verdict.reason
    const policy = peer.importPolicy
    if (refused === undefined && peer.type === 'ebgp' && this.exportContext.rfc8212 && (policy === undefined || policy.empty)) {
      refused = 'RFC 8212: no import policy for an eBGP peer'
    }
    if (refused !== undefined || !verdict.ok) {
      for (const p of prefixes) this.removePath(peer.id, p, c)
      return refused
    }
    const clean = verdict.attrs
    const hops = nextHop ?? []
    const source = this.sourceOf(peer, session)
    // Interned once for the whole section: the hot path for a full table.
    let shared: InternedAttributes | undefined
    for (const p of prefixes) {
      if (policy !== undefined) {
        const r = policy.apply(p, clean, peer, FROM_PEER)
        if (r === undefined) {
          this.removePath(peer.id, p, c)
          continue
        }
        if (r !== clean) {
          const own = this.interner.intern(r, hops)
          this.setPath(source, p, own, c)
          this.interner.release(own)
          continue
        }
      }
      shared ??= this.interner.intern(clean, hops)
      this.setPath(source, p, shared, c)
    }
    if (shared !== undefined) this.interner.release(shared)
    return undefined
  }

  /** The source of paths from `peer` over `session`: the same object for as long as the session lasts. */
  private sourceOf(peer: RibPeer, session: PeerSessionInfo): PathSource {
    const known = this.sources.get(peer.id)
    if (known !== undefined && known.peer === peer && known.session === session) return known
    const made: PathSource = { peer, session }
    this.sources.set(peer.id, made)
    return made
  }

  /** Stores a path; `attrs` is held by the caller, the stored path takes its own reference. */
  private setPath(source: PathSource, p: Prefix, attrs: InternedAttributes, c: Counters | undefined): void {
    const { peer, session } = source
    const dest = this.table.obtain(p)
    const old = dest.find(peer?.id, p.pathId)
    if (old !== undefined) {
      // The same path again (a graceful restart's re-send, a route refresh): no change to anyone.
      if (old.stale && c !== undefined) c.stale[p.afi]!--
      if (old.attrs === attrs && old.peer === peer && old.session?.routerId === session?.routerId) {
        old.stale = false
        return
      }
      attrs.refs++
      dest.replace(old, newPath(p.pathId === 0 ? dest.prefix : p, peer, session, attrs))
      this.interner.release(old.attrs)
      if (old === dest) dest.vacate()
    } else {
      attrs.refs++
      // A path without a path id is the destination itself the first time (one object per route), and
      // shares the destination as its prefix after that.
      dest.add((p.pathId === 0 ? dest.claim(source, attrs) : undefined) ?? newPath(p.pathId === 0 ? dest.prefix : p, peer, session, attrs))
      if (c !== undefined) c.accepted++
    }
    this.touch(dest)
  }

  private removePath(peerId: number | undefined, p: Prefix, c: Counters | undefined): void {
    const dest = this.table.get(p)
    if (dest === undefined) return
    const old = dest.find(peerId, p.pathId)
    if (old !== undefined) this.drop(dest, old, c)
  }

  private drop(dest: Destination, path: Path, c: Counters | undefined): void {
    dest.remove(path)
    this.interner.release(path.attrs)
    if (c !== undefined) {
      c.accepted--
      if (path.stale) c.stale[path.prefix.afi]!--
    }
    if (path === dest) dest.vacate()
    this.touch(dest)
  }

  private touch(dest: Destination): void {
    if ((dest.bits & DIRTY) === 0) this.touched.add(dest, dest.best, this.multipathOf(dest))
    dest.bits |= DIRTY | UNSETTLED
  }

  /** The destination with its best path computed (RibView). */
  settle(dest: Destination): Destination {
    if ((dest.bits & UNSETTLED) === 0) return dest
    const hadMultipath = (dest.bits & MULTIPATH) !== 0
    const flags = dest.bits & ~(UNSETTLED | REASON_MASK | MULTIPATH)
    const paths = dest.paths
    let multipath: Path[] | undefined
    if (paths === undefined) {
      dest.best = undefined
      dest.bits = flags
    } else if (!Array.isArray(paths)) {
      dest.best = paths
      dest.bits = flags
    } else {
      const d = decide(paths, this.decision, this.multipath)
      dest.best = d.best
      dest.bits = flags | d.reason
      multipath = d.multipath
    }
    if (multipath !== undefined) {
      this.multipaths.set(dest, multipath)
      dest.bits |= MULTIPATH
    } else if (hadMultipath) this.multipaths.delete(dest)
    return dest
  }

  private multipathOf(dest: Destination): Path[] | undefined {
    return (dest.bits & MULTIPATH) === 0 ? undefined : this.multipaths.get(dest)
  }

  /** Emits the Loc-RIB changes since the last flush and queues them on every Adj-RIB-Out. */
  flush(): void {
    const t = this.touched
    if (t.length === 0) return
    this.touched = this.spare
    this.spare = t
    const { dests, best: prevBest, multi: prevMulti } = t
    const changes: LocRibChange[] | undefined = this.listeners.size > 0 ? [] : undefined
    for (let i = 0; i < t.length; i++) {
      const dest = this.settle(dests[i]!)
      dest.bits &= ~DIRTY
      if (dest.paths === undefined) this.table.delete(dest)
      const previous = prevBest[i]
      if (dest.best === previous && sameMultipath(this.multipathOf(dest), prevMulti[i])) continue
      changes?.push({ prefix: dest.prefix, best: this.bestOf(dest), previous })
      const outs = this.outList
      for (let k = 0; k < outs.length; k++) outs[k]!.offer(dest)
    }
    t.clear()
    if (changes !== undefined && changes.length > 0) for (const l of this.listeners) l(changes)
  }

  subscribe(listener: (changes: readonly LocRibChange[]) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /** A route of our own: ORIGIN IGP, empty AS_PATH, next hop filled per peer on export. */
  originate(prefix: Prefix, attrs?: Partial<PathAttributes>, opts?: OriginateOptions): void {
    const own = this.interner.intern({ ...LOCAL_ATTRS, ...attrs })
    const p = prefix.pathId === 0 ? prefix : { ...prefix, pathId: 0 }
    this.setPath(LOCAL_SOURCE, p, own, undefined)
    this.interner.release(own)
    const path = this.table.get(p)?.find(undefined, 0)
    if (path !== undefined) {
      if (opts?.interface !== undefined) this.interfaces.set(path, opts.interface)
      else this.interfaces.delete(path)
    }
  }

  withdrawOrigin(prefix: Prefix): void {
    this.removePath(undefined, prefix.pathId === 0 ? prefix : { ...prefix, pathId: 0 }, undefined)
  }

  /**
   * RFC 4724 helper: the peer's session went down. Paths of the families in `keepStale` stay, marked
   * stale, until End-of-RIB or sweepStale(); the others go now.
   */
  peerDown(peer: RibPeer, keepStale: ReadonlySet<FamilyKey>): void {
    const c = this.countersOf(peer)
    c.received = 0
    for (const dest of this.table.values()) {
      const keep = keepStale.has(familyKey(dest.prefix.afi, UNICAST))
      for (const path of this.pathsOf(dest, peer.id)) {
        if (!keep) this.drop(dest, path, c)
        else if (!path.stale) {
          path.stale = true
          c.stale[dest.prefix.afi]!++
        }
      }
    }
  }

  /** RFC 4724 §4.2: End-of-RIB from the restarted peer; what it did not re-send is gone. */
  endOfRib(peer: RibPeer, family: FamilyKey): void {
    this.removeStale(peer, family >> 8)
  }

  /** The restart timer expired: every stale path of the peer goes. */
  sweepStale(peer: RibPeer): void {
    this.removeStale(peer, undefined)
  }

  private removeStale(peer: RibPeer, afi: number | undefined): void {
    const c = this.countersOf(peer)
    // A session that did not restart (the common End-of-RIB) holds nothing stale: no walk over the table.
    if ((afi === undefined ? c.stale[1]! + c.stale[2]! : (c.stale[afi] ?? 0)) === 0) return
    for (const dest of this.table.values(afi)) {
      for (const path of this.pathsOf(dest, peer.id)) if (path.stale) this.drop(dest, path, c)
    }
  }

  private pathsOf(dest: Destination, peerId: number): Path[] {
    const out: Path[] = []
    dest.forEachPath((p) => {
      if (p.peer?.id === peerId) out.push(p)
    })
    return out
  }

  private bestOf(dest: Destination): BestPath | undefined {
    const best = dest.best
    if (best === undefined) return undefined
    return { path: best, reason: REASONS[dest.bits & REASON_MASK]!, multipath: this.multipathOf(dest) ?? [best] }
  }

  best(prefix: Prefix): BestPath | undefined {
    const dest = this.table.get(prefix)
    return dest === undefined ? undefined : this.bestOf(this.settle(dest))
  }

  /** Every path of the prefix, best or not. */
  paths(prefix: Prefix): readonly Path[] {
    return this.table.get(prefix)?.pathList() ?? []
  }

  *locRib(): IterableIterator<[Prefix, BestPath]> {
    for (const dest of this.table.values()) {
      const best = this.bestOf(this.settle(dest))
      if (best !== undefined) yield [dest.prefix, best]
    }
  }

  *adjRibIn(peer: RibPeer): IterableIterator<Path> {
    for (const dest of this.table.values()) yield* this.pathsOf(dest, peer.id)
  }

  counts(peer: RibPeer): PeerCounts {
    const c = this.counters.get(peer.id)
    return { received: c?.received ?? 0, accepted: c?.accepted ?? 0 }
  }

  /** The session reached Established: its Adj-RIB-Out starts with the whole Loc-RIB queued. */
  attachPeer(peer: RibPeer): AdjRibOut {
    this.outs.get(peer.id)?.clear()
    const out = new PeerRibOut(peer, this)
    this.outs.set(peer.id, out)
    this.outList = [...this.outs.values()]
    for (const dest of this.table.values()) out.offer(this.settle(dest))
    return out
  }

  detachPeer(peer: RibPeer): void {
    this.outs.get(peer.id)?.clear()
    this.outs.delete(peer.id)
    this.sources.delete(peer.id)
    this.outList = [...this.outs.values()]
  }

  live(dest: Destination): Destination | undefined {
    return this.table.get(dest.prefix)
  }

  destinations(afi?: number): Iterable<Destination> {
    return this.table.values(afi)
  }

  interfaceOf(path: Path): string | undefined {
    return this.interfaces.get(path)
  }
}
