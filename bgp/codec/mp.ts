// MP_REACH_NLRI and MP_UNREACH_NLRI (RFC 4760 §3-4) for IPv4 and IPv6 unicast, next hops included
// (IPv6 global plus link-local; IPv6 next hops for IPv4 NLRI per RFC 8950). Other families are kept
// as raw bytes for the session to ignore. Errors follow RFC 7606 §5.3 and §7.11.

import { Afi, AttrCode, ErrorCode, Safi, UpdateSubcode, familyKey } from './constants.js'
import { BgpError, ErrorAction, type ErrorActionValue } from './errors.js'
import { Writer } from './buffer.js'
import { formatIpv4, formatIpv6, parseIpv4, parseIpv6 } from '../../net/index.js'
import { decodeIpv6Prefixes, decodeNlri, nlriSize, writeNlri, type Ipv6Prefixes, type Prefix } from './nlri.js'

export interface MpReach {
  readonly afi: number
  readonly safi: number
  /** One address, or an IPv6 global address followed by its link-local address. */
  readonly nextHop: readonly string[]
  /** The prefixes announced (empty when they are in `nlriColumns`). */
  readonly nlri: readonly Prefix[]
  /** IPv6 unicast prefixes as columns, when decoded with `ipv6Columns` and without add-path. */
  readonly nlriColumns?: Ipv6Prefixes
  /** The whole attribute value, for families this speaker does not decode. */
  readonly raw?: Uint8Array
}

export interface MpUnreach {
  readonly afi: number
  readonly safi: number
  readonly withdrawn: readonly Prefix[]
  readonly raw?: Uint8Array
}

export function isUnicastFamily(afi: number, safi: number): boolean {
  return (afi === Afi.IPV4 || afi === Afi.IPV6) && safi === Safi.UNICAST
}

const mpName = (code: number): string => (code === AttrCode.MP_REACH_NLRI ? 'MP_REACH_NLRI' : 'MP_UNREACH_NLRI')

/**
 * Optional Attribute Error for the attribute at buf[offset, end) (header included): RFC 4271 §6.3 puts the
 * erroneous attribute, type, length and value, in the NOTIFICATION's data.
 */
function mpError(code: number, detail: string, buf: Uint8Array, offset: number, end: number, action: ErrorActionValue, family?: number): BgpError {
  return new BgpError({
    code: ErrorCode.UPDATE_MESSAGE,
    subcode: UpdateSubcode.OPTIONAL_ATTRIBUTE_ERROR,
    detail: `${mpName(code)}: ${detail}`,
    data: buf.slice(offset, end),
    offset,
    action,
    attrCode: code,
    ...(family !== undefined ? { family } : {}),
  })
}

/** Runs `decode` over an MP attribute's prefixes; an error it throws names the attribute too. */
function inMp<T>(code: number, decode: () => T): T {
  try {
    return decode()
  } catch (err) {
    if (!(err instanceof BgpError)) throw err
    throw new BgpError({
      code: err.code,
      subcode: err.subcode,
      detail: `${mpName(code)}: ${err.detail ?? ''}`,
      data: err.data,
      action: err.action,
      attrCode: code,
      ...(err.offset !== undefined ? { offset: err.offset } : {}),
      ...(err.family !== undefined ? { family: err.family } : {}),
    })
  }
}

function decodeNextHop(buf: Uint8Array, start: number, len: number, afi: number): string[] | undefined {
  if (len === 4 && afi === Afi.IPV4) {
    return [formatIpv4(((buf[start]! << 24) | (buf[start + 1]! << 16) | (buf[start + 2]! << 8) | buf[start + 3]!) >>> 0)]
  }
  if (len === 16) return [formatIpv6(buf, start)]
  if (len === 32) return [formatIpv6(buf, start), formatIpv6(buf, start + 16)]
  return undefined
}

/**
 * MP_REACH_NLRI's value at buf[start, start + len); `offset` is where the attribute header starts. With
 * `ipv6Columns`, IPv6 unicast prefixes (unless they carry path identifiers) come as columns in
 * `nlriColumns` instead of objects in `nlri`: a receiver's hot path for a table dump.
 */
