// Cursor pagination over unordered tables: rows are ordered by a key (family, address, length, then
// tie-breakers), a cursor is the key of the last row served, and each page is the `limit` smallest
// keys above it. Pure; it never holds a table between requests.
//
// Why not sort and slice: the RIB keeps no order and changes between requests. Selecting the page
// with a bounded heap costs one pass (no sort of 100k rows per page), and a key cursor (not an offset)
// means a route present on both sides of a page boundary is served exactly once, whatever else changed.

import type { Prefix } from '../../bgp/codec/index.js'
import { ApiError } from './errors.js'

/**
 * A row's sort key: its prefix (path id included, for add-path rows), then optional tie-breakers (table,
 * tos, metric for kernel routes). RIB rows use their Prefix object itself, so keying allocates nothing.
 */
export type RowKey = Prefix & { readonly tie?: readonly number[] }

export function compareKeys(p: RowKey, q: RowKey): number {
  if (p.afi !== q.afi) return p.afi - q.afi
  if (p.afi === 1 && q.afi === 1) {
    if (p.addr !== q.addr) return p.addr - q.addr
  } else if (p.afi === 2 && q.afi === 2) {
    for (let i = 0; i < 16; i++) {
      const d = (p.addr[i] ?? 0) - (q.addr[i] ?? 0)
      if (d !== 0) return d
    }
  }
  if (p.len !== q.len) return p.len - q.len
  if (p.pathId !== q.pathId) return p.pathId - q.pathId
  const a = p.tie
  const b = q.tie
  if (a === undefined || b === undefined) return (a?.length ?? 0) - (b?.length ?? 0)
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    const d = (a[i] ?? 0) - (b[i] ?? 0)
    if (d !== 0) return d
  }
  return 0
}

/** `base64url("v1 <afi> <hex address> <len> <path id> <tie,...>")`: opaque to clients, readable when debugging. */
export function encodeCursor(p: RowKey): string {
  const addr = p.afi === 1 ? p.addr.toString(16).padStart(8, '0') : Buffer.from(p.addr).toString('hex')
  return Buffer.from(`v1 ${p.afi} ${addr} ${p.len} ${p.pathId} ${(p.tie ?? []).join(',')}`).toString('base64url')
}

export function decodeCursor(text: string): RowKey {
  const bad = (): never => {
    throw new ApiError('invalid-parameter', 'query parameter cursor: not a cursor this API issued (use nextCursor from the previous page)', 'cursor')
  }
  if (!/^[A-Za-z0-9_-]{1,200}$/.test(text)) bad()
  const m = /^v1 ([12]) ([0-9a-f]+) (\d{1,3}) (\d{1,10}) ((?:\d{1,10}(?:,\d{1,10})*)?)$/.exec(Buffer.from(text, 'base64url').toString('latin1'))
  if (m === null) return bad()
  const afi = Number(m[1])
  const len = Number(m[3])
  const pathId = Number(m[4])
  const tie = m[5] === '' ? [] : (m[5] ?? '').split(',').map(Number)
  if (afi === 1) {
    if (m[2]?.length !== 8 || len > 32) return bad()
    return { afi: 1, addr: parseInt(m[2], 16), len, pathId, tie }
  }
  if (m[2]?.length !== 32 || len > 128) return bad()
  return { afi: 2, addr: new Uint8Array(Buffer.from(m[2], 'hex')), len, pathId, tie }
}

export interface Page<T> {
  readonly items: T[]
  /** Rows matching the filters, on every page. */
  readonly total: number
  readonly nextCursor: string | undefined
}

/**
 * The page after `after`: the `limit` rows (those `keep` accepts) with the smallest keys above it, in key
 * order. A bounded max-heap keeps the best `limit` seen so far, so most rows cost one comparison with
 * its top and no allocation: this loop runs over the whole table for every page.
 */
export function selectPage<T>(rows: Iterable<T>, keyOf: (row: T) => RowKey, limit: number, after: RowKey | undefined, keep?: (row: T) => boolean): Page<T> {
  if (!(limit >= 1)) throw new RangeError(`limit ${limit}: must be at least 1`)
  const heap: { key: RowKey; row: T }[] = []
  let total = 0
  let above = 0
  const less = (i: number, j: number): boolean => compareKeys(heap[i]!.key, heap[j]!.key) > 0 // max-heap
  const swap = (i: number, j: number): void => {
    const x = heap[i]!
    heap[i] = heap[j]!
    heap[j] = x
  }
  for (const row of rows) {
    if (keep !== undefined && !keep(row)) continue
    total++
    const key = keyOf(row)
    if (after !== undefined && compareKeys(key, after) <= 0) continue
    above++
    if (heap.length < limit) {
      heap.push({ key, row })
      for (let i = heap.length - 1; i > 0; ) {
        const parent = (i - 1) >> 1
        if (!less(i, parent)) break
        swap(i, parent)
        i = parent
      }
    } else if (compareKeys(key, heap[0]!.key) < 0) {
      heap[0] = { key, row }
      for (let i = 0; ; ) {
        const l = 2 * i + 1
        const r = l + 1
        let top = i
        if (l < heap.length && less(l, top)) top = l
        if (r < heap.length && less(r, top)) top = r
        if (top === i) break
        swap(i, top)
        i = top
      }
    }
  }
  heap.sort((a, b) => compareKeys(a.key, b.key))
  const last = heap[heap.length - 1]
  return { items: heap.map((h) => h.row), total, nextCursor: above > heap.length && last !== undefined ? encodeCursor(last.key) : undefined }
}

