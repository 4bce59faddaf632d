// NLRI: prefixes as they travel in UPDATEs (RFC 4271 §4.3, RFC 4760 §5, RFC 7911 §3 path identifiers).
// A prefix is a small plain object: IPv4 addresses as one unsigned number so decoding a full table
// allocates one object per prefix; IPv6 as 16 bytes. Host bits are always cleared.

import { Afi, UpdateSubcode, ErrorCode } from './constants.js'
import { BgpError, ErrorAction, type ErrorActionValue } from './errors.js'
import { formatIpv4, formatIpv6, parseIpv4, parseIpv6 } from '../../net/index.js'

export interface Ipv4Prefix {
  readonly afi: 1
  readonly len: number
  /** The network address as an unsigned 32-bit number. */
  readonly addr: number
  /** RFC 7911 path identifier; 0 when add-path is not in use. */
  readonly pathId: number
}

export interface Ipv6Prefix {
  readonly afi: 2
  readonly len: number
  readonly addr: Uint8Array
  readonly pathId: number
}

export type Prefix = Ipv4Prefix | Ipv6Prefix

export function ipv4Prefix(addr: number, len: number, pathId = 0): Ipv4Prefix {
  const mask = len === 0 ? 0 : (0xffffffff << (32 - len)) >>> 0
  return { afi: 1, len, addr: (addr & mask) >>> 0, pathId }
}

/** The network `addr`/`len` as a prefix of its own bytes (host bits clear); copied byte by byte, with no view. */
export function ipv6Prefix(addr: Uint8Array, len: number, pathId = 0): Ipv6Prefix {
  const bytes = new Uint8Array(16)
  const nb = (len + 7) >> 3
  for (let k = 0; k < nb; k++) bytes[k] = addr[k]!
  if (len & 7) bytes[nb - 1]! &= (0xff << (8 - (len & 7))) & 0xff
  return { afi: 2, len, addr: bytes, pathId }
}

/** "198.18.0.0/26" or "2001:db8::/64"; with add-path the identifier is not part of the text. */
export function formatPrefix(p: Prefix): string {
  return p.afi === 1 ? `${formatIpv4(p.addr)}/${p.len}` : `${formatIpv6(p.addr)}/${p.len}`
}

/** Parses "addr/len"; throws an Error naming the text when it is not a prefix. */
export function parsePrefix(text: string, pathId = 0): Prefix {
  const slash = text.indexOf('/')
  const addrText = slash < 0 ? text : text.slice(0, slash)
  const lenText = slash < 0 ? undefined : text.slice(slash + 1)
  const v4 = parseIpv4(addrText)
  if (v4 !== undefined) {
    const len = lenText === undefined ? 32 : Number(lenText)
    if (!Number.isInteger(len) || len < 0 || len > 32 || (lenText !== undefined && !/^\d+$/.test(lenText))) {
      throw new Error(`bad prefix length in ${JSON.stringify(text)}`)
    }
    return ipv4Prefix(v4, len, pathId)
  }
  const v6 = parseIpv6(addrText)
  if (v6 !== undefined) {
    const len = lenText === undefined ? 128 : Number(lenText)
    if (!Number.isInteger(len) || len < 0 || len > 128 || (lenText !== undefined && !/^\d+$/.test(lenText))) {
      throw new Error(`bad prefix length in ${JSON.stringify(text)}`)
    }
    return ipv6Prefix(v6, len, pathId)
  }
  throw new Error(`not an IPv4 or IPv6 prefix: ${JSON.stringify(text)}`)
}

export function prefixEquals(a: Prefix, b: Prefix): boolean {
  if (a.afi !== b.afi || a.len !== b.len || a.pathId !== b.pathId) return false
  if (a.afi === 1) return a.addr === (b as Ipv4Prefix).addr
  const bb = (b as Ipv6Prefix).addr
  for (let i = 0; i < 16; i++) if (a.addr[i] !== bb[i]) return false
  return true
}

/** Prefix order: family, then address, length and path id (negative, zero or positive). */
export function comparePrefixes(p: Prefix, q: Prefix): number {
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
  return p.pathId - q.pathId
}

/** Bytes one prefix takes on the wire. */
export function nlriSize(p: Prefix, addPath: boolean): number {
  return (addPath ? 5 : 1) + ((p.len + 7) >> 3)
}

