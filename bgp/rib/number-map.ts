// Number maps and sets for the RIB's tables: the IPv4 index (network address to destination index, by
// open addressing in one typed array, for a full Internet table of a million keys with nothing the
// garbage collector has to trace) and a bit set of indices. No policy, no paths: numbers only.

import { discard, grown, touchedArray } from '../../net/index.js'

/** Keys that differ only in their low GROUP_BITS share a bucket of 2^GROUP_BITS slots (32 bytes: half a cache line). */
const GROUP_BITS = 3
const GROUP_MASK = (1 << GROUP_BITS) - 1

/**
 * The home slot of `key` in a table of 2^(32 - shift) slots (at least 16). Eight neighbouring keys (a /29's
 * worth of /32s, eight consecutive /24s) keep their order inside one bucket, and the bucket is
 * Fibonacci-hashed from the rest of the key: the top bits of (key >>> 3) × 2^32/φ. A peer sends its table
 * in prefix order, so consecutive inserts land in the same cache lines. The bucket is hashed from the top
 * bits of the product, not the low ones: those depend only on the key's low bits, and keys with a common
 * stride would share a few buckets.
 */
export const homeSlot = (key: number, shift: number): number => ((Math.imul(key >>> GROUP_BITS, 0x9e3779b1) >>> (shift + GROUP_BITS)) << GROUP_BITS) | (key & GROUP_MASK)

/**
 * Empties slot `i` of an open-addressing table of `mask + 1` slots (0: empty) by backward shift: the later
 * entries of its run move up unless their home slot (`home` of the slot's value) lies cyclically in
 * (hole, j], so lookups need no tombstones.
 */
export function emptySlot(slots: Int32Array, mask: number, i: number, home: (v: number) => number): void {
  let hole = i
  for (let j = (i + 1) & mask; slots[j] !== 0; j = (j + 1) & mask) {
    const h = home(slots[j]!)
    const between = hole <= j ? h > hole && h <= j : h > hole || h <= j
    if (!between) {
      slots[hole] = slots[j]!
      hole = j
    }
  }
  slots[hole] = 0
}

/** What an Ipv4Index reads its keys back from: the table's IPv4 address (as int32) by destination index. */
export interface AddressColumn {
  readonly addr4: Int32Array
}

/**
 * The destinations of one IPv4 prefix length, by network address. A slot holds only a destination index
 * + 1 (0 marks an empty slot); the key is read back from the table's address column, so a slot is 4
 * bytes, not 8 with the key beside it.
 */
export class Ipv4Index {
  private slots: Int32Array
  /** Slots - 1. */
  private mask: number
  /** 32 - log2(slots): the slot is the top bits of the multiplicative hash. */
  private shift: number
  private count = 0
  /** addr >>> keyShift is the network bits, right-aligned: neighbouring networks, neighbouring keys. */
  private readonly keyShift: number

  constructor(
    private readonly table: AddressColumn,
    len: number,
    capacity = 16,
  ) {
    let size = 16
    while (size < capacity * 2) size *= 2
    this.slots = touchedArray(Int32Array, size)
    this.mask = size - 1
    this.shift = 32 - Math.log2(size)
    // For a /0 this shifts by 32, which JS takes as 0: the key is the address, 0 with its host bits clear.
    this.keyShift = 32 - len
  }

  get size(): number {
    return this.count
  }

  /** The home slot of the network `addr` (host bits clear) in a table of 2^(32 - shift) slots. */
  private home(addr: number, shift: number): number {
    return homeSlot(addr >>> this.keyShift, shift)
  }

  /** The slot holding `addr`'s destination, or the empty slot where it would go. */
  private slotOf(addr: number): number {
    const slots = this.slots
    const addr4 = this.table.addr4
    const mask = this.mask
    const a = addr | 0
    let i = this.home(addr, this.shift)
    let v: number
    while ((v = slots[i]!) !== 0 && addr4[v - 1] !== a) i = (i + 1) & mask
    return i
  }

  /** The destination of the network `addr`, or -1. */
  get(addr: number): number {
    return this.slots[this.slotOf(addr)]! - 1
  }

