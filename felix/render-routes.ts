// Pure route rendering: DesiredState -> the kernel routes, permanent neighbours and FDB entries felix wants,
// per pool mode (no-encap, IPIP, VXLAN, CrossSubnet), with ECMP and local blackholes. Bad input never throws:
// the offending route is skipped and a problem naming its field path is returned, so the rest still renders.

import { AddrError, formatAddr, formatCidr, readCidr, readIpv4Prefix, tryAddr, type Family } from '../net/index.js'
import type { DesiredState } from './desired-state.js'
import { compareNextHops, defaultMetric, routeKey, type KernelRoute, type NextHop } from './kernel-route.js'
import { RenderContext, addrOf, type FdbEntry, type NeighbourEntry, type PoolMatch, type RenderOptions, type RenderProblem } from './render-context.js'

export { TUNL_DEVICE, VXLAN_DEVICE, type RenderOptions, type NeighbourEntry, type FdbEntry, type RenderProblem } from './render-context.js'

export interface RenderedState {
  /** By routeKey(). */
  readonly routes: Map<string, KernelRoute>
  readonly neighbours: NeighbourEntry[]
  readonly fdb: FdbEntry[]
  readonly problems: RenderProblem[]
}

export function renderDesired(state: DesiredState, opts: RenderOptions = {}): RenderedState {
  const ctx = new RenderContext(state, opts)
  const { table, protocol, problems } = ctx
  const routes = new Map<string, KernelRoute>()
  // Problem paths name the route and hop by index; they are made only for a problem (this runs per route).
  const hopPath = (i: number, j: number): string => `routes[${i}].nextHops[${j}].address`
  const v4Metric = defaultMetric(4)

  state.routes.forEach((r, i) => {
    let version: Family
    let dst: string
    let pool: PoolMatch
    const fast = readIpv4Prefix(r.prefix)
    if (fast !== undefined) {
      version = 4
      dst = r.prefix
      pool = ctx.poolForIpv4(fast.addr, fast.len)
    } else {
      const c = tryAddr(() => readCidr(r.prefix, `routes[${i}].prefix`))
      if (c instanceof AddrError) return problems.push({ path: c.field, message: c.reason })
      version = c.family
      dst = formatCidr(c)
      pool = ctx.poolFor(c)
    }
    const hops: NextHop[] = []
    r.nextHops.forEach((nh, j) => {
      const res = ctx.resolveHop(nh, pool, () => hopPath(i, j))
      if (res.problem !== undefined) return problems.push({ path: hopPath(i, j), message: res.problem })
      if (res.ip !== undefined && res.ip.family !== version) return problems.push({ path: hopPath(i, j), message: `IPv${res.ip.family} next hop for IPv${version} prefix ${r.prefix}` })
      const hop = res.hop
      if (hop === undefined) return undefined
      if (!hops.some((h) => h.gateway === hop.gateway && h.dev === hop.dev)) hops.push(hop)
      return undefined
    })
    if (hops.length === 0) {
      if (r.nextHops.length === 0) problems.push({ path: `routes[${i}].nextHops`, message: 'no next hops' })
      return undefined
    }
    if (hops.length > 1) hops.sort(compareNextHops)
    const route: KernelRoute = { family: version, table, dst, tos: 0, metric: r.metric ?? (version === 4 ? v4Metric : defaultMetric(version)), type: 'unicast', protocol, nexthops: hops }
    const key = routeKey(route)
    if (routes.has(key)) problems.push({ path: `routes[${i}].prefix`, message: `${route.dst} appears more than once; the last one wins` })
    routes.set(key, route)
    return undefined
  })

  for (const [key, route] of localBlockRoutes(state.localBlocks, table, protocol, problems)) {
    // Our own block learned back from a peer would loop; the blackhole is the truth for it.
    if (routes.has(key)) problems.push({ path: route.path, message: `${route.route.dst} is a local block and also a learned route; the blackhole wins` })
    routes.set(key, route.route)
  }
  return { routes, neighbours: ctx.neighbours, fdb: ctx.fdb, problems }
}

/**
 * The blackhole route of each local block, by routeKey, with the field path naming its block. A /32 (/128)
 * block gets none: its blackhole would shadow the CNI's pod route or a borrowed address (notes/calico.md §3.5).
 */
export function localBlockRoutes(blocks: readonly string[], table: number, protocol: number, problems: RenderProblem[]): Map<string, { readonly route: KernelRoute; readonly path: string }> {
  const out = new Map<string, { readonly route: KernelRoute; readonly path: string }>()
  blocks.forEach((b, i) => {
    const c = tryAddr(() => readCidr(b, `localBlocks[${i}]`))
    if (c instanceof AddrError) return problems.push({ path: c.field, message: c.reason })
    if (c.prefix === (c.family === 4 ? 32 : 128)) return undefined
    const route: KernelRoute = { family: c.family, table, dst: formatCidr(c), tos: 0, metric: defaultMetric(c.family), type: 'blackhole', protocol, nexthops: [] }
    out.set(routeKey(route), { route, path: `localBlocks[${i}]` })
    return undefined
  })
  return out
}

/** The canonical addresses of the known workloads, as the delta tracker compares them. */
export function workloadAddresses(state: DesiredState): Set<string> | undefined {
  if (state.workloads === undefined) return undefined
  const out = new Set<string>()
  for (const w of state.workloads) {
    const ip = addrOf(w.address)
    if (ip !== undefined) out.add(formatAddr(ip.family, ip.value))
  }
  return out
}
