// A hash map from unsigned 32-bit numbers to objects, by open addressing with linear probing in typed
// arrays. The IPv4 tables hold a full Internet table (a million keys): a JS Map spends most of an
// ingest rehashing and allocating entries; this keeps keys in one Uint32Array and values in one array.

const EMPTY = undefined

/** Keys that differ only in their low GROUP_BITS share a bucket of 2^GROUP_BITS slots (64 bytes of values). */
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

export class NumberMap<V> {
  private keys: Uint32Array
  private vals: (V | undefined)[]
  private mask: number
  /** 32 - log2(slots): the slot is the top bits of the multiplicative hash. */
  private shift: number
  private count = 0

  constructor(capacity = 16) {
    let size = 16
    while (size < capacity * 2) size *= 2
    this.keys = new Uint32Array(size)
    this.vals = new Array<V | undefined>(size).fill(EMPTY)
    this.mask = size - 1
    this.shift = 32 - Math.log2(size)
  }

  get size(): number {
    return this.count
  }

  private slot(key: number): number {
    return homeSlot(key, this.shift)
  }

  /** The slot holding `key`, or the empty slot where it would go. */
  private slotOf(key: number): number {
    const keys = this.keys
    const vals = this.vals
    const mask = this.mask
    let i = this.slot(key)
    while (vals[i] !== EMPTY && keys[i] !== key) i = (i + 1) & mask
    return i
  }

  get(key: number): V | undefined {
    return this.vals[this.slotOf(key)]
  }

  set(key: number, value: V): void {
    if ((this.count + 1) * 4 > this.vals.length * 3) this.grow()
    const i = this.slotOf(key)
    if (this.vals[i] === EMPTY) {
      this.keys[i] = key
      this.count++
    }
    this.vals[i] = value
  }

  /**
   * The value for `key`, made by `create(arg)` and stored when missing: one probe instead of get + set,
   * and no closure allocated per call.
   */
  obtain<A>(key: number, create: (arg: A) => V, arg: A): V {
    if ((this.count + 1) * 4 > this.vals.length * 3) this.grow()
    const i = this.slotOf(key)
    const v = this.vals[i]
    if (v !== EMPTY) return v
    const made = create(arg)
    this.keys[i] = key
    this.vals[i] = made
    this.count++
    return made
  }

  delete(key: number): boolean {
    const keys = this.keys
    const vals = this.vals
    const mask = this.mask
    const i = this.slotOf(key)
    if (vals[i] === EMPTY) return false
    // Backward-shift deletion: later entries of the run move up, so no tombstones are needed.
    let hole = i
    for (let j = (i + 1) & mask; vals[j] !== EMPTY; j = (j + 1) & mask) {
      const home = this.slot(keys[j]!)
      // Move j into the hole unless its home lies cyclically in (hole, j].
      const between = hole <= j ? home > hole && home <= j : home > hole || home <= j
      if (!between) {
        keys[hole] = keys[j]!
        vals[hole] = vals[j]
        hole = j
      }
    }
    vals[hole] = EMPTY
    this.count--
    return true
  }

  private grow(): void {
    const oldKeys = this.keys
    const oldVals = this.vals
    // Four times while the table is filling (a full table rehashes 1.3M entries in all, not 2M).
    const size = oldVals.length * (oldVals.length < 1 << 20 ? 4 : 2)
    const keys = new Uint32Array(size)
    const vals = new Array<V | undefined>(size).fill(EMPTY)
    const mask = size - 1
    const shift = 32 - Math.log2(size)
    for (let i = 0; i < oldVals.length; i++) {
      const v = oldVals[i]
      if (v === EMPTY) continue
      const key = oldKeys[i]!
      let j = homeSlot(key, shift)
      while (vals[j] !== EMPTY) j = (j + 1) & mask
      keys[j] = key
      vals[j] = v
    }
    this.keys = keys
    this.vals = vals
    this.mask = mask
    this.shift = shift
  }

  /** The values, gathered into an array first: a native array iterator is several times faster than a generator. */
  values(): IterableIterator<V> {
    const out: V[] = []
    const vals = this.vals
    for (let i = 0; i < vals.length; i++) {
      const v = vals[i]
      if (v !== EMPTY) out.push(v)
    }
    return out.values()
  }
}
