// IPv4 and IPv6 prefixes mapped to small integers in typed arrays that hold their own keys (an address or
// four address words, a length byte and a value per slot; bookkeeping in prefix-slots.ts): no object, string
// or Uint8Array per prefix, and a deletion leaves a tombstone so a walk by slot survives it. Pure storage;
// what a value means is its user's. An index into rows that already hold their networks is prefix-index.ts.

import { EMPTY, GONE, MIN_SLOTS, PrefixSlots } from './prefix-slots.js'

export class V4PrefixMap extends PrefixSlots<Int32Array> {
  private addrs: Int32Array

  /** `implicit`: see PrefixSlots. */
  constructor(slots = MIN_SLOTS, implicit?: number) {
    super(slots, implicit)
    this.addrs = new Int32Array(this.slots)
  }

  /** The slot holding `addr`/`len` (the address signed or not), or -1. */
  find(addr: number, len: number): number {
    const a = addr | 0
    const tag = len + 1
    const { addrs, tags, slots } = this
    for (let s = this.home(hash(a, len)); ; s = s + 1 === slots ? 0 : s + 1) {
      const t = tags[s]
      if (t === EMPTY) return -1
      if (t === tag && addrs[s] === a) return s
    }
  }

  /** The value of `addr`/`len`, or `absent`. */
  get(addr: number, len: number, absent = -1): number {
    const s = this.find(addr, len)
    return s < 0 ? absent : this.valueAt(s)
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

  /** Removes `addr`/`len`; true when it was held. */
  delete(addr: number, len: number): boolean {
    const s = this.find(addr, len)
    if (s < 0) return false
    this.deleteAt(s)
    return true
  }

  /** A slot's network address, unsigned. */
  addrAt(slot: number): number {
    return this.addrs[slot]! >>> 0
  }

  /** One probe run: the prefix's slot if held (its value replaced when `replace`), else the first free one. */
  private put(addr: number, len: number, value: number, absent: number, replace: boolean): number {
    this.makeRoom()
    const a = addr | 0
    const tag = len + 1
    const { addrs, tags, slots } = this
    let free = -1
    for (let s = this.home(hash(a, len)); ; s = s + 1 === slots ? 0 : s + 1) {
      const t = tags[s]
      if (t === EMPTY) {
        if (free < 0) free = s
        addrs[free] = a
        this.fill(free, len, value)
        return absent
      }
      if (t === GONE) {
        if (free < 0) free = s
        continue
      }
      if (t === tag && addrs[s] === a) {
        const was = this.valueAt(s)
        if (replace) this.setValueAt(s, value)
        return was
      }
    }
  }

  protected keys(): Int32Array {
    return this.addrs
  }

  protected newKeys(n: number): void {
    this.addrs = new Int32Array(n)
  }

  protected place(from: Int32Array, slot: number, len: number): number {
    const a = from[slot]!
    const { tags, slots } = this
    let t = this.home(hash(a, len))
    while (tags[t] !== EMPTY) t = t + 1 === slots ? 0 : t + 1
    this.addrs[t] = a
    return t
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

/** The big-endian 32-bit word of `a` at byte `at`. */
function word(a: Uint8Array, at: number): number {
  return ((a[at]! << 24) | (a[at + 1]! << 16) | (a[at + 2]! << 8) | a[at + 3]!) >>> 0
}

function mix(h: number, w: number): number {
  h = Math.imul(h ^ w, 0xcc9e2d51)
  return Math.imul((h << 15) | (h >>> 17), 0x1b873593)
}

export class V6PrefixMap extends PrefixSlots<Uint32Array> {
  /** Four big-endian address words per slot. */
  private words: Uint32Array

  /** `implicit`: see PrefixSlots. */
  constructor(slots = MIN_SLOTS, implicit?: number) {
    super(slots, implicit)
    this.words = new Uint32Array(this.slots * 4)
  }

  /** The slot holding `addr`/`len` (the address from byte `at` of `addr`), or -1. */
  find(addr: Uint8Array, len: number, at = 0): number {
    const w0 = word(addr, at)
    const w1 = word(addr, at + 4)
    const w2 = word(addr, at + 8)
    const w3 = word(addr, at + 12)
    const tag = len + 1
    const { words, tags, slots } = this
    for (let s = this.hash(w0, w1, w2, w3, len); ; s = s + 1 === slots ? 0 : s + 1) {
      const t = tags[s]
      if (t === EMPTY) return -1
      if (t === tag) {
        const o = s * 4
        if (words[o] === w0 && words[o + 1] === w1 && words[o + 2] === w2 && words[o + 3] === w3) return s
      }
    }
  }

  /** The value of `addr`/`len`, or `absent`. */
  get(addr: Uint8Array, len: number, absent = -1, at = 0): number {
    const s = this.find(addr, len, at)
    return s < 0 ? absent : this.valueAt(s)
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

  /** Removes `addr`/`len`; true when it was held. */
  delete(addr: Uint8Array, len: number, at = 0): boolean {
    const s = this.find(addr, len, at)
    if (s < 0) return false
    this.deleteAt(s)
    return true
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

  /** One probe run: the prefix's slot if held (its value replaced when `replace`), else the first free one. */
  private put(addr: Uint8Array, len: number, value: number, absent: number, at: number, replace: boolean): number {
    this.makeRoom()
    const w0 = word(addr, at)
    const w1 = word(addr, at + 4)
    const w2 = word(addr, at + 8)
    const w3 = word(addr, at + 12)
    const tag = len + 1
    const { words, tags, slots } = this
    let free = -1
    for (let s = this.hash(w0, w1, w2, w3, len); ; s = s + 1 === slots ? 0 : s + 1) {
      const t = tags[s]
      if (t === EMPTY) {
        if (free < 0) free = s
        const o = free * 4
        words[o] = w0
        words[o + 1] = w1
        words[o + 2] = w2
        words[o + 3] = w3
        this.fill(free, len, value)
        return absent
      }
      if (t === GONE) {
        if (free < 0) free = s
        continue
      }
      if (t !== tag) continue
      const o = s * 4
      if (words[o] === w0 && words[o + 1] === w1 && words[o + 2] === w2 && words[o + 3] === w3) {
        const was = this.valueAt(s)
        if (replace) this.setValueAt(s, value)
        return was
      }
    }
  }

  private hash(w0: number, w1: number, w2: number, w3: number, len: number): number {
    let h = mix(mix(mix(mix(len, w0), w1), w2), w3)
    h ^= h >>> 16
    h = Math.imul(h, 0x85ebca6b)
    h ^= h >>> 13
    return this.home(h)
  }

  protected keys(): Uint32Array {
    return this.words
  }

  protected newKeys(n: number): void {
    this.words = new Uint32Array(n * 4)
  }

  protected place(from: Uint32Array, slot: number, len: number): number {
    const o = slot * 4
    const w0 = from[o]!
    const w1 = from[o + 1]!
    const w2 = from[o + 2]!
    const w3 = from[o + 3]!
    const { tags, slots, words } = this
    let s = this.hash(w0, w1, w2, w3, len)
    while (tags[s] !== EMPTY) s = s + 1 === slots ? 0 : s + 1
    const p = s * 4
    words[p] = w0
    words[p + 1] = w1
    words[p + 2] = w2
    words[p + 3] = w3
    return s
  }
}
