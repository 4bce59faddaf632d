// What rendering one learned route needs besides the route: the pools (most specific first found by
// address), the node's own subnets, the remote VTEPs, and the next hop each (address, node, pool) becomes.
// Built once per pool/encapsulation/node change and shared by the full render and the incremental
// desired table. Pure; bad input becomes a problem naming its field, never an exception.

import { cidrContainsIP, formatCIDR, formatIP, parseCIDR, parseIP, type CIDR, type IPAddr, type IPPool } from '../config/resources/index.js'
import type { DesiredState, LearnedNextHop, RemoteVtep } from './desired-state.js'
import { DEFAULT_ROUTE_PROTOCOL, MAIN_TABLE, type Family, type NextHop } from './kernel-route.js'

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

type Encap = 'none' | 'ipip' | 'vxlan'

export interface PoolView {
  readonly cidr: CIDR
  readonly encap: Encap
  readonly crossSubnet: boolean
}

/** A pool found for a prefix, with its index among the usable pools (-1: none). */
export interface PoolMatch {
  readonly pool: PoolView | undefined
  readonly index: number
}

/** One next hop resolved for a pool: the kernel hop, or why there is none. */
export interface ResolvedHop {
  readonly hop?: NextHop
  readonly ip?: IPAddr
  readonly problem?: string
}

const MAC_RE = /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/
const NO_POOL: PoolMatch = { pool: undefined, index: -1 }

