// The learned routes felix programs, by prefix, as numbers: each prefix holds one small id of an interned
// (next-hop ids, metric) pair in a typed-array hash table slot, so a million routes through a few nodes cost
// no object or string. Next hops are ids the caller gives (see DesiredTable's HopSource). Pure storage, no rendering.

import { V4PrefixMap, V6PrefixMap, type Family } from '../net/index.js'

/**
 * Set beside a route's combo while a streaming read of the kernel has seen it there exactly as desired (see
 * markSeen()); combos stay far below it.
 */
const SEEN = 1 << 29
const COMBO = SEEN - 1

/** One learned route as iteration hands it over (the object is reused from one route to the next). */
export interface LearnedEntry {
  family: Family
  /** IPv4 network address, unsigned (0 for IPv6). */
  addr4: number
  addr6: Uint8Array | undefined
  len: number
  /** The route's (next hops, metric) id: see hops() and metric(). */
  combo: number
  /** Whether a streaming read marked it seen (markSeen()). */
  seen: boolean
}

export class LearnedRoutes {
  /** IPv4: prefix -> combo (with SEEN). */
  private readonly v4 = new V4PrefixMap()
  /** IPv6: prefix -> combo (with SEEN). */
  private readonly v6 = new V6PrefixMap()
  private readonly comboHops: (readonly number[] | undefined)[] = []
  private readonly comboMetric: (number | undefined)[] = []
  private readonly comboRefs: number[] = []
  private readonly comboByKey = new Map<string, number>()
  /** The combo of one hop without a metric, by hop id: the common case takes no key string. */
  private readonly single: (number | undefined)[] = []
  private readonly freeCombos: number[] = []
  private count = 0

  get size(): number {
    return this.count
  }

  /** Whether any IPv6 route is held. */
  get hasIpv6(): boolean {
    return this.v6.size > 0
  }

  hops(combo: number): readonly number[] {
    return this.comboHops[combo]!
  }

  metric(combo: number): number | undefined {
    return this.comboMetric[combo]
  }

  /** The combo of a prefix, or -1 when none is held. */
  get(family: Family, addr4: number, addr6: Uint8Array | undefined, len: number): number {
    if (family === 4) {
      const v = this.v4.get(addr4, len)
      return v < 0 ? -1 : v & COMBO
    }
    const v = this.v6.get(addr6!, len)
    return v < 0 ? -1 : v & COMBO
  }

  /** The combo of an IPv6 prefix whose address is at byte `at` of `buf` (a dumped route's), or -1. */
  get6At(buf: Uint8Array, at: number, len: number): number {
    const v = this.v6.get(buf, len, -1, at)
    return v < 0 ? -1 : v & COMBO
  }

  /** Marks an IPv4 route seen (until clearSeen(), or a change of the route). */
  markSeen(addr4: number, len: number): void {
    const s = this.v4.find(addr4, len)
    if (s >= 0) this.v4.setValueAt(s, this.v4.valueAt(s) | SEEN)
  }

  /** Marks an IPv6 route (its address at byte `at` of `buf`) seen, as markSeen() does. */
  markSeen6At(buf: Uint8Array, at: number, len: number): void {
    const s = this.v6.find(buf, len, at)
    if (s >= 0) this.v6.setValueAt(s, this.v6.valueAt(s) | SEEN)
  }

  /** Whether an IPv4 route is marked seen. */
  seen(addr4: number, len: number): boolean {
    return (this.v4.get(addr4, len, 0) & SEEN) !== 0
  }

  /** Clears every mark markSeen() made. */
  clearSeen(): void {
    const v4 = this.v4
    for (let s = v4.next(-1); s >= 0; s = v4.next(s)) v4.setValueAt(s, v4.valueAt(s) & COMBO)
    const v6 = this.v6
    for (let s = v6.next(-1); s >= 0; s = v6.next(s)) v6.setValueAt(s, v6.valueAt(s) & COMBO)
  }

  /** The combo of (hops, metric), made when new; `hops` is not kept (a sorted copy is). */
  intern(hops: readonly number[], metric: number | undefined): number {
    if (hops.length === 1 && metric === undefined) {
      const known = this.single[hops[0]!]
      if (known !== undefined) return known
    }
    const sorted = hops.length === 1 ? [hops[0]!] : [...hops].sort((a, b) => a - b)
    const key = `${sorted.join(',')}|${metric ?? ''}`
    let id = this.comboByKey.get(key)
    if (id !== undefined) return id
    id = this.freeCombos.pop() ?? this.comboHops.length
    this.comboHops[id] = sorted
    this.comboMetric[id] = metric
    this.comboRefs[id] = 0
    this.comboByKey.set(key, id)
    if (sorted.length === 1 && metric === undefined) this.single[sorted[0]!] = id
    return id
  }

