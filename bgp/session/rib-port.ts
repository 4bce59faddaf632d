// The part of the RIB a peer session uses (implemented by bgp/rib's Rib): kept narrow so the
// session shell can be read and tested without the whole routing table.

import type { Ipv4Prefixes, Ipv6Prefixes, PathAttributes, Prefix } from '../codec/index.js'
import type { AdjRibOut, FamilyKey, PeerSessionInfo, RibPeer } from '../rib/types.js'
import type { Refusal } from '../rib/validate.js'

export interface RibPort {
  /** Returns why the section was refused (its prefixes then count as withdrawn), or undefined. */
  receive(peer: RibPeer, session: PeerSessionInfo, prefixes: readonly Prefix[], attrs: PathAttributes | undefined, nextHop?: readonly string[]): Refusal | undefined
  receiveIpv4(peer: RibPeer, session: PeerSessionInfo, prefixes: Ipv4Prefixes, attrs: PathAttributes | undefined): Refusal | undefined
  receiveIpv6(peer: RibPeer, session: PeerSessionInfo, prefixes: Ipv6Prefixes, attrs: PathAttributes | undefined, nextHop?: readonly string[]): Refusal | undefined
  flush(): void
  attachPeer(peer: RibPeer): AdjRibOut
  detachPeer(peer: RibPeer): void
  peerDown(peer: RibPeer, keepStale: ReadonlySet<FamilyKey>): void
  /** Every path of `family` from the peer goes; its other families stay (RFC 4760 §7). */
  dropFamily(peer: RibPeer, family: FamilyKey): void
  endOfRib(peer: RibPeer, family: FamilyKey): void
  sweepStale(peer: RibPeer): void
  counts(peer: RibPeer): { received: number; accepted: number; importTable?: number }
  /** Re-runs import over the peer's routes as received (no route refresh); the caller flushes. */
  reimport(peer: RibPeer): { announced: number; withdrawn: number; updated: number }
}
