// Typed-array columns for the prefix tables and the RIB's columns: made, grown and given back. A table
// that moves into larger columns gives the old ones back at once instead of leaving them to the collector,
// which a node holding a full table and otherwise idle may not run for a long time. Pure.

type Column = Int32Array | Uint32Array | Uint16Array | Uint8Array

/** Below this, a column's memory is not worth a call: the collector frees it soon enough. */
const RELEASE_BYTES = 64 * 1024

/**
 * A zeroed typed array of `n` elements, written through once. A new array's memory is mapped page by page
 * at first touch, and when that touch is a read (a hash probe, a bit test) the kernel maps the shared
 * zero page and the first write then faults again to copy it: written first, each page faults once, not
 * twice.
 */
export function touchedArray<T extends Column>(ctor: new (n: number) => T, n: number): T {
  const a = new ctor(n)
  a.fill(0)
  return a
}

/**
 * Gives `a`'s memory back now, where the runtime can detach a buffer (ArrayBuffer.prototype.transfer, from
 * Node.js 21); elsewhere the collector frees it at its next full collection. Only for a column that is the one view on its
 * own buffer, and that no one reads again: it is empty from now on.
 */
export function discard(a: Column): void {
  if (a.byteLength < RELEASE_BYTES || a.byteOffset !== 0) return
  const buffer = a.buffer as ArrayBuffer & { transfer?: (length: number) => ArrayBuffer }
  if (buffer.byteLength === a.byteLength && typeof buffer.transfer === 'function') buffer.transfer(0)
}

/**
 * `a`'s elements at the start of a new column of `n` (at least a.length), zero beyond; `a` is discarded.
 * `touched`: the new column is written through first (touchedArray), for one read at random before its
 * first write; without it, pages are mapped as the column is first written, in index order.
 */
export function grown<T extends Column>(a: T, n: number, touched = false): T {
  const ctor = a.constructor as new (n: number) => T
  const b = touched ? touchedArray(ctor, n) : new ctor(n)
  b.set(a)
  discard(a)
  return b
}
