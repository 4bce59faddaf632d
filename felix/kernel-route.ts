// A kernel route as felix sees it, keyed the way the kernel keys routes (table, dst, tos, metric), and its
// rendering as `ip -batch` lines. Pure values and string formatting only; nothing here runs `ip`.

import type { Family } from '../net/index.js'

export type RouteType = 'unicast' | 'blackhole' | 'unreachable' | 'prohibit' | 'local' | 'broadcast' | 'throw' | 'other'

export interface NextHop {
  readonly gateway?: string
  readonly dev?: string
  readonly onlink: boolean
}

export interface KernelRoute {
  readonly family: Family
  readonly table: number
  /** Canonical prefix with its length always written (`198.18.0.5/32`, `0.0.0.0/0`). */
  readonly dst: string
  readonly tos: number
  readonly metric: number
  readonly type: RouteType
  readonly protocol: number
  /** Empty for blackholes; one for a plain route; several for ECMP (kept sorted for desired routes). */
  readonly nexthops: readonly NextHop[]
  /** The kernel nexthop object the route uses, when read from a kernel that has one for it. */
  readonly nhid?: number
  /** `dst`'s IPv4 network as an unsigned number and its length, when the renderer had them as numbers. */
  readonly dst4?: number
  readonly dstLen?: number
  /** `dst`'s IPv6 network as 16 bytes (with `dstLen`), when the renderer had them. */
  readonly dst6?: Uint8Array
}

/** Calico's is 80 (notes/calico.md §3.2); pinto takes an unassigned number so both can share a host. */
export const DEFAULT_ROUTE_PROTOCOL = 87
export const MAIN_TABLE = 254
/** What the kernel fills in when a route is added without a metric. */
export function defaultMetric(family: Family): number {
  return family === 4 ? 0 : 1024
}

/** The kernel's identity of a route: two routes with the same key cannot coexist in one table. */
export function routeKey(r: Pick<KernelRoute, 'table' | 'dst' | 'tos' | 'metric'>): string {
  // join makes one flat string; a template of the parts would be kept as a tree of 8 or more concatenated
  // pieces, several times the string's own size, and a table holds a key per route.
  return [r.table, r.dst, r.tos, r.metric].join(' ')
}

export function hopText(h: NextHop): string {
  return `${h.gateway ?? ''}@${h.dev ?? ''}${h.onlink ? '!' : ''}`
}

/**
 * Whether felix sees two routes of one key as the same: type, protocol and next hops (in any order). It runs for every route
 * on every apply, so the common cases compare fields and build no strings.
 */
export function sameRoute(a: KernelRoute, b: KernelRoute): boolean {
  return a.type === b.type && a.protocol === b.protocol && sameHops(a.nexthops, b.nexthops)
}

/** Whether two routes' next hops are the same set (in any order), as sameRoute compares them. */
export function sameHops(a: readonly NextHop[], b: readonly NextHop[]): boolean {
  if (a === b) return true
  if (a.length !== b.length) return false
  if (a.length === 0) return true
  if (a.length === 1) {
    const x = a[0] as NextHop
    const y = b[0] as NextHop
    // Fields first; the text only when they differ (it also takes a missing gateway for an empty one).
    return (x.gateway === y.gateway && x.dev === y.dev && x.onlink === y.onlink) || hopText(x) === hopText(y)
  }
  return a.map(hopText).sort().join(',') === b.map(hopText).sort().join(',')
}

export function compareNextHops(a: NextHop, b: NextHop): number {
  const x = hopText(a)
  const y = hopText(b)
  return x < y ? -1 : x > y ? 1 : 0
}

export function hopArgs(h: NextHop): string {
  let s = ''
  if (h.gateway !== undefined) s += ` via ${h.gateway}`
  if (h.dev !== undefined) s += ` dev ${h.dev}`
  if (h.onlink) s += ' onlink'
  return s
}

function keyArgs(r: KernelRoute): string {
  return ` table ${r.table} proto ${r.protocol} metric ${r.metric}${r.tos !== 0 ? ` tos ${r.tos}` : ''}`
}

/**
 * The same for a replace, leaving out what ip and the kernel fill in anyway (the main table, the family's
 * default metric): ip parses every word of every line, so each word left out is time saved on every route.
 */
function replaceKeyArgs(r: KernelRoute): string {
  const table = r.table !== MAIN_TABLE ? ` table ${r.table}` : ''
  const metric = r.metric !== defaultMetric(r.family) ? ` metric ${r.metric}` : ''
  return `${table} proto ${r.protocol}${metric}${r.tos !== 0 ? ` tos ${r.tos}` : ''}`
}

const TYPE_WORD: Partial<Record<RouteType, string>> = { blackhole: 'blackhole ', unreachable: 'unreachable ', prohibit: 'prohibit ', throw: 'throw ' }

/**
 * `route replace ...` for one route (no leading `ip`). ip's grammar wants `nexthop` groups last, after the
 * table/proto/metric selectors.
 */
export function replaceLine(r: KernelRoute): string {
  const head = `route replace ${TYPE_WORD[r.type] ?? ''}${r.dst}`
  const [only] = r.nexthops
  if (r.nexthops.length === 1 && only !== undefined) return head + hopArgs(only) + replaceKeyArgs(r)
  return head + replaceKeyArgs(r) + r.nexthops.map((h) => ` nexthop${hopArgs(h)}`).join('')
}

/**
 * `route replace ...` through kernel nexthop object `nhid` (the kernel then skips validating the gateway
 * for every route), or naming its hops when `nhid` is undefined.
 */
export function replaceLineVia(r: KernelRoute, nhid: number | undefined): string {
  if (nhid === undefined) return replaceLine(r)
  return `route replace ${TYPE_WORD[r.type] ?? ''}${r.dst} nhid ${nhid}${replaceKeyArgs(r)}`
}

/**
 * `route delete ...` naming the route's own protocol, so the kernel refuses to delete a different route
 * that took the key in the meantime. The device of a device route is named too (the veth cleanup relies
 * on it); not that of a route through a gateway, which may go through a nexthop object, and the kernel
 * matches no such route by device.
 */
export function deleteLine(r: KernelRoute): string {
  const [only] = r.nexthops
  const dev = r.nexthops.length === 1 && only?.dev !== undefined && only.gateway === undefined ? ` dev ${only.dev}` : ''
  return `route delete ${TYPE_WORD[r.type] ?? ''}${r.dst}${dev}${keyArgs(r)}`
}
