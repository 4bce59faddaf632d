// The slot bookkeeping the prefix maps share (V4PrefixMap, V6PrefixMap in prefix-map.ts): open addressing
// with linear probing over typed arrays, a tag and a value per slot, deletion by tombstone, the walk by
// slot, growth and clearing. Each table keeps its own key columns, hash and probe. Pure storage.
//
// A table has any multiple of 16 slots, not only a power of two: a hash is scaled onto the slots (home())
// rather than masked, so a table grows to twice what it holds, at most half full, and from 3/4 full grows
// again: a million prefixes take 1.47M slots where powers of two would take 2.1M. A table made with an
// implicit value stores no values until one differs from it (a list of prefixes that held nothing, say).

import { discard } from './typed-arrays.js'

/** A slot's tag: EMPTY, GONE, or the prefix length + 1. */
export const EMPTY = 0
/**
 * A deleted entry: probing goes on past it, and an insert may reuse it. Deletion leaves this mark rather than
 * shifting the entries behind it back, so no held entry moves under a walk by slot (see next()).
 */
export const GONE = 255
export const MIN_SLOTS = 16

/** 2^-32: a 32-bit hash times this is in [0, 1). */
const UNIT = 1 / 4294967296

/** The slots for `count` prefixes: at least MIN_SLOTS and `count`, a multiple of 16. */
function slotsFor(count: number): number {
  return Math.max(MIN_SLOTS, Math.ceil(count / 16) * 16)
}

/** `K`: a table's key columns, handed back to it while it moves its entries into larger ones. */
export abstract class PrefixSlots<K extends Int32Array | Uint32Array> {
  protected tags: Uint8Array
  /** The values by slot; none while every value is the implicit one. */
  private vals: Int32Array | undefined
  /** How many slots. */
  protected slots: number
  /** Slots not empty: held and deleted ones. */
  protected used = 0
  /** How many prefixes are held. */
  size = 0
  /** Counts the times the slots moved (a resize, a clear): a walk by slot that sees it change starts again. */
  epoch = 0

  /** `implicit`: a value that costs no storage while every value is it. */
  constructor(
    slots: number,
    private readonly implicit?: number,
  ) {
    const n = slotsFor(slots)
    this.tags = new Uint8Array(n)
    this.slots = n
    this.vals = implicit === undefined ? this.newValues() : undefined
  }

  /** The key columns now. */
  protected abstract keys(): K
  /** Makes empty key columns of `n` slots. */
  protected abstract newKeys(n: number): void
  /** Copies the key of `slot` in the columns `from` into the first empty slot of the current ones; returns it. */
  protected abstract place(from: K, slot: number, len: number): number

  /** The first slot a probe for a key of 32-bit hash `h` looks at: the hash scaled onto the slots. */
  protected home(h: number): number {
    return Math.floor((h >>> 0) * UNIT * this.slots)
  }

  /** Grows (dropping the deleted entries) when one more slot in use would take the table past 3/4. */
  protected makeRoom(): void {
    if ((this.used + 1) * 4 > this.slots * 3) this.rehash(this.size + 1)
  }

  /** Fills `slot`, found empty or deleted by a probe, with a prefix of length `len`. */
  protected fill(slot: number, len: number, value: number): void {
    if (this.tags[slot] === EMPTY) this.used++
    this.tags[slot] = len + 1
    this.setValueAt(slot, value)
    this.size++
  }

  /** Removes the prefix in `slot` (from find() or next()). */
  deleteAt(slot: number): void {
    const t = this.tags[slot]
    if (t === EMPTY || t === GONE) return
    this.tags[slot] = GONE
    this.size--
  }

  /** Removes every prefix, and gives back the storage of a large table. */
  clear(): void {
    if (this.used === 0) return
    this.epoch++
    if (this.slots > MIN_SLOTS) this.discardAfter(() => this.resize(MIN_SLOTS, this.implicit === undefined))
    else {
      this.tags.fill(EMPTY)
      if (this.implicit !== undefined) this.vals = undefined
    }
    this.used = 0
    this.size = 0
  }

  /**
   * The slot after `slot` (start from -1) that holds a prefix, or -1 at the end. Deleting meanwhile is
   * allowed (no held entry moves); an insert may move every slot (see epoch).
   */
  next(slot: number): number {
    const tags = this.tags
    for (let s = slot + 1; s < this.slots; s++) {
      const t = tags[s]
      if (t !== EMPTY && t !== GONE) return s
    }
    return -1
  }

  valueAt(slot: number): number {
    const vals = this.vals
    return vals === undefined ? this.implicit! : vals[slot]!
  }

  setValueAt(slot: number, value: number): void {
    if (this.vals === undefined) {
      if (value === this.implicit) return
      this.vals = this.newValues()
    }
    this.vals[slot] = value
  }

  lenAt(slot: number): number {
    return this.tags[slot]! - 1
  }

  /** A value column of the current size, every slot holding the implicit value (0 without one). */
  private newValues(): Int32Array {
    const vals = new Int32Array(this.slots)
    if (this.implicit !== undefined && this.implicit !== 0) vals.fill(this.implicit)
    return vals
  }

  /** Empty columns of `n` slots; a value column only `withValues`. */
  private resize(n: number, withValues: boolean): void {
    this.slots = n
    this.tags = new Uint8Array(n)
    this.vals = withValues ? this.newValues() : undefined
    this.newKeys(n)
  }

  /** Runs `move`, which puts new columns in place of the current ones, and then gives the old ones back. */
  private discardAfter(move: () => void): void {
    const { tags, vals } = this
    const keys = this.keys()
    move()
    discard(tags)
    if (vals !== undefined) discard(vals)
    discard(keys)
  }

  /** A table sized for `count` prefixes at most half full, without the deleted entries. */
  private rehash(count: number): void {
    this.epoch++
    this.discardAfter(() => {
      const { tags, vals } = this
      const from = this.keys()
      // A table that stores values (one differed from the implicit value) keeps storing them.
      this.resize(slotsFor(count * 2), vals !== undefined)
      const to = this.vals
      for (let s = 0; s < tags.length; s++) {
        const t = tags[s]!
        if (t === EMPTY || t === GONE) continue
        const at = this.place(from, s, t - 1)
        this.tags[at] = t
        if (to !== undefined) to[at] = vals![s]!
      }
    })
    this.used = this.size
  }
}
