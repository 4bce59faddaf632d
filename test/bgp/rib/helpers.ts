// Shared fixtures for the RIB tests: peers as the session layer would describe them, and short
// ways to write prefixes and attribute sets.
import { IPV4_UNICAST, IPV6_UNICAST, codecOptions, parsePrefix, type PathAttributes, type Prefix } from '../../../bgp/index.js'
import type { Negotiated } from '../../../bgp/session/negotiate.js'
import { Rib, type RibOptions, type RibPeer } from '../../../bgp/rib/index.js'
import { ACCEPT_ALL } from '../../../bgp/policy/index.js'

export const LOCAL_AS = 64512
export const ROUTER_ID = '192.0.2.254'

let nextId = 1

/** An iBGP peer by default; `asn` other than LOCAL_AS makes it eBGP (with accept-all policies). */
export function peer(over: Partial<RibPeer> & { address: string }): RibPeer {
  const asn = over.asn ?? LOCAL_AS
  const type = over.type ?? (asn === LOCAL_AS ? 'ibgp' : 'ebgp')
  return {
    id: nextId++,
    name: over.address,
    localAddress: ROUTER_ID,
    localAddress6: '2001:db8::fe',
    asn,
    localAsn: LOCAL_AS,
    type,
    rrClient: false,
    nextHopMode: 'auto',
    allowLocalAs: 0,
    ...(type === 'ebgp' ? { importPolicy: ACCEPT_ALL, exportPolicy: ACCEPT_ALL } : {}),
    families: new Set([IPV4_UNICAST, IPV6_UNICAST]),
    addPathSend: new Set(),
    ...over,
  }
}

export const px = (text: string, pathId = 0): Prefix => parsePrefix(text, pathId)

export function attrs(over: Partial<PathAttributes> & { asns?: number[] } = {}): PathAttributes {
  const { asns, ...rest } = over
  return { origin: 0, asPath: asns === undefined ? [] : [{ type: 2, asns }], nextHop: '192.0.2.10', ...rest }
}

export function rib(opts: Partial<RibOptions> = {}): Rib {
  return new Rib({ localAsn: LOCAL_AS, routerId: ROUTER_ID, ...opts })
}

export const session = (routerId: string): { routerId: string } => ({ routerId })

/** A session's negotiated terms as the FSM hands them over: iBGP, IPv4 unicast, 4-octet AS, route refresh. */
export function negotiated(over: Partial<Negotiated> = {}): Negotiated {
  const tx = codecOptions({ as4: true })
  return {
    peerAsn: LOCAL_AS,
    peerRouterId: '192.0.2.1',
    holdTime: 90,
    keepaliveTime: 30,
    as4: true,
    families: new Set([IPV4_UNICAST]),
    routeRefresh: true,
    enhancedRouteRefresh: false,
    extendedMessage: false,
    addPathReceive: new Set(),
    addPathSend: new Set(),
    peerGracefulRestart: undefined,
    rx: tx,
    tx,
    unknownCapabilities: [],
    ...over,
  }
}
