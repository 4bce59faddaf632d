// The message union and the two entry points of the codec: decodeMessage(frame, opts) and
// encodeMessage(msg, opts). Pure: bytes in, typed message out, and back. What the session
// negotiated travels in `opts`; nothing here knows about sockets, timers or logs.

import { HEADER_LENGTH, MARKER_LENGTH, MAX_EXTENDED_MESSAGE_LENGTH, MAX_MESSAGE_LENGTH, MessageType } from './constants.js'
import { Writer } from './buffer.js'
import { checkHeader } from './framer.js'
import { decodeOpen, encodeOpen, type OpenMessage } from './open.js'
import { decodeUpdate, encodeUpdate, type UpdateMessage } from './update.js'
import { decodeNotification, encodeNotification, type NotificationMessage } from './notification.js'
import { decodeRouteRefresh, encodeRouteRefresh, type RouteRefreshMessage } from './route-refresh.js'
import type { CodecOptions } from './options.js'

export interface KeepaliveMessage {
  readonly type: 'keepalive'
}

export type BgpMessage = OpenMessage | UpdateMessage | NotificationMessage | KeepaliveMessage | RouteRefreshMessage

export const KEEPALIVE: KeepaliveMessage = Object.freeze({ type: 'keepalive' })

/**
 * Decodes one whole message (header included). Throws BgpError; never anything else for bad bytes.
 * `columns`: see decodeUpdate.
 */
export function decodeMessage(frame: Uint8Array, opts: CodecOptions, columns = false): BgpMessage {
  const max = opts.extendedMessage ? MAX_EXTENDED_MESSAGE_LENGTH : MAX_MESSAGE_LENGTH
  if (frame.length < HEADER_LENGTH) {
    // A frame always comes from the framer; a short one is a caller's mistake, reported as the wire would.
    checkHeader(Uint8Array.from({ length: HEADER_LENGTH }, (_, i) => frame[i] ?? 0), 0, max)
  }
  const length = checkHeader(frame, 0, max)
  const body = length === frame.length ? frame : frame.subarray(0, length)
  const type = body[18]!
  switch (type) {
    case MessageType.OPEN:
      return decodeOpen(body)
    case MessageType.UPDATE:
      return decodeUpdate(body, opts, columns)
    case MessageType.NOTIFICATION:
      return decodeNotification(body)
    case MessageType.KEEPALIVE:
      return KEEPALIVE
    case MessageType.ROUTE_REFRESH:
      return decodeRouteRefresh(body)
    default:
      // checkHeader accepts only the types above.
      throw new Error(`unreachable: message type ${type}`)
  }
}

const TYPE_OF: Record<BgpMessage['type'], number> = {
  open: MessageType.OPEN,
  update: MessageType.UPDATE,
  notification: MessageType.NOTIFICATION,
  keepalive: MessageType.KEEPALIVE,
  'route-refresh': MessageType.ROUTE_REFRESH,
}

/** Writes the 19-byte header with a zero length; `finishMessage` fills it in. */
export function startMessage(w: Writer, type: number): number {
  const at = w.pos
  w.ensure(HEADER_LENGTH)
  w.buf.fill(0xff, at, at + MARKER_LENGTH)
  w.pos += MARKER_LENGTH
  w.u16(0).u8(type)
  return at
}

export function finishMessage(w: Writer, at: number, opts: CodecOptions): void {
  const length = w.pos - at
  const type = w.buf[at + 18]!
  const max =
    opts.extendedMessage && type !== MessageType.OPEN && type !== MessageType.KEEPALIVE ? MAX_EXTENDED_MESSAGE_LENGTH : MAX_MESSAGE_LENGTH
  if (length > max) throw new RangeError(`message of ${length} bytes exceeds the ${max}-byte limit`)
  w.buf.writeUInt16BE(length, at + 16)
}

// One scratch buffer for all encoding: messages are built here and copied out at their exact size.
const scratch = new Writer(65536)

export function encodeMessage(msg: BgpMessage, opts: CodecOptions): Buffer {
  const w = scratch
  w.pos = 0
  const at = startMessage(w, TYPE_OF[msg.type])
  switch (msg.type) {
    case 'open':
      encodeOpen(w, msg)
      break
    case 'update':
      encodeUpdate(w, msg, opts)
      break
    case 'notification':
      encodeNotification(w, msg)
      break
    case 'keepalive':
      break
    case 'route-refresh':
      encodeRouteRefresh(w, msg)
      break
    default: {
      const never: never = msg
      throw new Error(`unknown message ${JSON.stringify(never)}`)
    }
  }
  finishMessage(w, at, opts)
  return w.finish()
}

