// What the BFD interop tests share: pinto-node (kernel dataplane) in a namespace with one BGPPeer to a
// router carrying the pinto.dev/bfd annotation (over IPv4 or IPv6), probes of its API and kernel, the
// cut-and-restore step, and a BFD packet sent from the router's namespace with a chosen TTL/hop limit.

import type { Test } from 'tap'
import { join } from 'node:path'
import { execa } from 'execa'
import { createTopology, type NetNode, type Topology } from '../harness/netns.js'
import { cutLink } from '../harness/bfdd.js'
import { waitFor } from '../harness/wait.js'
import { ROUTE_PROTOCOL, kernelRoutes } from '../../agent/demo/observe.js'
import { startAgent, type AgentProcess } from '../agent/agent-process.js'
import { runPintoctl } from '../agent/pintoctl/run.js'

export const PINTO_AS = 64512

export interface BfdJson { name: string; state: string; remoteState: string; localDiscriminator: number; remoteDiscriminator: number; lastDownDiag: string | null; upTransitions: number; detectTimeMs: number; txIntervalMs: number; packetsReceived: number }
export interface PeerJson { name: string; address: string; state: string; since: string; lastError: string | null }

export interface BfdPinto {
  readonly agent: AgentProcess
  readonly bfd: () => Promise<BfdJson | undefined>
  readonly peer: () => Promise<PeerJson | undefined>
  readonly hasRoute: () => Promise<boolean>
  /** BFD Up, BGP Established and the router's route in the kernel. */
  readonly upAgain: (what: string) => Promise<void>
}

/** A test's two nodes on one link, pinto and a router, each with an IPv4 and an IPv6 address. */
export async function bfdPair(t: Test, routerName: string): Promise<{ topo: Topology; np: NetNode; nr: NetNode }> {
  const topo = await createTopology(t)
  const np = await topo.addNode({ name: 'pinto', v4: '192.0.2.1/24', v6: '2001:db8::1/64' })
  const nr = await topo.addNode({ name: routerName, v4: '192.0.2.2/24', v6: '2001:db8::2/64' })
  return { topo, np, nr }
}

/** pinto's kernel routes of `family` that felix owns (`ip route` shows IPv4 only unless told -6). */
async function ownedRoutes(ns: string, family: 'ipv4' | 'ipv6'): Promise<{ prefix: string; type: string }[]> {
  if (family === 'ipv4') return kernelRoutes(ns)
  const r = await execa('ip', ['-n', ns, '-6', '-j', 'route', 'show', 'proto', String(ROUTE_PROTOCOL)])
  return (JSON.parse(String(r.stdout) || '[]') as { dst: string; type?: string }[]).map((x) => ({ prefix: x.dst.includes('/') ? x.dst : `${x.dst}/128`, type: x.type ?? 'unicast' }))
}

/** The node's address of `family`; the test gave it one. */
export function addressOf(node: NetNode, family: 'ipv4' | 'ipv6'): string {
  const a = family === 'ipv4' ? node.v4 : node.v6
  if (a === undefined) throw new Error(`node ${node.name} has no ${family} address`)
  return a
}

export async function startBfdPinto(t: Test, topo: Topology, np: NetNode, router: NetNode, routerAs: number, route: string, family: 'ipv4' | 'ipv6' = 'ipv4'): Promise<BfdPinto> {
  const routerAddress = addressOf(router, family)
  const store = join(await topo.tempDir('store'), 'store')
  const resources = [
    { apiVersion: 'projectcalico.org/v3', kind: 'BGPConfiguration', metadata: { name: 'default' }, spec: { asNumber: PINTO_AS, nodeToNodeMeshEnabled: false } },
    {
      apiVersion: 'projectcalico.org/v3',
      kind: 'BGPPeer',
      metadata: { name: 'tor', annotations: { 'pinto.dev/bfd': 'minTx=100ms,minRx=100ms,multiplier=3' } },
      spec: { peerIP: routerAddress, asNumber: routerAs },
    },
  ]
  const applied = await runPintoctl(['apply', '-f', '-'], { env: { PINTO_DATASTORE: store }, input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: resources }) })
  t.equal(applied.status, 0, `pintoctl apply: ${applied.stderr}`)
  const agent = startAgent(t, np.ns, {
    PINTO_DATASTORE: store, PINTO_DATAPLANE: 'kernel', PINTO_IP: `${np.v4!}/24`, PINTO_LOG_LEVEL: 'info',
    ...(family === 'ipv6' ? { PINTO_IP6: `${addressOf(np, 'ipv6')}/64` } : {}),
  })
  await agent.ready()
  const bfd = async (): Promise<BfdJson | undefined> => ((await agent.get('/v1/bfd')).body as { sessions: BfdJson[] }).sessions[0]
  const peer = async (): Promise<PeerJson | undefined> => ((await agent.get('/v1/peers')).body as { peers: PeerJson[] }).peers.find((p) => p.address === routerAddress)
  const hasRoute = async (): Promise<boolean> => (await ownedRoutes(np.ns, family)).some((r) => r.prefix === route && r.type === 'unicast')
  const upAgain = async (what: string): Promise<void> => {
    await waitFor(async () => (await bfd())?.state === 'Up', { timeoutMs: 15_000, what: `${what}: BFD Up` })
    await waitFor(async () => (await peer())?.state === 'Established', { timeoutMs: 30_000, what: `${what}: BGP Established` })
    await waitFor(hasRoute, { timeoutMs: 15_000, what: `${what}: ${route} in pinto's kernel` })
  }
  return { agent, bfd, peer, hasRoute, upAgain }
}