function poolView(pool: IPPool, index: number, problems: RenderProblem[]): PoolView | undefined {
  const path = `pools[${index}]`
  const cidr = parseCIDR(pool.spec.cidr)
  if (typeof cidr === 'string') {
    problems.push({ path: `${path}.spec.cidr`, message: cidr })
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
  if (encap !== 'none' && cidr.version === 6) {
    // Calico has no IPIP for IPv6, and pinto's vxlan.pinto carries IPv4 only.
    problems.push({ path: `${path}.spec.${encap === 'vxlan' ? 'vxlanMode' : 'ipipMode'}`, message: `${encap} is IPv4-only; IPv6 pool ${formatCIDR(cidr)} is routed without encapsulation` })
    encap = 'none'
  }
  return { cidr, encap, crossSubnet: mode === 'CrossSubnet' }
}

function subnetOf(addr: string | undefined, field: string, problems: RenderProblem[]): CIDR | undefined {
  if (addr === undefined) return undefined
  const c = parseCIDR(addr)
  if (typeof c === 'string') {
    problems.push({ path: field, message: c })
    return undefined
  }
  return c
}

export class RenderContext {
  readonly table: number
  readonly protocol: number
  /** What the pools, node and VTEPs had wrong, then each next hop's problem once. */
  readonly problems: RenderProblem[] = []
  readonly neighbours: NeighbourEntry[] = []
  readonly fdb: FdbEntry[] = []
  private readonly tunl: string
  private readonly vxlan: string
  private readonly parent: string
  private readonly pools: PoolView[] = []
  private readonly v4Pools: { readonly match: PoolMatch; readonly net: number; readonly len: number }[] = []
  private readonly subnets: Record<Family, CIDR | undefined>
  // VTEPs by node name and by node IP: a next hop may come with either.
  private readonly vtepByName = new Map<string, RemoteVtep>()
  private readonly vtepByAddr = new Map<string, RemoteVtep>()
  // Next hops repeat across routes (a few nodes, many blocks): each (address, node, pool) is resolved once.
  private readonly hopCache = new Map<string, ResolvedHop>()

  constructor(state: Pick<DesiredState, 'pools' | 'vteps' | 'localNode'>, opts: RenderOptions = {}) {
    this.table = opts.table ?? MAIN_TABLE
    this.protocol = opts.protocol ?? DEFAULT_ROUTE_PROTOCOL
    this.tunl = opts.tunlDevice ?? TUNL_DEVICE
    this.vxlan = opts.vxlanDevice ?? VXLAN_DEVICE
    this.parent = state.localNode.parentInterface
    const problems = this.problems
    state.pools.forEach((p, i) => {
      const v = poolView(p, i, problems)
      if (v !== undefined) this.pools.push(v)
    })
    this.pools.forEach((p, index) => {
      if (p.cidr.version === 4) this.v4Pools.push({ match: { pool: p, index }, net: Number(p.cidr.network), len: p.cidr.prefixLength })
    })
    this.subnets = {
      4: subnetOf(state.localNode.ipv4Address, 'localNode.ipv4Address', problems),
      6: subnetOf(state.localNode.ipv6Address, 'localNode.ipv6Address', problems),
    }
    const anyVxlan = this.pools.some((p) => p.encap === 'vxlan')
    state.vteps.forEach((v, i) => {
      const path = `vteps[${i}]`
      const mac = v.mac.toLowerCase()
      const tunnel = parseIP(v.tunnelAddress)
      const node = parseIP(v.nodeAddress)
      if (!MAC_RE.test(mac)) return problems.push({ path: `${path}.mac`, message: `${JSON.stringify(v.mac)} is not a MAC address (xx:xx:xx:xx:xx:xx)` })
      if (tunnel?.version !== 4) return problems.push({ path: `${path}.tunnelAddress`, message: `${JSON.stringify(v.tunnelAddress)} is not an IPv4 address` })
      if (node?.version !== 4) return problems.push({ path: `${path}.nodeAddress`, message: `${JSON.stringify(v.nodeAddress)} is not an IPv4 address` })
      const canon: RemoteVtep = { nodeName: v.nodeName, nodeAddress: formatIP(4, node.value), tunnelAddress: formatIP(4, tunnel.value), mac }
      this.vtepByName.set(v.nodeName, canon)
      this.vtepByAddr.set(canon.nodeAddress, canon)
      if (anyVxlan) {
        this.neighbours.push({ dev: this.vxlan, address: canon.tunnelAddress, mac })
        this.fdb.push({ dev: this.vxlan, mac, dst: canon.nodeAddress })
      }
      return undefined
    })
  }

  /** The most specific pool holding the IPv4 network `addr`/`len` (unsigned, host bits clear). */
  poolForIpv4(addr: number, len: number): PoolMatch {
    let best: { readonly match: PoolMatch; readonly len: number } | undefined
    for (const v of this.v4Pools) {
      if (v.len > len) continue
      const shift = 32 - v.len
      if (v.len !== 0 && addr >>> shift !== v.net >>> shift) continue
      if (best === undefined || v.len > best.len) best = v
    }
    return best?.match ?? NO_POOL
  }

  /** The most specific pool containing `c`. */
  poolFor(c: CIDR): PoolMatch {
    let best: PoolView | undefined
    for (const p of this.pools) {
      if (p.cidr.version !== c.version || p.cidr.prefixLength > c.prefixLength) continue
      if (!cidrContainsIP(p.cidr, { version: c.version, value: c.network })) continue
      if (best === undefined || p.cidr.prefixLength > best.cidr.prefixLength) best = p
    }
    return best === undefined ? NO_POOL : { pool: best, index: this.pools.indexOf(best) }
  }

  /**
   * The kernel hop `nh` becomes for a prefix of pool `m`, resolved once per (address, node, pool); a missing
   * VTEP is reported once, under `path()`.
   */
  resolveHop(nh: LearnedNextHop, m: PoolMatch, path: () => string): ResolvedHop {
    const key = `${nh.address}\u0000${nh.nodeName ?? ''}\u0000${m.index}`
    let r = this.hopCache.get(key)
    if (r === undefined) {
      const ip = parseIP(nh.address)
      if (ip === undefined) r = { problem: `${JSON.stringify(nh.address)} is not an IP address` }
      else {
        const hop = this.hopFor(nh, ip, m.pool, path)
        r = hop !== undefined ? { hop, ip } : { ip }
      }
      this.hopCache.set(key, r)
    }
    return r
  }

  private hopFor(nh: LearnedNextHop, ip: IPAddr, pool: PoolView | undefined, path: () => string): NextHop | undefined {
    const address = formatIP(ip.version, ip.value)
    const encap = pool?.encap ?? 'none'
    const subnet = this.subnets[ip.version]
    const sameSubnet = subnet !== undefined && cidrContainsIP(subnet, ip)
    if (encap === 'none') return { gateway: address, dev: this.parent, onlink: false }
    if (pool?.crossSubnet === true && sameSubnet) return { gateway: address, dev: this.parent, onlink: true }
    if (encap === 'ipip') return { gateway: address, dev: this.tunl, onlink: true }
    const vtep = (nh.nodeName !== undefined ? this.vtepByName.get(nh.nodeName) : undefined) ?? this.vtepByAddr.get(address)
    if (vtep === undefined) {
      this.problems.push({ path: path(), message: `no VTEP known for ${nh.nodeName ?? address}; next hop skipped until the node publishes one` })
      return undefined
    }
    return { gateway: vtep.tunnelAddress, dev: this.vxlan, onlink: true }
  }
}
