// Capabilities (RFC 5492), one descriptor per capability code: decode from a bounded reader,
// encode to a writer. Unknown capabilities are kept with their bytes and reported, never dropped.

import { CapCode, ErrorCode, OpenSubcode, type AfiSafi } from './constants.js'
import { Reader, Writer } from './buffer.js'
import { BgpError } from './errors.js'

export interface GracefulRestartFamily extends AfiSafi {
  /** RFC 4724 §3 F bit: forwarding state was preserved across the restart. */
  readonly forwardingPreserved: boolean
}

/** RFC 7911 §4 Send/Receive: 1 receive, 2 send, 3 both. */
export type AddPathMode = 1 | 2 | 3

export interface AddPathFamily extends AfiSafi {
  readonly mode: AddPathMode
}

export type Capability =
  | { readonly kind: 'multiprotocol'; readonly afi: number; readonly safi: number }
  | { readonly kind: 'route-refresh' }
  | { readonly kind: 'enhanced-route-refresh' }
  | { readonly kind: 'extended-message' }
  | {
      readonly kind: 'graceful-restart'
      /** R bit: the sender has restarted. */
      readonly restartState: boolean
      /** N bit (RFC 8538): graceful restart also covers NOTIFICATIONs. */
      readonly notification: boolean
      /** Seconds, 12 bits. */
      readonly restartTime: number
      readonly families: readonly GracefulRestartFamily[]
    }
  | { readonly kind: 'four-octet-as'; readonly asn: number }
  | { readonly kind: 'add-path'; readonly families: readonly AddPathFamily[] }
  | { readonly kind: 'unknown'; readonly code: number; readonly value: Uint8Array }

export type CapabilityKind = Capability['kind']

function capError(detail: string, offset: number): BgpError {
  return new BgpError({ code: ErrorCode.OPEN_MESSAGE, subcode: OpenSubcode.UNSPECIFIC, detail, offset })
}

interface CapabilityDescriptor {
  readonly code: number
  readonly name: string
  decode(r: Reader, length: number, at: number): Capability
  encode(w: Writer, cap: Capability): void
}

function exactLength(name: string, length: number, want: number, at: number): void {
  if (length !== want) throw capError(`${name} capability has length ${length}, expected ${want}`, at)
}

const empty = (kind: 'route-refresh' | 'enhanced-route-refresh' | 'extended-message', name: string, code: number): CapabilityDescriptor => ({
  code,
  name,
  decode(_r, length, at) {
    exactLength(name, length, 0, at)
    return { kind }
  },
  encode() {},
})

