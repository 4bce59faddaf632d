// IPv6 prefixes (16 network-order address bytes and a length) mapped to small integers, kept in typed arrays
// (prefix-slots.ts), so a table of IPv6 routes costs its key bytes and value per slot and no object, string or
// Uint8Array per prefix. Pure storage; what a value means is its user's.

import { EMPTY, GONE, MIN_SLOTS, PrefixSlots } from './prefix-slots.js'

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
