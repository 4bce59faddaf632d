// IPv4 prefixes (address and length) mapped to small integers, kept in typed arrays (prefix-slots.ts): an
// address, a length byte and a value per slot, where a V8 Map<number, number> costs several times that per
// entry and makes a [key, value] array per entry walked. Pure storage; what a value means is its user's.

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
