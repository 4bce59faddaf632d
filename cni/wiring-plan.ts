// What the pod's wiring is, as data: the `ip -batch` lines for the pod and host sides, Calico's fixed
// addresses, and the CHECK comparison of what the kernel shows against what ADD made. Pure.

export const HOST_MAC = 'ee:ee:ee:ee:ee:ee'
/** The pod's IPv4 gateway: never assigned anywhere; proxy ARP on the host veth answers for it. */
export const GATEWAY_V4 = '169.254.1.1'
/** The host veth's link-local address, the EUI-64 of HOST_MAC: known before the kernel assigns it. */
export const GATEWAY_V6 = 'fe80::ecee:eeff:feee:eeee'

/** What is known of a pod's veth before its addresses are. */
export interface Veth {
  readonly ifname: string
  readonly hostVeth: string
  readonly mtu: number
  /** Empty when unknown (CHECK without a prevResult MAC): not compared then. */
  readonly podMac: string
  /**
   * The container ID the veth belongs to, kept as the host end's ifalias: the host veth's name comes from
   * the pod's namespace and name alone, so a recreated sandbox's veth has its old sandbox's name.
   */
  readonly owner: string
}

export interface Wiring extends Veth {
  /** Bare addresses (no length). */
  readonly v4: string | undefined
  readonly v6: string | undefined
}

/**
 * Run inside the pod netns: the veth is born there, its host end gets its owner's container ID and only
 * then goes to the host netns (named by a PID in it), so no host veth is ever seen without its owner and
 * no half-made interface appears in the pod under a temporary name. (The kernel ignores an alias given
 * to `link add`, and moves a link before it sets the alias given with the move.) It needs no address,
 * so ADD runs it while the IPAM request is out.
 */
export function vethLines(v: Veth, hostPid: number): string {
  return [
    `link add ${v.ifname} address ${v.podMac} mtu ${v.mtu} type veth peer name ${v.hostVeth} address ${HOST_MAC} mtu ${v.mtu}`,
    `link set ${v.hostVeth} alias ${v.owner}`,
    `link set ${v.hostVeth} netns ${hostPid}`,
  ].join('\n') + '\n'
}

/** How many lines vethLines has: a batch failing on one of them failed to make the veth. */
export const VETH_LINES = 3

/**
 * Run in the pod netns once the veth exists: up, addresses, the gateway's link route and the default routes.
 * The IPv4 gateway also gets a permanent neighbour entry with the host veth's MAC: proxy ARP answers for
 * 169.254.1.1 only while the host has a route to it, which a node without a default route lacks. IPv6
 * needs none: the gateway is the host veth's own link-local address, which the host answers for itself.
 */
export function podBatch(w: Wiring): string {
  const lines = [`link set ${w.ifname} up`]
  if (w.v4 !== undefined) {
    lines.push(
      `addr add ${w.v4}/32 dev ${w.ifname}`,
      `route add ${GATEWAY_V4}/32 dev ${w.ifname} scope link`,
      `neigh replace ${GATEWAY_V4} lladdr ${HOST_MAC} dev ${w.ifname} nud permanent`,
      `route add default via ${GATEWAY_V4} dev ${w.ifname}`,
    )
  }
  if (w.v6 !== undefined) {
    // nodad: the address is ours by allocation, and a tentative address would delay the pod's first packets.
    lines.push(`addr add ${w.v6}/128 dev ${w.ifname} nodad`, `route add default via ${GATEWAY_V6} dev ${w.ifname}`)
  }
  return lines.join('\n') + '\n'
}

/** Run in the host netns once the peer is there (and its sysctls are set); independent of the pod side. */
export function hostBatch(w: Wiring): string {
  const lines = [`link set ${w.hostVeth} up`]
  if (w.v4 !== undefined) lines.push(`route add ${w.v4}/32 dev ${w.hostVeth} scope link`)
  if (w.v6 !== undefined) lines.push(`route add ${w.v6}/128 dev ${w.hostVeth}`)
  return lines.join('\n') + '\n'
}

/** Host-side sysctls as Calico sets them (path under /proc/sys/net, value). */
export function hostSysctls(hostVeth: string, v6: boolean): [string, string][] {
  const out: [string, string][] = [
    [`ipv4/conf/${hostVeth}/proxy_arp`, '1'],
    [`ipv4/neigh/${hostVeth}/proxy_delay`, '0'],
    [`ipv4/conf/${hostVeth}/forwarding`, '1'],
  ]
  if (v6) {
    out.push(
      [`ipv6/conf/${hostVeth}/accept_ra`, '0'],
      [`ipv6/conf/${hostVeth}/accept_dad`, '0'],
      [`ipv6/conf/${hostVeth}/proxy_ndp`, '1'],
      [`ipv6/conf/${hostVeth}/forwarding`, '1'],
    )
  }
  return out
}

