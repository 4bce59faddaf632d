// A bounds-checked reader and a growable writer for wire bytes.
// Every read checks what is left and throws the BgpError the caller's context calls for
// (never a bare RangeError); writers reserve length fields and backfill them.

import { BgpError } from './errors.js'

/** Builds the error for a read past the end, given the offset where the read started. */
export type OverrunError = (offset: number, detail: string) => BgpError

export class Reader {
  pos: number

  constructor(
    readonly buf: Uint8Array,
    start: number,
    readonly end: number,
    private readonly overrun: OverrunError,
  ) {
    this.pos = start
  }

  get remaining(): number {
    return this.end - this.pos
  }

  need(n: number, what: string): void {
    if (this.pos + n > this.end) throw this.overrun(this.pos, `${what}: needs ${n} bytes, ${this.end - this.pos} left`)
  }

  u8(what = 'octet'): number {
    this.need(1, what)
    return this.buf[this.pos++]!
  }

  u16(what = 'two-octet field'): number {
    this.need(2, what)
    const b = this.buf
    const v = (b[this.pos]! << 8) | b[this.pos + 1]!
    this.pos += 2
    return v
  }

  u32(what = 'four-octet field'): number {
    this.need(4, what)
    const b = this.buf
    const p = this.pos
    this.pos += 4
    return ((b[p]! << 24) | (b[p + 1]! << 16) | (b[p + 2]! << 8) | b[p + 3]!) >>> 0
  }

  /** A view (not a copy) of the next n bytes. */
  bytes(n: number, what = 'field'): Uint8Array {
    this.need(n, what)
    const v = this.buf.subarray(this.pos, this.pos + n)
    this.pos += n
    return v
  }

  /** A reader over the next n bytes, sharing this reader's error context. */
  sub(n: number, what: string, overrun: OverrunError = this.overrun): Reader {
    this.need(n, what)
    const r = new Reader(this.buf, this.pos, this.pos + n, overrun)
    this.pos += n
    return r
  }
}

/**
 * A copy of `bytes` in memory of its own, for bytes kept long. A small pooled Buffer shares its pool slab
 * with every short-lived Buffer cut from it, and holds the whole slab alive.
 */
export function keptCopy(bytes: Uint8Array): Buffer {
  const own = Buffer.allocUnsafeSlow(bytes.length)
  own.set(bytes)
  return own
}

export class Writer {
  buf: Buffer
  pos = 0

  constructor(size = 256) {
    this.buf = Buffer.allocUnsafe(size)
  }

  ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return
    let size = this.buf.length * 2
    while (size < this.pos + n) size *= 2
    const next = Buffer.allocUnsafe(size)
    this.buf.copy(next, 0, 0, this.pos)
    this.buf = next
  }

  u8(v: number): this {
    this.ensure(1)
    this.buf[this.pos++] = v & 255
    return this
  }

  u16(v: number): this {
    this.ensure(2)
    this.buf[this.pos++] = (v >>> 8) & 255
    this.buf[this.pos++] = v & 255
    return this
  }

  u32(v: number): this {
    this.ensure(4)
    this.buf.writeUInt32BE(v >>> 0, this.pos)
    this.pos += 4
    return this
  }

  bytes(b: Uint8Array): this {
    this.ensure(b.length)
    this.buf.set(b, this.pos)
    this.pos += b.length
    return this
  }

  /** Reserves a length field of `size` octets; returns its position for `backfill`. */
  reserve(size: 1 | 2): number {
    this.ensure(size)
    const at = this.pos
    this.pos += size
    return at
  }

  /** Writes the number of bytes written since the reserved field into it. */
  backfill(at: number, size: 1 | 2, extra = 0): number {
    const len = this.pos - at - size + extra
    if (size === 1) this.buf[at] = len
    else this.buf.writeUInt16BE(len, at)
    return len
  }

  /** The bytes written so far, as a copy the caller owns. */
  finish(): Buffer {
    return Buffer.from(this.buf.subarray(0, this.pos))
  }
}
