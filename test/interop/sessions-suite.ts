// One real daemon (BIRD, FRR or GoBGP) against two pinto runners: "pa" connects out over eBGP (the
// daemon only listens), "pp" only listens over iBGP (the daemon connects). IPv4 and IPv6 unicast over IPv4
// transport; both directions checked with each side's own view (daemon CLI/JSON, the runner's Loc-RIB).

import type { Test } from 'tap'
import { createTopology, type NetNode, type Topology } from '../harness/netns.js'
import { startBird } from '../harness/bird.js'
import { startFrr } from '../harness/frr.js'
import { startGobgp } from '../harness/gobgp.js'
import type { Daemon, DaemonKind, Family, OriginRoute, RibRoute, SpeakerSpec } from '../harness/daemons.js'
import { waitFor } from '../harness/wait.js'
import { Pinto, asns, type PintoRoute } from './pinto.js'
import type { PeerJson } from './runner-config.js'

export const DAEMON_AS = 65001
export const PINTO_AS = 65000

export type Starter = (topo: Topology, node: NetNode, spec: SpeakerSpec) => Promise<Daemon>

/** FRR runs with zebra: bgpd alone knows no interfaces, so it never connects to an iBGP peer (next hop
 * tracking cannot resolve it) and has no IPv6 address of its own to put in a next hop. */
export function starter(kind: DaemonKind, frrZebra = false): Starter {
  if (kind === 'bird') return startBird
  if (kind === 'frr') return (topo, node, spec) => startFrr(topo, node, spec, { zebra: frrZebra })
  return startGobgp
}

/** BIRD on `node` (AS `as`), waiting passively for the pinto runner on `pinto` (AS `pintoAs`), IPv4 only. */
export function startBirdFacing(topo: Topology, node: NetNode, pinto: NetNode, as: number, pintoAs: number, originate: readonly OriginRoute[], over: Partial<SpeakerSpec> = {}): ReturnType<typeof startBird> {
  return startBird(topo, node, {
    routerId: node.v4!,
    as,
    neighbors: [{ name: 'pinto', address: pinto.v4!, as: pintoAs, families: ['ipv4'], passive: true }],
    originate,
    ...over,
  })
}

/** A pinto peer toward a daemon with the quick timers tests want. */
export function peerTo(name: string, d: { v4: string | undefined }, self: NetNode, peerAsn: number, over: Partial<PeerJson> = {}): PeerJson {
  return {
    name,
    address: d.v4!,
    localAddress: self.v4!,
    ...(self.v6 !== undefined ? { localAddress6: self.v6 } : {}),
    peerAsn,
    holdTime: 9,
    connectRetryTime: 1,
    families: ['ipv4', 'ipv6'],
    ...over,
  }
}

/** Waits until the daemon's table holds `prefix` from `peer` and returns that path. */
export function daemonRoute(d: Daemon, family: Family, peer: string, prefix: string, timeoutMs = 15000): Promise<RibRoute> {
  return waitFor(async () => (await d.routes(family)).find((r) => r.fromPeer === peer && r.prefix === prefix), {
    timeoutMs,
    intervalMs: 150,
    what: `${d.kind} learning ${prefix} from ${peer}`,
  })
}

/** The runner's best path for `prefix` learned from `peer`. */
export function pintoRoute(p: Pinto, peer: string, prefix: string): Promise<PintoRoute> {
  return p.waitRoute(prefix, `${prefix} from ${peer}`, (r) => r.peer === peer)
}

