// Pure route rendering: DesiredState -> the kernel routes, permanent neighbours and FDB entries felix wants,
// per pool mode (no-encap, IPIP, VXLAN, CrossSubnet), with ECMP and local blackholes. Bad input never throws:
// the offending route is skipped and a problem naming its field path is returned, so the rest still renders.

import { AddrError, cidrContains, formatAddr, formatCidr, parseIfAddr, readAddr, readCidr, tryAddr, type Addr, type Cidr } from '../config/ip/index.js'
import type { IPPool } from '../config/resources/index.js'
import type { DesiredState, LearnedNextHop, RemoteVtep } from './desired-state.js'
import { compareNextHops, defaultMetric, MAIN_TABLE, routeKey, DEFAULT_ROUTE_PROTOCOL, type Family, type KernelRoute, type NextHop } from './kernel-route.js'
import { formatIpv4, parseIpv4 as parseIpv4Number } from '../bgp/codec/ip.js'

export const TUNL_DEVICE = 'tunl0'
export const VXLAN_DEVICE = 'vxlan.pinto'

export interface RenderOptions {
  readonly table?: number
  readonly protocol?: number
  readonly tunlDevice?: string
  readonly vxlanDevice?: string
}

export interface NeighbourEntry {
  readonly dev: string
  readonly address: string
  readonly mac: string
}

export interface FdbEntry {
  readonly dev: string
  readonly mac: string
  /** The remote node's IP: the outer destination of frames for this MAC. */
  readonly dst: string
}

export interface RenderProblem {
  /** Field path into the DesiredState, e.g. `routes[3].nextHops[0].address`. */
  readonly path: string
  readonly message: string
}

export interface RenderedState {
  /** By routeKey(). */
  readonly routes: Map<string, KernelRoute>
  readonly neighbours: NeighbourEntry[]
  readonly fdb: FdbEntry[]
  readonly problems: RenderProblem[]
}

type Encap = 'none' | 'ipip' | 'vxlan'

interface PoolView {
  readonly cidr: Cidr
  readonly encap: Encap
  readonly crossSubnet: boolean
}

const MAC_RE = /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/

function poolView(pool: IPPool, index: number, problems: RenderProblem[]): PoolView | undefined {
  const path = `pools[${index}]`
  const cidr = tryAddr(() => parseIfAddr(pool.spec.cidr, `${path}.spec.cidr`).cidr)
  if (cidr instanceof AddrError) {
    problems.push({ path: cidr.field, message: cidr.reason })
    return undefined
  }
  const vx = pool.spec.vxlanMode ?? 'Never'
  const ipip = pool.spec.ipipMode ?? 'Never'
  let encap: Encap = 'none'
  let mode = 'Never'
  if (vx !== 'Never') {
    encap = 'vxlan'
    mode = vx
    if (ipip !== 'Never') problems.push({ path: `${path}.spec.ipipMode`, message: 'both ipipMode and vxlanMode are set; using VXLAN' })
  } else if (ipip !== 'Never') {
    encap = 'ipip'
    mode = ipip
  }
  if (encap !== 'none' && cidr.family === 6) {
    // Calico has no IPIP for IPv6, and pinto's vxlan.pinto carries IPv4 only.
    problems.push({ path: `${path}.spec.${encap === 'vxlan' ? 'vxlanMode' : 'ipipMode'}`, message: `${encap} is IPv4-only; IPv6 pool ${formatCidr(cidr)} is routed without encapsulation` })
    encap = 'none'
  }
  return { cidr, encap, crossSubnet: mode === 'CrossSubnet' }
}

/**
 * A canonical IPv4 prefix ("a.b.c.d/len", no leading zeros, host bits clear) as numbers; undefined for
 * anything else, which then takes the general parser and its error messages.
 */
function fastIpv4Prefix(text: string): { addr: number; len: number } | undefined {
  const slash = text.indexOf('/')
  if (slash < 0) return undefined
  const addrText = text.slice(0, slash)
  const addr = parseIpv4Number(addrText)
  if (addr === undefined || formatIpv4(addr) !== addrText) return undefined
  const lenText = text.slice(slash + 1)
  if (addr === undefined || lenText.length === 0 || lenText.length > 2 || (lenText.length === 2 && lenText[0] === '0')) return undefined
  const len = Number(lenText)
  if (!Number.isInteger(len) || len > 32) return undefined
  const mask = len === 0 ? 0 : (0xffffffff << (32 - len)) >>> 0
  if (((addr & mask) >>> 0) !== addr) return undefined
  return { addr, len }
}

