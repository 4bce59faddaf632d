// One peer's configuration as the speaker takes it, with BIRD-like defaults, and what it implies: our
// OPEN, the FSM's configuration, and the RIB's view of the peer in a session. Pure: no sockets, timers or RIB.

import { Afi, Safi, familyKey, makeOpen, type Capability, type OpenMessage } from '../codec/index.js'
import type { NextHopMode, Policy, RibPeer } from '../rib/types.js'
import type { FsmConfig } from './fsm.js'
import type { Negotiated } from './negotiate.js'

/** A unicast AFI/SAFI a session carries, by name as peers are configured: 'ipv4' is IPv4 unicast, 'ipv6' IPv6 unicast. */
export type AfiSafiName = 'ipv4' | 'ipv6'
export type AddPathConfig = 'off' | 'receive' | 'send' | 'both'

export interface PeerConfig {
  /** Stable name for logs, the API and updates of this peer's configuration. */
  readonly name: string
  readonly address: string
  /** Remote port (179). */
  readonly port?: number
  /** Source address to connect from (and the IPv4 next hop we advertise with next hop self). */
  readonly localAddress?: string
  /** Our global IPv6 address, the next hop for IPv6 routes. */
  readonly localAddress6?: string
  /** The peer's AS; undefined accepts whatever the peer says (not for eBGP). */
  readonly peerAsn: number
  /** Per-peer local AS (Calico's localASNumber); default the speaker's AS. */
  readonly localAsn?: number
  /** Never connect; wait for the peer. */
  readonly passive?: boolean
  readonly holdTime?: number
  readonly keepaliveTime?: number
  readonly connectRetryTime?: number
  /** RFC 4271 DelayOpen, seconds; 0 is off. */
  readonly delayOpenTime?: number
  readonly families?: readonly AfiSafiName[]
  readonly rrClient?: boolean
  readonly nextHopMode?: NextHopMode
  readonly allowLocalAs?: number
  readonly importPolicy?: Policy
  readonly exportPolicy?: Policy
  readonly addPath?: AddPathConfig
  /** Graceful restart (RFC 4724) with this peer; default on, as Calico's BIRD config has it. */
  readonly gracefulRestart?: boolean
  /** Seconds we ask the peer to keep our routes while we restart (Calico's maxRestartTime). */
  readonly restartTime?: number
  readonly maxPrefixes?: { readonly limit: number; readonly action: 'warn' | 'restart'; readonly restartAfter?: number }
  /** Extra identity for the API: mesh, global, node-specific, reflector client... */
  readonly kind?: string
  /** TCP-MD5 key (RFC 2385), at most 80 bytes: on our connects and, per peer address, on the listener. */
  readonly password?: string
  /** GTSM (RFC 5082): the peer is at most this many hops away; TTL 255 out, 256 - hops the minimum in. */
  readonly ttlSecurity?: number
  /** Why the transport this peer needs cannot be had (its key is unreadable): it never connects nor accepts. */
  readonly transportError?: string
}

export interface ResolvedPeerConfig extends Required<Omit<PeerConfig, 'localAddress' | 'localAddress6' | 'importPolicy' | 'exportPolicy' | 'maxPrefixes' | 'kind' | 'password' | 'transportError'>> {
  readonly password: string | undefined
  readonly transportError: string | undefined
  readonly localAddress: string | undefined
  readonly localAddress6: string | undefined
  readonly importPolicy: Policy | undefined
  readonly exportPolicy: Policy | undefined
  readonly maxPrefixes: PeerConfig['maxPrefixes']
  readonly kind: string | undefined
}

export function resolvePeerConfig(c: PeerConfig, localAsn: number): ResolvedPeerConfig {
  const holdTime = c.holdTime ?? 90
  return {
    name: c.name,
    address: c.address,
    port: c.port ?? 179,
    localAddress: c.localAddress,
    localAddress6: c.localAddress6,
    peerAsn: c.peerAsn,
    localAsn: c.localAsn ?? localAsn,
    passive: c.passive ?? false,
    holdTime,
    keepaliveTime: c.keepaliveTime ?? Math.floor(holdTime / 3),
    connectRetryTime: c.connectRetryTime ?? 5,
    delayOpenTime: c.delayOpenTime ?? 0,
    families: c.families ?? ['ipv4'],
    rrClient: c.rrClient ?? false,
    nextHopMode: c.nextHopMode ?? 'auto',
    allowLocalAs: c.allowLocalAs ?? 0,
    importPolicy: c.importPolicy,
    exportPolicy: c.exportPolicy,
    addPath: c.addPath ?? 'off',
    gracefulRestart: c.gracefulRestart ?? true,
    restartTime: c.restartTime ?? 120,
    maxPrefixes: c.maxPrefixes,
    kind: c.kind,
    password: c.password,
    ttlSecurity: c.ttlSecurity ?? 0,
    transportError: c.transportError,
  }
}

export function afiSafiKeyOf(f: AfiSafiName): number {
  return f === 'ipv4' ? familyKey(Afi.IPV4, Safi.UNICAST) : familyKey(Afi.IPV6, Safi.UNICAST)
}

