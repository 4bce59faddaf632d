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
}

export interface Wiring extends Veth {
  /** Bare addresses (no length). */
  readonly v4: string | undefined
  readonly v6: string | undefined
}

/**
 * Run inside the pod netns: the veth is born there and its peer sent to the host netns (named by a PID in
 * it), so no half-made interface ever appears in the pod under a temporary name. It needs no address, so
 * ADD runs it while the IPAM request is out.
 */
export function vethLine(v: Veth, hostPid: number): string {
  return `link add ${v.ifname} address ${v.podMac} mtu ${v.mtu} type veth peer name ${v.hostVeth} address ${HOST_MAC} mtu ${v.mtu} netns ${hostPid}\n`
}

/** Run in the pod netns once the veth exists: up, addresses, the gateway's link route and the default routes. */
export function podBatch(w: Wiring): string {
  const lines = [`link set ${w.ifname} up`]
  if (w.v4 !== undefined) {
    lines.push(`addr add ${w.v4}/32 dev ${w.ifname}`, `route add ${GATEWAY_V4}/32 dev ${w.ifname} scope link`, `route add default via ${GATEWAY_V4} dev ${w.ifname}`)
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
  readonly link: { readonly mac: string; readonly up: boolean; readonly mtu: number } | undefined
  readonly addrs: readonly string[]
  /** `dst[ via gw]` per route on the interface. */
  readonly routes: readonly string[]
}

interface IpLink { address?: string; flags?: string[]; mtu?: number; addr_info?: { local?: string; prefixlen?: number; scope?: string }[] }
interface IpRoute { dst?: string; gateway?: string }

export function sideState(linkJson: string | undefined, routeJsons: readonly string[]): SideState {
  const links = linkJson === undefined ? [] : (JSON.parse(linkJson) as IpLink[])
  const l = links[0]
  const routes = routeJsons.flatMap((j) => (JSON.parse(j === '' ? '[]' : j) as IpRoute[]).map((r) => `${r.dst ?? '?'}${r.gateway ? ` via ${r.gateway}` : ''}`))
  return {
    link: l === undefined ? undefined : { mac: l.address ?? '', up: (l.flags ?? []).includes('UP'), mtu: l.mtu ?? 0 },
    addrs: (l?.addr_info ?? []).filter((a) => a.scope !== 'link').map((a) => `${a.local}/${a.prefixlen}`),
    routes,
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
  }
  const want = (list: readonly string[], item: string, where: string): void => {
    if (!list.includes(item)) p.push(`${where} lacks ${item}`)
  }
  if (w.v4 !== undefined) {
    want(pod.addrs, `${w.v4}/32`, `${w.ifname}'s addresses`)
    want(pod.routes, GATEWAY_V4, 'pod routes')
    want(pod.routes, `default via ${GATEWAY_V4}`, 'pod routes')
    want(host.routes, w.v4, `host routes on ${w.hostVeth}`)
  }
  if (w.v6 !== undefined) {
    want(pod.addrs, `${w.v6}/128`, `${w.ifname}'s addresses`)
    want(pod.routes, `default via ${GATEWAY_V6}`, 'pod routes')
    want(host.routes, w.v6, `host routes on ${w.hostVeth}`)
  }
  return p
}
