// Cursor pagination over unordered tables: rows are ordered by a key (family, address, length, then
// tie-breakers), a cursor is the key of the last row served, and each page is the `limit` smallest
// keys above it. Pure; it never holds a table between requests.
//
// Why not sort and slice: the RIB keeps no order and changes between requests. Selecting the page
// with a bounded heap costs one pass (no sort of 100k rows per page), and a key cursor (not an offset)
// means a route present on both sides of a page boundary is served exactly once, whatever else changed.

import { comparePrefixes, type Prefix, type PrefixPage } from '../../bgp/index.js'
import { ipv4Within, ipv6Within } from '../../net/index.js'
import { ApiError } from './errors.js'

/**
 * A row's sort key: its prefix (path id included, for add-path rows), then optional tie-breakers (table,
 * tos, metric for kernel routes). RIB rows use their Prefix object itself, so keying allocates nothing.
 */
export type RowKey = Prefix & { readonly tie?: readonly number[] }

export function compareKeys(p: RowKey, q: RowKey): number {
  const c = comparePrefixes(p, q)
  if (c !== 0) return c
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
  if (p.afi === 1 && within.afi === 1) return ipv4Within(within.addr, within.len, p.addr)
  return ipv6Within(within.addr as Uint8Array, within.len, p.addr as Uint8Array)
}

/** A page of prefixes with the cursor that follows its last one. */
export function prefixPage(p: PrefixPage): Page<Prefix> {
  const last = p.items[p.items.length - 1]
  return { items: p.items, total: p.total, nextCursor: p.more && last !== undefined ? encodeCursor(last) : undefined }
}
