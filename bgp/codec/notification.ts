// NOTIFICATION (RFC 4271 §4.5) with the shutdown communication of RFC 9003 for Cease /
// Administrative Shutdown and Administrative Reset: a length octet and up to 255 bytes of UTF-8.

import { CeaseSubcode, ErrorCode, HEADER_LENGTH } from './constants.js'
import { Writer } from './buffer.js'
import { notificationText } from './errors.js'

export interface NotificationMessage {
  readonly type: 'notification'
  readonly code: number
  readonly subcode: number
  readonly data: Uint8Array
  /** RFC 9003 shutdown communication, when the data carries a valid one. */
  readonly shutdownMessage?: string
}

const utf8 = new TextDecoder('utf-8', { fatal: true })

function carriesShutdownMessage(code: number, subcode: number): boolean {
  return code === ErrorCode.CEASE && (subcode === CeaseSubcode.ADMINISTRATIVE_SHUTDOWN || subcode === CeaseSubcode.ADMINISTRATIVE_RESET)
}

export function decodeNotification(frame: Uint8Array): NotificationMessage {
  const code = frame[HEADER_LENGTH]!
  const subcode = frame[HEADER_LENGTH + 1]!
  const data = frame.slice(HEADER_LENGTH + 2)
  if (carriesShutdownMessage(code, subcode) && data.length > 0 && data[0] === data.length - 1) {
    try {
      // RFC 9003 §2: invalid UTF-8 means the message is not shown, not that the NOTIFICATION is bad.
      return { type: 'notification', code, subcode, data, shutdownMessage: utf8.decode(data.subarray(1)) }
    } catch {
      /* not a valid communication: keep the raw data only */
    }
  }
  return { type: 'notification', code, subcode, data }
}

export function encodeNotification(w: Writer, msg: NotificationMessage): void {
  w.u8(msg.code).u8(msg.subcode)
  if (msg.data.length > 0 || msg.shutdownMessage === undefined) {
    w.bytes(msg.data)
    return
  }
  const text = shutdownBytes(msg.shutdownMessage)
  w.u8(text.length).bytes(text)
}

/** UTF-8 bytes of a shutdown communication, cut at a character boundary to 255 bytes. */
export function shutdownBytes(message: string): Uint8Array {
  let bytes = Buffer.from(message, 'utf8')
  if (bytes.length <= 255) return bytes
  let end = 255
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--
  bytes = bytes.subarray(0, end)
  return bytes
}

export function notification(code: number, subcode: number, opts: { data?: Uint8Array; shutdownMessage?: string } = {}): NotificationMessage {
  return {
    type: 'notification',
    code,
    subcode,
    data: opts.data ?? new Uint8Array(0),
    ...(opts.shutdownMessage !== undefined ? { shutdownMessage: opts.shutdownMessage } : {}),
  }
}

export function describeNotification(msg: NotificationMessage): string {
  const text = notificationText(msg.code, msg.subcode)
  return msg.shutdownMessage !== undefined ? `${text}: "${msg.shutdownMessage}"` : text
}
