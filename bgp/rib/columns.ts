// The storage under the destination table: a destination is an index; its flags, address, compact path
// (source and attribute ids) and path objects live in columns, found through one Ipv4Index per IPv4 length
// and one Ipv6Index. Only destinations.ts and settle.ts read these; nothing here decides or counts.

import { ipv4Prefix, ipv6Prefix, type Prefix } from '../codec/nlri.js'
import type { InternedAttributes } from '../codec/intern.js'
import type { Path, PeerSessionInfo, RibPeer } from './types.js'
import { grown, Ipv4Index, Ipv6Column, Ipv6Index } from '../../net/index.js'

// bits[d]: the best path's reason (low byte), DIRTY, UNSETTLED, COMPACT, STALE, then the AFI (2 bits), the
// prefix length (8 bits), MULTIPATH and LIVE.
export const REASON_MASK = 0xff
/** Set while the destination waits for flush(). */
export const DIRTY = 1 << 8
/** Set while the destination's best path is not yet decided again. */
export const UNSETTLED = 1 << 9
/** The destination's one path is held as columns (source, attrs), not as an object. */
export const COMPACT = 1 << 10
/** That compact path's `stale`. */
export const STALE = 1 << 11
/** The AFI (1 or 2) sits at bits >>> AFI_SHIFT & 3. */
export const AFI_SHIFT = 12
/** The prefix length sits at bits >>> LEN_SHIFT & 0xff. */
export const LEN_SHIFT = 14
/**
 * Set while the destination has a multipath set (ECMP), which destinations.ts keeps in a map of its own: few
 * destinations ever have one.
 */
export const MULTIPATH = 1 << 22
/** The index is a destination of the table (not free). */
const LIVE = 1 << 23

/**
 * Where a path came from: the peer and the session it came over (both undefined: this speaker's own). The
 * RIB makes one per session and shares it among all the session's paths.
 */
export interface PathSource {
  readonly peer: RibPeer | undefined
  readonly session: PeerSessionInfo | undefined
}

const PAGE_BITS = 15
const PAGE_SIZE = 1 << PAGE_BITS
const PAGE_MASK = PAGE_SIZE - 1

/**
 * A column of references by destination index, in pages of 32,768 (256 KB, so V8 makes each in its
 * large-object space instead of copying it out of the young generation), each made when a value first
 * goes into its range: a column that stays empty for a full table (the path objects of compact
 * destinations) costs nothing, not even a place for the collector to scan. It never grows by copying,
 * so a table arriving does not copy and collect the references it already holds.
 */
class Column<T> {
  /** Room for 2M destinations before the list itself grows. */
  private readonly pages: ((T | undefined)[] | undefined)[] = new Array<undefined>(64).fill(undefined)

  // Reads past the end of `pages` are checked, not left to yield undefined: V8 deoptimizes code that
  // reads out of bounds.
  get(d: number): T | undefined {
    const p = d >>> PAGE_BITS
    const page = p < this.pages.length ? this.pages[p] : undefined
    return page === undefined ? undefined : page[d & PAGE_MASK]
  }

  set(d: number, v: T | undefined): void {
    const p = d >>> PAGE_BITS
    let page = p < this.pages.length ? this.pages[p] : undefined
    if (page === undefined) {
      if (v === undefined) return
      page = this.newPage(p)
    }
    page[d & PAGE_MASK] = v
  }

  private newPage(p: number): (T | undefined)[] {
    while (this.pages.length <= p) this.pages.push(undefined)
    // Holes read as undefined, so the page is not filled first. One store of undefined gives the page the
    // element kind references need before the first reference goes in: every page has one shape, and
    // set() stays monomorphic.
    const page = new Array<T | undefined>(PAGE_SIZE)
    page[0] = undefined
    this.pages[p] = page
    return page
  }
}

/** Where an AttributeColumn reads its sets back: the RIB's interner. */
export interface AttributeIds {
  get(id: number): InternedAttributes | undefined
}

