// IPv6 prefixes (16 network-order address bytes and a length) mapped to small integers, kept in typed arrays:
// an open-addressing hash table with linear probing, so a table of IPv6 routes costs ~22 bytes a slot and no
// object, string or Uint8Array per prefix. Pure storage; what a value means is its user's.

/** Slot states. */
const EMPTY = 0
const FULL = 1
/** A deleted entry: probing goes on past it, and an insert may reuse it. */
const GONE = 2

const MIN_SLOTS = 16

/** Whether the first `bits` bits of `net` (from 0) and `addr` (from `at`) agree. */
export function ipv6Within(net: Uint8Array, bits: number, addr: Uint8Array, at = 0): boolean {
  const whole = bits >> 3
  for (let i = 0; i < whole; i++) if (net[i] !== addr[at + i]) return false
  const rest = bits & 7
  if (rest === 0) return true
  const mask = (0xff << (8 - rest)) & 0xff
  return ((net[whole]! ^ addr[at + whole]!) & mask) === 0
}

/** The big-endian 32-bit word of `a` at byte `at`. */
function word(a: Uint8Array, at: number): number {
  return ((a[at]! << 24) | (a[at + 1]! << 16) | (a[at + 2]! << 8) | a[at + 3]!) >>> 0
}

function mix(h: number, w: number): number {
  h = Math.imul(h ^ w, 0xcc9e2d51)
  return Math.imul((h << 15) | (h >>> 17), 0x1b873593)
}

export class V6PrefixMap {
  private words: Uint32Array
  private lens: Uint8Array
  private state: Uint8Array
  private vals: Int32Array
  private mask: number
  private used = 0
  /** How many prefixes are held. */
  size = 0
  /** Counts the times the slots moved (a resize, a clear): a walk by slot that sees it change starts again. */
  epoch = 0

  constructor(slots = MIN_SLOTS) {
    let n = MIN_SLOTS
    while (n < slots) n *= 2
    this.words = new Uint32Array(n * 4)
    this.lens = new Uint8Array(n)
    this.state = new Uint8Array(n)
    this.vals = new Int32Array(n)
    this.mask = n - 1
  }

  /** The slot holding `addr`/`len` (the address from byte `at` of `addr`), or -1. */
  find(addr: Uint8Array, len: number, at = 0): number {
    const w0 = word(addr, at)
    const w1 = word(addr, at + 4)
    const w2 = word(addr, at + 8)
    const w3 = word(addr, at + 12)
    const { words, lens, state, mask } = this
    for (let s = this.hash(w0, w1, w2, w3, len); ; s = (s + 1) & mask) {
      const st = state[s]
      if (st === EMPTY) return -1
      if (st === FULL && lens[s] === len) {
        const o = s * 4
        if (words[o] === w0 && words[o + 1] === w1 && words[o + 2] === w2 && words[o + 3] === w3) return s
      }
    }
  }

  /** The value of `addr`/`len`, or `absent`. */
  get(addr: Uint8Array, len: number, absent = -1, at = 0): number {
    const s = this.find(addr, len, at)
    return s < 0 ? absent : this.vals[s]!
  }

  has(addr: Uint8Array, len: number, at = 0): boolean {
    return this.find(addr, len, at) >= 0
  }

  /** Sets the value of `addr`/`len`; returns the value it had, or `absent`. */
  set(addr: Uint8Array, len: number, value: number, absent = -1, at = 0): number {
    return this.put(addr, len, value, absent, at, true)
  }

  /** Sets the value of `addr`/`len` unless it is held; returns the value it had, or `absent` (then set). */
  add(addr: Uint8Array, len: number, value: number, absent = -1, at = 0): number {
    return this.put(addr, len, value, absent, at, false)
  }

