// Path attributes, table-driven (RFC 4271 §5, RFC 7606): one descriptor per attribute code with its
// expected flags, its RFC 7606 action on malformation, a decoder and an encoder. One generic loop
// frames the attribute list and does the checks common to all (overrun, duplicates, flags,
// unknown attributes) before a descriptor sees a value. MP_REACH/MP_UNREACH live in mp.ts.

import { AttrCode, AttrFlag, ErrorCode, UpdateSubcode, type OriginValue, type SegmentTypeValue } from './constants.js'
import { BgpError, ErrorAction, strongest, type ErrorActionValue } from './errors.js'
import { Writer } from './buffer.js'
import { formatIpv4, parseIpv4 } from '../../net/index.js'

export interface AsPathSegment {
  readonly type: SegmentTypeValue
  readonly asns: readonly number[]
}

export interface Aggregator {
  readonly asn: number
  readonly address: string
}

/** RFC 8092: global administrator, local data part 1, local data part 2. */
export type LargeCommunity = readonly [number, number, number]

export interface UnknownAttribute {
  readonly flags: number
  readonly code: number
  readonly value: Uint8Array
}

/** The path attributes of a route, as plain readonly data. MP_REACH/MP_UNREACH are carried apart. */
export interface PathAttributes {
  readonly origin?: OriginValue
  readonly asPath?: readonly AsPathSegment[]
  /** The NEXT_HOP attribute (code 3), IPv4 only. */
  readonly nextHop?: string
  readonly med?: number
  readonly localPref?: number
  readonly atomicAggregate?: boolean
  readonly aggregator?: Aggregator
  /** RFC 1997 communities as 32-bit numbers (high 16 bits the AS). */
  readonly communities?: readonly number[]
  readonly originatorId?: string
  readonly clusterList?: readonly string[]
  /** RFC 4360 extended communities, each as 16 hex digits. */
  readonly extCommunities?: readonly string[]
  /** RFC 6793 attributes, present only on sessions without 4-octet AS. */
  readonly as4Path?: readonly AsPathSegment[]
  readonly as4Aggregator?: Aggregator
  readonly largeCommunities?: readonly LargeCommunity[]
  /** Optional transitive attributes this speaker does not know, kept for propagation. */
  readonly unknown?: readonly UnknownAttribute[]
}

export type MutablePathAttributes = { -readonly [K in keyof PathAttributes]: PathAttributes[K] }

export interface AttrCodecOptions {
  /** RFC 6793: AS numbers are four octets on this session. */
  readonly as4: boolean
}

/** One attribute as it stood on the wire: its code and flags, in order. */
export type AttrLayout = readonly number[] // (flags << 8) | code

const WELL_KNOWN = AttrFlag.TRANSITIVE
const OPT_TRANS = AttrFlag.OPTIONAL | AttrFlag.TRANSITIVE
const OPT_NON_TRANS = AttrFlag.OPTIONAL

export interface AttrDescriptor {
  readonly code: number
  readonly name: string
  /** Expected Optional and Transitive bits. */
  readonly flags: number
  /** What a malformed instance costs (RFC 7606 §7). */
  readonly onError: ErrorActionValue
  decode(buf: Uint8Array, start: number, len: number, opts: AttrCodecOptions, into: MutablePathAttributes): void
  /** Writes the value (not the header); returns false when the attribute is absent. */
  encode(w: Writer, attrs: PathAttributes, opts: AttrCodecOptions): boolean
}

/** Thrown by descriptors: the generic loop adds offset, data and the descriptor's action. */
class ValueError {
  constructor(
    readonly subcode: number,
    readonly detail: string,
  ) {}
}

const u32 = (b: Uint8Array, i: number): number => ((b[i]! << 24) | (b[i + 1]! << 16) | (b[i + 2]! << 8) | b[i + 3]!) >>> 0
const u16 = (b: Uint8Array, i: number): number => (b[i]! << 8) | b[i + 1]!

