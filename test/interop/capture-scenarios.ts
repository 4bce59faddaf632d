// The sessions capture-fixtures.ts records: each builds its topology in the given namespaces, starts the
// daemons, drives the session through its story (routes, refresh, shutdown) while tcpdump records, and says
// what it did. Each waits on real state (daemon CLI or the capture itself), never on a fixed sleep.

import { startBird } from '../harness/bird.js'
import { startFrr } from '../harness/frr.js'
import { startGobgp } from '../harness/gobgp.js'
import { startCapture } from '../harness/tcpdump.js'
import { BAD_PEER_AS } from './capture-bad-open.js'
import { established, isEndOfRib, isRefresh, isType, nodes, routesFrom, side, waitClosed, waitSent, type Scenario } from './capture-steps.js'

// ---------------------------------------------------------------------------------------------------------

const birdFrrEbgp: Scenario = {
  name: 'bird-frr-ebgp',
  async run(topo) {
    const [nb, nf] = await nodes(topo, [
      { name: 'bird', v4: '192.0.2.1/24', v6: '2001:db8::1/64' },
      { name: 'frr', v4: '192.0.2.2/24', v6: '2001:db8::2/64' },
    ])
    const cap = await startCapture(topo, nb!, 'bird-frr-ebgp')
    const bird = await startBird(topo, nb!, {
      routerId: '192.0.2.1',
      as: 65001,
      holdTime: 90,
      gracefulRestart: true,
      neighbors: [{ name: 'frr', address: '192.0.2.2', as: 65002, families: ['ipv4', 'ipv6'], passive: true }],
      originate: [
        { prefix: '198.18.1.0/24', communities: ['65001:100', '65001:200'], largeCommunities: ['65001:1:2'], routeTargets: ['65001:100'], med: 10, prepend: [65001, 65001] },
        { prefix: '198.18.11.0/24', communities: ['65535:65281'] },
        { prefix: '2001:db8:1::/48', communities: ['65001:600'], largeCommunities: ['65001:6:6'], med: 60 },
      ],
    })
    const frr = await startFrr(topo, nf!, {
      routerId: '192.0.2.2',
      as: 65002,
      holdTime: 90,
      gracefulRestart: true,
      neighbors: [{ name: 'bird', address: '192.0.2.1', as: 65001, families: ['ipv4', 'ipv6'] }],
      originate: [
        { prefix: '198.18.2.0/24', communities: ['65002:100'], largeCommunities: ['65002:3:4'], routeTargets: ['65002:7'], med: 20, prepend: [65002, 65002, 65002] },
        { prefix: '2001:db8:2::/48', largeCommunities: ['65002:9:9'], routeTargets: ['65002:8'] },
      ],
    }, { zebra: true })
    await established([[bird, '192.0.2.2'], [frr, '192.0.2.1']])
    await routesFrom(frr, 'ipv4', '192.0.2.1', ['198.18.1.0/24', '198.18.11.0/24'], 'FRR learning BIRD IPv4 routes')
    await routesFrom(frr, 'ipv6', '192.0.2.1', ['2001:db8:1::/48'], 'FRR learning BIRD IPv6 routes')
    await routesFrom(bird, 'ipv4', '192.0.2.2', ['198.18.2.0/24'], 'BIRD learning FRR IPv4 routes')
    await routesFrom(bird, 'ipv6', '192.0.2.2', ['2001:db8:2::/48'], 'BIRD learning FRR IPv6 routes')
    for (const [from, to] of [['192.0.2.1', '192.0.2.2'], ['192.0.2.2', '192.0.2.1']] as const) {
      await waitSent(cap, from, to, `End-of-RIB for both families from ${from}`, (ms) => ms.some((m) => isEndOfRib(m, 'ipv4')) && ms.some((m) => isEndOfRib(m, 'ipv6')))
    }
    await frr.vtysh('clear bgp ipv4 unicast 192.0.2.1 soft in')
    await waitSent(cap, '192.0.2.2', '192.0.2.1', 'ROUTE-REFRESH from FRR', (ms) => ms.some(isType(5)))
    await waitSent(cap, '192.0.2.1', '192.0.2.2', 'EoRR from BIRD', (ms) => ms.some(isRefresh(2)))
    await bird.birdc('disable', 'frr', '"pinto capture: planned maintenance"')
    await waitSent(cap, '192.0.2.1', '192.0.2.2', 'NOTIFICATION from BIRD', (ms) => ms.some(isType(3)))
    await waitClosed(cap, '192.0.2.1', '192.0.2.2')
    return {
      capture: cap,
      ends: ['192.0.2.1', '192.0.2.2'],
      record: {
        name: 'bird-frr-ebgp',
        description: 'eBGP BIRD (AS 65001) <-> FRR (AS 65002) over IPv4 transport carrying IPv4 and IPv6 unicast (MP-BGP), graceful restart on, communities, large communities, route targets, MED and AS path prepends; FRR asks for a route refresh, then BIRD shuts the session down with an RFC 9003 message.',
        sides: [side('bird', bird, '192.0.2.2'), side('frr', frr, '192.0.2.1')],
        trigger: [
          'FRR connects (BIRD is passive); both reach Established and exchange routes and End-of-RIB for IPv4 and IPv6',
          'vtysh: clear bgp ipv4 unicast 192.0.2.1 soft in  (FRR sends ROUTE-REFRESH; BIRD answers, with BoRR/EoRR if enhanced route refresh was negotiated)',
          'birdc: disable frr "pinto capture: planned maintenance"  (Cease / Administrative Shutdown with a shutdown communication)',
        ],
      },
    }
  },
}


