// The destination table: every prefix held, its paths (GoBGP's known path list), its best as last decided
// and what changed since the last flush. Its methods are the only way in: storage, flags, ids and reference
// counts on attribute sets stay inside. It applies no policy, keeps no counters, knows no Adj-RIB-Out.

import type { AttributeInterner, InternedAttributes } from '../codec/intern.js'
import type { Ipv4Prefixes, Ipv6Prefixes, Prefix } from '../codec/nlri.js'
import { decide, REASONS, type DecisionContext } from './best-path.js'
import { COMPACT, DestinationColumns, LEN_SHIFT, MULTIPATH, REASON_MASK, STALE, UNSETTLED, type PathSource } from './columns.js'
import { Changes, type BestChangeSink } from './settle.js'
import type { BestPath, Path, PeerSessionInfo, RibPeer } from './types.js'

export type { PathSource } from './columns.js'
export type { BestChangeSink, PreviousBest } from './settle.js'

/** What setPath() and removePath() did, as flags, for the caller's counters. */
export const PATH_ADDED = 1
export const PATH_REMOVED = 2
/** The path replaced or removed was stale (graceful restart). */
export const PATH_WAS_STALE = 4

/** Destinations per peer remembered for a session's end (a node's blocks, a reflector client's); past it, a scan. */
const FEW = 64

/** A stored path, as an object literal so that V8 pretenures it. */
function newPath(prefix: Prefix, peer: RibPeer | undefined, session: PeerSessionInfo | undefined, attrs: InternedAttributes, stale = false): Path {
  return { prefix, peer, session, attrs, stale }
}

/** The path among `paths` from this peer (undefined: our own) with this path id. */
function findIn(paths: Path | Path[] | undefined, peerId: number | undefined, pathId: number): Path | undefined {
  if (paths === undefined) return undefined
  if (!Array.isArray(paths)) return paths.peer?.id === peerId && paths.prefix.pathId === pathId ? paths : undefined
  for (const x of paths) if (x.peer?.id === peerId && x.prefix.pathId === pathId) return x
  return undefined
}

/**
 * A destination's only path, when it comes from a peer with path id 0 (a full table from one session), is
 * compact: its source and attribute set as two ids in the columns, no object. Any other case (several
 * paths, add-path ids, our own routes) keeps Path objects, and the best one after settle().
 */
export class Destinations {
  private readonly t: DestinationColumns
  private readonly changes: Changes
  /** The multipath set of each destination that has one (flagged MULTIPATH). */
  private readonly multipaths = new Map<number, Path[]>()
  /**
   * Where each peer has had a path, while at most FEW destinations (false: more, or a run): a session
   * ending visits those, not the whole table, so 2,000 reflector clients going down cost 2,000 x their few
   * routes, not 2,000 walks of the table. A superset: a destination since left or reused is checked again.
   */
  private readonly fewFrom = new Map<number, number[] | false>()
  /** The last peer found to have many (the ingest of a full table asks once per prefix). */
  private manyFrom = -1

  /** `interner`: where attribute sets are read back by id and released when no path holds them. */
  constructor(
    private readonly interner: AttributeInterner,
    private readonly decision: DecisionContext,
    private readonly multipath: boolean,
  ) {
    this.t = new DestinationColumns(interner)
    this.changes = new Changes(this.t, this)
  }

  /** Destinations held: those emptied since the last flush, and those an Adj-RIB-Out has yet to withdraw, included. */
  get size(): number {
    return this.t.size
  }

  /** Whether `d` is a destination (not an index freed). */
  isLive(d: number): boolean {
    return this.t.isLive(d)
  }

  /** The destination of `p` (any path id), or -1. */
  find(p: Prefix): number {
    return this.t.get(p)
  }

  /** The prefix (path id 0) as a new object. */
  prefix(d: number): Prefix {
    return this.t.prefix(d)
  }

  afi(d: number): 1 | 2 {
    return this.t.afi(d)
  }

