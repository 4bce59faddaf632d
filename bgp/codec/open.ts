// OPEN (RFC 4271 §4.2) with capability optional parameters (RFC 5492) and the extended optional
// parameters length of RFC 9072. Checks here are the ones that need no knowledge of the peer:
// version, hold time 1 or 2, a zero BGP identifier, unknown optional parameters.

import { AS_TRANS, BGP_VERSION, ErrorCode, HEADER_LENGTH, OpenSubcode, OptParamType } from './constants.js'
import { Reader, Writer } from './buffer.js'
import { BgpError } from './errors.js'
import { decodeCapabilities, encodeCapability, type Capability } from './capabilities.js'
import { formatIpv4, parseIpv4 } from '../../net/index.js'

export interface OpenMessage {
  readonly type: 'open'
  readonly version: number
  /** The 2-octet My Autonomous System field; AS_TRANS when the real AS is in the 4-octet AS capability. */
  readonly myAs: number
  readonly holdTime: number
  readonly bgpId: string
  readonly capabilities: readonly Capability[]
  /**
   * How many capabilities each capabilities parameter held, as received; lets a decoded OPEN
   * re-encode to the same bytes. Absent: all capabilities in one parameter.
   */
  readonly paramGrouping?: readonly number[]
  /** RFC 9072 extended optional parameters length was used. */
  readonly extendedParams?: boolean
}

const openError = (subcode: number, detail: string, offset: number, data?: Uint8Array): BgpError =>
  new BgpError({ code: ErrorCode.OPEN_MESSAGE, subcode, detail, offset, ...(data ? { data } : {}) })

const overrun = (offset: number, detail: string): BgpError => openError(OpenSubcode.UNSPECIFIC, detail, offset)

export function decodeOpen(frame: Uint8Array): OpenMessage {
  const r = new Reader(frame, HEADER_LENGTH, frame.length, overrun)
  const version = r.u8('version')
  if (version !== BGP_VERSION) {
    // RFC 4271 §6.2: the data is the largest version we support.
    throw openError(OpenSubcode.UNSUPPORTED_VERSION_NUMBER, `version ${version}, only 4 is supported`, HEADER_LENGTH, Uint8Array.of(0, BGP_VERSION))
  }
  const myAs = r.u16('my autonomous system')
  const holdAt = r.pos
  const holdTime = r.u16('hold time')
  if (holdTime === 1 || holdTime === 2) {
    throw openError(OpenSubcode.UNACCEPTABLE_HOLD_TIME, `hold time ${holdTime} s (must be 0 or at least 3)`, holdAt)
  }
  const idAt = r.pos
  const id = r.u32('BGP identifier')
  // RFC 6286 §2.2: the identifier is any non-zero 32-bit value.
  if (id === 0) throw openError(OpenSubcode.BAD_BGP_IDENTIFIER, 'BGP identifier is 0.0.0.0', idAt)
  const lenAt = r.pos
  let paramsLength = r.u8('optional parameters length')
  let extendedParams = false
  // RFC 9072 §2: a length of 255 followed by type 255 announces two-octet lengths.
  if (paramsLength === 255 && r.remaining > 0 && frame[r.pos] === OptParamType.EXTENDED_LENGTH) {
    r.u8()
    paramsLength = r.u16('extended optional parameters length')
    extendedParams = true
  }
  if (paramsLength !== r.remaining) {
    throw openError(OpenSubcode.UNSPECIFIC, `optional parameters length ${paramsLength} but ${r.remaining} bytes follow`, lenAt)
  }
  const capabilities: Capability[] = []
  const grouping: number[] = []
  while (r.remaining > 0) {
    const at = r.pos
    const type = r.u8('parameter type')
    const length = extendedParams ? r.u16('parameter length') : r.u8('parameter length')
    const body = r.sub(length, `optional parameter ${type}`)
    if (type !== OptParamType.CAPABILITIES) {
      throw openError(OpenSubcode.UNSUPPORTED_OPTIONAL_PARAMETER, `optional parameter type ${type}`, at)
    }
    const before = capabilities.length
    decodeCapabilities(body, capabilities)
    grouping.push(capabilities.length - before)
  }
  const single = grouping.length === 1
  return {
    type: 'open',
    version,
    myAs,
    holdTime,
    bgpId: formatIpv4(id),
    capabilities,
    ...(single ? {} : { paramGrouping: grouping }),
    ...(extendedParams ? { extendedParams } : {}),
  }
}

export function encodeOpen(w: Writer, msg: OpenMessage): void {
  const id = parseIpv4(msg.bgpId)
  if (id === undefined) throw new RangeError(`bgpId ${JSON.stringify(msg.bgpId)} is not an IPv4 address`)
  w.u8(msg.version).u16(msg.myAs).u16(msg.holdTime).u32(id)
  const groups: Capability[][] = []
  const grouping = msg.paramGrouping ?? (msg.capabilities.length > 0 ? [msg.capabilities.length] : [])
  let i = 0
  for (const n of grouping) {
    groups.push(msg.capabilities.slice(i, i + n))
    i += n
  }
  if (i < msg.capabilities.length) groups.push(msg.capabilities.slice(i))
  const params = new Writer(256)
  for (const group of groups) {
    params.u8(OptParamType.CAPABILITIES)
    const at = params.reserve(msg.extendedParams ? 2 : 1)
    for (const cap of group) encodeCapability(params, cap)
    const len = params.backfill(at, msg.extendedParams ? 2 : 1)
    if (!msg.extendedParams && len > 255) throw new RangeError('capabilities exceed 255 bytes; set extendedParams')
  }
  if (msg.extendedParams) w.u8(255).u8(OptParamType.EXTENDED_LENGTH).u16(params.pos)
  else {
    if (params.pos > 255) throw new RangeError('optional parameters exceed 255 bytes; set extendedParams')
    w.u8(params.pos)
  }
  w.bytes(params.buf.subarray(0, params.pos))
}

/** An OPEN for a speaker of AS `asn`: AS_TRANS in My AS when it needs four octets (RFC 6793 §4.1). */
export function makeOpen(opts: {
  asn: number
  holdTime: number
  bgpId: string
  capabilities: readonly Capability[]
}): OpenMessage {
  return {
    type: 'open',
    version: BGP_VERSION,
    myAs: opts.asn > 0xffff ? AS_TRANS : opts.asn,
    holdTime: opts.holdTime,
    bgpId: opts.bgpId,
    capabilities: opts.capabilities,
  }
}

/** The sender's real AS: the 4-octet AS capability when present, else My AS. */
export function openAsn(open: OpenMessage): number {
  for (const c of open.capabilities) if (c.kind === 'four-octet-as') return c.asn
  return open.myAs
}

