// The contract between the BGP sessions and the routing tables: what a session hands the RIB
// (paths learned from a peer, End-of-RIB, the peer going down) and what the RIB hands back (Loc-RIB
// changes for the agent and felix, pending UPDATE batches per peer). Pure data and interfaces only.

import type { EncodedAttributes } from '../codec/pack.js'
import type { Prefix } from '../codec/nlri.js'
import type { PathAttributes } from '../codec/attributes.js'
import type { InternedAttributes } from '../codec/intern.js'

export type PeerType = 'ibgp' | 'ebgp'
/** Calico's BGPPeer nextHopMode: Auto = BIRD's default (self toward eBGP, keep toward iBGP). */
export type NextHopMode = 'auto' | 'self' | 'keep'

/** A family as `afi << 8 | safi` (see codec familyKey). */
export type FamilyKey = number

/** Everything the RIB needs to know about one peer of the speaker. */
export interface RibPeer {
  /** Unique and stable for the life of the peer configuration. */
  readonly id: number
  /** For logs and the API, e.g. "192.0.2.2" or "mesh-node-b". */
  readonly name: string
  /** The remote address (RFC 4271 §9.1.2.2 (g): lowest neighbour address breaks the last tie). */
  readonly address: string
  /** Our address on this session: the next hop when we set next hop self (IPv4 NLRI). */
  readonly localAddress: string
  /** Our global IPv6 address for IPv6 NLRI next hop self, when we have one. */
  readonly localAddress6?: string
  readonly asn: number
  readonly localAsn: number
  readonly type: PeerType
  /** This peer is a route-reflector client of ours (RFC 4456). */
  readonly rrClient: boolean
  readonly nextHopMode: NextHopMode
  /** Accept paths holding our own AS up to this many times (BIRD's `allow local as`). */
  readonly allowLocalAs: number
  readonly importPolicy?: Policy
  readonly exportPolicy?: Policy
  /** Families negotiated with this peer. */
  readonly families: ReadonlySet<FamilyKey>
  /** Families for which we may send several paths per prefix (RFC 7911 send negotiated). */
  readonly addPathSend: ReadonlySet<FamilyKey>
  /**
   * Keep the routes as received, before import policy, so that a policy change can re-run import (the
   * session has no route refresh, RFC 2918: the peer cannot be asked to re-send).
   */
  readonly importTable?: boolean
  /**
   * What the session's UPDATE encoding depends on (4-octet AS, extended messages, add-path send): peers
   * with equal values may send the same encoded UPDATEs. Unset: as every other peer that leaves it unset.
   */
  readonly encoding?: string
}

/**
 * `peer` as a plain object, its policies read as they are now, with `over` on top. A spread copies a
 * RibPeer's own fields; its policies may be getters on a class's prototype, which a spread would drop.
 */
export function ribPeerWith(peer: RibPeer, over: Partial<RibPeer>): RibPeer {
  return { ...peer, importPolicy: peer.importPolicy, exportPolicy: peer.exportPolicy, ...over }
}

/** The remote BGP identifier is only known once the session is up; best path uses it. */
export interface PeerSessionInfo {
  readonly routerId: string
}

export interface Path {
  /** The prefix with the path identifier the peer gave it (0 without add-path). */
  readonly prefix: Prefix
  /** undefined: originated by this speaker. */
  readonly peer: RibPeer | undefined
  readonly session: PeerSessionInfo | undefined
  /** Attributes after import policy, interned; for MP families the next hops are in `attrs.nextHop`. */
  readonly attrs: InternedAttributes
  /** Kept through a peer's graceful restart until its End-of-RIB or the restart time (RFC 4724). */
  stale: boolean
}

export interface BestPath {
  readonly path: Path
  /** The comparator that decided against the runner-up, e.g. "local-pref", "as-path-length", "only path". */
  readonly reason: string
  /** Paths equal to the best up to the multipath step (for ECMP in the kernel), the best first. */
  readonly multipath: readonly Path[]
}

export interface LocRibChange {
  /** The prefix with path id 0. */
  readonly prefix: Prefix
  readonly best: BestPath | undefined
  readonly previous: Path | undefined
}

/** One UPDATE batch for a peer: prefixes that share one attribute set and family. */
export interface OutBatch {
  readonly afi: number
  readonly safi: number
  readonly attributes?: PathAttributes
  readonly nextHop?: readonly string[]
  readonly announce: readonly Prefix[]
  readonly withdraw: readonly Prefix[]
  /** The encoded attributes, kept with the (shared, unchanging) export result they come from. */
  readonly encoded?: EncodedAttributes
  /** Set when an update group's members all send this batch: the UPDATEs, packed by the first of them. */
  readonly packed?: PackedUpdates
}

/** The UPDATE messages of one shared batch, filled once; every member's session encodes alike. */
export interface PackedUpdates {
  bytes?: readonly Uint8Array[]
  /** The batch is held long (a group's dump, for members yet to join): its UPDATEs get memory of their own. */
  readonly kept?: boolean
}

/** A route as one peer is sent it: after its export policy and next-hop rewriting. */
export interface AdvertisedRoute {
  readonly prefix: Prefix
  readonly attributes: PathAttributes
  readonly nextHop: readonly string[]
}

export interface AdjRibOut {
  readonly peer: RibPeer
  /** Takes up to `maxPrefixes` pending changes, grouped into batches; empty when nothing is pending. */
  take(maxPrefixes: number): OutBatch[]
  /** How many prefixes wait to be sent. */
  readonly pending: number
  /** Called (once per burst) when changes become pending. */
  onPending(listener: () => void): void
  /** Re-queues everything currently advertised (a route refresh from the peer). */
  refresh(family?: FamilyKey): void
  /** What is advertised (and queued) to this peer. */
  entries(): Iterable<AdvertisedRoute>
  readonly size: number
}

/** What a policy may match besides prefix and attributes (Calico's `source` and `interface`). */
export interface RouteContext {
  /** The route was learned from a BGP peer (Calico's `source: RemotePeers`); false for our own. */
  readonly fromPeer: boolean
  /** The interface a locally originated route points at, when the originator named one. */
  readonly interface?: string
}

/** A compiled import or export policy (Calico's BGPFilter rules for one direction). */
export interface Policy {
  /**
   * undefined: rejected; otherwise the (possibly changed) attributes. Returns `attrs` itself when
   * nothing changed, so the RIB can keep sharing one interned set. `peer` is the session the route
   * comes from (import) or goes to (export).
   */
  apply(prefix: Prefix, attrs: PathAttributes, peer: RibPeer, route?: RouteContext): PathAttributes | undefined
  /** Whether any rule exists: RFC 8212 refuses eBGP routes without a policy. */
  readonly empty: boolean
  /** Set when apply() returns `attrs` itself for every prefix: the RIB may take a section whole. */
  readonly passesAll?: boolean
  /**
   * Whether apply() returns `attrs` itself for the IPv4 network `addr`/`len` (host bits clear), whatever
   * the attributes and peer: a section whose networks all pass is taken whole, as with passesAll.
   */
  readonly passesIpv4?: (addr: number, len: number) => boolean
  /** passesIpv4() for the IPv6 network of bytes addr[at, at + 16) and length `len` (host bits clear). */
  readonly passesIpv6?: (addr: Uint8Array, at: number, len: number) => boolean
}
