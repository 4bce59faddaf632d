// UPDATE packing: prefixes that share one attribute set go into the fewest UPDATEs that fit the
// negotiated size. The attributes are encoded once per batch and copied into each message;
// each UPDATE carries only one of withdrawn routes, NLRI, MP_REACH or MP_UNREACH (RFC 7606 §5.1).

import { Afi, AttrCode, AttrFlag, HEADER_LENGTH, MAX_EXTENDED_MESSAGE_LENGTH, MAX_MESSAGE_LENGTH, MessageType, Safi, familyKey } from './constants.js'
import { Writer, keptCopy } from './buffer.js'
import { encodeAttributes, type PathAttributes } from './attributes.js'
import { forTwoOctetPeer } from './as4.js'
import { encodeNextHop } from './mp.js'
import { nlriSize, writeNlri, type Prefix } from './nlri.js'
import type { CodecOptions } from './options.js'

export interface UpdateBatch {
  readonly afi: number
  readonly safi?: number
  /** Required when announcing. For IPv4 unicast the NEXT_HOP attribute carries the next hop. */
  readonly attributes?: PathAttributes
  /** MP_REACH next hop(s) for families other than IPv4 unicast (global, then link-local). */
  readonly nextHop?: readonly string[]
  readonly announce?: readonly Prefix[]
  readonly withdraw?: readonly Prefix[]
  /**
   * A memo the caller keeps beside `attributes` (which it must then never change): the encoded set, by
   * AS width, filled on first use. An Adj-RIB-Out's export results are shared by many peers, so the set
   * is encoded once, not once per peer.
   */
  readonly encoded?: EncodedAttributes
}

export interface EncodedAttributes {
  as4?: Buffer
  as2?: Buffer
}

function encodedAttributes(attributes: PathAttributes, opts: CodecOptions, memo: EncodedAttributes | undefined): Buffer {
  const kept = opts.as4 ? memo?.as4 : memo?.as2
  if (kept !== undefined) return kept
  const w = new Writer(256)
  // RFC 6793 §4.2.2: toward a 2-octet speaker a 4-octet AS goes out as AS_TRANS, the real path beside it in AS4_PATH.
  encodeAttributes(w, opts.as4 ? attributes : forTwoOctetPeer(attributes), opts)
  const bytes = w.buf.subarray(0, w.pos)
  if (memo === undefined) return bytes
  const own = keptCopy(bytes)
  if (opts.as4) memo.as4 = own
  else memo.as2 = own
  return own
}

function header(buf: Buffer, length: number): void {
  buf.fill(0xff, 0, 16)
  buf.writeUInt16BE(length, 16)
  buf[18] = MessageType.UPDATE
}

/**
 * Splits prefixes into runs whose wire size fits `room`; calls `emit(from, to, bytes)` per run.
 * Throws when a single prefix cannot fit (the attributes leave too little room).
 */
function runs(prefixes: readonly Prefix[], addPath: boolean, room: number, emit: (from: number, to: number, bytes: number) => void): void {
  let from = 0
  let bytes = 0
  for (let i = 0; i < prefixes.length; i++) {
    const size = nlriSize(prefixes[i]!, addPath)
    if (size > room) throw new RangeError(`attributes leave ${room} bytes per UPDATE, too few for one prefix`)
    if (bytes + size > room) {
      emit(from, i, bytes)
      from = i
      bytes = 0
    }
    bytes += size
  }
  if (from < prefixes.length) emit(from, prefixes.length, bytes)
}

function writeRun(buf: Buffer, pos: number, prefixes: readonly Prefix[], from: number, to: number, addPath: boolean): number {
  for (let i = from; i < to; i++) pos = writeNlri(buf, pos, prefixes[i]!, addPath)
  return pos
}

/**
 * The UPDATEs carrying `batch`. `kept` when the caller holds them long (a batch packed once for many peers):
 * each is then its own allocation, not a slice of the shared pool that would hold a whole slab alive.
 */