function lengthIs(name: string, len: number, ...allowed: number[]): void {
  if (!allowed.includes(len)) {
    throw new ValueError(UpdateSubcode.ATTRIBUTE_LENGTH_ERROR, `${name} length ${len}, expected ${allowed.join(' or ')}`)
  }
}

function multipleOf(name: string, len: number, unit: number): void {
  if (len === 0 || len % unit !== 0) {
    throw new ValueError(UpdateSubcode.ATTRIBUTE_LENGTH_ERROR, `${name} length ${len} is not a non-zero multiple of ${unit}`)
  }
}

function writeIpv4(w: Writer, text: string, what: string): void {
  const n = parseIpv4(text)
  if (n === undefined) throw new RangeError(`${what} ${JSON.stringify(text)} is not an IPv4 address`)
  w.u32(n)
}

/** RFC 4271 §4.3 and RFC 7606 §7.2: segments of 2- or 4-octet AS numbers. */
export function decodeAsPath(buf: Uint8Array, start: number, len: number, asSize: 2 | 4, name = 'AS_PATH'): AsPathSegment[] {
  const end = start + len
  // The segments are counted (and checked) first: an interned attribute set keeps this array, and one
  // grown by push would keep room for 17 segments where a path mostly has one.
  let n = 0
  for (let i = start; i < end; n++) {
    if (end - i < 2) throw new ValueError(UpdateSubcode.MALFORMED_AS_PATH, `${name}: one octet left where a segment header belongs`)
    const type = buf[i]!
    const count = buf[i + 1]!
    if (type < 1 || type > 4) throw new ValueError(UpdateSubcode.MALFORMED_AS_PATH, `${name}: unknown segment type ${type}`)
    if (count === 0) throw new ValueError(UpdateSubcode.MALFORMED_AS_PATH, `${name}: segment of length zero`)
    i += 2 + count * asSize
    if (i > end) throw new ValueError(UpdateSubcode.MALFORMED_AS_PATH, `${name}: segment of ${count} ASes overruns the attribute`)
  }
  const segments = new Array<AsPathSegment>(n)
  for (let s = 0, i = start; s < n; s++) {
    const type = buf[i]! as SegmentTypeValue
    const count = buf[i + 1]!
    i += 2
    const asns = new Array<number>(count)
    for (let k = 0; k < count; k++, i += asSize) asns[k] = asSize === 4 ? u32(buf, i) : u16(buf, i)
    segments[s] = { type, asns }
  }
  return segments
}

export function encodeAsPath(w: Writer, segments: readonly AsPathSegment[], asSize: 2 | 4, map?: (asn: number) => number): void {
  for (const seg of segments) {
    // A segment holds at most 255 ASes; longer runs split into consecutive segments of the same type.
    for (let from = 0; from < seg.asns.length; from += 255) {
      const part = seg.asns.slice(from, from + 255)
      w.u8(seg.type).u8(part.length)
      for (const asn of part) {
        const v = map ? map(asn) : asn
        if (asSize === 4) w.u32(v)
        else w.u16(v)
      }
    }
  }
}

function decodeAggregator(buf: Uint8Array, start: number, len: number, asSize: 2 | 4, name: string): Aggregator {
  lengthIs(name, len, asSize + 4)
  return {
    asn: asSize === 4 ? u32(buf, start) : u16(buf, start),
    address: formatIpv4(u32(buf, start + asSize)),
  }
}

