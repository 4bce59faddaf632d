// The Loc-RIB a page at a time, in prefix order: a sorted copy of its prefixes kept current by the
// speaker's typed deltas (a few changes are spliced in when a page is asked for; after a burst, a table
// dump, the copy is rebuilt once instead of splicing each prefix). Reads only; no path is copied.

import { comparePrefixes, ipv4Prefix, ipv6Prefix, type Prefix } from './codec/index.js'
import { DELTA_NEW, DELTA_WITHDRAWN, type LocRibDeltas } from './rib/loc-rib-delta.js'

/** One page: the prefixes, how many there are in all, and whether any come after the last. */
export interface PrefixPage {
  readonly items: Prefix[]
  readonly total: number
  readonly more: boolean
}

/**
 * A sorted copy of a table's prefixes (path id 0), kept current by add() and remove() as the table
 * changes, so every page is a binary search and a slice however much the RIB churns. IPv4 keys are
 * `addr * 64 + len` (exact below 2^38), sorted numerically; building it is one native numeric sort.
 */
export class SortedPrefixes {
  private v4: number[]
  private readonly v6: Prefix[]

  constructor(prefixes: Iterable<Prefix>) {
    const v4: number[] = []
    const v6: Prefix[] = []
    for (const p of prefixes) {
      if (p.afi === 1) v4.push(p.addr * 64 + p.len)
      else v6.push(p)
    }
    this.v4 = Array.from(Float64Array.from(v4).sort())
    this.v6 = v6.sort(comparePrefixes)
  }

  get size(): number {
    return this.v4.length + this.v6.length
  }

  /** The first IPv4 position whose key is above `k` (or at least `k` when `inclusive`). */
  private find4(k: number, inclusive: boolean): number {
    let lo = 0
    let hi = this.v4.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (inclusive ? this.v4[mid]! < k : this.v4[mid]! <= k) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  private find6(p: Prefix, inclusive: boolean): number {
    let lo = 0
    let hi = this.v6.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      const c = comparePrefixes(this.v6[mid]!, p)
      if (inclusive ? c < 0 : c <= 0) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  add(p: Prefix): void {
    if (p.afi === 1) {
      const k = p.addr * 64 + p.len
      const i = this.find4(k, true)
      if (this.v4[i] !== k) this.v4.splice(i, 0, k)
    } else {
      const i = this.find6(p, true)
      const at = this.v6[i]
      if (at === undefined || comparePrefixes(at, p) !== 0) this.v6.splice(i, 0, p)
    }
  }

  remove(p: Prefix): void {
    if (p.afi === 1) {
      const k = p.addr * 64 + p.len
      const i = this.find4(k, true)
      if (this.v4[i] === k) this.v4.splice(i, 1)
    } else {
      const i = this.find6(p, true)
      const at = this.v6[i]
      if (at !== undefined && comparePrefixes(at, p) === 0) this.v6.splice(i, 1)
    }
  }

  /** The first `limit` prefixes above `after` (from the start without it). */
  page(limit: number, after: Prefix | undefined): PrefixPage {
    const items: Prefix[] = []
    // The first IPv4 and IPv6 positions strictly above `after`.
    let i4 = 0
    let i6 = 0
    if (after !== undefined && after.afi === 1) i4 = this.find4(after.addr * 64 + after.len, false)
    else if (after !== undefined) {
      i4 = this.v4.length
      i6 = this.find6(after, false)
    }
    for (; i4 < this.v4.length && items.length < limit; i4++) {
      const k = this.v4[i4]!
      items.push({ afi: 1, addr: Math.floor(k / 64), len: k % 64, pathId: 0 })
    }
    for (; i6 < this.v6.length && items.length < limit; i6++) items.push(this.v6[i6]!)
    return { items, total: this.size, more: i4 < this.v4.length || i6 < this.v6.length }
  }
}

/** Changes spliced into the sorted copy at most; past this many, it is rebuilt on the next page. */
const SPLICE_LIMIT = 256

/** The Loc-RIB's prefixes in order, followed through the deltas from the moment it is made. */
export class LocRibPages {
  private sorted: SortedPrefixes | undefined
  private pending: { readonly prefix: Prefix; readonly add: boolean }[] = []

  constructor(private readonly prefixes: () => Iterable<Prefix>) {
    this.sorted = new SortedPrefixes(prefixes())
  }

  /** One flush's changes; a prefix object is made only for the few that are spliced in. */
  follow(d: LocRibDeltas): void {
    if (this.sorted === undefined) return
    for (let i = 0; i < d.count; i++) {
      const f = d.flags(i)
      if ((f & (DELTA_WITHDRAWN | DELTA_NEW)) === 0) continue
      if (this.pending.length >= SPLICE_LIMIT) {
        this.sorted = undefined
        this.pending = []
        return
      }
      const prefix = d.family(i) === 4 ? ipv4Prefix(d.ipv4(i), d.len(i)) : ipv6Prefix(d.ipv6(i), d.len(i))
      this.pending.push({ prefix, add: (f & DELTA_WITHDRAWN) === 0 })
    }
  }

  page(limit: number, after: Prefix | undefined): PrefixPage {
    const sorted = (this.sorted ??= new SortedPrefixes(this.prefixes()))
    for (const c of this.pending) {
      if (c.add) sorted.add(c.prefix)
      else sorted.remove(c.prefix)
    }
    this.pending = []
    return sorted.page(limit, after)
  }
}