  /** One probe run: the prefix's slot if held (its value replaced when `replace`), else the first free one. */
  private put(addr: Uint8Array, len: number, value: number, absent: number, at: number, replace: boolean): number {
    if ((this.used + 1) * 4 > (this.mask + 1) * 3) this.rehash(this.size + 1)
    const w0 = word(addr, at)
    const w1 = word(addr, at + 4)
    const w2 = word(addr, at + 8)
    const w3 = word(addr, at + 12)
    const { words, lens, state, mask } = this
    let free = -1
    for (let s = this.hash(w0, w1, w2, w3, len); ; s = (s + 1) & mask) {
      const st = state[s]
      if (st === EMPTY) {
        this.fill(free >= 0 ? free : s, w0, w1, w2, w3, len, value)
        return absent
      }
      if (st === GONE) {
        if (free < 0) free = s
        continue
      }
      if (lens[s] !== len) continue
      const o = s * 4
      if (words[o] === w0 && words[o + 1] === w1 && words[o + 2] === w2 && words[o + 3] === w3) {
        const was = this.vals[s]!
        if (replace) this.vals[s] = value
        return was
      }
    }
  }

  /** Removes `addr`/`len`; true when it was held. */
  delete(addr: Uint8Array, len: number, at = 0): boolean {
    const s = this.find(addr, len, at)
    if (s < 0) return false
    this.deleteAt(s)
    return true
  }

  /** Removes the prefix in `slot` (from find() or next()). */
  deleteAt(slot: number): void {
    if (this.state[slot] !== FULL) return
    this.state[slot] = GONE
    this.size--
  }

  clear(): void {
    if (this.used === 0) return
    this.epoch++
    this.state.fill(EMPTY)
    this.used = 0
    this.size = 0
  }

  /**
   * The slot after `slot` (start from -1) that holds a prefix, or -1 at the end. Deleting meanwhile is
   * allowed; an insert may move every slot (see epoch).
   */
  next(slot: number): number {
    const state = this.state
    for (let s = slot + 1; s <= this.mask; s++) if (state[s] === FULL) return s
    return -1
  }

  valueAt(slot: number): number {
    return this.vals[slot]!
  }

  setValueAt(slot: number, value: number): void {
    this.vals[slot] = value
  }

  lenAt(slot: number): number {
    return this.lens[slot]!
  }

  /** Copies a slot's address into `out` (16 bytes). */
  addrAt(slot: number, out: Uint8Array): Uint8Array {
    const o = slot * 4
    for (let i = 0; i < 4; i++) {
      const w = this.words[o + i]!
      out[i * 4] = w >>> 24
      out[i * 4 + 1] = (w >>> 16) & 0xff
      out[i * 4 + 2] = (w >>> 8) & 0xff
      out[i * 4 + 3] = w & 0xff
    }
    return out
  }

  private hash(w0: number, w1: number, w2: number, w3: number, len: number): number {
    let h = mix(mix(mix(mix(len, w0), w1), w2), w3)
    h ^= h >>> 16
    h = Math.imul(h, 0x85ebca6b)
    h ^= h >>> 13
    return h & this.mask
  }

  /** Puts a prefix known not to be held into its first free slot (a resize). */
  private insert(w0: number, w1: number, w2: number, w3: number, len: number, value: number): void {
    const { state, mask } = this
    let s = this.hash(w0, w1, w2, w3, len)
    while (state[s] === FULL) s = (s + 1) & mask
    this.fill(s, w0, w1, w2, w3, len, value)
  }

  private fill(s: number, w0: number, w1: number, w2: number, w3: number, len: number, value: number): void {
    const state = this.state
    if (state[s] === EMPTY) this.used++
    const o = s * 4
    this.words[o] = w0
    this.words[o + 1] = w1
    this.words[o + 2] = w2
    this.words[o + 3] = w3
    this.lens[s] = len
    this.vals[s] = value
    state[s] = FULL
    this.size++
  }

  /** A table sized for `count` prefixes at most half full, without the deleted entries. */
  private rehash(count: number): void {
    const { words, lens, state, vals } = this
    this.epoch++
    let n = MIN_SLOTS
    while (n < count * 2) n *= 2
    this.words = new Uint32Array(n * 4)
    this.lens = new Uint8Array(n)
    this.state = new Uint8Array(n)
    this.vals = new Int32Array(n)
    this.mask = n - 1
    this.used = 0
    this.size = 0
    for (let s = 0; s < state.length; s++) {
      if (state[s] !== FULL) continue
      const o = s * 4
      this.insert(words[o]!, words[o + 1]!, words[o + 2]!, words[o + 3]!, lens[s]!, vals[s]!)
    }
  }
}