const DESCRIPTORS: AttrDescriptor[] = [
  {
    code: AttrCode.ORIGIN,
    name: 'ORIGIN',
    flags: WELL_KNOWN,
    onError: ErrorAction.TREAT_AS_WITHDRAW,
    decode(buf, start, len, _o, into) {
      lengthIs('ORIGIN', len, 1)
      const v = buf[start]!
      if (v > 2) throw new ValueError(UpdateSubcode.INVALID_ORIGIN_ATTRIBUTE, `ORIGIN value ${v}`)
      into.origin = v as OriginValue
    },
    encode(w, a) {
      if (a.origin === undefined) return false
      w.u8(a.origin)
      return true
    },
  },
  {
    code: AttrCode.AS_PATH,
    name: 'AS_PATH',
    flags: WELL_KNOWN,
    onError: ErrorAction.TREAT_AS_WITHDRAW,
    decode(buf, start, len, o, into) {
      into.asPath = decodeAsPath(buf, start, len, o.as4 ? 4 : 2)
    },
    encode(w, a, o) {
      if (a.asPath === undefined) return false
      encodeAsPath(w, a.asPath, o.as4 ? 4 : 2, o.as4 ? undefined : toAsTrans)
      return true
    },
  },
  {
    code: AttrCode.NEXT_HOP,
    name: 'NEXT_HOP',
    flags: WELL_KNOWN,
    onError: ErrorAction.TREAT_AS_WITHDRAW,
    decode(buf, start, len, _o, into) {
      lengthIs('NEXT_HOP', len, 4)
      into.nextHop = formatIpv4(u32(buf, start))
    },
    encode(w, a) {
      if (a.nextHop === undefined) return false
      writeIpv4(w, a.nextHop, 'nextHop')
      return true
    },
  },
  {
    code: AttrCode.MULTI_EXIT_DISC,
    name: 'MULTI_EXIT_DISC',
    flags: OPT_NON_TRANS,
    onError: ErrorAction.TREAT_AS_WITHDRAW,
    decode(buf, start, len, _o, into) {
      lengthIs('MULTI_EXIT_DISC', len, 4)
      into.med = u32(buf, start)
    },
    encode(w, a) {
      if (a.med === undefined) return false
      w.u32(a.med)
      return true
    },
  },
  {
    code: AttrCode.LOCAL_PREF,
    name: 'LOCAL_PREF',
    flags: WELL_KNOWN,
    onError: ErrorAction.TREAT_AS_WITHDRAW,
    decode(buf, start, len, _o, into) {
      lengthIs('LOCAL_PREF', len, 4)
      into.localPref = u32(buf, start)
    },
    encode(w, a) {
      if (a.localPref === undefined) return false
      w.u32(a.localPref)
      return true
    },
  },
  {
    code: AttrCode.ATOMIC_AGGREGATE,
    name: 'ATOMIC_AGGREGATE',
    flags: WELL_KNOWN,
    onError: ErrorAction.ATTRIBUTE_DISCARD,
    decode(_b, _s, len, _o, into) {
      lengthIs('ATOMIC_AGGREGATE', len, 0)
      into.atomicAggregate = true
    },
    encode(_w, a) {
      return a.atomicAggregate === true
    },
  },
  {
    code: AttrCode.AGGREGATOR,
    name: 'AGGREGATOR',
    flags: OPT_TRANS,
    onError: ErrorAction.ATTRIBUTE_DISCARD,
    decode(buf, start, len, o, into) {
      into.aggregator = decodeAggregator(buf, start, len, o.as4 ? 4 : 2, 'AGGREGATOR')
    },
    encode(w, a, o) {
      if (a.aggregator === undefined) return false
      if (o.as4) w.u32(a.aggregator.asn)
      else w.u16(toAsTrans(a.aggregator.asn))
      writeIpv4(w, a.aggregator.address, 'aggregator.address')
      return true
    },
  },
  {
    code: AttrCode.COMMUNITIES,
    name: 'COMMUNITIES',
    flags: OPT_TRANS,
    onError: ErrorAction.TREAT_AS_WITHDRAW,
    decode(buf, start, len, _o, into) {
      multipleOf('COMMUNITIES', len, 4)
      const out = new Array<number>(len / 4)
      for (let k = 0; k < out.length; k++) out[k] = u32(buf, start + k * 4)
      into.communities = out
    },
    encode(w, a) {
      if (a.communities === undefined || a.communities.length === 0) return false
      for (const c of a.communities) w.u32(c)
      return true
    },
  },
  {
    code: AttrCode.ORIGINATOR_ID,
    name: 'ORIGINATOR_ID',
    flags: OPT_NON_TRANS,
    onError: ErrorAction.TREAT_AS_WITHDRAW,
    decode(buf, start, len, _o, into) {
      lengthIs('ORIGINATOR_ID', len, 4)
      into.originatorId = formatIpv4(u32(buf, start))
    },
    encode(w, a) {
      if (a.originatorId === undefined) return false
      writeIpv4(w, a.originatorId, 'originatorId')
      return true
    },
  },
  {
    code: AttrCode.CLUSTER_LIST,
    name: 'CLUSTER_LIST',
    flags: OPT_NON_TRANS,
    onError: ErrorAction.TREAT_AS_WITHDRAW,
    decode(buf, start, len, _o, into) {
      multipleOf('CLUSTER_LIST', len, 4)
      const out = new Array<string>(len / 4)
      for (let k = 0; k < out.length; k++) out[k] = formatIpv4(u32(buf, start + k * 4))
      into.clusterList = out
    },
    encode(w, a) {
      if (a.clusterList === undefined || a.clusterList.length === 0) return false
      for (const c of a.clusterList) writeIpv4(w, c, 'clusterList')
      return true
    },
  },
  {
    code: AttrCode.EXTENDED_COMMUNITIES,
    name: 'EXTENDED_COMMUNITIES',
    flags: OPT_TRANS,
    onError: ErrorAction.TREAT_AS_WITHDRAW,
    decode(buf, start, len, _o, into) {
      multipleOf('EXTENDED_COMMUNITIES', len, 8)
      const out = new Array<string>(len / 8)
      const b = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength)
      for (let k = 0; k < out.length; k++) out[k] = b.toString('hex', start + k * 8, start + k * 8 + 8)
      into.extCommunities = out
    },
    encode(w, a) {
      if (a.extCommunities === undefined || a.extCommunities.length === 0) return false
      for (const c of a.extCommunities) {
        if (!/^[0-9a-fA-F]{16}$/.test(c)) throw new RangeError(`extended community ${JSON.stringify(c)} is not 16 hex digits`)
        w.bytes(Buffer.from(c, 'hex'))
      }
      return true
    },
  },
  {
    code: AttrCode.AS4_PATH,
    name: 'AS4_PATH',
    flags: OPT_TRANS,
    // RFC 6793 §6: a malformed AS4_PATH is discarded, never a reason to withdraw.
    onError: ErrorAction.ATTRIBUTE_DISCARD,
    decode(buf, start, len, o, into) {
      // RFC 6793 §4.1: between two 4-octet speakers AS4_PATH has no meaning and is ignored.
      if (o.as4) return
      const path = decodeAsPath(buf, start, len, 4, 'AS4_PATH')
      if (path.some((s) => s.type === 3 || s.type === 4)) {
        throw new ValueError(UpdateSubcode.MALFORMED_AS_PATH, 'AS4_PATH carries confederation segments')
      }
      into.as4Path = path
    },
    encode(w, a, o) {
      if (o.as4 || a.as4Path === undefined) return false
      encodeAsPath(w, a.as4Path, 4)
      return true
    },
  },
  {
    code: AttrCode.AS4_AGGREGATOR,
    name: 'AS4_AGGREGATOR',
    flags: OPT_TRANS,
    onError: ErrorAction.ATTRIBUTE_DISCARD,
    decode(buf, start, len, o, into) {
      if (o.as4) return
      into.as4Aggregator = decodeAggregator(buf, start, len, 4, 'AS4_AGGREGATOR')
    },
    encode(w, a, o) {
      if (o.as4 || a.as4Aggregator === undefined) return false
      w.u32(a.as4Aggregator.asn)
      writeIpv4(w, a.as4Aggregator.address, 'as4Aggregator.address')
      return true
    },
  },
  {
    code: AttrCode.LARGE_COMMUNITY,
    name: 'LARGE_COMMUNITY',
    flags: OPT_TRANS,
    // RFC 8092 §6.
    onError: ErrorAction.TREAT_AS_WITHDRAW,
    decode(buf, start, len, _o, into) {
      multipleOf('LARGE_COMMUNITY', len, 12)
      const out = new Array<LargeCommunity>(len / 12)
      for (let k = 0; k < out.length; k++) {
        const i = start + k * 12
        out[k] = [u32(buf, i), u32(buf, i + 4), u32(buf, i + 8)]
      }
      into.largeCommunities = out
    },
    encode(w, a) {
      if (a.largeCommunities === undefined || a.largeCommunities.length === 0) return false
      for (const [g, l1, l2] of a.largeCommunities) w.u32(g).u32(l1).u32(l2)
      return true
    },
  },
]