const DESCRIPTORS: readonly CapabilityDescriptor[] = [
  {
    code: CapCode.MULTIPROTOCOL,
    name: 'multiprotocol',
    decode(r, length, at) {
      exactLength('multiprotocol', length, 4, at)
      const afi = r.u16()
      r.u8()
      return { kind: 'multiprotocol', afi, safi: r.u8() }
    },
    encode(w, cap) {
      if (cap.kind !== 'multiprotocol') return
      w.u16(cap.afi).u8(0).u8(cap.safi)
    },
  },
  empty('route-refresh', 'route refresh', CapCode.ROUTE_REFRESH),
  empty('enhanced-route-refresh', 'enhanced route refresh', CapCode.ENHANCED_ROUTE_REFRESH),
  empty('extended-message', 'extended message', CapCode.EXTENDED_MESSAGE),
  {
    code: CapCode.GRACEFUL_RESTART,
    name: 'graceful restart',
    decode(r, length, at) {
      if (length < 2 || (length - 2) % 4 !== 0) throw capError(`graceful restart capability has length ${length}, expected 2 + 4n`, at)
      const word = r.u16()
      const families: GracefulRestartFamily[] = []
      for (let i = 2; i < length; i += 4) {
        const afi = r.u16()
        const safi = r.u8()
        families.push({ afi, safi, forwardingPreserved: (r.u8() & 0x80) !== 0 })
      }
      return {
        kind: 'graceful-restart',
        restartState: (word & 0x8000) !== 0,
        notification: (word & 0x4000) !== 0,
        restartTime: word & 0x0fff,
        families,
      }
    },
    encode(w, cap) {
      if (cap.kind !== 'graceful-restart') return
      w.u16((cap.restartState ? 0x8000 : 0) | (cap.notification ? 0x4000 : 0) | (cap.restartTime & 0x0fff))
      for (const f of cap.families) w.u16(f.afi).u8(f.safi).u8(f.forwardingPreserved ? 0x80 : 0)
    },
  },
  {
    code: CapCode.FOUR_OCTET_AS,
    name: '4-octet AS',
    decode(r, length, at) {
      exactLength('4-octet AS', length, 4, at)
      return { kind: 'four-octet-as', asn: r.u32() }
    },
    encode(w, cap) {
      if (cap.kind === 'four-octet-as') w.u32(cap.asn)
    },
  },
  {
    code: CapCode.ADD_PATH,
    name: 'add-path',
    decode(r, length, at) {
      if (length === 0 || length % 4 !== 0) throw capError(`add-path capability has length ${length}, expected 4n`, at)
      const families: AddPathFamily[] = []
      for (let i = 0; i < length; i += 4) {
        const afi = r.u16()
        const safi = r.u8()
        const mode = r.u8()
        // RFC 7911 §4: any other Send/Receive value is an error in the capability.
        if (mode < 1 || mode > 3) throw capError(`add-path Send/Receive value ${mode} is not 1, 2 or 3`, at + 2 + i + 3)
        families.push({ afi, safi, mode: mode as AddPathMode })
      }
      return { kind: 'add-path', families }
    },
    encode(w, cap) {
      if (cap.kind !== 'add-path') return
      for (const f of cap.families) w.u16(f.afi).u8(f.safi).u8(f.mode)
    },
  },
]

const BY_CODE = new Map(DESCRIPTORS.map((d) => [d.code, d]))
const CODE_BY_KIND: Record<Exclude<CapabilityKind, 'unknown'>, number> = {
  multiprotocol: CapCode.MULTIPROTOCOL,
  'route-refresh': CapCode.ROUTE_REFRESH,
  'enhanced-route-refresh': CapCode.ENHANCED_ROUTE_REFRESH,
  'extended-message': CapCode.EXTENDED_MESSAGE,
  'graceful-restart': CapCode.GRACEFUL_RESTART,
  'four-octet-as': CapCode.FOUR_OCTET_AS,
  'add-path': CapCode.ADD_PATH,
}

export function capabilityCode(cap: Capability): number {
  return cap.kind === 'unknown' ? cap.code : CODE_BY_KIND[cap.kind]
}

/** Decodes the capabilities in one capabilities optional parameter (RFC 5492 §4). */
export function decodeCapabilities(r: Reader, out: Capability[]): void {
  while (r.remaining > 0) {
    const at = r.pos
    const code = r.u8('capability code')
    const length = r.u8('capability length')
    const body = r.sub(length, `capability ${code} value`)
    const d = BY_CODE.get(code)
    if (d === undefined) {
      out.push({ kind: 'unknown', code, value: body.bytes(length).slice() })
      continue
    }
    out.push(d.decode(body, length, at))
  }
}

export function encodeCapability(w: Writer, cap: Capability): void {
  const code = capabilityCode(cap)
  w.u8(code)
  const at = w.reserve(1)
  if (cap.kind === 'unknown') w.bytes(cap.value)
  else BY_CODE.get(code)!.encode(w, cap)
  const len = w.backfill(at, 1)
  if (len > 255) throw new RangeError(`capability ${code} is ${len} bytes, more than 255`)
}

export function capabilityName(cap: Capability): string {
  return cap.kind === 'unknown' ? `unknown(${cap.code})` : BY_CODE.get(capabilityCode(cap))!.name
}
