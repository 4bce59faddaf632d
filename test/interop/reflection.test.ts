// Route reflection (RFC 4456) with real daemons, all in AS 65000:
// - pinto reflects for a BIRD client and an FRR client: each client sees the other's route with
//   ORIGINATOR_ID = the originating client, CLUSTER_LIST = [pinto's cluster id], next hop unchanged;
// - pinto is a client of a BIRD reflector: it learns a GoBGP client's route the same way, and BIRD
//   reflects pinto's route on to GoBGP with pinto's next hop.
import t from 'tap'
import { createTopology } from '../harness/netns.js'
import { startBird } from '../harness/bird.js'
import { startFrr } from '../harness/frr.js'
import { startGobgp } from '../harness/gobgp.js'
import { waitFor } from '../harness/wait.js'
import { Pinto } from './pinto.js'
import { daemonRoute, peerTo, pintoRoute } from './sessions-suite.js'

const AS = 65000

t.test('pinto as reflector for BIRD and FRR; pinto as client of a BIRD reflector', async (t) => {
  const topo = await createTopology(t)
  const nr = await topo.addNode({ name: 'prr', v4: '192.0.2.1/24' })
  const nb = await topo.addNode({ name: 'bird', v4: '192.0.2.2/24' })
  const nf = await topo.addNode({ name: 'frr', v4: '192.0.2.3/24' })
  const nbr = await topo.addNode({ name: 'brr', v4: '192.0.2.5/24' })
  const nc = await topo.addNode({ name: 'pc', v4: '192.0.2.6/24' })
  const ng = await topo.addNode({ name: 'gobgp', v4: '192.0.2.7/24' })

  const bird = await startBird(topo, nb, {
    routerId: nb.v4!,
    as: AS,
    neighbors: [{ name: 'prr', address: nr.v4!, as: AS, families: ['ipv4'], passive: true }],
    originate: [{ prefix: '198.18.2.0/24', communities: ['65000:2'] }],
  })
  const frr = await startFrr(topo, nf, {
    routerId: nf.v4!,
    as: AS,
    neighbors: [{ name: 'prr', address: nr.v4!, as: AS, families: ['ipv4'], passive: true }],
    originate: [{ prefix: '198.18.3.0/24', communities: ['65000:3'] }],
  }, { zebra: true })
  await startBird(topo, nbr, {
    routerId: nbr.v4!,
    as: AS,
    clusterId: nbr.v4!,
    neighbors: [
      { name: 'pc', address: nc.v4!, as: AS, families: ['ipv4'], rrClient: true },
      { name: 'gobgp', address: ng.v4!, as: AS, families: ['ipv4'], rrClient: true },
    ],
  })
  const gobgp = await startGobgp(topo, ng, {
    routerId: ng.v4!,
    as: AS,
    neighbors: [{ name: 'brr', address: nbr.v4!, as: AS, families: ['ipv4'], passive: true }],
    originate: [{ prefix: '198.18.7.0/24' }],
  })
  const rr = await Pinto.start(topo, nr, {
    speaker: { asn: AS, routerId: nr.v4!, clusterId: nr.v4!, listen: { port: 179, hosts: [nr.v4!] } },
    peers: [peerTo('bird', nb, nr, AS, { rrClient: true, families: ['ipv4'] }), peerTo('frr', nf, nr, AS, { rrClient: true, families: ['ipv4'] })],
    originate: [{ prefix: '198.18.1.0/24' }],
  })
  const pc = await Pinto.start(topo, nc, {
    speaker: { asn: AS, routerId: nc.v4!, listen: { port: 179, hosts: [nc.v4!] } },
    // Active: the BIRD reflector may have tried (and backed off for 120 s) before this runner listened.
    peers: [peerTo('brr', nbr, nc, AS, { families: ['ipv4'] })],
    originate: [{ prefix: '198.18.6.0/24', communities: ['65000:6'] }],
  })

  const deadline = Date.now() + 20000
  await rr.waitEstablished('bird', deadline)
  await rr.waitEstablished('frr', deadline)
  await pc.waitEstablished('brr', deadline)
  await gobgp.waitEstablished(nbr.v4!, deadline)

  await t.test('pinto reflects between BIRD and FRR clients', async (t) => {
    const atFrr = await daemonRoute(frr, 'ipv4', nr.v4!, '198.18.2.0/24')
    t.equal(atFrr.nextHop, nb.v4, 'FRR: next hop is still BIRD')
    t.same(atFrr.communities, ['65000:2'])
    const detail = JSON.parse(await frr.vtysh('show bgp ipv4 unicast 198.18.2.0/24 json')) as { paths?: { originatorId?: string; clusterList?: { list?: string[] } }[] }
    t.equal(detail.paths?.[0]?.originatorId, nb.v4, 'FRR sees ORIGINATOR_ID = BIRD')
    t.same(detail.paths?.[0]?.clusterList?.list, [nr.v4], 'FRR sees CLUSTER_LIST = [pinto]')

    const atBird = await daemonRoute(bird, 'ipv4', nr.v4!, '198.18.3.0/24')
    t.equal(atBird.nextHop, nf.v4, 'BIRD: next hop is still FRR')
    const text = await bird.birdc('show', 'route', '198.18.3.0/24', 'all')
    t.match(text, new RegExp(`BGP.originator_id: ${nf.v4!.replace(/\./g, '\\.')}`), 'BIRD sees ORIGINATOR_ID = FRR')
    t.match(text, new RegExp(`BGP.cluster_list: ${nr.v4!.replace(/\./g, '\\.')}`), 'BIRD sees CLUSTER_LIST = [pinto]')

    // pinto's own route goes to both clients with no reflection attributes.
    const own = await daemonRoute(bird, 'ipv4', nr.v4!, '198.18.1.0/24')
    t.equal(own.nextHop, nr.v4)
    t.notMatch(await bird.birdc('show', 'route', '198.18.1.0/24', 'all'), /originator_id/, 'no ORIGINATOR_ID on our own route')
    // Never back to the client it came from.
    const back = (await bird.routes('ipv4')).filter((r) => r.prefix === '198.18.2.0/24' && r.fromPeer === nr.v4)
    t.same(back, [], 'BIRD does not get its own route back')
  })

  await t.test('pinto as a client of a BIRD reflector', async (t) => {
    const r = await pintoRoute(pc, 'brr', '198.18.7.0/24')
    t.same(r.nextHop, [ng.v4], 'next hop unchanged by the reflector')
    t.equal(r.attrs.originatorId, ng.v4, 'ORIGINATOR_ID = GoBGP')
    t.same(r.attrs.clusterList, [nbr.v4], 'CLUSTER_LIST = [BIRD]')
    const atGobgp = await waitFor(async () => (await gobgp.routes('ipv4')).find((x) => x.prefix === '198.18.6.0/24'), {
      timeoutMs: 15000,
      intervalMs: 150,
      what: 'GoBGP learning pinto route through the BIRD reflector',
    })
    t.equal(atGobgp.nextHop, nc.v4, 'GoBGP: next hop is pinto, reflected unchanged')
    t.same(atGobgp.communities, ['65000:6'])
    const raw = JSON.parse(await gobgp.gobgp('global', 'rib', '-a', 'ipv4', '198.18.6.0/24', '-j')) as Record<string, { attrs?: { type?: number; value?: unknown }[] }[]>
    const attrs = Object.values(raw)[0]?.[0]?.attrs ?? []
    t.equal(attrs.find((a) => a.type === 9)?.value, nc.v4, 'GoBGP sees ORIGINATOR_ID = pinto')
    t.same(attrs.find((a) => a.type === 10)?.value, [nbr.v4], 'GoBGP sees CLUSTER_LIST = [BIRD]')
  })
})
