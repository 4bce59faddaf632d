// TCP-MD5 and GTSM against real FRR and BIRD. FRR: pinto connecting (IPv4 and IPv6) and listening,
// a wrong key that never Establishes and says so, GTSM one hop away Established, and a peer two hops
// away (behind a forwarding router namespace) refused by pinto until its hops allow it. BIRD: pinto
// connecting and listening with a key.

import t from 'tap'
import { createTopology, type NetNode, type Topology } from '../harness/netns.js'
import { startBird } from '../harness/bird.js'
import { startFrr } from '../harness/frr.js'
import { waitFor } from '../harness/wait.js'
import { Pinto } from './pinto.js'
import { peerTo } from './sessions-suite.js'
import type { PeerJson } from './runner-config.js'

const FRR_AS = 65001
const BIRD_AS = 65002
const PINTO_AS = 65000

async function runner(topo: Topology, n: NetNode, peers: PeerJson[]): Promise<Pinto> {
  return Pinto.start(topo, n, { speaker: { asn: PINTO_AS, routerId: n.v4!, listen: { port: 179, hosts: [n.v4!] } }, peers })
}

t.test('TCP-MD5 and GTSM with FRR and BIRD', async (t) => {
  const topo = await createTopology(t)
  const nf = await topo.addNode({ name: 'frr', v4: '192.0.2.1/24', v6: '2001:db8::1/64' })
  const nb = await topo.addNode({ name: 'bird', v4: '192.0.2.2/24' })
  const na = await topo.addNode({ name: 'pa', v4: '192.0.2.10/24', v6: '2001:db8::10/64' })
  const np = await topo.addNode({ name: 'pp', v4: '192.0.2.11/24' })
  const nw = await topo.addNode({ name: 'pw', v4: '192.0.2.12/24' })
  const ng = await topo.addNode({ name: 'pg', v4: '192.0.2.13/24' })
  // pf sits in another subnet on the same bridge, reached only through rt, which forwards (TTL - 1).
  const nr = await topo.addNode({ name: 'rt', v4: '192.0.2.254/24' })
  const nfar = await topo.addNode({ name: 'pf', v4: '198.51.100.20/24' })
  await topo.exec(nr.ns, 'ip', ['addr', 'add', '198.51.100.1/24', 'dev', 'eth0'])
  for (const [ns, key, value] of [
    [nr.ns, 'net.ipv4.ip_forward', '1'],
    [nr.ns, 'net.ipv4.conf.all.send_redirects', '0'],
    [nr.ns, 'net.ipv4.conf.eth0.send_redirects', '0'],
  ] as const) await topo.exec(ns, 'sysctl', ['-q', '-w', `${key}=${value}`])
  await topo.exec(nf.ns, 'ip', ['route', 'add', '198.51.100.0/24', 'via', '192.0.2.254'])
  await topo.exec(nfar.ns, 'ip', ['route', 'add', '192.0.2.0/24', 'via', '198.51.100.1'])

  const frrPeer = (name: string, self: NetNode, over: Partial<PeerJson>): PeerJson => ({ ...peerTo(name, nf, self, FRR_AS), families: ['ipv4'], ...over })
  const pa = await runner(topo, na, [
    frrPeer('frr', na, { password: 'frr-v4-key' }),
    { ...frrPeer('frr6', na, { password: 'frr-v6-key' }), address: nf.v6!, localAddress: na.v6!, families: ['ipv6'] },
    { ...peerTo('bird', nb, na, BIRD_AS), families: ['ipv4'], password: 'bird-key' },
  ])
  const pp = await runner(topo, np, [
    frrPeer('frr', np, { passive: true, password: 'frr-passive' }),
    { ...peerTo('bird', nb, np, BIRD_AS), families: ['ipv4'], passive: true, password: 'bird-passive' },
  ])
  const pw = await runner(topo, nw, [frrPeer('frr', nw, { password: 'not-the-key' })])
  const pg = await runner(topo, ng, [frrPeer('frr', ng, { ttlSecurity: 1 })])
  const pf = await runner(topo, nfar, [frrPeer('frr', nfar, { ttlSecurity: 1 })])

  const frr = await startFrr(topo, nf, {
    routerId: nf.v4!,
    as: FRR_AS,
    holdTime: 9,
    neighbors: [
      { name: 'pa', address: na.v4!, as: PINTO_AS, families: ['ipv4'], passive: true, password: 'frr-v4-key' },
      { name: 'pa6', address: na.v6!, as: PINTO_AS, families: ['ipv6'], passive: true, password: 'frr-v6-key' },
      { name: 'pp', address: np.v4!, as: PINTO_AS, families: ['ipv4'], password: 'frr-passive' },
      { name: 'pw', address: nw.v4!, as: PINTO_AS, families: ['ipv4'], passive: true, password: 'the-key' },
      { name: 'pg', address: ng.v4!, as: PINTO_AS, families: ['ipv4'], passive: true, ttlSecurityHops: 1 },
      // FRR would take pf (2 hops); pinto, told ttlSecurity 1, must not.
      { name: 'pf', address: nfar.v4!, as: PINTO_AS, families: ['ipv4'], passive: true, ttlSecurityHops: 2 },
    ],
  }, { zebra: true })
  const bird = await startBird(topo, nb, {
    routerId: nb.v4!,
    as: BIRD_AS,
    holdTime: 9,
    neighbors: [
      { name: 'pa', address: na.v4!, as: PINTO_AS, families: ['ipv4'], passive: true, password: 'bird-key' },
      { name: 'pp', address: np.v4!, as: PINTO_AS, families: ['ipv4'], password: 'bird-passive' },
    ],
  })
  const deadline = Date.now() + 30_000

  await t.test('TCP-MD5 sessions Established, pinto connecting and listening', async (t) => {
    for (const [p, name, who] of [[pa, 'frr', 'pa'], [pa, 'frr6', 'pa'], [pa, 'bird', 'pa'], [pp, 'frr', 'pp'], [pp, 'bird', 'pp']] as const) {
      const s = await p.waitEstablished(name, deadline)
      t.same(s.transport, { tcpMd5: true, ttlSecurity: 0 }, `${who} -> ${name} Established, keyed`)
    }
    await frr.waitEstablished(na.v6!, deadline)
    await bird.waitEstablished(np.v4!, deadline)
    // The kernel says the connections carry keys: ss -i lists md5keys on a TCP-MD5 socket.
    const ss = String((await topo.exec(na.ns, 'ss', ['-Htni', 'state', 'established'])).stdout)
    t.match(ss, /md5keys:192\.0\.2\.1\/32/, 'the kernel holds the key on the connection to FRR')
    t.match(ss, /md5keys:2001:db8::1\/128/, 'and on the IPv6 one')
  })

  await t.test('GTSM one hop away is Established', async (t) => {
    const s = await pg.waitEstablished('frr', deadline)
    t.same(s.transport, { tcpMd5: false, ttlSecurity: 1 })
  })

  await t.test('a wrong key never Establishes, and the peer says why', async (t) => {
    const s = await waitFor(async () => {
      const p = await pw.peer('frr')
      return /timed out; TCP-MD5 keyed/.test(p.lastError ?? '') ? p : undefined
    }, { timeoutMs: 15_000, what: 'pw reports the keyed connect timing out' })
    t.not(s.state, 'Established')
    t.equal(s.counters.messagesIn, 0, 'nothing ever arrived')
  })

  await t.test('a peer two hops away is refused by GTSM until its hops allow it', async (t) => {
    // FRR sends TTL 255, which reaches pf as 254: below pinto's minimum of 255 for ttlSecurity 1.
    await waitFor(async () => /timed out/.test((await pf.peer('frr')).lastError ?? ''), { timeoutMs: 15_000, what: 'pf connect timing out' })
    t.not((await pf.peer('frr')).state, 'Established')
    await pf.cmd('set-peers', { peers: [frrPeer('frr', nfar, { ttlSecurity: 2 })] })
    const s = await pf.waitEstablished('frr', Date.now() + 20_000)
    t.same(s.transport, { tcpMd5: false, ttlSecurity: 2 }, 'ttlSecurity 2 lets the same peer in')
  })
})
