// IPv4 prefixes (address and length) mapped to small integers, kept in typed arrays: an open-addressing hash
// table with linear probing, ~9 bytes a slot, where a V8 Map<number, number> costs ~29 bytes an entry and
// makes a [key, value] array per entry walked. Pure storage; what a value means is its user's.

/** A slot's length byte: 0 empty, 255 deleted, else the prefix length + 1. */
const EMPTY = 0
/**
 * A deleted entry: probing goes on past it, and an insert may reuse it. Deletion leaves this mark rather than
 * shifting the entries behind it back, so no held entry moves under a walk by slot (see next()).
 */
const GONE = 255

const MIN_SLOTS = 16

export class V4PrefixMap {
  private addrs: Int32Array
  private lens: Uint8Array
  private vals: Int32Array
  private mask: number
  /** Slots not empty: held and deleted ones. */
  private used = 0
  /** How many prefixes are held. */
  size = 0
  /** Counts the times the slots moved (a resize, a clear): a walk by slot that sees it change starts again. */
  epoch = 0

  constructor(slots = MIN_SLOTS) {
    let n = MIN_SLOTS
    while (n < slots) n *= 2
    this.addrs = new Int32Array(n)
    this.lens = new Uint8Array(n)
    this.vals = new Int32Array(n)
    this.mask = n - 1
  }

  /** The slot holding `addr`/`len` (the address signed or not), or -1. */
  find(addr: number, len: number): number {
    const a = addr | 0
    const tag = len + 1
    const { addrs, lens, mask } = this
    for (let s = hash(a, len) & mask; ; s = (s + 1) & mask) {
      const l = lens[s]
      if (l === EMPTY) return -1
      if (l === tag && addrs[s] === a) return s
    }
  }

  /** The value of `addr`/`len`, or `absent`. */
  get(addr: number, len: number, absent = -1): number {
    const s = this.find(addr, len)
    return s < 0 ? absent : this.vals[s]!
  }

  has(addr: number, len: number): boolean {
    return this.find(addr, len) >= 0
  }

  /** Sets the value of `addr`/`len`; returns the value it had, or `absent`. */
  set(addr: number, len: number, value: number, absent = -1): number {
    return this.put(addr, len, value, absent, true)
  }

  /** Sets the value of `addr`/`len` unless it is held; returns the value it had, or `absent` (then set). */
  add(addr: number, len: number, value: number, absent = -1): number {
    return this.put(addr, len, value, absent, false)
  }

  /** One probe run: the prefix's slot if held (its value replaced when `replace`), else the first free one. */
  private put(addr: number, len: number, value: number, absent: number, replace: boolean): number {
    if ((this.used + 1) * 4 > (this.mask + 1) * 3) this.rehash(this.size + 1)
    const a = addr | 0
    const tag = len + 1
    const { addrs, lens, mask } = this
    let free = -1
    for (let s = hash(a, len) & mask; ; s = (s + 1) & mask) {
      const l = lens[s]
      if (l === EMPTY) {
        if (free < 0) {
          free = s
          this.used++
        }
        addrs[free] = a
        lens[free] = tag
        this.vals[free] = value
        this.size++
        return absent
      }
      if (l === GONE) {
        if (free < 0) free = s
        continue
      }
      if (l === tag && addrs[s] === a) {
        const was = this.vals[s]!
        if (replace) this.vals[s] = value
        return was
      }
    }
  }

  /** Removes `addr`/`len`; true when it was held. */
  delete(addr: number, len: number): boolean {
    const s = this.find(addr, len)
    if (s < 0) return false
    this.deleteAt(s)
    return true
  }

  /** Removes the prefix in `slot` (from find() or next()). */
  deleteAt(slot: number): void {
    const l = this.lens[slot]
    if (l === EMPTY || l === GONE) return
    this.lens[slot] = GONE
    this.size--
  }

  /** Removes every prefix, and gives back the storage of a large table. */
  clear(): void {
    if (this.used === 0) return
    this.epoch++
    if (this.mask + 1 > MIN_SLOTS) {
      this.addrs = new Int32Array(MIN_SLOTS)
      this.lens = new Uint8Array(MIN_SLOTS)
      this.vals = new Int32Array(MIN_SLOTS)
      this.mask = MIN_SLOTS - 1
    } else this.lens.fill(EMPTY)
    this.used = 0
    this.size = 0
  }

  /**
   * The slot after `slot` (start from -1) that holds a prefix, or -1 at the end. Deleting meanwhile is
   * allowed (no held entry moves); an insert may move every slot (see epoch).
   */
  next(slot: number): number {
    const lens = this.lens
    for (let s = slot + 1; s <= this.mask; s++) {
      const l = lens[s]
      if (l !== EMPTY && l !== GONE) return s
    }
    return -1
  }

  valueAt(slot: number): number {
    return this.vals[slot]!
  }

  setValueAt(slot: number, value: number): void {
    this.vals[slot] = value
  }

  lenAt(slot: number): number {
    return this.lens[slot]! - 1
  }

  /** A slot's network address, unsigned. */
  addrAt(slot: number): number {
    return this.addrs[slot]! >>> 0
  }

  /** A table sized for `count` prefixes at most half full, without the deleted entries. */
  private rehash(count: number): void {
    const { addrs, lens, vals } = this
    this.epoch++
    let n = MIN_SLOTS
    while (n < count * 2) n *= 2
    const to = new Int32Array(n)
    const toLens = new Uint8Array(n)
    const toVals = new Int32Array(n)
    const mask = n - 1
    for (let s = 0; s < lens.length; s++) {
      const l = lens[s]!
      if (l === EMPTY || l === GONE) continue
      const a = addrs[s]!
      let t = hash(a, l - 1) & mask
      while (toLens[t] !== EMPTY) t = (t + 1) & mask
      to[t] = a
      toLens[t] = l
      toVals[t] = vals[s]!
    }
    this.addrs = to
    this.lens = toLens
    this.vals = toVals
    this.mask = mask
    this.used = this.size
  }
}

/** murmur3's finalizer over the address and length: a table's prefixes share their low bits (/28: four zeros). */
function hash(a: number, len: number): number {
  let h = a ^ Math.imul(len + 1, 0x9e3779b1)
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  return h ^ (h >>> 16)
}