/**
 * A compact path's attribute set by destination, as the interner's id for it: 4 bytes, and nothing for the
 * collector to trace or remember (a reference to a young set stored in an old page would be). The
 * destination table holds a reference for each destination (InternedAttributes.refs), so an id here is
 * never given to another set while it is stored.
 */
class AttributeColumn {
  ids = new Int32Array(1024)

  constructor(private readonly interner: AttributeIds) {}

  get(d: number): InternedAttributes | undefined {
    return this.interner.get(this.ids[d]!)
  }

  set(d: number, v: InternedAttributes | undefined): void {
    this.ids[d] = v === undefined ? 0 : v.id
  }

  fill(from: number, to: number, v: InternedAttributes): void {
    this.ids.fill(v.id, from, to)
  }
}

/**
 * A compact path's source by destination, as a number: like AttributeColumn, with the few sources (one per
 * session) numbered here, each number kept while a destination holds it.
 */
class SourceColumn {
  ids = new Int32Array(1024)
  private readonly byId: (PathSource | undefined)[] = [undefined]
  private readonly refs: number[] = [0]
  private readonly idOf = new Map<PathSource, number>()
  private readonly freeIds: number[] = []

  get(d: number): PathSource | undefined {
    return this.byId[this.ids[d]!]
  }

  set(d: number, v: PathSource | undefined): void {
    const old = this.ids[d]!
    this.ids[d] = v === undefined ? 0 : this.take(v, 1)
    if (old !== 0) this.drop(old, 1)
  }

  /** `v` at every index of [from, to), which hold none. */
  fill(from: number, to: number, v: PathSource): void {
    // Nothing to hold: numbering `v` for no destination would keep it until the same source came again.
    if (from < to) this.ids.fill(this.take(v, to - from), from, to)
  }

  private take(v: PathSource, n: number): number {
    let id = this.idOf.get(v)
    if (id === undefined) {
      id = this.freeIds.pop() ?? this.byId.length
      this.idOf.set(v, id)
      this.byId[id] = v
      this.refs[id] = 0
    }
    this.refs[id]! += n
    return id
  }

  private drop(id: number, n: number): void {
    if ((this.refs[id]! -= n) > 0) return
    this.idOf.delete(this.byId[id]!)
    this.byId[id] = undefined
    this.freeIds.push(id)
  }
}

/** The columns of every destination, by index; the meaning of their contents is destinations.ts's. */
export class DestinationColumns {
  /** Flags, AFI and length (see above); 0 for a free index. */
  bits = new Int32Array(1024)
  /** The IPv4 network address (as int32); the IPv4 indices read their keys back from here. */
  addr4 = new Int32Array(1024)
  /** The IPv6 network address, by destination; the IPv6 index reads its keys back from here. */
  readonly addr6 = new Ipv6Column()
  /** COMPACT: the one path's source. */
  readonly source = new SourceColumn()
  /** COMPACT: the one path's attributes. */
  readonly attrs: AttributeColumn
  /** Not COMPACT: the paths (one without an array, several in one), or undefined when there is none. */
  readonly paths = new Column<Path | Path[]>()
  /** Not COMPACT: the best path as last settled. */
  readonly best = new Column<Path>()
  /** How many Adj-RIB-Outs hold the destination: an emptied one keeps its index until none does. */
  holders = new Uint16Array(1024)
  /** Indices used so far; free ones below it wait in `free`. */
  private end = 0
  private readonly free: number[] = []
  private count = 0
  private readonly v4 = new Array<Ipv4Index | undefined>(33).fill(undefined)
  private readonly v6 = new Ipv6Index(this)

  /** `interner`: where the attribute sets of compact paths are read back by id. */
  constructor(interner: AttributeIds) {
    this.attrs = new AttributeColumn(interner)
  }

  /** Destinations held (those emptied but still held by an Adj-RIB-Out included). */
  get size(): number {
    return this.count
  }

  isLive(d: number): boolean {
    return (this.bits[d]! & LIVE) !== 0
  }