  len(d: number): number {
    return (this.t.bits[d]! >>> LEN_SHIFT) & 0xff
  }

  /** The IPv4 network address, unsigned. */
  ipv4(d: number): number {
    return this.t.addr4[d]! >>> 0
  }

  ipv6(d: number): Uint8Array {
    return this.t.ipv6(d)
  }

  /** The IPv6 network address of `d` copied into `out` (16 bytes), which is returned. */
  ipv6Into(d: number, out: Uint8Array): Uint8Array {
    return this.t.ipv6Into(d, out)
  }

  /** Every live destination: IPv4 (shortest prefixes first), then IPv6; `afi` limits to one family. */
  indices(afi?: number): number[] {
    return this.t.indices(afi)
  }

  // Paths.

  /** Every path of `d`, best or not (a compact one as a new object). */
  paths(d: number): Path[] {
    const t = this.t
    if ((t.bits[d]! & COMPACT) !== 0) return [this.bestPath(d)!]
    const p = t.paths.get(d)
    return p === undefined ? [] : Array.isArray(p) ? [...p] : [p]
  }

  /** The attributes of the path from this peer for `p` (its path id), or undefined. */
  attrsFrom(p: Prefix, peerId: number): InternedAttributes | undefined {
    const t = this.t
    const d = t.get(p)
    if (d < 0) return undefined
    if ((t.bits[d]! & COMPACT) !== 0) return p.pathId === 0 && t.source.get(d)!.peer?.id === peerId ? t.attrs.get(d) : undefined
    return findIn(t.paths.get(d), peerId, p.pathId)?.attrs
  }

  /** Our own path for `p` (path id 0): the stored object, the same until it is replaced. */
  ownPath(p: Prefix): Path | undefined {
    const d = this.t.get(p)
    return d < 0 ? undefined : findIn(this.t.paths.get(d), undefined, 0)
  }

  /**
   * Stores the path from `source` for `p` (replacing the one with its path id), made fresh (not stale).
   * `attrs` stays the caller's: the table takes its own reference. Returns PATH_* flags.
   */
  setPath(source: PathSource, p: Prefix, attrs: InternedAttributes): number {
    const t = this.t
    const d = t.obtain(p)
    const bits = t.bits[d]!
    const { peer, session } = source
    if (peer !== undefined) this.noteFrom(peer.id, d, d + 1)
    if ((bits & COMPACT) !== 0) {
      const held = t.source.get(d)!
      if (p.pathId === 0 && held.peer?.id === peer?.id) {
        const was = (bits & STALE) !== 0 ? PATH_WAS_STALE : 0
        // The same path again (a graceful restart's re-send, a route refresh): no change to anyone.
        if (t.attrs.get(d) === attrs && held.peer === peer && held.session?.routerId === session?.routerId) {
          t.bits[d] = bits & ~STALE
          return was
        }
        this.changes.touch(d)
        attrs.refs++
        this.interner.release(t.attrs.get(d)!)
        t.source.set(d, source)
        t.attrs.set(d, attrs)
        t.bits[d]! &= ~STALE
        return was
      }
      // Another path joins: the compact one becomes an object like it (with the new one's prefix object
      // when that has path id 0: one per destination).
      this.changes.touch(d)
      this.expand(d, p.pathId === 0 ? p : t.prefix(d))
    } else if (t.paths.get(d) === undefined && p.pathId === 0 && peer !== undefined) {
      // The common case: a prefix's only path, from a peer, kept compact.
      this.changes.touch(d)
      attrs.refs++
      t.source.set(d, source)
      t.attrs.set(d, attrs)
      t.bits[d] = (t.bits[d]! & ~STALE) | COMPACT
      // A compact destination keeps no best path object (one settled before its paths went would stay).
      t.best.set(d, undefined)
      return PATH_ADDED
    }
    const old = findIn(t.paths.get(d), peer?.id, p.pathId)
    let result = PATH_ADDED
    if (old !== undefined) {
      result = old.stale ? PATH_WAS_STALE : 0
      if (old.attrs === attrs && old.peer === peer && old.session?.routerId === session?.routerId) {
        old.stale = false
        return result
      }
      attrs.refs++
      this.replaceObject(d, old, newPath(old.prefix, peer, session, attrs))
      this.interner.release(old.attrs)
    } else {
      attrs.refs++
      this.addObject(d, newPath(this.sharedPrefix(d, p), peer, session, attrs))
    }
    this.changes.touch(d)
    return result
  }