  /**
   * The destination of the network `addr`; when missing, `value` is stored and returned (one probe instead
   * of get + set), and the caller then writes `addr` into the address column at `value`.
   */
  obtain(addr: number, value: number): number {
    if ((this.count + 1) * 4 > (this.mask + 1) * 3) this.grow()
    // slotOf and homeSlot(), written out: the hot path of a table dump, whose first several thousand
    // prefixes run before V8 has compiled anything, where every call costs.
    const slots = this.slots
    const addr4 = this.table.addr4
    const mask = this.mask
    const a = addr | 0
    const key = addr >>> this.keyShift
    let i = ((Math.imul(key >>> GROUP_BITS, 0x9e3779b1) >>> (this.shift + GROUP_BITS)) << GROUP_BITS) | (key & GROUP_MASK)
    let v: number
    while ((v = slots[i]!) !== 0) {
      if (addr4[v - 1] === a) return v - 1
      i = (i + 1) & mask
    }
    slots[i] = value + 1
    this.count++
    return value
  }

  /** Removes the network `addr` (its destination's address still in the column); false if it was not there. */
  delete(addr: number): boolean {
    const slots = this.slots
    const addr4 = this.table.addr4
    const mask = this.mask
    const i = this.slotOf(addr)
    if (slots[i] === 0) return false
    emptySlot(slots, mask, i, (v) => this.home(addr4[v - 1]!, this.shift))
    this.count--
    return true
  }

  private grow(): void {
    const old = this.slots
    const addr4 = this.table.addr4
    const n = this.mask + 1
    // Four times while the table is filling (a full table rehashes 1.3M entries in all, not 2M).
    const size = n * (n < 1 << 20 ? 4 : 2)
    const slots = touchedArray(Int32Array, size)
    const mask = size - 1
    const shift = 32 - Math.log2(size)
    const keyShift = this.keyShift
    for (let i = 0; i < n; i++) {
      const v = old[i]!
      if (v === 0) continue
      // homeSlot() directly, not through home(): a dump's early growths walk tens of thousands of slots
      // before V8 has compiled this loop, and there every call costs.
      let j = homeSlot(addr4[v - 1]! >>> keyShift, shift)
      while (slots[j] !== 0) j = (j + 1) & mask
      slots[j] = v
    }
    this.slots = slots
    this.mask = mask
    this.shift = shift
    discard(old)
  }

  /** Every destination, in slot order. */
  values(): number[] {
    const out: number[] = []
    // An emptied map keeps its size: after a peer's whole table went, a listing (a new session's
    // Adj-RIB-Out) would scan megabytes of empty slots.
    if (this.count === 0) return out
    const slots = this.slots
    for (let i = 0; i < slots.length; i++) if (slots[i] !== 0) out.push(slots[i]! - 1)
    return out
  }
}

/**
 * A set of small non-negative integers (a table's destination indices) as one bit each: an Adj-RIB-Out
 * holding a full table keeps one bit a destination, nothing for the collector to trace, instead of two JS
 * Sets of a million numbers. Iterates in increasing order.
 */
export class IndexSet {
  private words = touchedArray(Uint32Array, 32)
  private count = 0

  get size(): number {
    return this.count
  }

  has(i: number): boolean {
    const w = i >>> 5
    return w < this.words.length && (this.words[w]! & (1 << (i & 31))) !== 0
  }

  /** Adds `i`; false if it was there. */
  add(i: number): boolean {
    const w = i >>> 5
    if (w >= this.words.length) this.grow(w)
    const bit = 1 << (i & 31)
    const words = this.words
    if ((words[w]! & bit) !== 0) return false
    words[w] = words[w]! | bit
    this.count++
    return true
  }

  /** Removes `i`; false if it was not there. */
  delete(i: number): boolean {
    const w = i >>> 5
    const bit = 1 << (i & 31)
    const words = this.words
    if (w >= words.length || (words[w]! & bit) === 0) return false
    words[w] = words[w]! & ~bit
    this.count--
    return true
  }

  clear(): void {
    this.words.fill(0)
    this.count = 0
  }

  private grow(w: number): void {
    let n = this.words.length * 2
    while (n <= w) n *= 2
    this.words = grown(this.words, n, true)
  }

  *[Symbol.iterator](): IterableIterator<number> {
    const words = this.words
    for (let w = 0; w < words.length; w++) {
      let bits = words[w]!
      while (bits !== 0) {
        const low = bits & -bits
        yield (w << 5) + 31 - Math.clz32(low)
        bits ^= low
      }
    }
  }
}
