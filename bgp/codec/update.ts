// UPDATE (RFC 4271 §4.3) decode and encode, with RFC 7606 classification: errors that need a
// session reset are thrown; every lesser one is returned on the message as `error` (the
// strongest), with the message still decoded so the caller can withdraw or discard as told.

import { Afi, AttrCode, ErrorCode, HEADER_LENGTH, IPV4_UNICAST, Safi, UpdateSubcode, familyKey, type AfiSafi } from './constants.js'
import { BgpError, ErrorAction, strongest } from './errors.js'
import { Writer } from './buffer.js'
import { decodeAttributes, encodeAttributes, type AttrLayout, type PathAttributes } from './attributes.js'
import { decodeMpReach, decodeMpUnreach, encodeMpReachValue, encodeMpUnreachValue, writePrefixes, type MpReach, type MpUnreach } from './mp.js'
import { decodeIpv4Prefixes, decodeNlri, type Ipv4Prefixes, type Prefix } from './nlri.js'
import type { CodecOptions } from './options.js'

export interface UpdateMessage {
  readonly type: 'update'
  /** IPv4 unicast prefixes in the Withdrawn Routes field. */
  readonly withdrawn: readonly Prefix[]
  readonly attributes: PathAttributes
  /** IPv4 unicast prefixes in the NLRI field (empty when they are in `nlriColumns`). */
  readonly nlri: readonly Prefix[]
  /** The NLRI field's prefixes as columns, when decoded with `columns` and without add-path. */
  readonly nlriColumns?: Ipv4Prefixes
  readonly mpReach?: MpReach
  readonly mpUnreach?: MpUnreach
  /** Set when this UPDATE is an End-of-RIB marker (RFC 4724 §2). */
  readonly endOfRib?: AfiSafi
  /** The strongest RFC 7606 problem short of a session reset, whatever it applies to (for reports). */
  readonly error?: BgpError
  /**
   * Each malformed MP_REACH_NLRI / MP_UNREACH_NLRI that names its family: an AFI/SAFI disable of that
   * family only (RFC 4760 §7, RFC 7606 §7.11), one per attribute.
   */
  readonly familyErrors?: readonly BgpError[]
  /**
   * The strongest problem of the rest of the UPDATE (attribute discard or treat-as-withdraw): it applies
   * to every route the UPDATE carries outside a family of `familyErrors`, even when one of those is stronger.
   */
  readonly routesError?: BgpError
  /** Attribute order and flags as received, so a decoded UPDATE re-encodes to the same bytes. */
  readonly layout?: AttrLayout
}

const EMPTY: readonly Prefix[] = Object.freeze([])

function listError(detail: string, offset: number): BgpError {
  return new BgpError({ code: ErrorCode.UPDATE_MESSAGE, subcode: UpdateSubcode.MALFORMED_ATTRIBUTE_LIST, detail, offset })
}

function missing(code: number, name: string): BgpError {
  return new BgpError({
    code: ErrorCode.UPDATE_MESSAGE,
    subcode: UpdateSubcode.MISSING_WELL_KNOWN_ATTRIBUTE,
    detail: `${name} is missing`,
    data: Uint8Array.of(code),
    action: ErrorAction.TREAT_AS_WITHDRAW,
    attrCode: code,
  })
}

/**
 * Decodes an UPDATE. With `columns`, the NLRI field's prefixes and MP_REACH_NLRI's IPv6 unicast ones
 * (unless they carry path identifiers) come as columns in `nlriColumns` and `mpReach.nlriColumns` instead
 * of objects: a receiver's hot path for a table dump. encodeUpdate writes neither.
 */
