// The RIB's IPv6 destinations as numbers: each destination's 16 address bytes in paged byte columns, and
// the index from (network, length) to destination by open addressing over them, reading keys back from
// the column. No string, object or Uint8Array per prefix, so a table of IPv6 routes leaves nothing per
// prefix for the collector to trace. No paths, no policy.

import { emptySlot } from './number-map.js'
import { discard, touchedArray } from '../../net/index.js'

const PAGE_BITS = 15
const PAGE_SIZE = 1 << PAGE_BITS
const PAGE_MASK = PAGE_SIZE - 1

/**
 * IPv6 network addresses by destination index, 16 bytes each, in pages of 32,768 destinations made when an
 * address first goes into their range: a table of IPv4 destinations has none.
 */
export class Ipv6Column {
  private readonly pages: (Uint8Array | undefined)[] = []

  /** Stores the address of `d` (16 bytes of `addr`). */
  set(d: number, addr: Uint8Array): void {
    const p = d >>> PAGE_BITS
    while (this.pages.length <= p) this.pages.push(undefined)
    const page = (this.pages[p] ??= new Uint8Array(PAGE_SIZE * 16))
    page.set(addr.length === 16 ? addr : addr.subarray(0, 16), (d & PAGE_MASK) * 16)
  }

  /** Stores the address of `d`: the 16 bytes of `buf` at `at`. */
  setAt(d: number, buf: Uint8Array, at: number): void {
    const p = d >>> PAGE_BITS
    while (this.pages.length <= p) this.pages.push(undefined)
    const page = (this.pages[p] ??= new Uint8Array(PAGE_SIZE * 16))
    const to = (d & PAGE_MASK) * 16
    for (let i = 0; i < 16; i++) page[to + i] = buf[at + i]!
  }

  /** The address of `d`, as a view into the column (valid until `d` is stored again). */
  get(d: number): Uint8Array {
    const at = (d & PAGE_MASK) * 16
    return this.pages[d >>> PAGE_BITS]!.subarray(at, at + 16)
  }

  /** Copies the address of `d` into `out` (16 bytes), which is returned. */
  copyTo(d: number, out: Uint8Array): Uint8Array {
    const page = this.pages[d >>> PAGE_BITS]!
    const at = (d & PAGE_MASK) * 16
    for (let i = 0; i < 16; i++) out[i] = page[at + i]!
    return out
  }

  /** Whether `d`'s address is the 16 bytes of `addr` at `from`. */
  equals(d: number, addr: Uint8Array, from = 0): boolean {
    const page = this.pages[d >>> PAGE_BITS]!
    const at = (d & PAGE_MASK) * 16
    for (let i = 15; i >= 0; i--) if (page[at + i] !== addr[from + i]) return false
    return true
  }

  /** The hash of `d`'s address with `len` (as hash() of the same bytes). */
  hashOf(d: number, len: number): number {
    return hashBytes(this.pages[d >>> PAGE_BITS]!, (d & PAGE_MASK) * 16, len)
  }
}

/** A 32-bit hash of the 16 bytes of `a` at `at` and the length. */
function hashBytes(a: Uint8Array, at: number, len: number): number {
  let h = Math.imul(len + 1, 0x9e3779b1)
  for (let i = at; i < at + 16; i += 4) {
    const w = (a[i]! << 24) | (a[i + 1]! << 16) | (a[i + 2]! << 8) | a[i + 3]!
    h = Math.imul(h ^ w, 0x85ebca6b)
    h ^= h >>> 13
  }
  return Math.imul(h ^ (h >>> 16), 0xc2b2ae35)
}

/** What an Ipv6Index reads its keys back from: each destination's address and prefix length. */
export interface Ipv6Keys {
  readonly addr6: Ipv6Column
  len(d: number): number
}

/**
 * The IPv6 destinations by network and length. A slot holds a destination index + 1 (0: empty); the key is
 * read back from the table's columns, so a slot is 4 bytes.
 */
export class Ipv6Index {
  private slots = touchedArray(Int32Array, 16)
  /** Slots - 1. */
  private mask = 15
  private count = 0

  constructor(private readonly table: Ipv6Keys) {}

  get size(): number {
    return this.count
  }

  /** The slot holding the destination of the network (16 bytes of `addr` at `at`)/`len`, or the empty slot where it would go. */
  private slotOf(addr: Uint8Array, len: number, at = 0): number {
    const { slots, mask, table } = this
    let i = hashBytes(addr, at, len) & mask
    let v: number
    while ((v = slots[i]!) !== 0 && !(table.len(v - 1) === len && table.addr6.equals(v - 1, addr, at))) i = (i + 1) & mask
    return i
  }

  /** The destination of the network `addr`/`len` (host bits clear), or -1. */
  get(addr: Uint8Array, len: number): number {
    return this.slots[this.slotOf(addr, len)]! - 1
  }

  /**
   * The destination of `addr`/`len`; when missing, `value` is stored and returned, and the caller then writes
   * the address and length of `value` into the table's columns.
   */
  obtain(addr: Uint8Array, len: number, value: number): number {
    return this.obtainAt(addr, 0, len, value)
  }

  /** obtain() of the network whose 16 bytes are `buf`'s at `at`. */
  obtainAt(buf: Uint8Array, at: number, len: number, value: number): number {
    if ((this.count + 1) * 4 > (this.mask + 1) * 3) this.grow()
    const i = this.slotOf(buf, len, at)
    const v = this.slots[i]!
    if (v !== 0) return v - 1
    this.slots[i] = value + 1
    this.count++
    return value
  }

  /** Removes destination `d` (its address and length still in the columns); false if it was not there. */
  delete(d: number): boolean {
    const { slots, mask, table } = this
    let i = table.addr6.hashOf(d, table.len(d)) & mask
    while (slots[i] !== 0 && slots[i] !== d + 1) i = (i + 1) & mask
    if (slots[i] === 0) return false
    emptySlot(slots, mask, i, (v) => table.addr6.hashOf(v - 1, table.len(v - 1)) & mask)
    this.count--
    return true
  }

  private grow(): void {
    const old = this.slots
    const size = old.length * 4
    const slots = touchedArray(Int32Array, size)
    const mask = size - 1
    const table = this.table
    for (let i = 0; i < old.length; i++) {
      const v = old[i]!
      if (v === 0) continue
      let j = table.addr6.hashOf(v - 1, table.len(v - 1)) & mask
      while (slots[j] !== 0) j = (j + 1) & mask
      slots[j] = v
    }
    this.slots = slots
    this.mask = mask
    discard(old)
  }
}