/** A locally administered unicast MAC from 5 random bytes, so ADD knows the pod MAC without reading it back. */
export function podMacFrom(bytes: Uint8Array): string {
  return ['0a', ...[...bytes.subarray(0, 5)].map((b) => b.toString(16).padStart(2, '0'))].join(':')
}

/** What `ip -j` printed, reduced to what CHECK compares. */
export interface SideState {
  /** `owner` is the link's ifalias ('' when it has none). */
  readonly link: { readonly mac: string; readonly up: boolean; readonly mtu: number; readonly owner: string } | undefined
  readonly addrs: readonly string[]
  /** `dst[ via gw]` per route on the interface. */
  readonly routes: readonly string[]
  /** `dst lladdr STATE...` per neighbour entry on the interface. */
  readonly neighbours: readonly string[]
}

interface IpLink { address?: string; flags?: string[]; mtu?: number; ifalias?: string; addr_info?: { local?: string; prefixlen?: number; scope?: string }[] }
interface IpRoute { dst?: string; gateway?: string }
interface IpNeigh { dst?: string; lladdr?: string; state?: string[] }

export function sideState(linkJson: string | undefined, routeJsons: readonly string[], neighJson = ''): SideState {
  const links = linkJson === undefined ? [] : (JSON.parse(linkJson) as IpLink[])
  const l = links[0]
  const routes = routeJsons.flatMap((j) => (JSON.parse(j === '' ? '[]' : j) as IpRoute[]).map((r) => `${r.dst ?? '?'}${r.gateway ? ` via ${r.gateway}` : ''}`))
  return {
    link: l === undefined ? undefined : { mac: l.address ?? '', up: (l.flags ?? []).includes('UP'), mtu: l.mtu ?? 0, owner: l.ifalias ?? '' },
    addrs: (l?.addr_info ?? []).filter((a) => a.scope !== 'link').map((a) => `${a.local}/${a.prefixlen}`),
    routes,
    neighbours: (JSON.parse(neighJson === '' ? '[]' : neighJson) as IpNeigh[]).map((n) => [n.dst ?? '?', n.lladdr ?? '', ...(n.state ?? [])].join(' ')),
  }
}

/** Every difference between the kernel and the wiring ADD made, as sentences; empty means CHECK passes. */
export function checkWiring(w: Wiring, pod: SideState, host: SideState): string[] {
  const p: string[] = []
  if (pod.link === undefined) p.push(`${w.ifname} is missing in the pod netns`)
  else {
    if (!pod.link.up) p.push(`${w.ifname} in the pod is down`)
    if (w.podMac !== '' && pod.link.mac.toLowerCase() !== w.podMac.toLowerCase()) p.push(`${w.ifname} has MAC ${pod.link.mac}, expected ${w.podMac}`)
  }
  if (host.link === undefined) p.push(`host veth ${w.hostVeth} is missing`)
  else {
    if (!host.link.up) p.push(`host veth ${w.hostVeth} is down`)
    if (host.link.mac.toLowerCase() !== HOST_MAC) p.push(`host veth ${w.hostVeth} has MAC ${host.link.mac}, expected ${HOST_MAC}`)
    if (!ownedBy(host.link.owner, w.owner)) p.push(`host veth ${w.hostVeth} belongs to container ${host.link.owner}, not ${w.owner}`)
  }
  const want = (list: readonly string[], item: string, where: string): void => {
    if (!list.includes(item)) p.push(`${where} lacks ${item}`)
  }
  if (w.v4 !== undefined) {
    want(pod.addrs, `${w.v4}/32`, `${w.ifname}'s addresses`)
    want(pod.routes, GATEWAY_V4, 'pod routes')
    want(pod.routes, `default via ${GATEWAY_V4}`, 'pod routes')
    want(pod.neighbours, `${GATEWAY_V4} ${HOST_MAC} PERMANENT`, 'pod neighbours')
    want(host.routes, w.v4, `host routes on ${w.hostVeth}`)
  }
  if (w.v6 !== undefined) {
    want(pod.addrs, `${w.v6}/128`, `${w.ifname}'s addresses`)
    want(pod.routes, `default via ${GATEWAY_V6}`, 'pod routes')
    want(host.routes, w.v6, `host routes on ${w.hostVeth}`)
  }
  return p
}

/**
 * Whether a host veth whose ifalias is `recorded` belongs to container `owner`. A veth without one records
 * no owner: it is taken as its pod's current one.
 */
export function ownedBy(recorded: string, owner: string): boolean {
  return recorded === '' || recorded === owner
}