function nlriError(detail: string, offset: number, action: ErrorActionValue, family: number | undefined): BgpError {
  return new BgpError({
    code: ErrorCode.UPDATE_MESSAGE,
    subcode: UpdateSubcode.INVALID_NETWORK_FIELD,
    detail,
    offset,
    action,
    ...(family !== undefined ? { family } : {}),
  })
}

/** The first `nb` (0-4) bytes at buf[at] as the top bytes of an IPv4 address (int32), the rest zero. */
function ipv4Bytes(buf: Uint8Array, at: number, nb: number): number {
  switch (nb) {
    case 4:
      return (buf[at]! << 24) | (buf[at + 1]! << 16) | (buf[at + 2]! << 8) | buf[at + 3]!
    case 3:
      return (buf[at]! << 24) | (buf[at + 1]! << 16) | (buf[at + 2]! << 8)
    case 2:
      return (buf[at]! << 24) | (buf[at + 1]! << 16)
    case 1:
      return buf[at]! << 24
    default:
      return 0
  }
}

/**
 * Decodes the prefixes in buf[start, end) into `out`. Errors carry the offset of the bad prefix
 * and the given action: session reset for the UPDATE's own fields, AFI/SAFI disable inside
 * MP_REACH/MP_UNREACH (RFC 7606 §5.3).
 */
export function decodeNlri(
  buf: Uint8Array,
  start: number,
  end: number,
  afi: number,
  addPath: boolean,
  out: Prefix[],
  action: ErrorActionValue = ErrorAction.SESSION_RESET,
  family?: number,
): void {
  let i = start
  // Two loops on purpose: one shape of prefix object per loop keeps each push site monomorphic, which a
  // merged loop would lose, decoding both families slower.
  if (afi === Afi.IPV4) {
    while (i < end) {
      const at = i
      let pathId = 0
      if (addPath) {
        if (i + 4 >= end) throw nlriError('truncated path identifier', at, action, family)
        pathId = ((buf[i]! << 24) | (buf[i + 1]! << 16) | (buf[i + 2]! << 8) | buf[i + 3]!) >>> 0
        i += 4
      }
      const len = buf[i++]!
      if (len > 32) throw nlriError(`prefix length ${len} exceeds 32`, at, action, family)
      const nb = (len + 7) >> 3
      if (i + nb > end) throw nlriError(`prefix of length ${len} overruns the field`, at, action, family)
      const addr = ipv4Bytes(buf, i, nb)
      i += nb
      const mask = len === 0 ? 0 : 0xffffffff << (32 - len)
      out.push({ afi: 1, len, addr: (addr & mask) >>> 0, pathId })
    }
    return
  }
  if (afi === Afi.IPV6) {
    while (i < end) {
      const at = i
      let pathId = 0
      if (addPath) {
        if (i + 4 >= end) throw nlriError('truncated path identifier', at, action, family)
        pathId = ((buf[i]! << 24) | (buf[i + 1]! << 16) | (buf[i + 2]! << 8) | buf[i + 3]!) >>> 0
        i += 4
      }
      const len = buf[i++]!
      if (len > 128) throw nlriError(`prefix length ${len} exceeds 128`, at, action, family)
      const nb = (len + 7) >> 3
      if (i + nb > end) throw nlriError(`prefix of length ${len} overruns the field`, at, action, family)
      const addr = new Uint8Array(16)
      for (let k = 0; k < nb; k++) addr[k] = buf[i + k]!
      if (len & 7) addr[nb - 1]! &= (0xff << (8 - (len & 7))) & 0xff
      i += nb
      out.push({ afi: 2, len, addr, pathId })
    }
    return
  }
  throw nlriError(`unsupported AFI ${afi}`, start, action, family)
}

/**
 * IPv4 prefixes without path identifiers as two columns, for the hot path of a table dump: no object per
 * prefix. Entries [0, count) hold the network (host bits clear) as int32 and its length.
 */
export interface Ipv4Prefixes {
  readonly count: number
  readonly addr: Int32Array
  readonly len: Uint8Array
}

/**
 * Decodes the IPv4 prefixes (no path identifiers) in buf[start, end) as columns. Errors are those of
 * decodeNlri, with a session reset: the NLRI and Withdrawn Routes fields are the UPDATE's own.
 */