  /**
   * Sets a prefix's combo (from intern()); returns the one it had, or -1. With `handBack`, the reference the
   * prefix held on that combo passes to the caller, who release()s it when done.
   */
  set(family: Family, addr4: number, addr6: Uint8Array | undefined, len: number, combo: number, handBack = false): number {
    let before: number
    if (family === 4) {
      const v = this.v4.set(addr4, len, combo)
      before = v < 0 ? -1 : v & COMBO
      // The same route again keeps its seen mark.
      if (before === combo && (v & SEEN) !== 0) this.v4.set(addr4, len, v)
    } else {
      const v = this.v6.set(addr6!, len, combo)
      before = v < 0 ? -1 : v & COMBO
      if (before === combo && (v & SEEN) !== 0) this.v6.set(addr6!, len, v)
    }
    this.comboRefs[combo]!++
    if (before < 0) this.count++
    else if (!handBack) this.unref(before)
    return before
  }

  /** Removes a prefix; returns the combo it had, or -1. */
  delete(family: Family, addr4: number, addr6: Uint8Array | undefined, len: number): number {
    let before = -1
    if (family === 4) {
      const s = this.v4.find(addr4, len)
      if (s >= 0) {
        before = this.v4.valueAt(s) & COMBO
        this.v4.deleteAt(s)
      }
    } else {
      const s = this.v6.find(addr6!, len)
      if (s >= 0) {
        before = this.v6.valueAt(s) & COMBO
        this.v6.delete(addr6!, len)
      }
    }
    if (before >= 0) {
      this.count--
      this.unref(before)
    }
    return before
  }

  /** Keeps a combo known while something other than a prefix names it (a change not yet written). */
  retain(combo: number): void {
    this.comboRefs[combo]!++
  }

  /** Drops what retain() kept. */
  release(combo: number): void {
    this.unref(combo)
  }

  /** Drops a combo's reference; a combo nobody holds is forgotten (its id may serve another). */
  private unref(combo: number): void {
    if (--this.comboRefs[combo]! > 0) return
    const hops = this.comboHops[combo]!
    const metric = this.comboMetric[combo]
    this.comboByKey.delete(`${hops.join(',')}|${metric ?? ''}`)
    if (hops.length === 1 && metric === undefined && this.single[hops[0]!] === combo) this.single[hops[0]!] = undefined
    this.comboHops[combo] = undefined
    this.comboMetric[combo] = undefined
    this.freeCombos.push(combo)
  }

  /**
   * Every route, IPv4 then IPv6, each in slot order; the entry object (and an IPv6 entry's address) is
   * reused. A route changed meanwhile may or may not be seen, and a route may be seen twice when the storage
   * grows meanwhile (the walk of that family then starts again); every route held throughout is seen.
   */
  *entries(): IterableIterator<LearnedEntry> {
    const e: LearnedEntry = { family: 4, addr4: 0, addr6: undefined, len: 0, combo: 0, seen: false }
    const v4 = this.v4
    let epoch = v4.epoch
    for (let s = v4.next(-1); s >= 0; s = v4.next(s)) {
      if (v4.epoch !== epoch) {
        epoch = v4.epoch
        s = v4.next(-1)
        if (s < 0) break
      }
      e.addr4 = v4.addrAt(s)
      e.len = v4.lenAt(s)
      const v = v4.valueAt(s)
      e.combo = v & COMBO
      e.seen = (v & SEEN) !== 0
      yield e
    }
    e.family = 6
    e.addr4 = 0
    const addr6 = (e.addr6 = new Uint8Array(16))
    const v6 = this.v6
    epoch = v6.epoch
    for (let s = v6.next(-1); s >= 0; s = v6.next(s)) {
      if (v6.epoch !== epoch) {
        epoch = v6.epoch
        s = v6.next(-1)
        if (s < 0) break
      }
      v6.addrAt(s, addr6)
      e.len = v6.lenAt(s)
      const v = v6.valueAt(s)
      e.combo = v & COMBO
      e.seen = (v & SEEN) !== 0
      yield e
    }
  }
}