/** Toward a 2-octet speaker, an AS that needs four octets is written as AS_TRANS (RFC 6793 §4.2.2). */
export function toAsTrans(asn: number): number {
  return asn > 0xffff ? 23456 : asn
}

export const ATTRIBUTES: readonly (AttrDescriptor | undefined)[] = (() => {
  const table = new Array<AttrDescriptor | undefined>(256).fill(undefined)
  for (const d of DESCRIPTORS) table[d.code] = d
  return table
})()

export function attributeName(code: number): string {
  if (code === AttrCode.MP_REACH_NLRI) return 'MP_REACH_NLRI'
  if (code === AttrCode.MP_UNREACH_NLRI) return 'MP_UNREACH_NLRI'
  return ATTRIBUTES[code]?.name ?? `attribute ${code}`
}

/** The raw bytes of MP_REACH_NLRI / MP_UNREACH_NLRI, left to mp.ts to parse. */
export interface RawMpAttribute {
  readonly start: number
  readonly len: number
  readonly offset: number
}

export interface DecodedAttributes {
  readonly attrs: PathAttributes
  readonly mpReach: RawMpAttribute | undefined
  readonly mpUnreach: RawMpAttribute | undefined
  readonly layout: AttrLayout
  /** The strongest error short of a session reset; session resets are thrown. */
  readonly error: BgpError | undefined
}

