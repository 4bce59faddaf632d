// The BFD Control packet of RFC 5880 §4.1 (the 24-byte mandatory section): bytes in, a typed packet out,
// and back. Pure; the reception checks of §6.8.6 that need no session are made here and fail with the
// byte offset of the field at fault. Authentication sections are refused: pinto does not run BFD auth.

export const BFD_VERSION = 1
export const BFD_CONTROL_LENGTH = 24
/** RFC 5881 §4: single-hop Control packets go to this port, from a source port in 49152–65535. */
export const BFD_CONTROL_PORT = 3784
export const BFD_SOURCE_PORT_MIN = 49152
export const BFD_SOURCE_PORT_MAX = 65535

export type BfdStateName = 'AdminDown' | 'Down' | 'Init' | 'Up'
const STATES: readonly BfdStateName[] = ['AdminDown', 'Down', 'Init', 'Up']

/** RFC 5880 §4.1 diagnostic codes. */
export const BfdDiag = {
  NONE: 0,
  CONTROL_DETECTION_TIME_EXPIRED: 1,
  ECHO_FUNCTION_FAILED: 2,
  NEIGHBOR_SIGNALED_SESSION_DOWN: 3,
  FORWARDING_PLANE_RESET: 4,
  PATH_DOWN: 5,
  CONCATENATED_PATH_DOWN: 6,
  ADMINISTRATIVELY_DOWN: 7,
  REVERSE_CONCATENATED_PATH_DOWN: 8,
} as const

const DIAG_TEXT: readonly string[] = [
  'No Diagnostic',
  'Control Detection Time Expired',
  'Echo Function Failed',
  'Neighbor Signaled Session Down',
  'Forwarding Plane Reset',
  'Path Down',
  'Concatenated Path Down',
  'Administratively Down',
  'Reverse Concatenated Path Down',
]

export function describeDiag(diag: number): string {
  return DIAG_TEXT[diag] ?? `reserved diagnostic ${diag}`
}

export interface BfdControlPacket {
  readonly version: number
  readonly diag: number
  readonly state: BfdStateName
  readonly poll: boolean
  readonly final: boolean
  readonly controlPlaneIndependent: boolean
  readonly authPresent: boolean
  readonly demand: boolean
  readonly multipoint: boolean
  readonly detectMult: number
  readonly myDiscriminator: number
  readonly yourDiscriminator: number
  /** Microseconds, as on the wire. */
  readonly desiredMinTxInterval: number
  readonly requiredMinRxInterval: number
  readonly requiredMinEchoRxInterval: number
}

/** A packet that must be discarded (RFC 5880 §6.8.6), with the offset of the field that says so. */
export class BfdPacketError extends Error {
  constructor(readonly offset: number, readonly field: string, message: string) {
    super(`BFD control packet, byte ${offset} (${field}): ${message}`)
  }
}

/** Decodes one UDP payload; throws BfdPacketError for anything §6.8.6 discards before session lookup. */
export function decodeControl(buf: Uint8Array): BfdControlPacket {
  if (buf.length < BFD_CONTROL_LENGTH) throw new BfdPacketError(0, 'length', `${buf.length} bytes, a Control packet has at least ${BFD_CONTROL_LENGTH}`)
  const v = new DataView(buf.buffer, buf.byteOffset, buf.byteLength)
  const version = buf[0]! >> 5
  if (version !== BFD_VERSION) throw new BfdPacketError(0, 'version', `version ${version}, only ${BFD_VERSION} is spoken`)
  const flags = buf[1]!
  const authPresent = (flags & 0x04) !== 0
  const length = buf[3]!
  const minLength = authPresent ? 26 : BFD_CONTROL_LENGTH
  if (length < minLength) throw new BfdPacketError(3, 'length', `length field ${length} is below ${minLength}`)
  if (length > buf.length) throw new BfdPacketError(3, 'length', `length field ${length} exceeds the ${buf.length} bytes received`)
  const detectMult = buf[2]!
  if (detectMult === 0) throw new BfdPacketError(2, 'detect multiplier', 'zero')
  if ((flags & 0x01) !== 0) throw new BfdPacketError(1, 'multipoint', 'the M bit is set')
  const myDiscriminator = v.getUint32(4)
  if (myDiscriminator === 0) throw new BfdPacketError(4, 'my discriminator', 'zero')
  const yourDiscriminator = v.getUint32(8)
  const state = STATES[flags >> 6]!
  if (yourDiscriminator === 0 && state !== 'Down' && state !== 'AdminDown') {
    throw new BfdPacketError(8, 'your discriminator', `zero in a packet with state ${state}`)
  }
  if (authPresent) throw new BfdPacketError(1, 'authentication present', 'the A bit is set; pinto runs BFD without authentication')
  const poll = (flags & 0x20) !== 0
  const final = (flags & 0x10) !== 0
  if (poll && final) throw new BfdPacketError(1, 'poll/final', 'both the P and F bits are set')
  return {
    version,
    diag: buf[0]! & 0x1f,
    state,
    poll,
    final,
    controlPlaneIndependent: (flags & 0x08) !== 0,
    authPresent,
    demand: (flags & 0x02) !== 0,
    multipoint: false,
    detectMult,
    myDiscriminator,
    yourDiscriminator,
    desiredMinTxInterval: v.getUint32(12),
    requiredMinRxInterval: v.getUint32(16),
    requiredMinEchoRxInterval: v.getUint32(20),
  }
}

export function encodeControl(p: BfdControlPacket): Buffer {
  const buf = Buffer.alloc(BFD_CONTROL_LENGTH)
  buf[0] = ((p.version & 7) << 5) | (p.diag & 0x1f)
  buf[1] =
    (STATES.indexOf(p.state) << 6) |
    (p.poll ? 0x20 : 0) |
    (p.final ? 0x10 : 0) |
    (p.controlPlaneIndependent ? 0x08 : 0) |
    (p.authPresent ? 0x04 : 0) |
    (p.demand ? 0x02 : 0) |
    (p.multipoint ? 0x01 : 0)
  buf[2] = p.detectMult
  buf[3] = BFD_CONTROL_LENGTH
  buf.writeUInt32BE(p.myDiscriminator >>> 0, 4)
  buf.writeUInt32BE(p.yourDiscriminator >>> 0, 8)
  buf.writeUInt32BE(p.desiredMinTxInterval >>> 0, 12)
  buf.writeUInt32BE(p.requiredMinRxInterval >>> 0, 16)
  buf.writeUInt32BE(p.requiredMinEchoRxInterval >>> 0, 20)
  return buf
}