  /** Removes the path from this peer (undefined: ours) for `p` (its path id). Returns PATH_* flags. */
  removePath(peerId: number | undefined, p: Prefix): number {
    const t = this.t
    const d = t.get(p)
    if (d < 0) return 0
    if ((t.bits[d]! & COMPACT) !== 0) return p.pathId === 0 && t.source.get(d)!.peer?.id === peerId ? this.dropCompact(d) : 0
    const old = findIn(t.paths.get(d), peerId, p.pathId)
    return old === undefined ? 0 : this.dropObject(d, old)
  }

  /** Whether addRun() may be used: new destinations take consecutive indices (none freed waits to be reused). */
  get runsAppend(): boolean {
    return this.t.appendOnly
  }

  /**
   * A section of IPv4 or IPv6 prefixes without path ids from `source`, all with `attrs` (the caller's
   * reference): each new one stored with a few bulk writes and no object. The positions in the section of
   * the prefixes held before go into `held`, for the caller to setPath(). Returns how many were new (each
   * PATH_ADDED). Only while runsAppend.
   */
  addRun(source: PathSource, prefixes: Ipv4Prefixes | Ipv6Prefixes, attrs: InternedAttributes, held: number[]): number {
    const t = this.t
    const from = t.used
    if (prefixes.addr instanceof Int32Array) t.obtainIpv4Run(prefixes.addr, prefixes.len, prefixes.count, held)
    else t.obtainIpv6Run(prefixes.addr, prefixes.len, prefixes.count, held)
    const to = t.used
    if (source.peer !== undefined) this.noteFrom(source.peer.id, from, to)
    t.storeCompact(from, to, source, attrs)
    this.changes.addNew(from, to)
    attrs.refs += to - from
    return to - from
  }

  /** Marks every path from this peer in `afi` stale (graceful restart); returns how many were not before. */
  markStale(peerId: number, afi: number): number {
    const t = this.t
    let n = 0
    for (const d of this.visitFor(peerId, afi)) {
      const bits = t.bits[d]!
      if ((bits & COMPACT) !== 0) {
        if ((bits & STALE) === 0 && t.source.get(d)!.peer?.id === peerId) {
          t.bits[d] = bits | STALE
          n++
        }
        continue
      }
      for (const path of this.objectsFrom(d, peerId)) {
        if (path.stale) continue
        path.stale = true
        n++
      }
    }
    return n
  }

  /**
   * Removes the paths from this peer in `afi` (only the stale ones when `staleOnly`). Returns how many went
   * and how many of those were stale.
   */
  removeFrom(peerId: number, afi: number, staleOnly: boolean): { readonly removed: number; readonly stale: number } {
    const t = this.t
    let removed = 0
    let stale = 0
    const count = (flags: number): void => {
      removed++
      if ((flags & PATH_WAS_STALE) !== 0) stale++
    }
    for (const d of this.visitFor(peerId, afi)) {
      const bits = t.bits[d]!
      if ((bits & COMPACT) !== 0) {
        if ((!staleOnly || (bits & STALE) !== 0) && t.source.get(d)!.peer?.id === peerId) count(this.dropCompact(d))
        continue
      }
      for (const path of this.objectsFrom(d, peerId)) if (!staleOnly || path.stale) count(this.dropObject(d, path))
    }
    const few = this.fewFrom.get(peerId)
    if (!staleOnly && few !== undefined && few !== false) {
      const left = few.filter((d) => this.t.isLive(d) && this.t.afi(d) !== afi)
      if (left.length === 0) this.fewFrom.delete(peerId)
      else this.fewFrom.set(peerId, left)
    }
    return { removed, stale }
  }