function attrError(subcode: number, detail: string, offset: number, action: ErrorActionValue, data: Uint8Array, code?: number): BgpError {
  return new BgpError({
    code: ErrorCode.UPDATE_MESSAGE,
    subcode,
    detail,
    offset,
    action,
    data,
    ...(code !== undefined ? { attrCode: code } : {}),
  })
}

/**
 * Decodes the attribute list in buf[start, end). Offsets in errors are positions in `buf`.
 * RFC 7606 §4: an overrun stops the parse with treat-as-withdraw; the caller still finds the NLRI
 * from the Total Path Attribute Length.
 */
// Duplicate detection without allocating per UPDATE: a code was seen in this call when its slot
// holds this call's generation number.
const seenIn = new Uint32Array(256)
let generation = 0

export function decodeAttributes(buf: Uint8Array, start: number, end: number, opts: AttrCodecOptions): DecodedAttributes {
  const into: MutablePathAttributes = {}
  const layout: number[] = []
  generation = (generation + 1) >>> 0
  if (generation === 0) {
    seenIn.fill(0)
    generation = 1
  }
  const gen = generation
  let error: BgpError | undefined
  let mpReach: RawMpAttribute | undefined
  let mpUnreach: RawMpAttribute | undefined
  let unknown: UnknownAttribute[] | undefined
  let i = start
  while (i < end) {
    const at = i
    const flags = buf[i]!
    const headerLen = flags & AttrFlag.EXTENDED_LENGTH ? 4 : 3
    if (end - i < headerLen) {
      error = strongest(error, attrError(UpdateSubcode.MALFORMED_ATTRIBUTE_LIST, `${end - i} octets left, too few for an attribute header`, at, ErrorAction.TREAT_AS_WITHDRAW, new Uint8Array(0)))
      break
    }
    const code = buf[i + 1]!
    const len = headerLen === 4 ? u16(buf, i + 2) : buf[i + 2]!
    const vstart = i + headerLen
    if (vstart + len > end) {
      error = strongest(error, attrError(UpdateSubcode.ATTRIBUTE_LENGTH_ERROR, `${attributeName(code)} length ${len} overruns the attribute list`, at, ErrorAction.TREAT_AS_WITHDRAW, buf.slice(at, end), code))
      break
    }
    i = vstart + len
    if (seenIn[code] === gen) {
      // RFC 7606 §3(g): a repeated MP_REACH/MP_UNREACH resets the session; other repeats are dropped.
      if (code === AttrCode.MP_REACH_NLRI || code === AttrCode.MP_UNREACH_NLRI) {
        throw attrError(UpdateSubcode.MALFORMED_ATTRIBUTE_LIST, `${attributeName(code)} appears twice`, at, ErrorAction.SESSION_RESET, new Uint8Array(0), code)
      }
      error = strongest(error, attrError(UpdateSubcode.MALFORMED_ATTRIBUTE_LIST, `${attributeName(code)} appears twice; the repeat is discarded`, at, ErrorAction.ATTRIBUTE_DISCARD, new Uint8Array(0), code))
      continue
    }
    seenIn[code] = gen
    if (code === AttrCode.MP_REACH_NLRI || code === AttrCode.MP_UNREACH_NLRI) {
      if ((flags & OPT_TRANS) !== OPT_NON_TRANS) {
        // RFC 7606 §3(c) with §7.11/7.12: a flags error here leaves the NLRI unusable.
        throw attrError(UpdateSubcode.ATTRIBUTE_FLAGS_ERROR, `${attributeName(code)} flags 0x${flags.toString(16)}`, at, ErrorAction.SESSION_RESET, buf.slice(at, i), code)
      }
      const mp = { start: vstart, len, offset: at }
      if (code === AttrCode.MP_REACH_NLRI) mpReach = mp
      else mpUnreach = mp
      layout.push((flags << 8) | code)
      continue
    }
    const d = ATTRIBUTES[code]
    if (d === undefined) {
      if (!(flags & AttrFlag.OPTIONAL)) {
        // RFC 4271 §6.3: an unrecognized well-known attribute; RFC 7606 does not soften this.
        throw attrError(UpdateSubcode.UNRECOGNIZED_WELL_KNOWN_ATTRIBUTE, `unrecognized well-known attribute ${code}`, at, ErrorAction.SESSION_RESET, buf.slice(at, i), code)
      }
      // RFC 4271 §5: unknown optional transitive attributes travel on with Partial set;
      // unknown optional non-transitive ones are quietly ignored.
      if (flags & AttrFlag.TRANSITIVE) {
        const kept = (flags | AttrFlag.PARTIAL) & ~AttrFlag.EXTENDED_LENGTH & 0xff
        ;(unknown ??= []).push({ flags: kept, code, value: buf.slice(vstart, i) })
        layout.push(((flags | AttrFlag.PARTIAL) << 8) | code)
      }
      continue
    }
    if ((flags & OPT_TRANS) !== d.flags) {
      error = strongest(error, attrError(UpdateSubcode.ATTRIBUTE_FLAGS_ERROR, `${d.name} flags 0x${flags.toString(16)}, expected 0x${d.flags.toString(16)}`, at, d.onError, buf.slice(at, i), code))
      continue
    }
    try {
      d.decode(buf, vstart, len, opts, into)
      layout.push((flags << 8) | code)
    } catch (err) {
      if (!(err instanceof ValueError)) throw err
      error = strongest(error, attrError(err.subcode, err.detail, at, d.onError, buf.slice(at, i), code))
    }
  }
  if (unknown) into.unknown = unknown
  return { attrs: into, layout, mpReach, mpUnreach, error }
}

