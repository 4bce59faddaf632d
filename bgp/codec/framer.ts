// The framer: socket chunks in, whole BGP messages out as views into the received bytes.
// It checks every header (RFC 4271 §6.1) before a decoder sees the message, so decoders only
// ever get whole frames of a known type and a plausible length. It keeps no other state.

import {
  ErrorCode,
  HEADER_LENGTH,
  HeaderSubcode,
  MARKER_LENGTH,
  MAX_EXTENDED_MESSAGE_LENGTH,
  MAX_MESSAGE_LENGTH,
  MessageType,
  MIN_MESSAGE_LENGTH,
} from './constants.js'
import { BgpError } from './errors.js'

function headerError(subcode: number, detail: string, data: Uint8Array, offset: number): BgpError {
  return new BgpError({ code: ErrorCode.MESSAGE_HEADER, subcode, detail, data, offset })
}

/**
 * Checks the header at buf[offset]; returns the message length. `maxLength` is 4096, or 65535 once
 * extended message is negotiated (RFC 8654 §4: never for OPEN or KEEPALIVE).
 */
export function checkHeader(buf: Uint8Array, offset: number, maxLength: number): number {
  for (let i = 0; i < MARKER_LENGTH; i++) {
    if (buf[offset + i] !== 0xff) {
      throw headerError(HeaderSubcode.CONNECTION_NOT_SYNCHRONIZED, 'marker is not all ones', new Uint8Array(0), offset + i)
    }
  }
  const length = (buf[offset + 16]! << 8) | buf[offset + 17]!
  const type = buf[offset + 18]!
  const min = MIN_MESSAGE_LENGTH[type]
  if (min === undefined) {
    throw headerError(HeaderSubcode.BAD_MESSAGE_TYPE, `unknown message type ${type}`, Uint8Array.of(type), offset + 18)
  }
  const max = type === MessageType.OPEN || type === MessageType.KEEPALIVE ? MAX_MESSAGE_LENGTH : maxLength
  const bad =
    length < HEADER_LENGTH || length > max || length < min || (type === MessageType.KEEPALIVE && length !== HEADER_LENGTH)
  if (bad) {
    throw headerError(
      HeaderSubcode.BAD_MESSAGE_LENGTH,
      `length ${length} is out of range for message type ${type} (${min}..${type === MessageType.KEEPALIVE ? HEADER_LENGTH : max})`,
      buf.slice(offset + 16, offset + 18),
      offset + 16,
    )
  }
  return length
}

export class Framer {
  private maxLength = MAX_MESSAGE_LENGTH
  /** Bytes consumed before `pending`, so errors can say where in the stream they happened. */
  private streamOffset = 0

  /** RFC 8654: once both sides advertised extended message, UPDATEs may be up to 65535 bytes. */
  setExtendedMessage(enabled: boolean): void {
    this.maxLength = enabled ? MAX_EXTENDED_MESSAGE_LENGTH : MAX_MESSAGE_LENGTH
  }

  /** Bytes held back waiting for the rest of a message. */
  get buffered(): number {
    return this.buf.length - this.pos
  }

  /** Offset in the stream of the next message's first byte. */
  get offset(): number {
    return this.streamOffset
  }

  /**
   * Feeds received bytes; returns every message completed by them, in order. Frames are views:
   * into `chunk` when the message lies wholly in it, into an internal copy otherwise. A header
   * error throws a BgpError whose offset counts from the start of the stream.
   */
  push(chunk: Uint8Array): Uint8Array[] {
    this.feed(chunk)
    const frames: Uint8Array[] = []
    for (let f = this.next(); f !== undefined; f = this.next()) frames.push(f)
    return frames
  }

  private buf: Uint8Array = new Uint8Array(0)
  private pos = 0

  /** Adds received bytes; take the messages out with next(). */
  feed(chunk: Uint8Array): void {
    const rest = this.buf.length - this.pos
    // A plain Uint8Array view of a Buffer: messages then come out as one type whether or not they spanned
    // chunks (joined below), and the decoders' optimized code, which had seen both, is not thrown away.
    if (rest === 0) this.buf = chunk.constructor === Uint8Array ? chunk : new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.length)
    else {
      const joined = new Uint8Array(rest + chunk.length)
      joined.set(this.buf.subarray(this.pos), 0)
      joined.set(chunk, rest)
      this.buf = joined
    }
    this.pos = 0
  }

  /**
   * The next whole message, or undefined until more bytes arrive. One at a time, so a limit
   * changed by the previous message (extended message negotiated in an OPEN) applies to the next.
   */
  next(): Uint8Array | undefined {
    const buf = this.buf
    const pos = this.pos
    if (buf.length - pos < HEADER_LENGTH) return this.keep()
    let length: number
    try {
      length = checkHeader(buf, pos, this.maxLength)
    } catch (err) {
      throw err instanceof BgpError && err.offset !== undefined ? err.at(this.streamOffset + err.offset - pos) : err
    }
    if (buf.length - pos < length) return this.keep()
    this.pos = pos + length
    this.streamOffset += length
    return buf.subarray(pos, pos + length)
  }

  /** Keeps the unconsumed tail as its own copy, so the caller may reuse its chunk buffer. */
  private keep(): undefined {
    if (this.pos > 0 || this.buf.length > 0) {
      this.buf = this.pos === this.buf.length ? new Uint8Array(0) : this.buf.slice(this.pos)
      this.pos = 0
    }
    return undefined
  }
}
