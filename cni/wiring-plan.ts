// What the pod's wiring is, as data: the `ip -batch` lines for the pod and host sides, Calico's fixed
// addresses, and the CHECK comparison of what the kernel shows against what ADD made. Pure.

import type { LinkOp } from '../felix/index.js'
import { PRIMARY_IFNAME } from './config.js'

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
   * The attachment the veth belongs to, kept as the host end's ifalias: its IPAM handle's form,
   * `<network>.<containerID>[:<ifname>]` (config.ts handleOf). The host veth's name comes from the pod's
   * namespace and name, so a recreated sandbox's veth has its old sandbox's name; the alias tells them apart.
   */
  readonly owner: string
  /** The attachment's container: an earlier pinto recorded the container ID alone, which still names it. */
  readonly containerId: string
}

export interface Wiring extends Veth {
  /** Bare addresses (no length). */
  readonly v4: string | undefined
  readonly v6: string | undefined
}

/**
 * Run inside the pod netns: the veth is born there, its host end gets its attachment's id and only
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
 * The veth through rtnetlink, sent in the host netns: the host end made there and the pod end straight in
 * `netns`, in one request, then the host end's owner. Unlike vethLines, whose move out of the pod waits
 * for an RCU grace period, the host end is seen without its owner until the second request: pinto-node
 * reads a veth's owner only under Dataplane.exclusive for its name, and a rollback after a crash in
 * between knows the veth by its peer (agent/recovery/cni-adds.ts).
 */
export function vethOps(v: Veth, netns: string): LinkOp[] {
  return [
    { op: 'veth', name: v.hostVeth, mac: HOST_MAC, peer: v.ifname, peerMac: v.podMac, mtu: v.mtu, peerNetns: netns },
    { op: 'alias', dev: v.hostVeth, alias: v.owner },
  ]
}

/**
 * Whether the pod's routes (the gateway's link route and the default routes) go through interface `ifname`:
 * its primary one. Another interface (a second network's, say) gets its addresses and the gateway's
 * neighbour entry, and leaves the pod's routes where they are, as secondary networks do under Multus: one
 * gateway address cannot have a link route on two interfaces.
 */
export function holdsRoutes(ifname: string): boolean {
  return ifname === PRIMARY_IFNAME
}

/**
 * Run in the pod netns once the veth exists: up, addresses and (on the primary interface, holdsRoutes) the
 * gateway's link route and the default routes. The IPv4 gateway also gets a permanent neighbour entry with the host veth's
 * MAC: proxy ARP answers for 169.254.1.1 only while the host has a route to it, which a node without a
 * default route lacks. IPv6 needs none: the gateway is the host veth's own link-local address, which the
 * host answers for itself.
 */
export function podBatch(w: Wiring): string {
  return podLines(w, 'add')
}

/**
 * The pod side's lines for a repeated ADD that found its attachment drifted (a route gone, the link down):
 * each line adds or replaces, none removes, so a failure part way leaves no less than there was.
 */
export function podRepairBatch(w: Wiring): string {
  return podLines(w, 'replace')
}

function podLines(w: Wiring, verb: 'add' | 'replace'): string {
  const lines = [verb === 'add' ? `link set ${w.ifname} up` : `link set ${w.ifname} mtu ${w.mtu} up`]
  const routes = holdsRoutes(w.ifname)
  if (w.v4 !== undefined) {
    lines.push(`addr ${verb} ${w.v4}/32 dev ${w.ifname}`)
    if (routes) lines.push(`route ${verb} ${GATEWAY_V4}/32 dev ${w.ifname} scope link`)
    lines.push(`neigh replace ${GATEWAY_V4} lladdr ${HOST_MAC} dev ${w.ifname} nud permanent`)
    if (routes) lines.push(`route ${verb} default via ${GATEWAY_V4} dev ${w.ifname}`)
  }
  if (w.v6 !== undefined) {
    // nodad: the address is ours by allocation, and a tentative address would delay the pod's first packets.
    lines.push(`addr ${verb} ${w.v6}/128 dev ${w.ifname} nodad`)
    if (routes) lines.push(`route ${verb} default via ${GATEWAY_V6} dev ${w.ifname}`)
  }
  return lines.join('\n') + '\n'
}