  afi(d: number): 1 | 2 {
    return ((this.bits[d]! >>> AFI_SHIFT) & 3) as 1 | 2
  }

  /** The prefix length. */
  len(d: number): number {
    return (this.bits[d]! >>> LEN_SHIFT) & 0xff
  }

  /** The IPv6 network address of an IPv6 destination, as a view valid until the index serves another. */
  ipv6(d: number): Uint8Array {
    return this.addr6.get(d)
  }

  /** The IPv6 network address of `d` copied into `out` (16 bytes), which is returned: no view is made. */
  ipv6Into(d: number, out: Uint8Array): Uint8Array {
    return this.addr6.copyTo(d, out)
  }

  /** The prefix (path id 0) as a new object. */
  prefix(d: number): Prefix {
    return this.afi(d) === 1 ? ipv4Prefix(this.addr4[d]! >>> 0, this.len(d)) : ipv6Prefix(this.addr6.get(d), this.len(d))
  }

  /** The destination of `p` (any path id), or -1. */
  get(p: Prefix): number {
    if (p.afi === 1) return this.v4[p.len]?.get(p.addr) ?? -1
    return this.v6.get(p.addr, p.len)
  }

  /** The destination of `p` (any path id), made (empty) when missing. */
  obtain(p: Prefix): number {
    if (p.afi === 1) return this.obtainIpv4(p.addr, p.len)
    const next = this.take()
    const d = this.v6.obtain(p.addr, p.len, next)
    if (d !== next) return d
    this.addr6.set(next, p.addr)
    this.made(next, 2, p.len)
    return next
  }

  /** The destination of the IPv4 network `addr`/`len` (host bits clear), made (empty) when missing. */
  obtainIpv4(addr: number, len: number): number {
    const next = this.take()
    const d = this.v4Index(len).obtain(addr, next)
    if (d !== next) return d
    this.addr4[d] = addr
    this.made(next, 1, len)
    return next
  }

  /** The index of the IPv4 networks of length `len`, made when missing. */
  private v4Index(len: number): Ipv4Index {
    return (this.v4[len] ??= new Ipv4Index(this, len))
  }

  /**
   * The destinations of a section's IPv4 networks (host bits clear), in a table that reuses no freed index
   * (appendOnly): each new network takes the next index, so the section's new destinations are [used
   * before, used after), repeats within the section finding theirs. The positions in the section of the
   * networks held before go into `held`, for the caller to take the general way. One loop here rather than
   * obtainIpv4 per network: a dump's first prefixes run in the interpreter, where every call costs.
   */
  obtainIpv4Run(addrs: Int32Array, lens: Uint8Array, count: number, held: number[]): void {
    // Grown before the loop, not in it: a branch first taken in optimized code deoptimizes it.
    while (this.end + count > this.bits.length) this.grow()
    const bits = this.bits
    const addr4 = this.addr4
    const from = this.end
    let end = from
    let len = -1
    let m: Ipv4Index | undefined
    for (let i = 0; i < count; i++) {
      const l = lens[i]!
      if (l !== len) {
        len = l
        m = this.v4Index(l)
      }
      const d = m!.obtain(addrs[i]!, end)
      if (d === end) {
        // In place before the next probe, which may meet this destination and reads its address back.
        addr4[d] = addrs[i]!
        bits[d] = LIVE | (1 << AFI_SHIFT) | (l << LEN_SHIFT)
        end++
      } else if (d < from) held.push(i)
    }
    this.end = end
    this.count += end - from
  }

  /** obtainIpv4Run() for IPv6 networks: network i is addrs[16i, 16i + 16) with length lens[i]. */
  obtainIpv6Run(addrs: Uint8Array, lens: Uint8Array, count: number, held: number[]): void {
    while (this.end + count > this.bits.length) this.grow()
    const bits = this.bits
    const v6 = this.v6
    const from = this.end
    let end = from
    for (let i = 0; i < count; i++) {
      const l = lens[i]!
      const d = v6.obtainAt(addrs, i * 16, l, end)
      if (d === end) {
        this.addr6.setAt(d, addrs, i * 16)
        bits[d] = LIVE | (2 << AFI_SHIFT) | (l << LEN_SHIFT)
        end++
      } else if (d < from) held.push(i)
    }
    this.end = end
    this.count += end - from
  }

