// What a peer reports about itself to the speaker's API, the REST API and metrics: its counters and a
// status snapshot built from the session's state. Pure data shaping; the peer shell owns the state.

import { Afi, Safi, familyKey } from '../codec/index.js'
import type { FsmState } from './fsm.js'
import type { ResolvedPeerConfig } from './peer-config.js'
import type { RefusalKind } from '../rib/validate.js'

export interface PeerCounters {
  messagesIn: number
  messagesOut: number
  updatesIn: number
  updatesOut: number
  notificationsIn: number
  notificationsOut: number
  keepalivesIn: number
  keepalivesOut: number
  routeRefreshIn: number
  routeRefreshOut: number
  /** Times the session left Established. */
  flaps: number
  prefixesWithdrawnIn: number
}

export interface PeerStatus {
  readonly name: string
  readonly address: string
  readonly kind: string | undefined
  readonly state: FsmState['name']
  /** ms since the epoch of the last state change. */
  readonly since: number
  readonly reason: string
  readonly lastError: string | undefined
  readonly peerAsn: number
  readonly localAsn: number
  readonly type: 'ibgp' | 'ebgp'
  readonly routerId: string | undefined
  readonly counters: Readonly<PeerCounters>
  /** UPDATE sections refused since the peer was configured, by kind (AS loop, RFC 8212, next hop, RFC 7606, ...). */
  readonly refused: Readonly<Partial<Record<RefusalKind, number>>>
  /** Families of this session ignored since the peer sent a malformed MP attribute for them (RFC 4760 §7). */
  readonly disabledFamilies: readonly string[]
  readonly prefixesReceived: number
  readonly prefixesAccepted: number
  readonly prefixesAdvertised: number
  /** TCP-MD5 keyed, and the GTSM hops (0: off). */
  readonly transport: { readonly tcpMd5: boolean; readonly ttlSecurity: number }
  /** Prefixes kept as received, before import policy (the session has no route refresh); undefined when none are kept. */
  readonly importTable: number | undefined
  readonly negotiated:
    | {
        readonly holdTime: number
        readonly keepaliveTime: number
        readonly families: readonly string[]
        readonly fourOctetAs: boolean
        readonly routeRefresh: boolean
        readonly enhancedRouteRefresh: boolean
        readonly extendedMessage: boolean
        readonly addPathReceive: readonly string[]
        readonly addPathSend: readonly string[]
        readonly gracefulRestart: boolean
        readonly unknownCapabilities: readonly number[]
      }
    | undefined
}

export function familyName(f: number): string {
  return f === familyKey(Afi.IPV4, Safi.UNICAST) ? 'ipv4-unicast' : f === familyKey(Afi.IPV6, Safi.UNICAST) ? 'ipv6-unicast' : `afi ${f >> 8} safi ${f & 255}`
}

export function newCounters(): PeerCounters {
  return {
    messagesIn: 0,
    messagesOut: 0,
    updatesIn: 0,
    updatesOut: 0,
    notificationsIn: 0,
    notificationsOut: 0,
    keepalivesIn: 0,
    keepalivesOut: 0,
    routeRefreshIn: 0,
    routeRefreshOut: 0,
    flaps: 0,
    prefixesWithdrawnIn: 0,
  }
}

export interface StatusInputs {
  readonly config: ResolvedPeerConfig
  readonly state: FsmState
  readonly since: number
  readonly lastError: string | undefined
  readonly counters: PeerCounters
  readonly refused: Partial<Record<RefusalKind, number>>
  readonly disabledFamilies: readonly string[]
  readonly counts: { readonly received: number; readonly accepted: number; readonly importTable?: number }
  readonly advertised: number
}

export function peerStatus(i: StatusInputs): PeerStatus {
  const s = i.state.session
  return {
    name: i.config.name,
    address: i.config.address,
    kind: i.config.kind,
    state: i.state.name,
    since: i.since,
    reason: i.state.reason,
    lastError: i.lastError,
    peerAsn: i.config.peerAsn,
    localAsn: i.config.localAsn,
    type: i.config.peerAsn === i.config.localAsn ? 'ibgp' : 'ebgp',
    routerId: s?.peerRouterId,
    counters: { ...i.counters },
    refused: i.refused,
    disabledFamilies: i.disabledFamilies,
    prefixesReceived: i.counts.received,
    prefixesAccepted: i.counts.accepted,
    prefixesAdvertised: i.advertised,
    transport: { tcpMd5: i.config.password !== undefined, ttlSecurity: i.config.ttlSecurity },
    importTable: i.counts.importTable,
    negotiated: s
      ? {
          holdTime: s.holdTime,
          keepaliveTime: s.keepaliveTime,
          families: [...s.families].map(familyName),
          fourOctetAs: s.as4,
          routeRefresh: s.routeRefresh,
          enhancedRouteRefresh: s.enhancedRouteRefresh,
          extendedMessage: s.extendedMessage,
          addPathReceive: [...s.addPathReceive].map(familyName),
          addPathSend: [...s.addPathSend].map(familyName),
          gracefulRestart: s.peerGracefulRestart !== undefined,
          unknownCapabilities: s.unknownCapabilities,
        }
      : undefined,
  }
}