/** podBatch as rtnetlink requests, line for line. */
export function podOps(w: Wiring): LinkOp[] {
  const dev = w.ifname
  const ops: LinkOp[] = [{ op: 'up', dev }]
  const routes = holdsRoutes(dev)
  if (w.v4 !== undefined) {
    ops.push({ op: 'addr', dev, address: w.v4, prefixLength: 32 })
    if (routes) ops.push({ op: 'route', dev, dst: GATEWAY_V4, prefixLength: 32 })
    ops.push({ op: 'neigh', dev, address: GATEWAY_V4, lladdr: HOST_MAC })
    if (routes) ops.push({ op: 'route', dev, dst: undefined, prefixLength: 0, gateway: GATEWAY_V4 })
  }
  if (w.v6 !== undefined) {
    ops.push({ op: 'addr', dev, address: w.v6, prefixLength: 128, nodad: true })
    if (routes) ops.push({ op: 'route', dev, dst: undefined, prefixLength: 0, gateway: GATEWAY_V6 })
  }
  return ops
}

/** hostBatch as rtnetlink requests. */
export function hostOps(w: Wiring): LinkOp[] {
  const dev = w.hostVeth
  const ops: LinkOp[] = [{ op: 'up', dev }]
  if (w.v4 !== undefined) ops.push({ op: 'route', dev, dst: w.v4, prefixLength: 32 })
  if (w.v6 !== undefined) ops.push({ op: 'route', dev, dst: w.v6, prefixLength: 128 })
  return ops
}

/** Run in the host netns once the peer is there (and its sysctls are set); independent of the pod side. */
export function hostBatch(w: Wiring): string {
  const lines = [`link set ${w.hostVeth} up`]
  if (w.v4 !== undefined) lines.push(`route add ${w.v4}/32 dev ${w.hostVeth} scope link`)
  if (w.v6 !== undefined) lines.push(`route add ${w.v6}/128 dev ${w.hostVeth}`)
  return lines.join('\n') + '\n'
}

/** The host side's lines of the same repair (after hostSysctls): nothing removed either. */
export function hostRepairBatch(w: Wiring): string {
  const lines = [`link set ${w.hostVeth} mtu ${w.mtu} up`]
  if (w.v4 !== undefined) lines.push(`route replace ${w.v4}/32 dev ${w.hostVeth} scope link`)
  if (w.v6 !== undefined) lines.push(`route replace ${w.v6}/128 dev ${w.hostVeth}`)
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
  /**
   * `owner` is the link's ifalias ('' when it has none); `index` its ifindex, `peer` a veth's peer's
   * ifindex in the peer's namespace (undefined for a link that has none).
   */
  readonly link: { readonly mac: string; readonly up: boolean; readonly mtu: number; readonly owner: string; readonly index?: number; readonly peer?: number } | undefined
  readonly addrs: readonly string[]
  /** `dst[ via gw]` per route on the interface. */
  readonly routes: readonly string[]
  /** `dst lladdr STATE...` per neighbour entry on the interface. */
  readonly neighbours: readonly string[]
}

interface IpLink { ifindex?: number; link_index?: number; address?: string; flags?: string[]; mtu?: number; ifalias?: string; addr_info?: { local?: string; prefixlen?: number; scope?: string }[] }
interface IpRoute { dst?: string; gateway?: string }
interface IpNeigh { dst?: string; lladdr?: string; state?: string[] }