  /** `peerId` has (had) a path at destinations [from, to). */
  private noteFrom(peerId: number, from: number, to: number): void {
    if (peerId === this.manyFrom) return
    const few = this.fewFrom.get(peerId)
    if (few === false) {
      this.manyFrom = peerId
      return
    }
    if (few === undefined) {
      this.fewFrom.set(peerId, to - from > FEW ? false : Array.from({ length: to - from }, (_, i) => from + i))
      return
    }
    for (let d = from; d < to; d++) {
      if (few.includes(d)) continue
      if (few.length === FEW) {
        this.fewFrom.set(peerId, false)
        return
      }
      few.push(d)
    }
  }

  /** The live destinations of `afi` where `peerId` may have a path: the few it had, or every one. */
  private visitFor(peerId: number, afi: number): readonly number[] {
    const few = this.fewFrom.get(peerId)
    if (few === undefined) return []
    if (few === false) return this.t.indices(afi)
    return few.filter((d) => this.t.isLive(d) && this.t.afi(d) === afi)
  }

  /** The path objects of `d` from this peer (not a compact path). */
  private objectsFrom(d: number, peerId: number): Path[] {
    const p = this.t.paths.get(d)
    if (p === undefined) return []
    if (!Array.isArray(p)) return p.peer?.id === peerId ? [p] : []
    return p.filter((x) => x.peer?.id === peerId)
  }

  /** `p`, or for path id 0 the prefix object a path of `d` already has: one per destination, not per path. */
  private sharedPrefix(d: number, p: Prefix): Prefix {
    if (p.pathId !== 0) return p
    const paths = this.t.paths.get(d)
    if (paths === undefined) return p
    if (!Array.isArray(paths)) return paths.prefix.pathId === 0 ? paths.prefix : p
    for (const x of paths) if (x.prefix.pathId === 0) return x.prefix
    return p
  }

  /** The compact path of `d` as an object among its paths, with `prefix` (path id 0) as its prefix. */
  private expand(d: number, prefix: Prefix): void {
    const t = this.t
    const source = t.source.get(d)!
    const bits = t.bits[d]!
    t.paths.set(d, newPath(prefix, source.peer, source.session, t.attrs.get(d)!, (bits & STALE) !== 0))
    t.source.set(d, undefined)
    t.attrs.set(d, undefined)
    t.bits[d] = bits & ~(COMPACT | STALE)
  }

  private addObject(d: number, path: Path): void {
    const paths = this.t.paths
    const p = paths.get(d)
    if (p === undefined) paths.set(d, path)
    else if (Array.isArray(p)) p.push(path)
    else paths.set(d, [p, path])
  }

  private replaceObject(d: number, old: Path, path: Path): void {
    const paths = this.t.paths
    const p = paths.get(d)
    if (p === old) paths.set(d, path)
    else if (Array.isArray(p)) p[p.indexOf(old)] = path
  }

  private dropCompact(d: number): number {
    const t = this.t
    this.changes.touch(d)
    const bits = t.bits[d]!
    this.interner.release(t.attrs.get(d)!)
    t.source.set(d, undefined)
    t.attrs.set(d, undefined)
    t.bits[d] = bits & ~(COMPACT | STALE)
    return PATH_REMOVED | ((bits & STALE) !== 0 ? PATH_WAS_STALE : 0)
  }

