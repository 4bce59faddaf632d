// JSON views of pinto's objects for the API: peers, RIB and kernel routes, IPAM blocks and allocations.
// Pure conversions with their JSON schemas beside them; no reads, no fastify.

import { attributesToJson, formatPrefix, type Prefix, type BestPath, type Path, type PeerStatus } from '../../bgp/index.js'
import type { KernelRoute } from '../../felix/index.js'
import { affinityNode, blockCidr, blockInUse, ordinalAddress, type AllocationBlock, type Pool } from '../../ipam/index.js'
import { cidrContains, formatCidr } from '../../net/index.js'
import type { AdvertisedRoute } from './deps.js'

/** `refused`: the pool prefixes refused from this peer (see agent/refusals.ts), when the agent keeps them. */
export function peerView(p: PeerStatus, refused?: { readonly total: number; readonly recent: readonly string[] }): Record<string, unknown> {
  return {
    name: p.name,
    address: p.address,
    type: p.kind ?? p.type,
    session: p.type,
    state: p.state,
    since: new Date(p.since).toISOString(),
    reason: p.reason,
    lastError: p.lastError ?? null,
    peerAsn: p.peerAsn,
    localAsn: p.localAsn,
    routerId: p.routerId ?? null,
    prefixes: { received: p.prefixesReceived, accepted: p.prefixesAccepted, advertised: p.prefixesAdvertised },
    // Routes kept before import policy so a policy change reaches them: the session has no route refresh.
    importTable: p.importTable !== undefined,
    importTablePrefixes: p.importTable ?? 0,
    counters: p.counters,
    updatesRefused: p.refused,
    disabledFamilies: p.disabledFamilies,
    transport: p.transport,
    capabilities: p.negotiated ?? null,
    refusedPoolPrefixes: refused?.total ?? 0,
    refusedPoolPrefixesRecent: refused?.recent ?? [],
  }
}

const sourceOf = (path: Path): string => path.peer?.name ?? 'local'

function nextHopsOf(path: Path): readonly string[] {
  if (path.attrs.nextHop.length > 0) return path.attrs.nextHop
  const nh = path.attrs.attrs.nextHop
  return nh !== undefined ? [nh] : []
}

function pathView(prefix: Prefix, path: Path): Record<string, unknown> {
  return {
    prefix: formatPrefix(prefix),
    ...(path.prefix.pathId !== 0 ? { pathId: path.prefix.pathId } : {}),
    source: sourceOf(path),
    nextHop: nextHopsOf(path),
    attributes: attributesToJson(path.attrs.attrs),
    stale: path.stale,
  }
}

/** A Loc-RIB row: the best path and the decision step that made it win (`only path` when alone). */
export function locRibView(prefix: Prefix, best: BestPath): Record<string, unknown> {
  return {
    ...pathView(prefix, best.path),
    reason: best.reason,
    ...(best.multipath.length > 1 ? { multipath: best.multipath.map((m) => ({ source: sourceOf(m), nextHop: nextHopsOf(m) })) } : {}),
  }
}

export function adjRibInView(path: Path): Record<string, unknown> {
  return pathView(path.prefix, path)
}

export function advertisedView(r: AdvertisedRoute): Record<string, unknown> {
  return { prefix: formatPrefix(r.prefix), nextHop: r.nextHop, attributes: attributesToJson(r.attributes) }
}

export function kernelRouteView(r: KernelRoute): Record<string, unknown> {
  return {
    prefix: r.dst,
    type: r.type,
    table: r.table,
    metric: r.metric,
    protocol: r.protocol,
    nextHop: r.nexthops.map((h) => ({ ...(h.gateway !== undefined ? { gateway: h.gateway } : {}), ...(h.dev !== undefined ? { dev: h.dev } : {}), onlink: h.onlink })),
  }
}

const poolOf = (pools: readonly Pool[], b: AllocationBlock): string | null => {
  const c = blockCidr(b)
  return pools.find((p) => cidrContains(p.cidr, c.family, c.base))?.spec.name ?? null
}

export function blockView(b: AllocationBlock, pools: readonly Pool[]): Record<string, unknown> {
  const inUse = blockInUse(b)
  return { cidr: b.cidr, node: affinityNode(b) ?? null, affinity: b.affinity, pool: poolOf(pools, b), size: b.allocations.length, inUse, free: b.allocations.length - inUse }
}

export interface AllocationRow {
  readonly address: string
  readonly block: string
  readonly handle: string | null
  /** The node the address was given to (differs from blockNode when borrowed). */
  readonly node: string | null
  readonly blockNode: string | null
  readonly borrowed: boolean
  readonly attributes: Readonly<Record<string, string>>
}