export function decodeUpdate(frame: Uint8Array, opts: CodecOptions, columns = false): UpdateMessage {
  const end = frame.length
  let i = HEADER_LENGTH
  // RFC 7606 §4 keeps a session reset for lengths that leave the fields unlocatable.
  const withdrawnLen = (frame[i]! << 8) | frame[i + 1]!
  i += 2
  if (i + withdrawnLen + 2 > end) throw listError(`withdrawn routes length ${withdrawnLen} overruns the message`, HEADER_LENGTH)
  const addPath4 = opts.addPath.has(IPV4_UNICAST)
  let withdrawn: Prefix[] | readonly Prefix[] = EMPTY
  if (withdrawnLen > 0) {
    const out: Prefix[] = []
    decodeNlri(frame, i, i + withdrawnLen, Afi.IPV4, addPath4, out)
    withdrawn = out
  }
  i += withdrawnLen
  const attrLenAt = i
  const attrLen = (frame[i]! << 8) | frame[i + 1]!
  i += 2
  if (i + attrLen > end) throw listError(`total path attribute length ${attrLen} overruns the message`, attrLenAt)
  const decoded = attrLen > 0 ? decodeAttributes(frame, i, i + attrLen, opts) : undefined
  i += attrLen
  let nlri: Prefix[] | readonly Prefix[] = EMPTY
  let nlriColumns: Ipv4Prefixes | undefined
  if (i < end) {
    if (columns && !addPath4) nlriColumns = decodeIpv4Prefixes(frame, i, end)
    else {
      const out: Prefix[] = []
      decodeNlri(frame, i, end, Afi.IPV4, addPath4, out)
      nlri = out
    }
  }
  // Every prefix takes at least one byte: a non-empty field announces something.
  const announced = i < end
  let routesError = decoded?.error
  const addPath = (family: number): boolean => opts.addPath.has(family)
  let mpReach: MpReach | undefined
  let mpUnreach: MpUnreach | undefined
  let familyErrors: BgpError[] | undefined
  // An MP attribute's error is its family's alone (RFC 4760 §7): kept apart from the rest of the UPDATE's.
  const familyError = (err: unknown): void => {
    if (!(err instanceof BgpError) || err.action === ErrorAction.SESSION_RESET) throw err
    ;(familyErrors ??= []).push(err)
  }
  if (decoded?.mpReach) {
    const m = decoded.mpReach
    try {
      mpReach = decodeMpReach(frame, m.start, m.len, m.offset, addPath, columns)
    } catch (err) {
      familyError(err)
    }
  }
  if (decoded?.mpUnreach) {
    const m = decoded.mpUnreach
    try {
      mpUnreach = decodeMpUnreach(frame, m.start, m.len, m.offset, addPath)
    } catch (err) {
      familyError(err)
    }
  }
  const attrs = decoded?.attrs ?? {}
  // RFC 7606 §3(d): mandatory attributes are only required when something is announced.
  if (announced || (mpReach !== undefined && (mpReach.nlri.length > 0 || (mpReach.nlriColumns?.count ?? 0) > 0))) {
    if (attrs.origin === undefined) routesError = strongest(routesError, missing(AttrCode.ORIGIN, 'ORIGIN'))
    if (attrs.asPath === undefined) routesError = strongest(routesError, missing(AttrCode.AS_PATH, 'AS_PATH'))
    if (announced && attrs.nextHop === undefined) routesError = strongest(routesError, missing(AttrCode.NEXT_HOP, 'NEXT_HOP'))
  }
  let error = routesError
  for (const e of familyErrors ?? []) error = strongest(error, e)
  let endOfRib: AfiSafi | undefined
  if (withdrawnLen === 0 && attrLen === 0 && !announced) endOfRib = { afi: Afi.IPV4, safi: Safi.UNICAST }
  else if (
    withdrawnLen === 0 &&
    !announced &&
    mpUnreach !== undefined &&
    mpUnreach.withdrawn.length === 0 &&
    mpUnreach.raw === undefined &&
    mpReach === undefined &&
    decoded?.layout.length === 1
  ) {
    endOfRib = { afi: mpUnreach.afi, safi: mpUnreach.safi }
  }
  const msg: { -readonly [K in keyof UpdateMessage]: UpdateMessage[K] } = { type: 'update', withdrawn, attributes: attrs, nlri }
  if (nlriColumns) msg.nlriColumns = nlriColumns
  if (mpReach) msg.mpReach = mpReach
  if (mpUnreach) msg.mpUnreach = mpUnreach
  if (endOfRib) msg.endOfRib = endOfRib
  if (error) msg.error = error
  if (familyErrors) msg.familyErrors = familyErrors
  if (routesError) msg.routesError = routesError
  if (decoded && decoded.layout.length > 0) msg.layout = decoded.layout
  return msg
}

/** Writes the UPDATE body (everything after the header). */
export function encodeUpdate(w: Writer, msg: UpdateMessage, opts: CodecOptions): void {
  const addPath4 = opts.addPath.has(IPV4_UNICAST)
  const wAt = w.reserve(2)
  writePrefixes(w, msg.withdrawn, addPath4)
  w.backfill(wAt, 2)
  const aAt = w.reserve(2)
  const reach = msg.mpReach
  const unreach = msg.mpUnreach
  const mp = reach || unreach ? new Map<number, (w: Writer) => boolean>() : undefined
  if (reach && mp) mp.set(AttrCode.MP_REACH_NLRI, (w) => encodeMpReachValue(w, reach, opts.addPath.has(familyKey(reach.afi, reach.safi))))
  if (unreach && mp) mp.set(AttrCode.MP_UNREACH_NLRI, (w) => encodeMpUnreachValue(w, unreach, opts.addPath.has(familyKey(unreach.afi, unreach.safi))))
  encodeAttributes(w, msg.attributes, opts, msg.layout, mp)
  w.backfill(aAt, 2)
  writePrefixes(w, msg.nlri, addPath4)
}

/** The End-of-RIB marker for a family (RFC 4724 §2). */
export function endOfRibUpdate(afi: number, safi: number): UpdateMessage {
  if (afi === Afi.IPV4 && safi === Safi.UNICAST) return { type: 'update', withdrawn: EMPTY, attributes: {}, nlri: EMPTY, endOfRib: { afi, safi } }
  return {
    type: 'update',
    withdrawn: EMPTY,
    attributes: {},
    nlri: EMPTY,
    mpUnreach: { afi, safi, withdrawn: EMPTY },
    endOfRib: { afi, safi },
  }
}