  private dropObject(d: number, old: Path): number {
    const paths = this.t.paths
    const p = paths.get(d)
    if (p === old) paths.set(d, undefined)
    else if (Array.isArray(p)) {
      const i = p.indexOf(old)
      if (i >= 0) {
        p.splice(i, 1)
        if (p.length === 1) paths.set(d, p[0])
      }
    }
    this.interner.release(old.attrs)
    this.changes.touch(d)
    return PATH_REMOVED | (old.stale ? PATH_WAS_STALE : 0)
  }

  // The best path (GoBGP's Calculate), decided when first read after a change.

  /** Decides `d`'s best path (and multipath set) if a change left it undecided. */
  settle(d: number): void {
    const t = this.t
    const bits = t.bits[d]!
    if ((bits & UNSETTLED) === 0) return
    const hadMultipath = (bits & MULTIPATH) !== 0
    const flags = bits & ~(UNSETTLED | REASON_MASK | MULTIPATH)
    const paths = t.paths.get(d)
    let multipath: Path[] | undefined
    if ((bits & COMPACT) !== 0 || paths === undefined) {
      // A compact path is its own best and needs no object here.
      t.best.set(d, undefined)
      t.bits[d] = flags
    } else if (!Array.isArray(paths)) {
      t.best.set(d, paths)
      t.bits[d] = flags
    } else {
      const r = decide(paths, this.decision, this.multipath)
      t.best.set(d, r.best)
      t.bits[d] = flags | r.reason
      multipath = r.multipath
    }
    if (multipath !== undefined) {
      this.multipaths.set(d, multipath)
      t.bits[d] |= MULTIPATH
    } else if (hadMultipath) this.multipaths.delete(d)
  }

  /** The settled best of `d` with its reason and multipath set (settled first); `prefix` names it if given. */
  best(d: number, prefix?: Prefix): BestPath | undefined {
    this.settle(d)
    const best = this.bestPath(d, prefix)
    if (best === undefined) return undefined
    return { path: best, reason: REASONS[this.t.bits[d]! & REASON_MASK]!, multipath: this.multipathOf(d) ?? [best] }
  }

  /** The settled best path of `d` (a compact one as a new object, with `prefix` if given). */
  bestPath(d: number, prefix?: Prefix): Path | undefined {
    const t = this.t
    const bits = t.bits[d]!
    if ((bits & COMPACT) === 0) return t.best.get(d)
    const source = t.source.get(d)!
    return newPath(prefix ?? t.prefix(d), source.peer, source.session, t.attrs.get(d)!, (bits & STALE) !== 0)
  }

  /** Where the settled best of `d` came from (the Path itself when it is an object), or undefined: none. */
  bestSource(d: number): PathSource | undefined {
    const t = this.t
    return (t.bits[d]! & COMPACT) !== 0 ? t.source.get(d) : t.best.get(d)
  }

  bestAttrs(d: number): InternedAttributes | undefined {
    const t = this.t
    return (t.bits[d]! & COMPACT) !== 0 ? t.attrs.get(d) : t.best.get(d)?.attrs
  }

  /** The settled equal-cost set of `d` (the best first), when there is one. */
  multipathOf(d: number): Path[] | undefined {
    return (this.t.bits[d]! & MULTIPATH) === 0 ? undefined : this.multipaths.get(d)
  }

  // Holders: an Adj-RIB-Out that sent `d` keeps its index until it has withdrawn it.

  hold(d: number): void {
    this.t.hold(d)
  }

  /** An Adj-RIB-Out withdrew or forgot `d`: an emptied destination nobody holds is freed. */
  unhold(d: number): void {
    if (this.t.unhold(d)) this.t.release(d)
  }

  // The flush.

  /** Whether any destination changed since the last settleChanged(). */
  get changed(): boolean {
    return this.changes.any
  }

  /**
   * Settles every destination changed since the last call and tells `sink` of each whose best path is
   * not the one it had then; frees those left empty and unheld. Destinations that `sink` changes again
   * wait for the next call.
   */
  settleChanged(sink: BestChangeSink): void {
    this.changes.settle(sink)
  }
}
