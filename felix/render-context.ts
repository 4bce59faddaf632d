// What rendering one learned route needs besides the route: the pools (most specific first found by
// address), the node's own subnets, the remote VTEPs, and the next hop each (address, node, pool) becomes.
// Built once per pool/encapsulation/node change and shared by the full render and the incremental
// desired table. Pure; bad input becomes a problem naming its field, never an exception.

import { AddrError, cidrContains, formatAddr, formatCidr, ipv4Within, ipv6Within, parseIfAddr, readAddr, tryAddr, type Addr, type Cidr, type Family } from '../net/index.js'
import type { IPPool } from '../config/index.js'
import type { DesiredState, LearnedNextHop, RemoteVtep } from './desired-state.js'
import { DEFAULT_ROUTE_PROTOCOL, MAIN_TABLE, type NextHop } from './kernel-route.js'

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
  readonly cidr: Cidr
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
  readonly ip?: Addr
  readonly problem?: string
}

const MAC_RE = /^[0-9a-f]{2}(:[0-9a-f]{2}){5}$/
const NO_POOL: PoolMatch = { pool: undefined, index: -1 }

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

function subnetOf(addr: string | undefined, field: string, problems: RenderProblem[]): Cidr | undefined {
  if (addr === undefined) return undefined
  const c = tryAddr(() => parseIfAddr(addr, field).cidr)
  if (c instanceof AddrError) {
    problems.push({ path: field, message: c.reason })
    return undefined
  }
  return c
}

/** The address, or undefined when net/ refuses the text. */
export function addrOf(text: string): Addr | undefined {
  const a = tryAddr(() => readAddr(text))
  return a instanceof AddrError ? undefined : a
}

/** An IPv6 value as its 16 network-order bytes. */
function bytes16(v: bigint): Uint8Array {
  const out = new Uint8Array(16)
  for (let i = 15; i >= 0; i--, v >>= 8n) out[i] = Number(v & 255n)
  return out
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
  private readonly v6Pools: { readonly match: PoolMatch; readonly net: Uint8Array; readonly len: number }[] = []
  private readonly subnets: Record<Family, Cidr | undefined>
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
      if (p.cidr.family === 4) this.v4Pools.push({ match: { pool: p, index }, net: Number(p.cidr.base), len: p.cidr.prefix })
      else this.v6Pools.push({ match: { pool: p, index }, net: bytes16(p.cidr.base), len: p.cidr.prefix })
    })
    this.subnets = {
      4: subnetOf(state.localNode.ipv4Address, 'localNode.ipv4Address', problems),
      6: subnetOf(state.localNode.ipv6Address, 'localNode.ipv6Address', problems),
    }
    const anyVxlan = this.pools.some((p) => p.encap === 'vxlan')
    state.vteps.forEach((v, i) => {
      const path = `vteps[${i}]`
      const mac = v.mac.toLowerCase()
      const tunnel = addrOf(v.tunnelAddress)
      const node = addrOf(v.nodeAddress)
      if (!MAC_RE.test(mac)) return problems.push({ path: `${path}.mac`, message: `${JSON.stringify(v.mac)} is not a MAC address (xx:xx:xx:xx:xx:xx)` })
      if (tunnel?.family !== 4) return problems.push({ path: `${path}.tunnelAddress`, message: `${JSON.stringify(v.tunnelAddress)} is not an IPv4 address` })
      if (node?.family !== 4) return problems.push({ path: `${path}.nodeAddress`, message: `${JSON.stringify(v.nodeAddress)} is not an IPv4 address` })
      const canon: RemoteVtep = { nodeName: v.nodeName, nodeAddress: formatAddr(4, node.value), tunnelAddress: formatAddr(4, tunnel.value), mac }
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
    // Indexed: it runs for every learned route, and an iterator would be made each time until optimized.
    const pools = this.v4Pools
    for (let i = 0; i < pools.length; i++) {
      const v = pools[i]!
      if (v.len > len || !ipv4Within(v.net, v.len, addr)) continue
      if (best === undefined || v.len > best.len) best = v
    }
    return best?.match ?? NO_POOL
  }

  /** The most specific pool holding the IPv6 network `addr`/`len` (16 bytes, host bits clear). */
  poolForIpv6(addr: Uint8Array, len: number): PoolMatch {
    let best: { readonly match: PoolMatch; readonly len: number } | undefined
    const pools = this.v6Pools
    for (let i = 0; i < pools.length; i++) {
      const v = pools[i]!
      if (v.len > len || (best !== undefined && v.len <= best.len)) continue
      if (ipv6Within(v.net, v.len, addr)) best = v
    }
    return best?.match ?? NO_POOL
  }

  /** The most specific pool containing `c`. */
  poolFor(c: Cidr): PoolMatch {
    let best: PoolView | undefined
    for (const p of this.pools) {
      if (p.cidr.family !== c.family || p.cidr.prefix > c.prefix) continue
      if (!cidrContains(p.cidr, c.family, c.base)) continue
      if (best === undefined || p.cidr.prefix > best.cidr.prefix) best = p
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
      const ip = tryAddr(() => readAddr(nh.address))
      if (ip instanceof AddrError) r = { problem: ip.reason }
      else {
        const hop = this.hopFor(nh, ip, m.pool, path)
        r = hop !== undefined ? { hop, ip } : { ip }
      }
      this.hopCache.set(key, r)
    }
    return r
  }

  private hopFor(nh: LearnedNextHop, ip: Addr, pool: PoolView | undefined, path: () => string): NextHop | undefined {
    const address = formatAddr(ip.family, ip.value)
    const encap = pool?.encap ?? 'none'
    const subnet = this.subnets[ip.family]
    const sameSubnet = subnet !== undefined && cidrContains(subnet, ip.family, ip.value)
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