const gobgpBirdRr: Scenario = {
  name: 'gobgp-bird-ibgp-rr',
  async run(topo) {
    const [nr, ng, nf] = await nodes(topo, [
      { name: 'bird', v4: '198.51.100.1/24', v6: '2001:db8:1::1/64' },
      { name: 'gobgp', v4: '198.51.100.2/24', v6: '2001:db8:1::2/64' },
      { name: 'frr', v4: '198.51.100.3/24' },
    ])
    const cap = await startCapture(topo, ng!, 'gobgp-bird-ibgp-rr')
    const common = { as: 65000, gracefulRestart: true, addPath: true, holdTime: 90 }
    // FRR is only there to give BIRD a client route to reflect (ORIGINATOR_ID, CLUSTER_LIST) and, with BIRD's
    // own route for the same prefix, a second path that add-path carries to GoBGP.
    const frr = await startFrr(topo, nf!, {
      ...common,
      routerId: '198.51.100.3',
      neighbors: [{ name: 'rr', address: '198.51.100.1', as: 65000, families: ['ipv4'] }],
      originate: [
        { prefix: '198.18.30.0/24', localPref: 150, communities: ['65000:30'] },
        { prefix: '198.18.31.0/24', localPref: 120, med: 5 },
      ],
    })
    const gobgp = await startGobgp(topo, ng!, {
      ...common,
      routerId: '198.51.100.2',
      // GoBGP waits 5-10 s before its first connect attempt; BIRD connects after 1 s.
      neighbors: [{ name: 'rr', address: '198.51.100.1', as: 65000, families: ['ipv4', 'ipv6'], passive: true }],
      originate: [
        { prefix: '198.18.20.0/24', localPref: 200, communities: ['65000:20'], largeCommunities: ['65000:20:1'] },
        { prefix: '2001:db8:20::/48', localPref: 250 },
      ],
    })
    const bird = await startBird(topo, nr!, {
      ...common,
      routerId: '198.51.100.1',
      clusterId: '198.51.100.1',
      neighbors: [
        { name: 'gobgp', address: '198.51.100.2', as: 65000, families: ['ipv4', 'ipv6'], rrClient: true },
        { name: 'frr', address: '198.51.100.3', as: 65000, families: ['ipv4'], rrClient: true, passive: true },
      ],
      originate: [
        { prefix: '198.18.30.0/24', localPref: 100, communities: ['65000:1'] },
        { prefix: '2001:db8:30::/48', localPref: 100 },
      ],
    })
    await established([[bird, '198.51.100.2'], [bird, '198.51.100.3'], [gobgp, '198.51.100.1'], [frr, '198.51.100.1']])
    await routesFrom(gobgp, 'ipv4', '198.51.100.1', ['198.18.30.0/24', '198.18.31.0/24'], 'GoBGP learning reflected IPv4 routes')
    await routesFrom(gobgp, 'ipv6', '198.51.100.1', ['2001:db8:30::/48'], 'GoBGP learning BIRD IPv6 route')
    await routesFrom(bird, 'ipv4', '198.51.100.2', ['198.18.20.0/24'], 'BIRD learning GoBGP IPv4 route')
    await routesFrom(bird, 'ipv6', '198.51.100.2', ['2001:db8:20::/48'], 'BIRD learning GoBGP IPv6 route')
    for (const [from, to] of [['198.51.100.1', '198.51.100.2'], ['198.51.100.2', '198.51.100.1']] as const) {
      await waitSent(cap, from, to, `End-of-RIB for both families from ${from}`, (ms) => ms.some((m) => isEndOfRib(m, 'ipv4')) && ms.some((m) => isEndOfRib(m, 'ipv6')))
    }
    await gobgp.gobgp('neighbor', '198.51.100.1', 'disable', '--reason', 'pinto capture: decommissioning')
    await waitSent(cap, '198.51.100.2', '198.51.100.1', 'NOTIFICATION from GoBGP', (ms) => ms.some(isType(3)))
    await waitClosed(cap, '198.51.100.1', '198.51.100.2')
    return {
      capture: cap,
      ends: ['198.51.100.1', '198.51.100.2'],
      record: {
        name: 'gobgp-bird-ibgp-rr',
        description: 'iBGP (AS 65000) GoBGP client <-> BIRD route reflector over IPv4 transport, IPv4 and IPv6 unicast, add-path on both, graceful restart on (End-of-RIB for both families). BIRD reflects routes of a third client (FRR 198.51.100.3) with ORIGINATOR_ID and CLUSTER_LIST, and sends two paths for 198.18.30.0/24 (its own and the reflected one). GoBGP ends the session with an administrative shutdown.',
        sides: [side('bird', bird, '198.51.100.2'), side('gobgp', gobgp, '198.51.100.1')],
        trigger: [
          'FRR (198.51.100.3, not captured) connects to BIRD; BIRD connects to GoBGP (passive); BIRD reflects between its clients',
          'both sides reach Established and send End-of-RIB for IPv4 and IPv6',
          'gobgp neighbor 198.51.100.1 disable --reason "pinto capture: decommissioning"',
        ],
      },
    }
  },
}

