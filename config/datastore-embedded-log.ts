// The embedded store's on-disk record format: length + CRC framed JSON records, and their decoding.
// Pure: bytes in, typed records out (no files, no clocks); the store and the checker own all I/O.
// A frame is [u32le payload length][u32le crc32(length bytes ++ payload)][payload: UTF-8 JSON].

import zlib from 'node:zlib'

/** One logged change; `r` is the store revision it created (exactly one more than the record before it). */
export type LogRecord =
  | { readonly t: 'put'; readonly r: number; readonly k: string; readonly v: string }
  | { readonly t: 'del'; readonly r: number; readonly k: string }
  /** A transaction: every change at revision r, all in one frame so a crash keeps all or none (v absent: delete). */
  | { readonly t: 'txn'; readonly r: number; readonly ops: ReadonlyArray<{ readonly k: string; readonly v?: string }> }
  /** Last record of a log generation: readers continue in log.<next> (whose snapshot is this log's end state). */
  | { readonly t: 'seal'; readonly r: number; readonly next: number }

/** A compaction snapshot: the full state at revision `rev`, which is the end of log.<gen - 1> at byte `logOffset`. */
export interface Snapshot {
  readonly gen: number
  readonly rev: number
  readonly logOffset: number
  /** [key, value, revision] sorted by key. */
  readonly kvs: ReadonlyArray<readonly [string, string, number]>
}

export const HEADER_BYTES = 8
/** A larger length can only be garbage (a torn or zero-filled tail), never a record we wrote. */
export const MAX_PAYLOAD_BYTES = 64 * 1024 * 1024

const CRC_TABLE = (() => {
  const table = new Uint32Array(256)
  for (let n = 0; n < 256; n++) {
    let c = n
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
    table[n] = c >>> 0
  }
  return table
})()

type Crc32 = (data: Uint8Array, seed?: number) => number
// zlib.crc32 arrived in Node 20.15; the table fallback keeps older 20.x working.
const nativeCrc32 = (zlib as unknown as { crc32?: Crc32 }).crc32

export function crc32(data: Uint8Array, seed = 0): number {
  if (nativeCrc32) return nativeCrc32(data, seed)
  let c = ~seed >>> 0
  for (const byte of data) c = (CRC_TABLE[(c ^ byte) & 0xff] as number) ^ (c >>> 8)
  return ~c >>> 0
}

export function encodeFrame(payload: Buffer): Buffer {
  if (payload.length === 0 || payload.length > MAX_PAYLOAD_BYTES) {
    throw new RangeError(`record payload of ${payload.length} bytes is outside 1..${MAX_PAYLOAD_BYTES}`)
  }
  const frame = Buffer.allocUnsafe(HEADER_BYTES + payload.length)
  frame.writeUInt32LE(payload.length, 0)
  frame.writeUInt32LE(crc32(payload, crc32(frame.subarray(0, 4))), 4)
  payload.copy(frame, HEADER_BYTES)
  return frame
}

export function encodeRecord(record: LogRecord): Buffer {
  return encodeFrame(Buffer.from(JSON.stringify(record), 'utf8'))
}

export function encodeSnapshot(snapshot: Snapshot): Buffer {
  return encodeFrame(Buffer.from(JSON.stringify(snapshot), 'utf8'))
}

/** Why decoding stopped before the end of the buffer. */
export type StopReason =
  /** Fewer bytes than the frame announces: a write still in flight, or a torn tail. */
  | 'incomplete'
  /** A length out of range, a CRC mismatch, or a payload that is not a record: a torn or garbage tail. */
  | 'invalid'

export interface DecodedFrames {
  readonly payloads: Buffer[]
  /** Byte offsets (relative to the buffer start) of each payload's frame. */
  readonly offsets: number[]
  /** Bytes consumed by whole, valid frames. */
  readonly consumed: number
  readonly stop?: { readonly reason: StopReason; readonly detail: string; readonly needBytes?: number }
}