/** Writes one attribute header and value, choosing the extended length only when needed or asked for. */
/** Anything that writes an attribute value: a descriptor, or a one-off for MP and unknown attributes. */
export interface ValueEncoder {
  encode(w: Writer, attrs: PathAttributes, opts: AttrCodecOptions): boolean
}

export function writeAttribute(
  w: Writer,
  flags: number,
  code: number,
  value: ValueEncoder,
  attrs: PathAttributes,
  opts: AttrCodecOptions,
  forceExtended: boolean,
): boolean {
  const start = w.pos
  w.ensure(4)
  w.pos += 4 // room for the longest header; moved down when the short one suffices
  const present = value.encode(w, attrs, opts)
  if (!present) {
    w.pos = start
    return false
  }
  const len = w.pos - start - 4
  if (len > 0xffff) throw new RangeError(`${attributeName(code)} value is ${len} bytes, more than 65535`)
  if (len > 255 || forceExtended) {
    w.buf[start] = (flags | AttrFlag.EXTENDED_LENGTH) & 0xff
    w.buf[start + 1] = code
    w.buf.writeUInt16BE(len, start + 2)
  } else {
    w.buf[start] = flags & ~AttrFlag.EXTENDED_LENGTH & 0xff
    w.buf[start + 1] = code
    w.buf[start + 2] = len
    w.buf.copy(w.buf, start + 3, start + 4, start + 4 + len)
    w.pos -= 1
  }
  return true
}

