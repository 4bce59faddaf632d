// The face of pinto's BGP library, all that other folders import: the pure codec (bgp/codec); the speaker
// (peers, origination, the Loc-RIB's typed deltas, a paged route view, each peer's real Adj-RIB-In and
// Adj-RIB-Out, status); route policy (Calico BGPFilters, the pool guard); BFD coupled to the speaker.

export * from './codec/index.js'
export * from './speaker.js'
export { SortedPrefixes, type PrefixPage } from './loc-rib-pages.js'
export type { AdvertisedRoute, BestPath, NextHopMode, Path, PeerType, Policy, RibPeer, RouteContext } from './rib/types.js'
export { LocRibDeltas, NextHopTable, DELTA_WITHDRAWN, DELTA_LOCAL, DELTA_NEW, DELTA_HAS_LOCAL_PREF } from './rib/loc-rib-delta.js'
export * from './policy/index.js'
export { compilePoolGuard, guardPoolPrefixes, type PoolGuard, type PoolPrefixVerdict } from './policy/pool-guard.js'
export type { PeerConfig } from './session/peer-config.js'
export type { PeerCounters, PeerStatus } from './session/peer.js'
export type { Transition, TransitionQuery } from './session/transition-log.js'
export { TCP_MD5_MAX_KEY, closeFd, enterNetns, errnoText as strerror, openRtnetlink, receiveDatagram, sendToKernelOffThread, socketOptionsAvailable } from './session/socket-options.js'
export { SpeakerBfd } from './bfd/speaker-bfd.js'
export type { BfdParameters } from './bfd/fsm.js'
export type { BfdSessionSpec, BfdSessionStatus } from './bfd/session.js'
