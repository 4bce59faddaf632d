// A hash map from unsigned 32-bit numbers to small non-negative integers (a table's destination
// indices), by open addressing with linear probing in two typed arrays. The IPv4 tables hold a full
// Internet table (a million keys): a JS Map spends most of an ingest rehashing and allocating entries;
// this holds 8 bytes per slot and nothing the garbage collector has to trace.

/** Keys that differ only in their low GROUP_BITS share a bucket of 2^GROUP_BITS slots (32 bytes of values). */
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

export class IndexMap {
  private keys: Uint32Array
  /** The value + 1 per slot; 0 marks an empty slot. */
  private vals: Int32Array
  private mask: number
  /** 32 - log2(slots): the slot is the top bits of the multiplicative hash. */
  private shift: number
  private count = 0

  constructor(capacity = 16) {
    let size = 16
    while (size < capacity * 2) size *= 2
    this.keys = new Uint32Array(size)
    this.vals = new Int32Array(size)
    this.mask = size - 1
    this.shift = 32 - Math.log2(size)
  }

  get size(): number {
    return this.count
  }

  /** The slot holding `key`, or the empty slot where it would go. */
  private slotOf(key: number): number {
    const keys = this.keys
    const vals = this.vals
    const mask = this.mask
    let i = homeSlot(key, this.shift)
    while (vals[i] !== 0 && keys[i] !== key) i = (i + 1) & mask
    return i
  }

  /** The value of `key`, or -1. */
  get(key: number): number {
    return this.vals[this.slotOf(key)]! - 1
  }

  set(key: number, value: number): void {
    if ((this.count + 1) * 4 > this.vals.length * 3) this.grow()
    const i = this.slotOf(key)
    if (this.vals[i] === 0) {
      this.keys[i] = key
      this.count++
    }
    this.vals[i] = value + 1
  }

  /** The value of `key`; when missing, `value` is stored and returned: one probe instead of get + set. */
  obtain(key: number, value: number): number {
    if ((this.count + 1) * 4 > this.vals.length * 3) this.grow()
    // slotOf, written out: the hot path of a table dump, and V8 did not inline the call here.
    const keys = this.keys
    const vals = this.vals
    const mask = this.mask
    let i = homeSlot(key, this.shift)
    let v: number
    while ((v = vals[i]!) !== 0) {
      if (keys[i] === key) return v - 1
      i = (i + 1) & mask
    }
    keys[i] = key
    vals[i] = value + 1
    this.count++
    return value
  }

  delete(key: number): boolean {
    const keys = this.keys
    const vals = this.vals
    const mask = this.mask
    const i = this.slotOf(key)
    if (vals[i] === 0) return false
    // Backward-shift deletion: later entries of the run move up, so no tombstones are needed.
    let hole = i
    for (let j = (i + 1) & mask; vals[j] !== 0; j = (j + 1) & mask) {
      const home = homeSlot(keys[j]!, this.shift)
      // Move j into the hole unless its home lies cyclically in (hole, j].
      const between = hole <= j ? home > hole && home <= j : home > hole || home <= j
      if (!between) {
        keys[hole] = keys[j]!
        vals[hole] = vals[j]!
        hole = j
      }
    }
    vals[hole] = 0
    this.count--
    return true
  }

  private grow(): void {
    const oldKeys = this.keys
    const oldVals = this.vals
    // Four times while the table is filling (a full table rehashes 1.3M entries in all, not 2M).
    const size = oldVals.length * (oldVals.length < 1 << 20 ? 4 : 2)
    const keys = new Uint32Array(size)
    const vals = new Int32Array(size)
    const mask = size - 1
    const shift = 32 - Math.log2(size)
    for (let i = 0; i < oldVals.length; i++) {
      const v = oldVals[i]!
      if (v === 0) continue
      const key = oldKeys[i]!
      let j = homeSlot(key, shift)
      while (vals[j] !== 0) j = (j + 1) & mask
      keys[j] = key
      vals[j] = v
    }
    this.keys = keys
    this.vals = vals
    this.mask = mask
    this.shift = shift
  }

  /** Every value, in slot order. */
  values(): number[] {
    const out: number[] = []
    const vals = this.vals
    for (let i = 0; i < vals.length; i++) if (vals[i] !== 0) out.push(vals[i]! - 1)
    return out
  }
}