/** Our OPEN toward this peer: every capability we support, restricted to the configured families. */
export function localOpen(c: ResolvedPeerConfig, routerId: string, restarting: boolean): OpenMessage {
  const caps: Capability[] = []
  for (const f of c.families) caps.push({ kind: 'multiprotocol', afi: f === 'ipv4' ? Afi.IPV4 : Afi.IPV6, safi: Safi.UNICAST })
  caps.push({ kind: 'route-refresh' }, { kind: 'enhanced-route-refresh' }, { kind: 'four-octet-as', asn: c.localAsn })
  if (c.gracefulRestart) {
    caps.push({
      kind: 'graceful-restart',
      restartState: restarting,
      notification: false,
      restartTime: Math.min(4095, c.restartTime),
      // Forwarding state is preserved: felix leaves the kernel routes in place while we restart.
      families: c.families.map((f) => ({ afi: f === 'ipv4' ? Afi.IPV4 : Afi.IPV6, safi: Safi.UNICAST, forwardingPreserved: restarting })),
    })
  }
  if (c.addPath !== 'off') {
    const mode = c.addPath === 'receive' ? 1 : c.addPath === 'send' ? 2 : 3
    caps.push({ kind: 'add-path', families: c.families.map((f) => ({ afi: f === 'ipv4' ? Afi.IPV4 : Afi.IPV6, safi: Safi.UNICAST, mode })) })
  }
  caps.push({ kind: 'extended-message' })
  return makeOpen({ asn: c.localAsn, holdTime: c.holdTime, bgpId: routerId, capabilities: caps })
}

/** The FSM's configuration for this peer: its timers, what its OPEN must say, and ours. */
export function fsmConfigFor(c: ResolvedPeerConfig, routerId: string, restarting: boolean): FsmConfig {
  return {
    passive: c.passive,
    connectRetryTime: c.connectRetryTime,
    openHoldTime: 240,
    delayOpenTime: c.delayOpenTime,
    idleHoldMin: 5,
    idleHoldMax: 30,
    expect: { peerAsn: c.peerAsn, localAsn: c.localAsn, localRouterId: routerId, holdTime: c.holdTime, keepaliveTime: c.keepaliveTime },
    localOpen: localOpen(c, routerId, restarting),
  }
}

/** Whether a change of configuration needs the session to restart (anything in the OPEN or transport). */
export function needsReset(a: ResolvedPeerConfig, b: ResolvedPeerConfig): boolean {
  const keys: (keyof ResolvedPeerConfig)[] = ['address', 'port', 'localAddress', 'localAddress6', 'peerAsn', 'localAsn', 'passive', 'holdTime', 'keepaliveTime', 'delayOpenTime', 'rrClient', 'nextHopMode', 'allowLocalAs', 'addPath', 'gracefulRestart', 'restartTime', 'password', 'ttlSecurity', 'transportError']
  if (keys.some((k) => a[k] !== b[k])) return true
  return a.families.join() !== b.families.join()
}

/**
 * The RIB's view of the peer for one session; its policies read through to the live configuration. A class,
 * so every peer's view shares one shape and the getters live on the prototype (an object literal with
 * getters and optional fields is kept as a dictionary, many times larger, one per peer).
 */
class SessionRibPeer implements RibPeer {
  readonly name: string
  readonly address: string
  readonly localAddress: string
  readonly localAddress6: string | undefined
  readonly asn: number
  readonly localAsn: number
  readonly type: RibPeer['type']
  readonly rrClient: boolean
  readonly nextHopMode: RibPeer['nextHopMode']
  readonly allowLocalAs: number
  readonly families: RibPeer['families']
  readonly addPathSend: RibPeer['addPathSend']
  readonly importTable: boolean
  readonly encoding: string
  /** The live configuration: a private field (#), so a spread of this view (ribPeerWith) does not copy it. */
  readonly #live: () => ResolvedPeerConfig

  constructor(live: () => ResolvedPeerConfig, session: Negotiated, readonly id: number, socketLocal: string | undefined) {
    this.#live = live
    const c = live()
    this.name = c.name
    this.address = c.address
    this.localAddress = c.localAddress ?? socketLocal ?? '0.0.0.0'
    this.localAddress6 = c.localAddress6 || undefined
    this.asn = session.peerAsn
    this.localAsn = c.localAsn
    this.type = session.peerAsn === c.localAsn ? 'ibgp' : 'ebgp'
    this.rrClient = c.rrClient
    this.nextHopMode = c.nextHopMode
    this.allowLocalAs = c.allowLocalAs
    this.families = session.families
    this.addPathSend = session.addPathSend
    this.importTable = !session.routeRefresh
    this.encoding = encodingOf(session)
  }

  // reconfigure() (a policy change from setPeers) must reach this session's imports and its
  // Adj-RIB-Out, which the refresh in/out that follows re-runs.
  get importPolicy(): RibPeer['importPolicy'] {
    return this.#live().importPolicy
  }

  get exportPolicy(): RibPeer['exportPolicy'] {
    return this.#live().exportPolicy
  }
}

/** Peers' encodings, one string each however many peers share it. */
const encodings = new Map<string, string>()

function encodingOf(session: Negotiated): string {
  const text = `${session.as4 ? 4 : 2} ${session.extendedMessage ? 'x' : ''} ${[...session.addPathSend].sort((a, b) => a - b).join(',')}`
  let kept = encodings.get(text)
  if (kept === undefined) encodings.set(text, (kept = text))
  return kept
}

/** The RIB's view of the peer for one session. */
export function ribPeerFor(live: () => ResolvedPeerConfig, session: Negotiated, id: number, socketLocal: string | undefined): RibPeer {
  return new SessionRibPeer(live, session, id, socketLocal)
}