export function decodeIpv4Prefixes(buf: Uint8Array, start: number, end: number): Ipv4Prefixes {
  // Two passes: the first checks each prefix and counts them, so the columns are made to size; the
  // second reads the addresses without checks.
  let n = 0
  for (let i = start; i < end; n++) {
    const len = buf[i]!
    if (len > 32) throw nlriError(`prefix length ${len} exceeds 32`, i, ErrorAction.SESSION_RESET, undefined)
    const next = i + 1 + ((len + 7) >> 3)
    if (next > end) throw nlriError(`prefix of length ${len} overruns the field`, i, ErrorAction.SESSION_RESET, undefined)
    i = next
  }
  const addrs = new Int32Array(n)
  const lens = new Uint8Array(n)
  for (let k = 0, i = start; k < n; k++) {
    const len = buf[i]!
    const addr = ipv4Bytes(buf, i + 1, (len + 7) >> 3)
    addrs[k] = len === 0 ? 0 : addr & (0xffffffff << (32 - len))
    lens[k] = len
    i += 1 + ((len + 7) >> 3)
  }
  return { count: n, addr: addrs, len: lens }
}

/** The columns as prefix objects. */
export function ipv4PrefixList(p: Ipv4Prefixes): Prefix[] {
  const out = new Array<Prefix>(p.count)
  for (let i = 0; i < p.count; i++) out[i] = { afi: 1, len: p.len[i]!, addr: p.addr[i]! >>> 0, pathId: 0 }
  return out
}

/**
 * IPv6 prefixes without path identifiers as columns, for the hot path of a table dump: no object or
 * Uint8Array per prefix. Entry i's network (host bits clear) is addr[16i, 16i + 16), its length len[i].
 */
export interface Ipv6Prefixes {
  readonly count: number
  readonly addr: Uint8Array
  readonly len: Uint8Array
}

/**
 * Decodes the IPv6 prefixes (no path identifiers) in buf[start, end) as columns, with decodeNlri's errors
 * (`action` and `family` as given: MP_REACH_NLRI's disable the family).
 */
export function decodeIpv6Prefixes(buf: Uint8Array, start: number, end: number, action: ErrorActionValue, family: number | undefined): Ipv6Prefixes {
  let n = 0
  for (let i = start; i < end; n++) {
    const len = buf[i]!
    if (len > 128) throw nlriError(`prefix length ${len} exceeds 128`, i, action, family)
    const next = i + 1 + ((len + 7) >> 3)
    if (next > end) throw nlriError(`prefix of length ${len} overruns the field`, i, action, family)
    i = next
  }
  const addrs = new Uint8Array(n * 16)
  const lens = new Uint8Array(n)
  for (let k = 0, i = start; k < n; k++) {
    const len = buf[i]!
    const nb = (len + 7) >> 3
    const at = k * 16
    for (let b = 0; b < nb; b++) addrs[at + b] = buf[i + 1 + b]!
    if (len & 7) addrs[at + nb - 1]! &= (0xff << (8 - (len & 7))) & 0xff
    lens[k] = len
    i += 1 + nb
  }
  return { count: n, addr: addrs, len: lens }
}

/** The columns as prefix objects. */
export function ipv6PrefixList(p: Ipv6Prefixes): Prefix[] {
  const out = new Array<Prefix>(p.count)
  for (let i = 0; i < p.count; i++) out[i] = { afi: 2, len: p.len[i]!, addr: p.addr.slice(i * 16, i * 16 + 16), pathId: 0 }
  return out
}

/** Writes one prefix at buf[pos]; returns the position after it. The caller has checked the space. */
export function writeNlri(buf: Uint8Array, pos: number, p: Prefix, addPath: boolean): number {
  if (addPath) {
    buf[pos++] = p.pathId >>> 24
    buf[pos++] = (p.pathId >>> 16) & 255
    buf[pos++] = (p.pathId >>> 8) & 255
    buf[pos++] = p.pathId & 255
  }
  buf[pos++] = p.len
  const nb = (p.len + 7) >> 3
  if (p.afi === 1) {
    const a = p.addr
    if (nb > 0) buf[pos++] = a >>> 24
    if (nb > 1) buf[pos++] = (a >>> 16) & 255
    if (nb > 2) buf[pos++] = (a >>> 8) & 255
    if (nb > 3) buf[pos++] = a & 255
  } else {
    for (let k = 0; k < nb; k++) buf[pos++] = p.addr[k]!
  }
  return pos
}