export function packUpdates(batch: UpdateBatch, opts: CodecOptions, kept = false): Buffer[] {
  const alloc = kept ? (size: number) => Buffer.allocUnsafeSlow(size) : (size: number) => Buffer.allocUnsafe(size)
  const afi = batch.afi
  const safi = batch.safi ?? Safi.UNICAST
  const addPath = opts.addPath.has(familyKey(afi, safi))
  const max = opts.extendedMessage ? MAX_EXTENDED_MESSAGE_LENGTH : MAX_MESSAGE_LENGTH
  const out: Buffer[] = []
  const withdraw = batch.withdraw ?? []
  const announce = batch.announce ?? []
  const classic = afi === Afi.IPV4 && safi === Safi.UNICAST

  if (withdraw.length > 0) {
    if (classic) {
      // header, withdrawn length, prefixes, total attribute length 0
      runs(withdraw, addPath, max - HEADER_LENGTH - 4, (from, to, bytes) => {
        const buf = alloc(HEADER_LENGTH + 4 + bytes)
        header(buf, buf.length)
        buf.writeUInt16BE(bytes, HEADER_LENGTH)
        const end = writeRun(buf, HEADER_LENGTH + 2, withdraw, from, to, addPath)
        buf.writeUInt16BE(0, end)
        out.push(buf)
      })
    } else {
      // header, withdrawn length 0, attribute length, MP_UNREACH header (4) + AFI/SAFI (3), prefixes
      runs(withdraw, addPath, max - HEADER_LENGTH - 4 - 7, (from, to, bytes) => {
        const buf = alloc(HEADER_LENGTH + 4 + 7 + bytes)
        header(buf, buf.length)
        let p = HEADER_LENGTH
        buf.writeUInt16BE(0, p)
        buf.writeUInt16BE(7 + bytes, p + 2)
        p += 4
        buf[p] = AttrFlag.OPTIONAL | AttrFlag.EXTENDED_LENGTH
        buf[p + 1] = AttrCode.MP_UNREACH_NLRI
        buf.writeUInt16BE(3 + bytes, p + 2)
        buf.writeUInt16BE(afi, p + 4)
        buf[p + 6] = safi
        writeRun(buf, p + 7, withdraw, from, to, addPath)
        out.push(buf)
      })
    }
  }

  if (announce.length > 0) {
    if (batch.attributes === undefined) throw new RangeError('announcing prefixes needs attributes')
    const attrs = encodedAttributes(batch.attributes, opts, batch.encoded)
    if (classic) {
      runs(announce, addPath, max - HEADER_LENGTH - 4 - attrs.length, (from, to, bytes) => {
        const buf = alloc(HEADER_LENGTH + 4 + attrs.length + bytes)
        header(buf, buf.length)
        buf.writeUInt16BE(0, HEADER_LENGTH)
        buf.writeUInt16BE(attrs.length, HEADER_LENGTH + 2)
        attrs.copy(buf, HEADER_LENGTH + 4)
        writeRun(buf, HEADER_LENGTH + 4 + attrs.length, announce, from, to, addPath)
        out.push(buf)
      })
    } else {
      if (batch.nextHop === undefined || batch.nextHop.length === 0) throw new RangeError(`announcing AFI ${afi} needs nextHop`)
      const nh = new Writer(40)
      encodeNextHop(nh, batch.nextHop)
      const nextHop = nh.buf.subarray(0, nh.pos) // length octet + addresses
      // MP_REACH: header (4), AFI/SAFI (3), next hop (1 + n), reserved (1), prefixes
      const fixed = 4 + 3 + nextHop.length + 1
      runs(announce, addPath, max - HEADER_LENGTH - 4 - fixed - attrs.length, (from, to, bytes) => {
        const buf = alloc(HEADER_LENGTH + 4 + fixed + bytes + attrs.length)
        header(buf, buf.length)
        let p = HEADER_LENGTH
        buf.writeUInt16BE(0, p)
        buf.writeUInt16BE(fixed + bytes + attrs.length, p + 2)
        p += 4
        buf[p] = AttrFlag.OPTIONAL | AttrFlag.EXTENDED_LENGTH
        buf[p + 1] = AttrCode.MP_REACH_NLRI
        buf.writeUInt16BE(fixed - 4 + bytes, p + 2)
        buf.writeUInt16BE(afi, p + 4)
        buf[p + 6] = safi
        nextHop.copy(buf, p + 7)
        p += 7 + nextHop.length
        buf[p++] = 0
        p = writeRun(buf, p, announce, from, to, addPath)
        attrs.copy(buf, p)
        out.push(buf)
      })
    }
  }
  return out
}