/** Splits `buf` into whole CRC-valid frames; stops at the first frame that is incomplete or invalid. */
export function decodeFrames(buf: Buffer): DecodedFrames {
  const payloads: Buffer[] = []
  const offsets: number[] = []
  let at = 0
  while (at < buf.length) {
    if (buf.length - at < HEADER_BYTES) {
      return { payloads, offsets, consumed: at, stop: { reason: 'incomplete', detail: 'partial frame header', needBytes: HEADER_BYTES } }
    }
    const length = buf.readUInt32LE(at)
    if (length === 0 || length > MAX_PAYLOAD_BYTES) {
      return { payloads, offsets, consumed: at, stop: { reason: 'invalid', detail: `frame length ${length} out of range` } }
    }
    if (buf.length - at < HEADER_BYTES + length) {
      return { payloads, offsets, consumed: at, stop: { reason: 'incomplete', detail: `frame of ${length} bytes is cut short`, needBytes: HEADER_BYTES + length } }
    }
    const payload = buf.subarray(at + HEADER_BYTES, at + HEADER_BYTES + length)
    const want = buf.readUInt32LE(at + 4)
    if (crc32(payload, crc32(buf.subarray(at, at + 4))) !== want) {
      return { payloads, offsets, consumed: at, stop: { reason: 'invalid', detail: 'frame CRC mismatch' } }
    }
    payloads.push(payload)
    offsets.push(at)
    at += HEADER_BYTES + length
  }
  return { payloads, offsets, consumed: at }
}

/** Parses one record payload; throws a message naming what is wrong (the caller adds file and offset). */
export function parseRecord(payload: Buffer): LogRecord {
  const raw: unknown = JSON.parse(payload.toString('utf8'))
  if (typeof raw !== 'object' || raw === null) throw new Error('record is not an object')
  const o = raw as Record<string, unknown>
  if (!Number.isSafeInteger(o['r']) || (o['r'] as number) < 0) throw new Error('record field r is not a revision')
  const r = o['r'] as number
  switch (o['t']) {
    case 'put':
      if (typeof o['k'] !== 'string' || typeof o['v'] !== 'string') throw new Error('put record needs string k and v')
      return { t: 'put', r, k: o['k'], v: o['v'] }
    case 'del':
      if (typeof o['k'] !== 'string') throw new Error('del record needs string k')
      return { t: 'del', r, k: o['k'] }
    case 'txn': {
      const ops = o['ops']
      if (!Array.isArray(ops) || ops.length === 0) throw new Error('txn record needs a non-empty ops array')
      ops.forEach((op: unknown, i) => {
        const x = (typeof op === 'object' && op !== null ? op : {}) as Record<string, unknown>
        if (typeof x['k'] !== 'string' || (x['v'] !== undefined && typeof x['v'] !== 'string')) throw new Error(`txn record ops[${i}] needs string k and, if present, string v`)
      })
      return { t: 'txn', r, ops: ops as { k: string; v?: string }[] }
    }
    case 'seal':
      if (!Number.isSafeInteger(o['next'])) throw new Error('seal record needs integer next')
      return { t: 'seal', r, next: o['next'] as number }
    default:
      throw new Error(`record type ${JSON.stringify(o['t'])} is unknown`)
  }
}

/** A put, del or txn record as the key changes it makes, all at revision r (value undefined: deleted). */
export function recordChanges(record: Exclude<LogRecord, { t: 'seal' }>): { key: string; value: string | undefined }[] {
  if (record.t === 'put') return [{ key: record.k, value: record.v }]
  if (record.t === 'del') return [{ key: record.k, value: undefined }]
  return record.ops.map((o) => ({ key: o.k, value: o.v }))
}

export function parseSnapshot(payload: Buffer): Snapshot {
  const raw: unknown = JSON.parse(payload.toString('utf8'))
  const o = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>
  for (const field of ['gen', 'rev', 'logOffset']) {
    if (!Number.isSafeInteger(o[field]) || (o[field] as number) < 0) throw new Error(`snapshot field ${field} is not a non-negative integer`)
  }
  if (!Array.isArray(o['kvs'])) throw new Error('snapshot field kvs is not an array')
  const kvs = o['kvs'] as unknown[]
  kvs.forEach((kv, i) => {
    if (!Array.isArray(kv) || typeof kv[0] !== 'string' || typeof kv[1] !== 'string' || !Number.isSafeInteger(kv[2])) {
      throw new Error(`snapshot field kvs[${i}] is not [key, value, revision]`)
    }
  })
  return o as unknown as Snapshot
}