/** Whether `p` lies inside `within` (equal or more specific). */
export function prefixWithin(p: Prefix, within: Prefix): boolean {
  if (p.afi !== within.afi || p.len < within.len) return false
  if (p.afi === 1 && within.afi === 1) {
    if (within.len === 0) return true
    const shift = 32 - within.len
    return p.addr >>> shift === within.addr >>> shift
  }
  const a = p.addr as Uint8Array
  const b = within.addr as Uint8Array
  const whole = within.len >> 3
  for (let i = 0; i < whole; i++) if (a[i] !== b[i]) return false
  const rest = within.len & 7
  if (rest === 0) return true
  const mask = (0xff << (8 - rest)) & 0xff
  return ((a[whole] ?? 0) & mask) === ((b[whole] ?? 0) & mask)
}

/**
 * A sorted copy of a table's prefixes (path id 0), kept current by add() and remove() as the table
 * changes, so every page is a binary search and a slice however much the RIB churns. IPv4 keys are
 * `addr * 64 + len` (exact below 2^38), sorted numerically; building it is one native numeric sort.
 */
export class SortedPrefixes {
  private v4: number[]
  private readonly v6: Prefix[]

  constructor(prefixes: Iterable<Prefix>) {
    const v4: number[] = []
    const v6: Prefix[] = []
    for (const p of prefixes) {
      if (p.afi === 1) v4.push(p.addr * 64 + p.len)
      else v6.push(p)
    }
    this.v4 = Array.from(Float64Array.from(v4).sort())
    this.v6 = v6.sort(compareKeys)
  }

  get size(): number {
    return this.v4.length + this.v6.length
  }

  /** The first IPv4 position whose key is above `k` (or at least `k` when `inclusive`). */
  private find4(k: number, inclusive: boolean): number {
    let lo = 0
    let hi = this.v4.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (inclusive ? this.v4[mid]! < k : this.v4[mid]! <= k) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  private find6(p: RowKey, inclusive: boolean): number {
    let lo = 0
    let hi = this.v6.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      const c = compareKeys(this.v6[mid]!, p)
      if (inclusive ? c < 0 : c <= 0) lo = mid + 1
      else hi = mid
    }
    return lo
  }

  add(p: Prefix): void {
    if (p.afi === 1) {
      const k = p.addr * 64 + p.len
      const i = this.find4(k, true)
      if (this.v4[i] !== k) this.v4.splice(i, 0, k)
    } else {
      const i = this.find6(p, true)
      const at = this.v6[i]
      if (at === undefined || compareKeys(at, p) !== 0) this.v6.splice(i, 0, p)
    }
  }

  remove(p: Prefix): void {
    if (p.afi === 1) {
      const k = p.addr * 64 + p.len
      const i = this.find4(k, true)
      if (this.v4[i] === k) this.v4.splice(i, 1)
    } else {
      const i = this.find6(p, true)
      const at = this.v6[i]
      if (at !== undefined && compareKeys(at, p) === 0) this.v6.splice(i, 1)
    }
  }

  page(limit: number, after: RowKey | undefined): Page<Prefix> {
    const items: Prefix[] = []
    // The first IPv4 and IPv6 positions strictly above `after`.
    let i4 = 0
    let i6 = 0
    if (after !== undefined && after.afi === 1) i4 = this.find4(after.addr * 64 + after.len, false)
    else if (after !== undefined) {
      i4 = this.v4.length
      i6 = this.find6(after, false)
    }
    for (; i4 < this.v4.length && items.length < limit; i4++) {
      const k = this.v4[i4]!
      items.push({ afi: 1, addr: Math.floor(k / 64), len: k % 64, pathId: 0 })
    }
    for (; i6 < this.v6.length && items.length < limit; i6++) items.push(this.v6[i6]!)
    const more = i4 < this.v4.length || i6 < this.v6.length
    const last = items[items.length - 1]
    return { items, total: this.size, nextCursor: more && last !== undefined ? encodeCursor(last) : undefined }
  }
}