/** Cuts the link silently at the router; BGP and the route must go at BFD speed, and come back after. */
export async function cutAndRestore(t: Test, p: BfdPinto, routerNs: string, pintoAddress: string): Promise<void> {
  const before = (await p.bfd())!.upTransitions
  const cutAt = Date.now()
  await cutLink(routerNs, pintoAddress, true)
  t.teardown(() => cutLink(routerNs, pintoAddress, false))
  // 5 s: an order of magnitude over 300 ms, and far under the hold time the session would need without BFD.
  await waitFor(async () => !(await p.hasRoute()), { timeoutMs: 5000, intervalMs: 5, what: "the router's route leaving pinto's kernel" })
  t.comment(`route gone ${Date.now() - cutAt} ms after the cut (detect time 300 ms)`)
  const down = (await p.bfd())!
  t.equal(down.state, 'Down')
  t.equal(down.lastDownDiag, 'Control Detection Time Expired')
  const peer = (await p.peer())!
  t.not(peer.state, 'Established', 'the BGP session is down')
  t.match(peer.lastError, /BFD/, 'and says BFD took it down')
  await cutLink(routerNs, pintoAddress, false)
  await p.upAgain('link restored')
  t.equal((await p.bfd())!.upTransitions, before + 1, 'BFD came Up once more')
}

/**
 * Sends `count` BFD Control packets from `from` to pinto's port 3784 with TTL (hop limit) `ttl`: state
 * Down, addressed to pinto's session by its discriminator, so a packet pinto takes brings an Up session
 * down at once (diag 3).
 */
export async function sendBfdWithTtl(from: NetNode, to: string, family: 'ipv4' | 'ipv6', ttl: number, discriminators: { mine: number; yours: number }, count = 5): Promise<void> {
  const v6 = family === 'ipv6'
  await execa('ip', ['netns', 'exec', from.ns, '/usr/bin/python3', '-c', [
    'import socket,struct',
    `p=struct.pack('!BBBBIIIII',0x20,0x40,3,24,${discriminators.mine},${discriminators.yours},1000000,1000000,0)`,
    `x=socket.socket(socket.${v6 ? 'AF_INET6' : 'AF_INET'},socket.SOCK_DGRAM)`,
    v6 ? `x.setsockopt(socket.IPPROTO_IPV6,socket.IPV6_UNICAST_HOPS,${ttl})` : `x.setsockopt(socket.IPPROTO_IP,socket.IP_TTL,${ttl})`,
    `x.bind(('${addressOf(from, family)}',0))`,
    `[x.sendto(p,('${to}',3784)) for _ in range(${count})]`,
  ].join('\n')])
}

/** GTSM (RFC 5881 §5): packets with TTL 254 leave the Up session alone; the same with TTL 255 take it down, then it comes back. */
export async function ttlStep(t: Test, p: BfdPinto, router: NetNode, pintoAddress: string, family: 'ipv4' | 'ipv6'): Promise<void> {
  const s = (await p.bfd())!
  const discriminators = { mine: s.remoteDiscriminator, yours: s.localDiscriminator }
  const ups = s.upTransitions
  await sendBfdWithTtl(router, pintoAddress, family, 254, discriminators)
  await waitFor(async () => (await p.bfd())!.packetsReceived > s.packetsReceived + 5, { timeoutMs: 3000, what: 'more packets from the router' })
  t.equal((await p.bfd())!.state, 'Up', 'TTL 254: ignored, the session stays Up')
  t.equal((await p.bfd())!.upTransitions, ups)
  await sendBfdWithTtl(router, pintoAddress, family, 255, discriminators)
  await waitFor(async () => (await p.bfd())!.upTransitions > ups, { timeoutMs: 15_000, what: 'the TTL 255 packet taking BFD down, then the router bringing it Up' })
  t.pass('TTL 255: taken (the session went Down and came back)')
  await p.upAgain('after the TTL 255 packet')
}