const frrGobgpRefresh: Scenario = {
  name: 'frr-gobgp-refresh',
  async run(topo) {
    const [nf, ng] = await nodes(topo, [
      { name: 'frr', v4: '203.0.113.1/24' },
      { name: 'gobgp', v4: '203.0.113.2/24' },
    ])
    const cap = await startCapture(topo, nf!, 'frr-gobgp-refresh')
    const frr = await startFrr(topo, nf!, {
      routerId: '203.0.113.1',
      as: 65010,
      holdTime: 90,
      neighbors: [{ name: 'gobgp', address: '203.0.113.2', as: 65020, families: ['ipv4'] }],
      originate: [{ prefix: '198.18.40.0/24', communities: ['65010:40'], med: 40 }],
    })
    const gobgp = await startGobgp(topo, ng!, {
      routerId: '203.0.113.2',
      as: 65020,
      holdTime: 90,
      neighbors: [{ name: 'frr', address: '203.0.113.1', as: 65010, families: ['ipv4'], passive: true }],
      originate: [
        { prefix: '198.18.50.0/24', communities: ['65020:50', '65020:51'], largeCommunities: ['65020:5:0'], med: 50, prepend: [65021] },
        { prefix: '198.18.51.0/24', routeTargets: ['65020:51'] },
      ],
    })
    await established([[frr, '203.0.113.2'], [gobgp, '203.0.113.1']])
    await routesFrom(frr, 'ipv4', '203.0.113.2', ['198.18.50.0/24', '198.18.51.0/24'], 'FRR learning GoBGP routes')
    await routesFrom(gobgp, 'ipv4', '203.0.113.1', ['198.18.40.0/24'], 'GoBGP learning FRR route')
    const updates = (ms: Buffer[]): number => ms.filter(isType(2)).length
    let before = 0
    await waitSent(cap, '203.0.113.2', '203.0.113.1', 'GoBGP initial UPDATEs', (ms) => ((before = updates(ms)), before >= 2))
    await frr.vtysh('clear bgp ipv4 unicast 203.0.113.2 soft in')
    await waitSent(cap, '203.0.113.1', '203.0.113.2', 'ROUTE-REFRESH from FRR', (ms) => ms.some(isRefresh(0)))
    await waitSent(cap, '203.0.113.2', '203.0.113.1', 'GoBGP re-sending its routes', (ms) => updates(ms) >= before + 2)
    await frr.vtysh('configure terminal', 'router bgp 65010', 'neighbor 203.0.113.2 shutdown message pinto capture: link maintenance', 'end')
    await waitSent(cap, '203.0.113.1', '203.0.113.2', 'NOTIFICATION from FRR', (ms) => ms.some(isType(3)))
    await waitClosed(cap, '203.0.113.1', '203.0.113.2')
    return {
      capture: cap,
      ends: ['203.0.113.1', '203.0.113.2'],
      record: {
        name: 'frr-gobgp-refresh',
        description: 'eBGP FRR (AS 65010) <-> GoBGP (AS 65020), IPv4 unicast. FRR asks for a route refresh (plain RFC 2918: GoBGP does not offer enhanced route refresh, and `gobgp neighbor X softresetin` only re-runs its own policy from its Adj-RIB-In without sending ROUTE-REFRESH), then FRR shuts the neighbor down with an RFC 9003 message.',
        sides: [side('frr', frr, '203.0.113.2'), side('gobgp', gobgp, '203.0.113.1')],
        trigger: [
          'FRR connects (GoBGP passive); routes exchanged',
          'vtysh: clear bgp ipv4 unicast 203.0.113.2 soft in  (FRR sends ROUTE-REFRESH, GoBGP re-sends its UPDATEs)',
          'vtysh: router bgp 65010 / neighbor 203.0.113.2 shutdown message pinto capture: link maintenance',
        ],
      },
    }
  },
}