export function decodeMpReach(buf: Uint8Array, start: number, len: number, offset: number, addPath: (family: number) => boolean, ipv6Columns = false): MpReach {
  const code = AttrCode.MP_REACH_NLRI
  const end = start + len
  // Without AFI and SAFI nothing can be disabled selectively: the session goes (RFC 7606 §7.11).
  if (len < 3) throw mpError(code, `length ${len} leaves no AFI/SAFI`, buf, offset, end, ErrorAction.SESSION_RESET)
  const afi = (buf[start]! << 8) | buf[start + 1]!
  const safi = buf[start + 2]!
  const family = familyKey(afi, safi)
  if (!isUnicastFamily(afi, safi)) {
    return { afi, safi, nextHop: [], nlri: [], raw: buf.slice(start, end) }
  }
  if (len < 5) throw mpError(code, `length ${len} is too short`, buf, offset, end, ErrorAction.AFI_SAFI_DISABLE, family)
  const nhLen = buf[start + 3]!
  if (4 + nhLen + 1 > len) throw mpError(code, `next hop length ${nhLen} overruns the attribute`, buf, offset, end, ErrorAction.AFI_SAFI_DISABLE, family)
  const nextHop = decodeNextHop(buf, start + 4, nhLen, afi)
  if (nextHop === undefined) {
    throw mpError(code, `next hop length ${nhLen} is not valid for AFI ${afi}`, buf, offset, end, ErrorAction.AFI_SAFI_DISABLE, family)
  }
  // The reserved octet after the next hop (once SNPAs) is ignored on receipt (RFC 4760 §3).
  if (ipv6Columns && afi === Afi.IPV6 && safi === Safi.UNICAST && !addPath(family)) {
    return { afi, safi, nextHop, nlri: [], nlriColumns: inMp(code, () => decodeIpv6Prefixes(buf, start + 5 + nhLen, end, ErrorAction.AFI_SAFI_DISABLE, family)) }
  }
  const nlri: Prefix[] = []
  inMp(code, () => decodeNlri(buf, start + 5 + nhLen, end, afi, addPath(family), nlri, ErrorAction.AFI_SAFI_DISABLE, family))
  return { afi, safi, nextHop, nlri }
}

export function decodeMpUnreach(buf: Uint8Array, start: number, len: number, offset: number, addPath: (family: number) => boolean): MpUnreach {
  const code = AttrCode.MP_UNREACH_NLRI
  if (len < 3) throw mpError(code, `length ${len} leaves no AFI/SAFI`, buf, offset, start + len, ErrorAction.SESSION_RESET)
  const afi = (buf[start]! << 8) | buf[start + 1]!
  const safi = buf[start + 2]!
  const family = familyKey(afi, safi)
  if (!isUnicastFamily(afi, safi)) return { afi, safi, withdrawn: [], raw: buf.slice(start, start + len) }
  const withdrawn: Prefix[] = []
  inMp(code, () => decodeNlri(buf, start + 3, start + len, afi, addPath(family), withdrawn, ErrorAction.AFI_SAFI_DISABLE, family))
  return { afi, safi, withdrawn }
}

export function encodeNextHop(w: Writer, nextHop: readonly string[]): void {
  const at = w.reserve(1)
  for (const nh of nextHop) {
    const v4 = parseIpv4(nh)
    if (v4 !== undefined && nextHop.length === 1) {
      w.u32(v4)
      continue
    }
    const v6 = parseIpv6(nh)
    if (v6 === undefined) throw new RangeError(`next hop ${JSON.stringify(nh)} is not an address`)
    w.bytes(v6)
  }
  w.backfill(at, 1)
}

/** The MP_REACH_NLRI value: AFI, SAFI, next hop, reserved octet, prefixes. */
export function encodeMpReachValue(w: Writer, mp: MpReach, addPath: boolean): boolean {
  if (mp.raw) {
    w.bytes(mp.raw)
    return true
  }
  w.u16(mp.afi).u8(mp.safi)
  encodeNextHop(w, mp.nextHop)
  w.u8(0)
  writePrefixes(w, mp.nlri, addPath)
  return true
}

export function encodeMpUnreachValue(w: Writer, mp: MpUnreach, addPath: boolean): boolean {
  if (mp.raw) {
    w.bytes(mp.raw)
    return true
  }
  w.u16(mp.afi).u8(mp.safi)
  writePrefixes(w, mp.withdrawn, addPath)
  return true
}

export function writePrefixes(w: Writer, prefixes: readonly Prefix[], addPath: boolean): void {
  let size = 0
  for (const p of prefixes) size += nlriSize(p, addPath)
  w.ensure(size)
  let pos = w.pos
  for (const p of prefixes) pos = writeNlri(w.buf, pos, p, addPath)
  w.pos = pos
}