export function sideState(linkJson: string | undefined, routeJsons: readonly string[], neighJson = ''): SideState {
  const links = linkJson === undefined ? [] : (JSON.parse(linkJson) as IpLink[])
  const l = links[0]
  const routes = routeJsons.flatMap((j) => (JSON.parse(j === '' ? '[]' : j) as IpRoute[]).map((r) => `${r.dst ?? '?'}${r.gateway ? ` via ${r.gateway}` : ''}`))
  return {
    link: l === undefined ? undefined : {
      mac: l.address ?? '', up: (l.flags ?? []).includes('UP'), mtu: l.mtu ?? 0, owner: l.ifalias ?? '',
      ...(l.ifindex !== undefined ? { index: l.ifindex } : {}), ...(l.link_index !== undefined ? { peer: l.link_index } : {}),
    },
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
    if (!ownedBy(host.link.owner, w)) p.push(`host veth ${w.hostVeth} belongs to ${host.link.owner}, not ${w.owner}`)
  }
  const want = (list: readonly string[], item: string, where: string): void => {
    if (!list.includes(item)) p.push(`${where} lacks ${item}`)
  }
  if (w.v4 !== undefined) {
    want(pod.addrs, `${w.v4}/32`, `${w.ifname}'s addresses`)
    if (holdsRoutes(w.ifname)) {
      want(pod.routes, GATEWAY_V4, 'pod routes')
      want(pod.routes, `default via ${GATEWAY_V4}`, 'pod routes')
    }
    want(pod.neighbours, `${GATEWAY_V4} ${HOST_MAC} PERMANENT`, 'pod neighbours')
    want(host.routes, w.v4, `host routes on ${w.hostVeth}`)
  }
  if (w.v6 !== undefined) {
    want(pod.addrs, `${w.v6}/128`, `${w.ifname}'s addresses`)
    if (holdsRoutes(w.ifname)) want(pod.routes, `default via ${GATEWAY_V6}`, 'pod routes')
    want(host.routes, w.v6, `host routes on ${w.hostVeth}`)
  }
  return p
}

/**
 * Why the wiring a repeated ADD found is not its attachment's to repair in place, or undefined when it is:
 * the pod end must be CNI_IFNAME in CNI_NETNS and the host veth's peer, and neither end may carry an
 * address IPAM does not hold for the attachment. Anything else is left as it is.
 */
export function foreignWiring(w: Wiring, netns: string, pod: SideState, host: SideState): string | undefined {
  if (host.link === undefined) return `host veth ${w.hostVeth} is gone`
  if (pod.link === undefined) return `host veth ${w.hostVeth} records this attachment, but ${w.ifname} is not in ${netns}`
  if (pod.link.peer === undefined || pod.link.peer !== host.link.index) return `${w.ifname} in ${netns} is not the peer of host veth ${w.hostVeth}`
  const held = [w.v4, w.v6].filter((a): a is string => a !== undefined)
  const podOther = pod.addrs.filter((a) => !held.includes(a.split('/')[0] as string))
  if (podOther.length > 0) return `${w.ifname} in ${netns} carries ${podOther.join(', ')}, which IPAM does not hold for ${w.owner}`
  // The host veth's own link-local route is the kernel's.
  const hostOther = host.routes.filter((r) => !held.includes(r) && !r.startsWith('fe80::'))
  if (hostOther.length > 0) return `host veth ${w.hostVeth} routes ${hostOther.join(', ')}, which IPAM does not hold for ${w.owner}`
  return undefined
}

/**
 * Whether a host veth whose ifalias is `recorded` belongs to attachment `v`: it records the attachment, or
 * its container alone (an earlier pinto, one veth per pod). A veth without one was made before pinto
 * recorded owners: it is taken as its pod's current one, as it always was.
 */
export function ownedBy(recorded: string, v: Pick<Veth, 'owner' | 'containerId'>): boolean {
  return recorded === '' || recorded === v.owner || recorded === v.containerId
}

/** Whether `recorded` (an ifalias) names another attachment of container `containerId` (another network or interface). */
export function sameContainer(recorded: string, containerId: string): boolean {
  return recorded === containerId || recorded.endsWith(`.${containerId}`) || recorded.includes(`.${containerId}:`)
}

/**
 * Whether a host veth whose ifalias is `recorded` is the wiring of the attachment whose IPAM handle is
 * `handle`: it records that attachment, or (an earlier pinto) its container. A veth recording nothing
 * names no attachment. Errs towards yes: it guards releases, where keeping is the safe mistake.
 */
export function aliasNames(recorded: string, handle: string): boolean {
  if (recorded === '') return false
  return recorded === handle || (handle.split(':')[0] as string).endsWith(`.${recorded}`)
}