/** Canonical order: by type code, unknown attributes last in code order. */
const CANONICAL: readonly AttrDescriptor[] = [...DESCRIPTORS].sort((a, b) => a.code - b.code)
const CANONICAL_CODES: readonly number[] = CANONICAL.map((d) => d.code)

/**
 * Encodes every attribute present in `attrs` (not MP_REACH/MP_UNREACH). With a layout from a
 * decode, the wire order and the extended-length choices are repeated; otherwise canonical.
 * `mp` writes the values of MP_REACH_NLRI / MP_UNREACH_NLRI when the UPDATE carries them.
 */
export function encodeAttributes(
  w: Writer,
  attrs: PathAttributes,
  opts: AttrCodecOptions,
  layout?: AttrLayout,
  mp?: ReadonlyMap<number, (w: Writer) => boolean>,
): void {
  if (layout === undefined && mp === undefined && attrs.unknown === undefined) {
    for (const d of CANONICAL) writeAttribute(w, d.flags, d.code, d, attrs, opts, false)
    return
  }
  const done = new Set<number>()
  const writeMp = (code: number, flags: number): void => {
    const value = mp?.get(code)
    if (value === undefined || done.has(code)) return
    done.add(code)
    writeAttribute(w, OPT_NON_TRANS | (flags & AttrFlag.PARTIAL), code, { encode: value }, attrs, opts, (flags & AttrFlag.EXTENDED_LENGTH) !== 0)
  }
  const writeKnown = (code: number, flagsOverride?: number): void => {
    const d = ATTRIBUTES[code]
    if (d === undefined || done.has(code)) return
    done.add(code)
    const flags = flagsOverride ?? d.flags
    writeAttribute(w, (flags & ~AttrFlag.EXTENDED_LENGTH) | (d.flags & OPT_TRANS), code, d, attrs, opts, (flags & AttrFlag.EXTENDED_LENGTH) !== 0)
  }
  const unknownByCode = new Map((attrs.unknown ?? []).map((u) => [u.code, u]))
  const writeUnknown = (u: UnknownAttribute, forceExtended: boolean): void => {
    done.add(u.code)
    writeAttribute(w, u.flags, u.code, { encode: (w) => (w.bytes(u.value), true) }, attrs, opts, forceExtended)
  }
  if (layout) {
    for (const entry of layout) {
      const code = entry & 0xff
      const flags = entry >> 8
      if (code === AttrCode.MP_REACH_NLRI || code === AttrCode.MP_UNREACH_NLRI) {
        writeMp(code, flags)
        continue
      }
      const u = unknownByCode.get(code)
      if (u && !done.has(code)) writeUnknown(u, (flags & AttrFlag.EXTENDED_LENGTH) !== 0)
      else writeKnown(code, flags)
    }
  }
  // RFC 7606 §5.1: MP_REACH_NLRI / MP_UNREACH_NLRI go first, so the NLRI can be found even when
  // a later attribute is malformed. FRR and GoBGP always use the extended length for them.
  writeMp(AttrCode.MP_REACH_NLRI, AttrFlag.EXTENDED_LENGTH)
  writeMp(AttrCode.MP_UNREACH_NLRI, AttrFlag.EXTENDED_LENGTH)
  for (const code of CANONICAL_CODES) writeKnown(code)
  for (const u of [...unknownByCode.values()].sort((a, b) => a.code - b.code)) if (!done.has(u.code)) writeUnknown(u, false)
}
