// What the REST API and the metrics read from the rest of pinto-node: a narrow, read-mostly view of the
// speaker, the RIBs, IPAM, felix and readiness, plus the few admin actions. Types only; the agent
// composition fills it in (adapters.ts has ready-made ones), tests fill it with real objects or data.

import type { Registry } from 'prom-client'
import type { AdvertisedRoute, BestPath, Path, PeerStatus, Prefix, PrefixPage, Transition, TransitionQuery } from '../../bgp/index.js'
import type { KernelRoute } from '../../felix/index.js'
import type { AllocationBlock, Pool } from '../../ipam/index.js'
import type { BfdSessionStatus } from '../../bgp/index.js'

/**
 * The words PeerConfig.kind should carry so the API and `pintoctl node status` can say what a peer is;
 * any other string is shown as it is. (calicoctl: Mesh, Global, Node → "node-to-node mesh", ...)
 */
export const PEER_TYPES = ['mesh', 'global', 'node-specific', 'reflector-client', 'reflector'] as const

export type { AdvertisedRoute }

export interface BgpReads {
  readonly asn: number
  readonly routerId: string
  /** Every configured peer, Established or not. */
  peerStatus(): readonly PeerStatus[]
  /** Recent FSM transitions, newest first (bounded per peer); absent when nothing keeps them. */
  transitions?(q: TransitionQuery): readonly Transition[]
  /**
   * The Loc-RIB's prefixes (iteration order is not specified). Prefixes, not rows, because every
   * /v1/routes page scans them all and must allocate nothing per route; best() fills in the page.
   */
  locRibPrefixes(): Iterable<Prefix>
  /** Grows whenever the Loc-RIB's best paths change; /v1/routes keeps a sorted copy while it stands still. */
  readonly locRibVersion: number
  /** When given: a page of the Loc-RIB's prefixes in order, from a sorted copy kept current by the change stream (no rebuild per change). */
  locRibPage?(limit: number, after: Prefix | undefined): PrefixPage
  /** The best path of a Loc-RIB prefix, with why it won; undefined once the prefix has gone. */
  best(prefix: Prefix): BestPath | undefined
  /** Destinations in the Loc-RIB, for counts without a walk. */
  readonly locRibSize: number
  /** A peer's accepted paths; undefined when no peer has that name or its session is not up. */
  adjRibIn(peer: string): Iterable<Path> | undefined
  /** What we advertise to a peer; undefined when no peer has that name or its session is not up. */
  adjRibOut(peer: string): Iterable<AdvertisedRoute> | undefined
}

export interface IpamReads {
  /** Every block of the cluster, read from the datastore (an operator's request: /v1/ipam, the status page). */
  blocks(): Promise<readonly AllocationBlock[]>
  pools(): Promise<readonly Pool[]>
  /**
   * The blocks the agent already holds in memory (its node's, and those holding its node's addresses), which a
   * scrape reads instead of listing every block; absent in tests of other parts.
   */
  heldBlocks?(): Iterable<AllocationBlock>
}

/** felix's apply history as counters plus recent durations (read on scrape, see FibApplyLog). */
export interface FibStats {
  readonly applies: number
  /** Applies that ended with per-route errors or threw. */
  readonly failures: number
  /** Routes whose last write failed. */
  readonly routeErrors: number
  /** ms since the epoch of the last apply, if any. */
  readonly lastApplyAt: number | undefined
  /** Recent apply durations, oldest first, each with a sequence number that only grows. */
  readonly recent: readonly { readonly seq: number; readonly seconds: number }[]
}

export interface FibReads {
  /** The routes felix keeps in the kernel (its desired set, as last applied). */
  routes(): Iterable<KernelRoute>
  /** How many routes routes() yields, when that is known without making them. */
  count?(): number
  stats(): FibStats
}

export interface ReadinessInputs {
  /** Seconds after start during which every configured peer must be Established (Calico: 30). */
  readonly startupWindowSeconds: number
  /** A graceful restart of ours is still running (Calico is not ready while BIRD's GR is). */
  gracefulRestartInProgress?(): boolean
  /** Other conditions, e.g. felix's first apply or the datastore; any not ok makes /readyz fail. */
  checks?(): readonly { readonly name: string; readonly ok: boolean; readonly detail?: string }[]
}

/** Admin actions; routes that call them are mutations (unix socket, or TCP with the token). */
export interface ApiActions {
  /** Soft reset of a peer; false when no such peer. */
  refreshPeer(name: string, direction: 'in' | 'out'): boolean
}

/** Whether the datastore answers (agent/datastore-health.ts keeps it). */
export interface DatastoreReads {
  health(): {
    readonly state: 'up' | 'down'
    readonly since: number
    readonly cause?: string
    readonly transitions: { readonly up: number; readonly down: number }
  }
}

export interface ApiDeps {
  readonly node: string
  uptimeSeconds(): number
  readonly bgp: BgpReads
  readonly ipam: IpamReads
  /** Absent when the dataplane is off (PINTO_DATAPLANE=none). */
  readonly fib?: FibReads
  /** Absent when nothing follows the datastore's state (tests of other parts). */
  readonly datastore?: DatastoreReads
  /** The BFD sessions; absent in tests of other parts. */
  readonly bfd?: { sessions(): readonly BfdSessionStatus[] }
  readonly readiness: ReadinessInputs
  readonly actions?: ApiActions
  /** Where /metrics comes from; buildApi registers pinto's collectors on it once. */
  readonly metrics: Registry
  /** Lets TCP clients presenting `Authorization: Bearer <token>` make changes. */
  readonly token?: string
  /** What was refused or flagged about who announces pod addresses; absent in tests of other parts. */
  readonly announcements?: AnnouncementReads
}

export interface AnnouncementReads {
  forPeer(name: string): { readonly total: number; readonly recent: readonly string[] }
  affinityConflicts(): readonly { readonly block: string; readonly affineNode: string; readonly announcedBy: readonly string[] }[]
}
