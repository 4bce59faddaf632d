// What two speakers agreed on, from our OPEN and theirs (RFC 5492: use only what both advertised),
// and the OPEN checks that need our configuration: peer AS, BGP identifier, hold time (RFC 4271 §6.2).
// Pure: the FSM calls it when an OPEN arrives.

import {
  AS_TRANS,
  ErrorCode,
  OpenSubcode,
  familyKey,
  IPV4_UNICAST,
  codecOptions,
  openAsn,
  type Capability,
  type CodecOptions,
  type OpenMessage,
} from '../codec/index.js'
import { BgpError } from '../codec/errors.js'
import { parseIpv4 } from '../../net/index.js'

export interface PeerExpectation {
  /** The peer's AS as configured; undefined accepts any (dynamic peers), 'external' any but ours. */
  readonly peerAsn: number | undefined
  readonly localAsn: number
  readonly localRouterId: string
  /** Our configured hold time in seconds (0 disables keepalives and the hold timer). */
  readonly holdTime: number
  /** Our keepalive time; undefined: a third of the negotiated hold time. */
  readonly keepaliveTime?: number
}

export interface GracefulRestartInfo {
  readonly restartState: boolean
  readonly notification: boolean
  readonly restartTime: number
  /** family -> forwarding state preserved */
  readonly families: ReadonlyMap<number, boolean>
}

export interface Negotiated {
  readonly peerAsn: number
  readonly peerRouterId: string
  /** Seconds; 0 means no hold timer and no keepalives. */
  readonly holdTime: number
  readonly keepaliveTime: number
  readonly as4: boolean
  readonly families: ReadonlySet<number>
  readonly routeRefresh: boolean
  readonly enhancedRouteRefresh: boolean
  readonly extendedMessage: boolean
  /** Families for which we receive path identifiers / may send them. */
  readonly addPathReceive: ReadonlySet<number>
  readonly addPathSend: ReadonlySet<number>
  /** The peer's graceful restart capability, when it sent one and we sent ours. */
  readonly peerGracefulRestart: GracefulRestartInfo | undefined
  /** Codec options for what we receive and what we send. */
  readonly rx: CodecOptions
  readonly tx: CodecOptions
  /** Capabilities the peer sent that we do not know, for the API and logs. */
  readonly unknownCapabilities: readonly number[]
}

function openError(subcode: number, detail: string, data?: Uint8Array): BgpError {
  return new BgpError({ code: ErrorCode.OPEN_MESSAGE, subcode, detail, ...(data ? { data } : {}) })
}

function families(caps: readonly Capability[]): Set<number> {
  const out = new Set<number>()
  for (const c of caps) if (c.kind === 'multiprotocol') out.add(familyKey(c.afi, c.safi))
  return out
}

function addPathModes(caps: readonly Capability[]): Map<number, number> {
  const out = new Map<number, number>()
  for (const c of caps) if (c.kind === 'add-path') for (const f of c.families) out.set(familyKey(f.afi, f.safi), f.mode)
  return out
}

/** Checks the peer's OPEN against our expectations and computes the session's terms. */
export function negotiate(local: OpenMessage, remote: OpenMessage, expect: PeerExpectation): Negotiated | BgpError {
  const localCaps = local.capabilities
  const remoteCaps = remote.capabilities
  const remoteAsn = openAsn(remote)
  const as4Cap = remoteCaps.find((c) => c.kind === 'four-octet-as')
  // RFC 6793 §4.1: a 4-octet AS that fits in two octets must also appear in My AS.
  if (as4Cap && remote.myAs !== AS_TRANS && remote.myAs !== as4Cap.asn) {
    return openError(OpenSubcode.BAD_PEER_AS, `My AS ${remote.myAs} disagrees with the 4-octet AS capability ${as4Cap.asn}`, u16(remote.myAs))
  }
  if (remoteAsn === 0 || (expect.peerAsn !== undefined && remoteAsn !== expect.peerAsn)) {
    return openError(OpenSubcode.BAD_PEER_AS, `peer AS ${remoteAsn}, expected ${expect.peerAsn ?? 'any but 0'}`, u16(remote.myAs))
  }
  // RFC 6286 §2.2: for iBGP the identifiers must differ; we also refuse our own for eBGP.
  if (remote.bgpId === expect.localRouterId) {
    return openError(OpenSubcode.BAD_BGP_IDENTIFIER, `peer uses our own BGP identifier ${remote.bgpId}`, ipBytes(remote.bgpId))
  }
  const holdTime = Math.min(expect.holdTime, remote.holdTime)
  // RFC 4271 §4.2: 0 or at least 3; the codec already refused 1 and 2 from the peer.
  const keepaliveTime = holdTime === 0 ? 0 : Math.max(1, Math.min(expect.keepaliveTime ?? Math.floor(holdTime / 3), Math.floor(holdTime / 3)))
  const mine = families(localCaps)
  const theirs = families(remoteCaps)
  // RFC 4760 §8: without any multiprotocol capability, IPv4 unicast is implied.
  if (!localCaps.some((c) => c.kind === 'multiprotocol')) mine.add(IPV4_UNICAST)
  if (!remoteCaps.some((c) => c.kind === 'multiprotocol')) theirs.add(IPV4_UNICAST)
  const common = new Set([...mine].filter((f) => theirs.has(f)))
  const has = (caps: readonly Capability[], kind: Capability['kind']): boolean => caps.some((c) => c.kind === kind)
  const as4 = has(localCaps, 'four-octet-as') && as4Cap !== undefined
  const extendedMessage = has(localCaps, 'extended-message') && has(remoteCaps, 'extended-message')
  const localAP = addPathModes(localCaps)
  const remoteAP = addPathModes(remoteCaps)
  const addPathReceive = new Set<number>()
  const addPathSend = new Set<number>()
  for (const f of common) {
    const l = localAP.get(f) ?? 0
    const r = remoteAP.get(f) ?? 0
    if (l & 1 && r & 2) addPathReceive.add(f)
    if (l & 2 && r & 1) addPathSend.add(f)
  }
  const gr = remoteCaps.find((c) => c.kind === 'graceful-restart')
  const peerGracefulRestart =
    gr && has(localCaps, 'graceful-restart')
      ? {
          restartState: gr.restartState,
          notification: gr.notification,
          restartTime: gr.restartTime,
          families: new Map(gr.families.map((f) => [familyKey(f.afi, f.safi), f.forwardingPreserved])),
        }
      : undefined
  return {
    peerAsn: remoteAsn,
    peerRouterId: remote.bgpId,
    holdTime,
    keepaliveTime,
    as4,
    families: common,
    routeRefresh: has(localCaps, 'route-refresh') && has(remoteCaps, 'route-refresh'),
    enhancedRouteRefresh: has(localCaps, 'enhanced-route-refresh') && has(remoteCaps, 'enhanced-route-refresh'),
    extendedMessage,
    addPathReceive,
    addPathSend,
    peerGracefulRestart,
    rx: codecOptions({ as4, extendedMessage, addPath: addPathReceive }),
    tx: codecOptions({ as4, extendedMessage, addPath: addPathSend }),
    unknownCapabilities: remoteCaps.flatMap((c) => (c.kind === 'unknown' ? [c.code] : [])),
  }
}

function u16(n: number): Uint8Array {
  return Uint8Array.of((n >> 8) & 255, n & 255)
}

function ipBytes(text: string): Uint8Array {
  const n = parseIpv4(text) ?? 0
  return Uint8Array.of(n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255)
}