  /** Whether new destinations take consecutive indices from `used` (none freed waits to be reused). */
  get appendOnly(): boolean {
    return this.free.length === 0
  }

  /** Indices used so far: the next new destination's when appendOnly. */
  get used(): number {
    return this.end
  }

  /**
   * Destinations [from, to), made empty, each take one compact path (source and attributes, the caller
   * counting the references), marked for the next flush.
   */
  storeCompact(from: number, to: number, source: PathSource, attrs: InternedAttributes): void {
    const bits = this.bits
    for (let d = from; d < to; d++) bits[d] = bits[d]! | DIRTY | UNSETTLED | COMPACT
    this.source.fill(from, to, source)
    this.attrs.fill(from, to, attrs)
  }

  /** The index the next new destination takes (the table grown to hold it). */
  private take(): number {
    const next = this.free.length > 0 ? this.free[this.free.length - 1]! : this.end
    if (next === this.bits.length) this.grow()
    return next
  }

  private made(d: number, afi: 1 | 2, len: number): void {
    if (d === this.end) this.end++
    else this.free.pop()
    this.bits[d] = LIVE | (afi << AFI_SHIFT) | (len << LEN_SHIFT)
    this.count++
  }

  private grow(): void {
    // Four times while the table is small, like the index maps.
    const size = this.bits.length * (this.bits.length < 1 << 20 ? 4 : 2)
    this.bits = grown(this.bits, size)
    this.addr4 = grown(this.addr4, size)
    this.holders = grown(this.holders, size)
    this.source.ids = grown(this.source.ids, size)
    this.attrs.ids = grown(this.attrs.ids, size)
  }

  /** An Adj-RIB-Out now holds `d`. */
  hold(d: number): void {
    this.holders[d]!++
  }

  /** Whether an Adj-RIB-Out holds `d`. */
  isHeld(d: number): boolean {
    return this.holders[d] !== 0
  }

  /** An Adj-RIB-Out no longer holds `d`: true when none does. */
  unhold(d: number): boolean {
    return --this.holders[d]! === 0
  }

  /** Whether the destination has no path left. */
  isEmpty(d: number): boolean {
    return (this.bits[d]! & COMPACT) === 0 && this.paths.get(d) === undefined
  }

  /**
   * Frees `d` if it has no path, no Adj-RIB-Out holds it (one that does still has to withdraw it) and no
   * flush waits for it; the index then serves another prefix.
   */
  release(d: number): void {
    if (!this.isLive(d) || (this.bits[d]! & DIRTY) !== 0 || !this.isEmpty(d) || this.holders[d] !== 0) return
    const len = this.len(d)
    if (this.afi(d) === 1) this.v4[len]!.delete(this.addr4[d]!)
    else this.v6.delete(d)
    this.bits[d] = 0
    this.best.set(d, undefined)
    this.free.push(d)
    this.count--
    // Empty again (a peer's whole table gone): indices start over, so the next table's come in one run.
    if (this.count === 0) {
      this.free.length = 0
      this.end = 0
    }
  }

  /** Every live destination: IPv4 (shortest prefixes first), then IPv6; `afi` limits to one family. */
  indices(afi?: number): number[] {
    const out: number[] = []
    if (afi === undefined || afi === 1) for (const m of this.v4) if (m !== undefined) for (const d of m.values()) out.push(d)
    if ((afi === undefined || afi === 2) && this.v6.size > 0) {
      const bits = this.bits
      for (let d = 0; d < this.end; d++) if ((bits[d]! & LIVE) !== 0 && ((bits[d]! >>> AFI_SHIFT) & 3) === 2) out.push(d)
    }
    return out
  }
}