export async function sessionSuite(t: Test, kind: DaemonKind): Promise<void> {
  const topo = await createTopology(t)
  const nd = await topo.addNode({ name: kind, v4: '192.0.2.1/24', v6: '2001:db8::1/64' })
  const na = await topo.addNode({ name: 'pa', v4: '192.0.2.10/24', v6: '2001:db8::10/64' })
  const np = await topo.addNode({ name: 'pp', v4: '192.0.2.11/24', v6: '2001:db8::11/64' })
  // The runners first: a daemon whose first connect meets no listener waits its connect-retry time
  // (120 s for FRR and BIRD) before the next; pinto retries every second.
  const pa = await Pinto.start(topo, na, {
    speaker: { asn: PINTO_AS, routerId: na.v4!, listen: { port: 179, hosts: [na.v4!] } },
    peers: [peerTo(kind, nd, na, DAEMON_AS, { importPolicy: 'accept-all', exportPolicy: 'accept-all' })],
    originate: [
      { prefix: '198.18.100.0/24', communities: ['65000:100'], largeCommunities: ['65000:1:100'], med: 100 },
      { prefix: '2001:db8:100::/48', communities: ['65000:600'], largeCommunities: ['65000:6:6'], med: 600 },
    ],
  })
  const pp = await Pinto.start(topo, np, {
    speaker: { asn: DAEMON_AS, routerId: np.v4!, listen: { port: 179, hosts: [np.v4!] } },
    peers: [peerTo(kind, nd, np, DAEMON_AS, { passive: true })],
    originate: [
      { prefix: '198.18.101.0/24', communities: ['65001:101'], med: 101, localPref: 250 },
      { prefix: '2001:db8:101::/48', largeCommunities: ['65001:7:7'], localPref: 260 },
    ],
  })

  const daemon = await starter(kind, true)(topo, nd, {
    routerId: '192.0.2.1',
    as: DAEMON_AS,
    holdTime: 9,
    neighbors: [
      { name: 'pa', address: na.v4!, as: PINTO_AS, families: ['ipv4', 'ipv6'], passive: true },
      { name: 'pp', address: np.v4!, as: DAEMON_AS, families: ['ipv4', 'ipv6'] },
    ],
    originate: [
      { prefix: '198.18.1.0/24', communities: ['65001:10'], largeCommunities: ['65001:1:1'], med: 11, localPref: 200 },
      { prefix: '2001:db8:1::/48', communities: ['65001:20'], largeCommunities: ['65001:2:2'], med: 21 },
    ],
  })
  const deadline = Date.now() + 20000
  await t.test('sessions reach Established, pinto active (eBGP) and passive (iBGP)', async (t) => {
    const a = await pa.waitEstablished(kind, deadline)
    const p = await pp.waitEstablished(kind, deadline)
    await daemon.waitEstablished(na.v4!, deadline)
    await daemon.waitEstablished(np.v4!, deadline)
    t.equal(a.type, 'ebgp')
    t.equal(p.type, 'ibgp')
    t.same([...(a.negotiated?.families ?? [])].sort(), ['ipv4-unicast', 'ipv6-unicast'], 'both families negotiated with pa')
    t.same([...(p.negotiated?.families ?? [])].sort(), ['ipv4-unicast', 'ipv6-unicast'], 'both families negotiated with pp')
    t.ok(a.negotiated?.fourOctetAs, '4-octet AS')
    // Who connected: pa's socket goes to the daemon's port 179; pp's comes from an ephemeral port.
    const ssA = String((await topo.exec(na.ns, 'ss', ['-Htn', 'state', 'established', 'dport', '= :179'])).stdout)
    const ssP = String((await topo.exec(np.ns, 'ss', ['-Htn', 'state', 'established', 'sport', '= :179'])).stdout)
    t.match(ssA, nd.v4!, 'pa opened the connection to the daemon')
    t.match(ssP, nd.v4!, 'the daemon opened the connection to pp')
  })

  await t.test('pinto -> daemon: attributes as the daemon reports them', async (t) => {
    const e4 = await daemonRoute(daemon, 'ipv4', na.v4!, '198.18.100.0/24')
    t.same(e4.asPath, [PINTO_AS], 'eBGP: pinto prepended its AS')
    t.equal(e4.nextHop, na.v4, 'eBGP: next hop self')
    t.same(e4.communities, ['65000:100'])
    t.same(e4.largeCommunities, ['65000:1:100'])
    t.equal(e4.med, 100, 'MED of our own route goes to the neighbour AS')
    const e6 = await daemonRoute(daemon, 'ipv6', na.v4!, '2001:db8:100::/48')
    t.same(e6.asPath, [PINTO_AS])
    t.equal(e6.nextHop, na.v6, 'IPv6 next hop is pinto global address')
    t.same(e6.communities, ['65000:600'])
    t.same(e6.largeCommunities, ['65000:6:6'])
    const i4 = await daemonRoute(daemon, 'ipv4', np.v4!, '198.18.101.0/24')
    t.same(i4.asPath, [], 'iBGP: empty AS path')
    t.equal(i4.localPref, 250, 'iBGP carries LOCAL_PREF')
    t.equal(i4.nextHop, np.v4)
    t.equal(i4.med, 101)
    t.same(i4.communities, ['65001:101'])
    const i6 = await daemonRoute(daemon, 'ipv6', np.v4!, '2001:db8:101::/48')
    t.equal(i6.localPref, 260)
    t.equal(i6.nextHop, np.v6)
    t.same(i6.largeCommunities, ['65001:7:7'])
  })

  await t.test('daemon -> pinto: attributes in the runner Loc-RIB', async (t) => {
    const e4 = await pintoRoute(pa, kind, '198.18.1.0/24')
    t.same(asns(e4), [DAEMON_AS])
    t.same(e4.nextHop, [nd.v4])
    t.same(e4.attrs.communities, ['65001:10'])
    t.same(e4.attrs.largeCommunities, ['65001:1:1'])
    t.equal(e4.attrs.med, 11)
    t.equal(e4.attrs.localPref, undefined, 'no LOCAL_PREF over eBGP')
    const e6 = await pintoRoute(pa, kind, '2001:db8:1::/48')
    t.equal(e6.nextHop[0], nd.v6, 'IPv6 global next hop first')
    t.same(e6.attrs.communities, ['65001:20'])
    t.same(e6.attrs.largeCommunities, ['65001:2:2'])
    const i4 = await pintoRoute(pp, kind, '198.18.1.0/24')
    t.same(asns(i4), [], 'iBGP: empty AS path')
    t.equal(i4.attrs.localPref, 200)
    t.equal(i4.attrs.med, 11)
    const i6 = await pintoRoute(pp, kind, '2001:db8:1::/48')
    t.equal(i6.nextHop[0], nd.v6)
    // The route pa sent crossed the daemon into the AS: pp learns it over iBGP with the daemon's view.
    const via = await pintoRoute(pp, kind, '198.18.100.0/24')
    t.same(asns(via), [PINTO_AS])
    const inPa = await pa.adjRibIn(kind)
    t.ok(inPa.some((r) => r.prefix === '198.18.1.0/24'), 'adj-rib-in dump lists the route')
  })
}

/** pinto's node (192.0.2.1) and BIRD's (192.0.2.2) on one fabric, BIRD in `birdAs` listening for pinto in `pintoAs`. */
export async function besideBird(t: Test, birdAs: number, pintoAs: number, over: Partial<SpeakerSpec> = {}): Promise<{ topo: Topology; np: NetNode; nb: NetNode; bird: Daemon }> {
  const topo = await createTopology(t)
  const np = await topo.addNode({ name: 'pinto', v4: '192.0.2.1/24' })
  const nb = await topo.addNode({ name: 'bird', v4: '192.0.2.2/24' })
  const bird = await startBirdFacing(topo, nb, np, birdAs, pintoAs, over.originate ?? [], over)
  return { topo, np, nb, bird }
}