export function allocationRows(b: AllocationBlock): AllocationRow[] {
  const cidr = blockCidr(b)
  const owner = affinityNode(b) ?? null
  const rows: AllocationRow[] = []
  b.allocations.forEach((attr, ord) => {
    if (attr === null) return
    const a = b.attributes[attr]
    const node = a?.secondary['node'] ?? null
    rows.push({ address: ordinalAddress(cidr, ord), block: b.cidr, handle: a?.handleId ?? null, node, blockNode: owner, borrowed: node !== null && node !== owner, attributes: a?.secondary ?? {} })
  })
  return rows
}

export const poolCidr = (p: Pool): string => formatCidr(p.cidr)

// ---- schemas (OpenAPI and fast-json-stringify) ------------------------------------------------

const str = { type: 'string' } as const
const int = { type: 'integer' } as const
const nullableStr = { type: ['string', 'null'] } as const

export const peerSchema = {
  type: 'object',
  properties: {
    name: str,
    address: str,
    type: { type: 'string', description: 'mesh, global, node-specific, reflector-client, reflector (or ibgp/ebgp when the agent gave no kind)' },
    session: { type: 'string', enum: ['ibgp', 'ebgp'] },
    state: { type: 'string', enum: ['Idle', 'Connect', 'Active', 'OpenSent', 'OpenConfirm', 'Established'] },
    since: { type: 'string', format: 'date-time' },
    reason: str,
    lastError: nullableStr,
    peerAsn: int,
    localAsn: int,
    routerId: nullableStr,
    prefixes: { type: 'object', properties: { received: int, accepted: int, advertised: int } },
    importTable: { type: 'boolean', description: 'The routes of this peer are kept as received, before import policy, so that a policy change reaches them: the session has no route refresh' },
    importTablePrefixes: { type: 'integer', description: 'Prefixes kept as received (the memory importTable costs)' },
    counters: { type: 'object', additionalProperties: int },
    updatesRefused: { type: 'object', additionalProperties: int, description: 'UPDATE sections refused, by kind: as-loop, first-as, originator-id, cluster-list, next-hop, rfc8212, treat-as-withdraw, afi-safi-disable (a malformed MP_REACH_NLRI / MP_UNREACH_NLRI)' },
    disabledFamilies: { type: 'array', items: str, description: 'Families of this session ignored since the peer sent a malformed MP_REACH_NLRI / MP_UNREACH_NLRI for them: their routes from the peer were deleted (RFC 4760 §7, RFC 7606 §7.11); the next session takes them again' },
    refusedPoolPrefixes: { type: 'integer', description: 'Announcements of prefixes inside an IP pool refused from this peer: it is not a cluster node and no BGPFilter of it accepts them' },
    refusedPoolPrefixesRecent: { type: 'array', items: str, description: 'The latest distinct pool prefixes refused, newest last' },
    transport: { type: 'object', description: 'TCP-MD5 keyed; GTSM hops (0: off)', properties: { tcpMd5: { type: 'boolean' }, ttlSecurity: int } },
    capabilities: {
      type: ['object', 'null'],
      properties: {
        holdTime: int,
        keepaliveTime: int,
        families: { type: 'array', items: str },
        fourOctetAs: { type: 'boolean' },
        routeRefresh: { type: 'boolean' },
        enhancedRouteRefresh: { type: 'boolean' },
        extendedMessage: { type: 'boolean' },
        addPathReceive: { type: 'array', items: str },
        addPathSend: { type: 'array', items: str },
        gracefulRestart: { type: 'boolean' },
        unknownCapabilities: { type: 'array', items: int },
      },
    },
  },
} as const

/** Route rows differ per table; attributes stay free-form (attributesToJson decides their shape). */
export const routeSchema = {
  type: 'object',
  properties: {
    prefix: str,
    pathId: int,
    source: { type: 'string', description: 'the peer the path came from, or "local"' },
    nextHop: { type: 'array', items: {} },
    attributes: { type: 'object', additionalProperties: true },
    stale: { type: 'boolean' },
    reason: { type: 'string', description: 'Loc-RIB: the best-path step that decided (e.g. local-pref, as-path-length, only path)' },
    multipath: { type: 'array', items: { type: 'object', properties: { source: str, nextHop: { type: 'array', items: str } } } },
    type: str,
    table: int,
    metric: int,
    protocol: int,
  },
} as const

export const blockSchema = {
  type: 'object',
  properties: { cidr: str, node: nullableStr, affinity: nullableStr, pool: nullableStr, size: int, inUse: int, free: int },
} as const

export const allocationSchema = {
  type: 'object',
  properties: {
    address: str,
    block: str,
    handle: nullableStr,
    node: nullableStr,
    blockNode: nullableStr,
    borrowed: { type: 'boolean' },
    attributes: { type: 'object', additionalProperties: str },
  },
} as const

export const affinityConflictSchema = {
  type: 'object',
  description: "A block announced by a node that does not hold its affinity in the datastore; the affine node's route is the one used",
  properties: { block: str, affineNode: str, announcedBy: { type: 'array', items: str } },
} as const
