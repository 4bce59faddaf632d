// The three launchers against each other: BIRD (passive) with FRR and GoBGP as neighbors reach Established
// within a deadline, routes cross with their attributes as each daemon reports them, and tcpdump + the pcap
// reader see both OPENs on the real wire. Everything is torn down even when an assertion fails.
import t from 'tap'
import { createTopology } from './netns.js'
import { startBird } from './bird.js'
import { startFrr } from './frr.js'
import { startGobgp } from './gobgp.js'
import { startCapture } from './tcpdump.js'
import { connectionBetween, sentBy } from './pcap.js'
import { splitMessages, messageType } from './bgp-hex.js'
import { waitFor } from './wait.js'
import type { Daemon, RibRoute } from './daemons.js'
import { isAlive } from './pid.js'

const BIRD = '192.0.2.21'
const FRR = '192.0.2.22'
const GOBGP = '192.0.2.23'

async function routeFrom(d: Daemon, peer: string, prefix: string): Promise<RibRoute> {
  return waitFor(async () => (await d.routes('ipv4')).find((r) => r.fromPeer === peer && r.prefix === prefix), {
    timeoutMs: 10000,
    intervalMs: 100,
    what: `${d.kind} learning ${prefix} from ${peer}`,
  })
}

t.test('BIRD <-> FRR and BIRD <-> GoBGP: Established, one route each way, OPENs on the wire', async (t) => {
  const topo = await createTopology(t)
  const nb = await topo.addNode({ name: 'bird', v4: `${BIRD}/24` })
  const nf = await topo.addNode({ name: 'frr', v4: `${FRR}/24` })
  const ng = await topo.addNode({ name: 'gobgp', v4: `${GOBGP}/24` })
  const cap = await startCapture(topo, nb, 'harness')
  const bird = await startBird(topo, nb, {
    routerId: BIRD,
    as: 65101,
    neighbors: [
      { name: 'frr', address: FRR, as: 65102, families: ['ipv4'], passive: true },
      // GoBGP waits 5-10 s before its first connect; BIRD connects after 1 s, so GoBGP only listens.
      { name: 'gobgp', address: GOBGP, as: 65103, families: ['ipv4'] },
    ],
    originate: [{ prefix: '198.18.101.0/24', communities: ['65101:1'], largeCommunities: ['65101:2:3'], med: 7, prepend: [65109] }],
  })
  const frr = await startFrr(topo, nf, {
    routerId: FRR,
    as: 65102,
    neighbors: [{ name: 'bird', address: BIRD, as: 65101, families: ['ipv4'] }],
    originate: [{ prefix: '198.18.102.0/24', communities: ['65102:5'], med: 11 }],
  })
  const gobgp = await startGobgp(topo, ng, {
    routerId: GOBGP,
    as: 65103,
    neighbors: [{ name: 'bird', address: BIRD, as: 65101, families: ['ipv4'], passive: true }],
    originate: [{ prefix: '198.18.103.0/24', largeCommunities: ['65103:1:1'] }],
  })

  const started = Date.now()
  const deadline = started + 10000
  await bird.waitEstablished(FRR, deadline)
  await bird.waitEstablished(GOBGP, deadline)
  await frr.waitEstablished(BIRD, deadline)
  await gobgp.waitEstablished(BIRD, deadline)
  t.pass(`all sessions Established in ${Date.now() - started} ms`)
  t.equal(await bird.sessionState(FRR), 'Established')

  const atFrr = await routeFrom(frr, BIRD, '198.18.101.0/24')
  t.same(atFrr.asPath, [65101, 65109], 'FRR sees the path BIRD prepended')
  t.same(atFrr.communities, ['65101:1'])
  t.same(atFrr.largeCommunities, ['65101:2:3'])
  t.equal(atFrr.med, 7)
  t.equal(atFrr.nextHop, BIRD)

  const atBird = await routeFrom(bird, FRR, '198.18.102.0/24')
  t.same(atBird.asPath, [65102])
  t.same(atBird.communities, ['65102:5'])
  t.equal(atBird.med, 11)
  t.equal(atBird.nextHop, FRR)

  const fromGobgp = await routeFrom(bird, GOBGP, '198.18.103.0/24')
  t.same(fromGobgp.largeCommunities, ['65103:1:1'])
  const atGobgp = await routeFrom(gobgp, BIRD, '198.18.101.0/24')
  t.same(atGobgp.asPath, [65101, 65109], 'GoBGP JSON parsed: AS path')
  t.same(atGobgp.communities, ['65101:1'], 'GoBGP JSON parsed: communities')
  t.equal(atGobgp.med, 7)

  const conns = await cap.stop()
  for (const [peer, as] of [[FRR, 65102], [GOBGP, 65103]] as const) {
    const msgs = splitMessages(sentBy(connectionBetween(conns, BIRD, peer), peer))
    t.equal(messageType(msgs[0]!), 'OPEN', `${peer} opened with OPEN`)
    t.equal(msgs[0]!.readUInt16BE(20), as, `${peer}'s OPEN carries its AS`)
  }
  const birdOpen = splitMessages(sentBy(connectionBetween(conns, BIRD, FRR), BIRD))[0]!
  t.equal(birdOpen.readUInt16BE(20), 65101)

  const pids = [bird.pid, frr.pid, gobgp.pid]
  await bird.stop()
  t.notOk(isAlive(bird.pid), 'BIRD stopped by PID')
  await topo.destroy()
  t.ok(pids.every((p) => !isAlive(p)), 'all daemons gone after destroy')
})