const birdAs2FrrAs4: Scenario = {
  name: 'bird-as2-frr-as4',
  async run(topo) {
    const [nb, nf] = await nodes(topo, [
      { name: 'bird', v4: '192.0.2.1/24' },
      { name: 'frr', v4: '192.0.2.2/24' },
    ])
    const cap = await startCapture(topo, nb!, 'bird-as2-frr-as4')
    const frr = await startFrr(topo, nf!, {
      routerId: '192.0.2.2',
      as: 4200000001,
      holdTime: 90,
      // BIRD reads capability 65 even with as4 off and would then see AS 4200000001, not AS_TRANS, and
      // refuse it; so FRR sends no capabilities and BIRD sees a plain 2-octet OPEN from AS 23456.
      neighbors: [{ name: 'bird', address: '192.0.2.1', as: 65001, families: ['ipv4'], noCapabilities: true }],
      originate: [
        { prefix: '198.18.60.0/25', prepend: [4200000002, 65003] },
        { prefix: '198.18.60.128/25', communities: ['65003:1'] },
      ],
      aggregates: ['198.18.60.0/24'],
    })
    const bird = await startBird(topo, nb!, {
      routerId: '192.0.2.1',
      as: 65001,
      as4: false,
      holdTime: 90,
      // A 2-octet speaker knows the 4-octet peer as AS_TRANS (23456), RFC 6793 §4.2.
      neighbors: [{ name: 'frr', address: '192.0.2.2', as: 23456, families: ['ipv4'], passive: true }],
      originate: [{ prefix: '198.18.61.0/24', prepend: [65001], communities: ['65001:61'] }],
    })
    await established([[bird, '192.0.2.2'], [frr, '192.0.2.1']])
    await routesFrom(bird, 'ipv4', '192.0.2.2', ['198.18.60.0/24', '198.18.60.0/25', '198.18.60.128/25'], 'BIRD learning FRR routes and aggregate')
    await routesFrom(frr, 'ipv4', '192.0.2.1', ['198.18.61.0/24'], 'FRR learning BIRD route')
    await frr.vtysh('configure terminal', 'router bgp 4200000001', 'neighbor 192.0.2.1 shutdown message pinto capture: AS4 check done', 'end')
    await waitSent(cap, '192.0.2.2', '192.0.2.1', 'NOTIFICATION from FRR', (ms) => ms.some(isType(3)))
    await waitClosed(cap, '192.0.2.1', '192.0.2.2')
    return {
      capture: cap,
      ends: ['192.0.2.1', '192.0.2.2'],
      record: {
        name: 'bird-as2-frr-as4',
        description: 'eBGP between a 2-octet-AS speaker (BIRD, AS 65001, `enable as4 off`: no capability 65) and a 4-octet-AS speaker (FRR, AS 4200000001). FRR\'s OPEN carries My AS = AS_TRANS 23456 and no optional parameters (dont-capability-negotiate, because BIRD would otherwise read capability 65 despite as4 off and reject AS 4200000001); its UPDATEs carry AS_PATH with AS_TRANS plus AS4_PATH, and its aggregate 198.18.60.0/24 carries AGGREGATOR with AS_TRANS plus AS4_AGGREGATOR. FRR ends with an administrative shutdown.',
        sides: [side('bird', bird, '192.0.2.2'), side('frr', frr, '192.0.2.1')],
        trigger: ['FRR connects (BIRD passive); routes exchanged', 'vtysh: router bgp 4200000001 / neighbor 192.0.2.1 shutdown message pinto capture: AS4 check done'],
      },
    }
  },
}

export const SCENARIOS: readonly Scenario[] = [birdFrrEbgp, gobgpBirdRr, frrGobgpRefresh, birdAs2FrrAs4, ...BAD_PEER_AS]
