// A hash map from unsigned 32-bit numbers to small non-negative integers (a table's destination
// indices), by open addressing with linear probing in one typed array. The IPv4 tables hold a full
// Internet table (a million keys): a JS Map spends most of an ingest rehashing and allocating entries;
// this holds 8 bytes per slot and nothing the garbage collector has to trace.

/**
 * A zeroed typed array of `n` elements, written through once. A new array's memory is mapped page by page
 * at first touch, and when that touch is a read (a hash probe, a bit test) the kernel maps the shared
 * zero page and the first write then faults again to copy it: two faults a page instead of one. Here a
 * fault costs microseconds, and the IPv4 index map of a 100k-prefix dump took 2,050 of them to grow to
 * 4 MB; written first, 1,026, and the dump's RIB time fell by about a fifth.
 */
export function touchedArray<T extends Int32Array | Uint32Array | Uint16Array>(ctor: new (n: number) => T, n: number): T {
  const a = new ctor(n)
  a.fill(0)
  return a
}

/** Keys that differ only in their low GROUP_BITS share a bucket of 2^GROUP_BITS slots (64 bytes of keys and values: one cache line). */
const GROUP_BITS = 3
const GROUP_MASK = (1 << GROUP_BITS) - 1

/** Multiplicative (Fibonacci) hashing: the top bits of key × 2^32/φ, as many as 32 - shift. */
export const fibonacciSlot = (key: number, shift: number): number => Math.imul(key, 0x9e3779b1) >>> shift

/**
 * The home slot of `key` in a table of 2^(32 - shift) slots (at least 16). Eight neighbouring keys (a /29's
 * worth of /32s, eight consecutive /24s) keep their order inside one bucket, and the bucket is
 * Fibonacci-hashed from the rest of the key. A peer sends its table in prefix order, so consecutive
 * inserts land in the same cache lines: 1M consecutive /32s went in ~40 % faster than with every key
 * hashed on its own. The bucket is hashed from the top bits of the product, not the low ones: those
 * depend only on the key's low bits, and keys with a common stride would share a few buckets.
 */
export const homeSlot = (key: number, shift: number): number => (fibonacciSlot(key >>> GROUP_BITS, shift + GROUP_BITS) << GROUP_BITS) | (key & GROUP_MASK)

/**
 * Keys and values side by side in one Int32Array (the key as int32 at 2i, the value + 1 at 2i + 1; 0
 * marks an empty slot), so a bucket of eight is one 64-byte cache line, not two.
 */
export class IndexMap {
  private cells: Int32Array
  /** Slots - 1. */
  private mask: number
  /** 32 - log2(slots): the slot is the top bits of the multiplicative hash. */
  private shift: number
  private count = 0

  constructor(capacity = 16) {
    let size = 16
    while (size < capacity * 2) size *= 2
    this.cells = touchedArray(Int32Array, size * 2)
    this.mask = size - 1
    this.shift = 32 - Math.log2(size)
  }

  get size(): number {
    return this.count
  }

  /** The slot holding `key`, or the empty slot where it would go. */
  private slotOf(key: number): number {
    const cells = this.cells
    const mask = this.mask
    const k = key | 0
    let i = homeSlot(key, this.shift)
    while (cells[2 * i + 1] !== 0 && cells[2 * i] !== k) i = (i + 1) & mask
    return i
  }

  /** The value of `key`, or -1. */
  get(key: number): number {
    return this.cells[2 * this.slotOf(key) + 1]! - 1
  }

  /** The value of `key`; when missing, `value` is stored and returned: one probe instead of get + set. */
  obtain(key: number, value: number): number {
    if ((this.count + 1) * 4 > (this.mask + 1) * 3) this.grow()
    // slotOf, written out: the hot path of a table dump, and V8 did not inline the call here.
    const cells = this.cells
    const mask = this.mask
    const k = key | 0
    let i = homeSlot(key, this.shift)
    let v: number
    while ((v = cells[2 * i + 1]!) !== 0) {
      if (cells[2 * i] === k) return v - 1
      i = (i + 1) & mask
    }
    cells[2 * i] = k
    cells[2 * i + 1] = value + 1
    this.count++
    return value
  }

  delete(key: number): boolean {
    const cells = this.cells
    const mask = this.mask
    const i = this.slotOf(key)
    if (cells[2 * i + 1] === 0) return false
    // Backward-shift deletion: later entries of the run move up, so no tombstones are needed.
    let hole = i
    for (let j = (i + 1) & mask; cells[2 * j + 1] !== 0; j = (j + 1) & mask) {
      const home = homeSlot(cells[2 * j]! >>> 0, this.shift)
      // Move j into the hole unless its home lies cyclically in (hole, j].
      const between = hole <= j ? home > hole && home <= j : home > hole || home <= j
      if (!between) {
        cells[2 * hole] = cells[2 * j]!
        cells[2 * hole + 1] = cells[2 * j + 1]!
        hole = j
      }
    }
    cells[2 * hole + 1] = 0
    this.count--
    return true
  }

  private grow(): void {
    const old = this.cells
    const slots = this.mask + 1
    // Four times while the table is filling (a full table rehashes 1.3M entries in all, not 2M).
    const size = slots * (slots < 1 << 20 ? 4 : 2)
    const cells = touchedArray(Int32Array, size * 2)
    const mask = size - 1
    const shift = 32 - Math.log2(size)
    for (let i = 0; i < slots; i++) {
      const v = old[2 * i + 1]!
      if (v === 0) continue
      const key = old[2 * i]!
      let j = homeSlot(key >>> 0, shift)
      while (cells[2 * j + 1] !== 0) j = (j + 1) & mask
      cells[2 * j] = key
      cells[2 * j + 1] = v
    }
    this.cells = cells
    this.mask = mask
    this.shift = shift
  }

  /** Every value, in slot order. */
  values(): number[] {
    const out: number[] = []
    // An emptied map keeps its size: after a peer's whole table went, listing the destinations (as a
    // new session's Adj-RIB-Out does) scanned megabytes of empty slots, ~3.6 ms for a 100k table.
    if (this.count === 0) return out
    const cells = this.cells
    for (let i = 1; i < cells.length; i += 2) if (cells[i] !== 0) out.push(cells[i]! - 1)
    return out
  }
}

/**
 * A set of small non-negative integers (a table's destination indices) as one bit each. An Adj-RIB-Out
 * holding a full table kept two JS Sets of a million numbers: tens of megabytes of hash table that grew by
 * copying and that every collection had to trace. Iterates in increasing order.
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
    const words = touchedArray(Uint32Array, n)
    words.set(this.words)
    this.words = words
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
