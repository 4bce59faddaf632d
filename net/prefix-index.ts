// Prefix indexes into a table of rows that holds each row's network (the RIB's destinations): IPv4 by
// address per prefix length, IPv6 by network and length (its 16 bytes in the paged column made here). A slot
// is only a row index, its key read back from the columns, so a million keys are one typed array and nothing
// for the collector; deletion shifts the run back. Numbers only; a map that keeps its own keys is prefix-map.ts.

import { discard, touchedArray } from './typed-arrays.js'

/** Keys that differ only in their low GROUP_BITS share a bucket of 2^GROUP_BITS slots (32 bytes: half a cache line). */
const GROUP_BITS = 3
const GROUP_MASK = (1 << GROUP_BITS) - 1

/**
 * The home slot of `key` in a table of 2^(32 - shift) slots (at least 16). Eight neighbouring keys (a /29's
 * worth of /32s, eight consecutive /24s) keep their order inside one bucket, and the bucket is
 * Fibonacci-hashed from the rest of the key: the top bits of (key >>> 3) × 2^32/φ. A peer sends its table
 * in prefix order, so consecutive inserts land in the same cache lines. The bucket is hashed from the top
 * bits of the product, not the low ones: those depend only on the key's low bits, and keys with a common
 * stride would share a few buckets.
 */
export const homeSlot = (key: number, shift: number): number => ((Math.imul(key >>> GROUP_BITS, 0x9e3779b1) >>> (shift + GROUP_BITS)) << GROUP_BITS) | (key & GROUP_MASK)

/**
 * Empties slot `i` of an open-addressing table of `mask + 1` slots (0: empty) by backward shift: the later
 * entries of its run move up unless their home slot (`home` of the slot's value) lies cyclically in
 * (hole, j], so lookups need no tombstones.
 */
function emptySlot(slots: Int32Array, mask: number, i: number, home: (v: number) => number): void {
  let hole = i
  for (let j = (i + 1) & mask; slots[j] !== 0; j = (j + 1) & mask) {
    const h = home(slots[j]!)
    const between = hole <= j ? h > hole && h <= j : h > hole || h <= j
    if (!between) {
      slots[hole] = slots[j]!
      hole = j
    }
  }
  slots[hole] = 0
}

/** What an Ipv4Index reads its keys back from: the table's IPv4 address (as int32) by destination index. */
export interface AddressColumn {
  readonly addr4: Int32Array
}

/**
 * The destinations of one IPv4 prefix length, by network address. A slot holds only a destination index
 * + 1 (0 marks an empty slot); the key is read back from the table's address column, so a slot is 4
 * bytes, not 8 with the key beside it.
 */
export class Ipv4Index {
  private slots: Int32Array
  /** Slots - 1. */
  private mask: number
  /** 32 - log2(slots): the slot is the top bits of the multiplicative hash. */
  private shift: number
  private count = 0
  /** addr >>> keyShift is the network bits, right-aligned: neighbouring networks, neighbouring keys. */
  private readonly keyShift: number

  constructor(
    private readonly table: AddressColumn,
    len: number,
    capacity = 16,
  ) {
    let size = 16
    while (size < capacity * 2) size *= 2
    this.slots = touchedArray(Int32Array, size)
    this.mask = size - 1
    this.shift = 32 - Math.log2(size)
    // For a /0 this shifts by 32, which JS takes as 0: the key is the address, 0 with its host bits clear.
    this.keyShift = 32 - len
  }

  get size(): number {
    return this.count
  }

  /** The home slot of the network `addr` (host bits clear) in a table of 2^(32 - shift) slots. */
  private home(addr: number, shift: number): number {
    return homeSlot(addr >>> this.keyShift, shift)
  }

  /** The slot holding `addr`'s destination, or the empty slot where it would go. */
  private slotOf(addr: number): number {
    const slots = this.slots
    const addr4 = this.table.addr4
    const mask = this.mask
    const a = addr | 0
    let i = this.home(addr, this.shift)
    let v: number
    while ((v = slots[i]!) !== 0 && addr4[v - 1] !== a) i = (i + 1) & mask
    return i
  }

  /** The destination of the network `addr`, or -1. */
  get(addr: number): number {
    return this.slots[this.slotOf(addr)]! - 1
  }

  /**
   * The destination of the network `addr`; when missing, `value` is stored and returned (one probe instead
   * of get + set), and the caller then writes `addr` into the address column at `value`.
   */
  obtain(addr: number, value: number): number {
    if ((this.count + 1) * 4 > (this.mask + 1) * 3) this.grow()
    // slotOf and homeSlot(), written out: the hot path of a table dump, whose first several thousand
    // prefixes run before V8 has compiled anything, where every call costs.
    const slots = this.slots
    const addr4 = this.table.addr4
    const mask = this.mask
    const a = addr | 0
    const key = addr >>> this.keyShift
    let i = ((Math.imul(key >>> GROUP_BITS, 0x9e3779b1) >>> (this.shift + GROUP_BITS)) << GROUP_BITS) | (key & GROUP_MASK)
    let v: number
    while ((v = slots[i]!) !== 0) {
      if (addr4[v - 1] === a) return v - 1
      i = (i + 1) & mask
    }
    slots[i] = value + 1
    this.count++
    return value
  }

  /** Removes the network `addr` (its destination's address still in the column); false if it was not there. */
  delete(addr: number): boolean {
    const slots = this.slots
    const addr4 = this.table.addr4
    const mask = this.mask
    const i = this.slotOf(addr)
    if (slots[i] === 0) return false
    emptySlot(slots, mask, i, (v) => this.home(addr4[v - 1]!, this.shift))
    this.count--
    return true
  }

  private grow(): void {
    const old = this.slots
    const addr4 = this.table.addr4
    const n = this.mask + 1
    // Four times while the table is filling (a full table rehashes 1.3M entries in all, not 2M).
    const size = n * (n < 1 << 20 ? 4 : 2)
    const slots = touchedArray(Int32Array, size)
    const mask = size - 1
    const shift = 32 - Math.log2(size)
    const keyShift = this.keyShift
    for (let i = 0; i < n; i++) {
      const v = old[i]!
      if (v === 0) continue
      // homeSlot() directly, not through home(): a dump's early growths walk tens of thousands of slots
      // before V8 has compiled this loop, and there every call costs.
      let j = homeSlot(addr4[v - 1]! >>> keyShift, shift)
      while (slots[j] !== 0) j = (j + 1) & mask
      slots[j] = v
    }
    this.slots = slots
    this.mask = mask
    this.shift = shift
    discard(old)
  }

  /** Every destination, in slot order. */
  values(): number[] {
    const out: number[] = []
    // An emptied map keeps its size: after a peer's whole table went, a listing (a new session's
    // Adj-RIB-Out) would scan megabytes of empty slots.
    if (this.count === 0) return out
    const slots = this.slots
    for (let i = 0; i < slots.length; i++) if (slots[i] !== 0) out.push(slots[i]! - 1)
    return out
  }
}

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