/** The most specific pool containing `c`, if any. */
function poolFor(pools: readonly PoolView[], c: Cidr): PoolView | undefined {
  let best: PoolView | undefined
  for (const p of pools) {
    if (p.cidr.family !== c.family || p.cidr.prefix > c.prefix) continue
    if (!cidrContains(p.cidr, c.family, c.base)) continue
    if (best === undefined || p.cidr.prefix > best.cidr.prefix) best = p
  }
  return best
}

function subnetOf(addr: string | undefined, field: string, problems: RenderProblem[]): Cidr | undefined {
  if (addr === undefined) return undefined
  const c = tryAddr(() => parseIfAddr(addr, field).cidr)
  if (c instanceof AddrError) {
    problems.push({ path: field, message: c.reason })
    return undefined
  }
  return c
}

/** The address, or undefined when config/ip refuses the text. */
function addrOf(text: string): Addr | undefined {
  const a = tryAddr(() => readAddr(text))
  return a instanceof AddrError ? undefined : a
}

export function renderDesired(state: DesiredState, opts: RenderOptions = {}): RenderedState {
  const table = opts.table ?? MAIN_TABLE
  const protocol = opts.protocol ?? DEFAULT_ROUTE_PROTOCOL
  const tunl = opts.tunlDevice ?? TUNL_DEVICE
  const vxlan = opts.vxlanDevice ?? VXLAN_DEVICE
  const parent = state.localNode.parentInterface
  const problems: RenderProblem[] = []
  const routes = new Map<string, KernelRoute>()

  const pools: PoolView[] = []
  state.pools.forEach((p, i) => {
    const v = poolView(p, i, problems)
    if (v !== undefined) pools.push(v)
  })
  const subnets: Record<Family, Cidr | undefined> = {
    4: subnetOf(state.localNode.ipv4Address, 'localNode.ipv4Address', problems),
    6: subnetOf(state.localNode.ipv6Address, 'localNode.ipv6Address', problems),
  }

  // VTEPs by node name and by node IP: a next hop may come with either.
  const vtepByName = new Map<string, RemoteVtep>()
  const vtepByAddr = new Map<string, RemoteVtep>()
  const neighbours: NeighbourEntry[] = []
  const fdb: FdbEntry[] = []
  const anyVxlan = pools.some((p) => p.encap === 'vxlan')
  state.vteps.forEach((v, i) => {
    const path = `vteps[${i}]`
    const mac = v.mac.toLowerCase()
    const tunnel = addrOf(v.tunnelAddress)
    const node = addrOf(v.nodeAddress)
    if (!MAC_RE.test(mac)) return problems.push({ path: `${path}.mac`, message: `${JSON.stringify(v.mac)} is not a MAC address (xx:xx:xx:xx:xx:xx)` })
    if (tunnel?.family !== 4) return problems.push({ path: `${path}.tunnelAddress`, message: `${JSON.stringify(v.tunnelAddress)} is not an IPv4 address` })
    if (node?.family !== 4) return problems.push({ path: `${path}.nodeAddress`, message: `${JSON.stringify(v.nodeAddress)} is not an IPv4 address` })
    const canon: RemoteVtep = { nodeName: v.nodeName, nodeAddress: formatAddr(4, node.value), tunnelAddress: formatAddr(4, tunnel.value), mac }
    vtepByName.set(v.nodeName, canon)
    vtepByAddr.set(canon.nodeAddress, canon)
    if (anyVxlan) {
      neighbours.push({ dev: vxlan, address: canon.tunnelAddress, mac })
      fdb.push({ dev: vxlan, mac, dst: canon.nodeAddress })
    }
    return undefined
  })

  // Problem paths name the route and hop by index; they are made only for a problem (this runs per route).
  const hopPath = (i: number, j: number): string => `routes[${i}].nextHops[${j}].address`
  const hopFor = (nh: LearnedNextHop, ip: Addr, pool: PoolView | undefined, i: number, j: number): NextHop | undefined => {
    const address = formatAddr(ip.family, ip.value)
    const encap = pool?.encap ?? 'none'
    const subnet = subnets[ip.family]
    const sameSubnet = subnet !== undefined && cidrContains(subnet, ip.family, ip.value)
    if (encap === 'none') return { gateway: address, dev: parent, onlink: false }
    if (pool?.crossSubnet === true && sameSubnet) return { gateway: address, dev: parent, onlink: true }
    if (encap === 'ipip') return { gateway: address, dev: tunl, onlink: true }
    const vtep = (nh.nodeName !== undefined ? vtepByName.get(nh.nodeName) : undefined) ?? vtepByAddr.get(address)
    if (vtep === undefined) {
      problems.push({ path: hopPath(i, j), message: `no VTEP known for ${nh.nodeName ?? address}; next hop skipped until the node publishes one` })
      return undefined
    }
    return { gateway: vtep.tunnelAddress, dev: vxlan, onlink: true }
  }

  // Next hops repeat across routes (a few nodes, many blocks): resolve each (address, node, pool) once.
  const hopCache = new Map<string, { hop?: NextHop; ip?: Addr; problem?: string }>()
  const resolveHop = (nh: LearnedNextHop, pool: PoolView | undefined, poolIndex: number, i: number, j: number): { hop?: NextHop; ip?: Addr; problem?: string } => {
    const key = `${nh.address}\u0000${nh.nodeName ?? ''}\u0000${poolIndex}`
    let r = hopCache.get(key)
    if (r === undefined) {
      const ip = tryAddr(() => readAddr(nh.address))
      if (ip instanceof AddrError) r = { problem: ip.reason }
      else {
        // hopFor reports a missing VTEP itself: once per next hop, no longer once per route.
        const hop = hopFor(nh, ip, pool, i, j)
        r = hop !== undefined ? { hop, ip } : { ip }
      }
      hopCache.set(key, r)
    }
    return r
  }
  // IPv4 pools as numbers, for the fast path of canonical IPv4 prefixes (the common case: Loc-RIB text).
  const v4Pools = pools.flatMap((p, index) => (p.cidr.family === 4 ? [{ p, index, net: Number(p.cidr.base), len: p.cidr.prefix }] : []))
  const v4PoolFor = (addr: number, len: number): { p: PoolView; index: number } | undefined => {
    let best: { p: PoolView; index: number; len: number } | undefined
    for (const v of v4Pools) {
      if (v.len > len) continue
      const shift = 32 - v.len
      if (v.len !== 0 && (addr >>> shift !== v.net >>> shift)) continue
      if (best === undefined || v.len > best.len) best = v
    }
    return best
  }
  const v4Metric = defaultMetric(4)

  state.routes.forEach((r, i) => {
    let version: Family
    let dst: string
    let pool: PoolView | undefined
    let poolIndex = -1
    const fast = fastIpv4Prefix(r.prefix)
    if (fast !== undefined) {
      version = 4
      dst = r.prefix
      const found = v4PoolFor(fast.addr, fast.len)
      pool = found?.p
      poolIndex = found?.index ?? -1
    } else {
      const c = tryAddr(() => readCidr(r.prefix, `routes[${i}].prefix`))
      if (c instanceof AddrError) return problems.push({ path: c.field, message: c.reason })
      version = c.family
      dst = formatCidr(c)
      pool = poolFor(pools, c)
      poolIndex = pool === undefined ? -1 : pools.indexOf(pool)
    }
    const hops: NextHop[] = []
    r.nextHops.forEach((nh, j) => {
      const res = resolveHop(nh, pool, poolIndex, i, j)
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

  state.localBlocks.forEach((b, i) => {
    const c = tryAddr(() => readCidr(b, `localBlocks[${i}]`))
    if (c instanceof AddrError) return problems.push({ path: c.field, message: c.reason })
    // A /32 (/128) blackhole would shadow the CNI's pod route or a borrowed address (notes/calico.md §3.5).
    if (c.prefix === (c.family === 4 ? 32 : 128)) return undefined
    const route: KernelRoute = { family: c.family, table, dst: formatCidr(c), tos: 0, metric: defaultMetric(c.family), type: 'blackhole', protocol, nexthops: [] }
    const key = routeKey(route)
    // Our own block learned back from a peer would loop; the blackhole is the truth for it.
    if (routes.has(key)) problems.push({ path: `localBlocks[${i}]`, message: `${route.dst} is a local block and also a learned route; the blackhole wins` })
    routes.set(key, route)
    return undefined
  })

  return { routes, neighbours, fdb, problems }
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
