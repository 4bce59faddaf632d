// BFD against FRR's bfdd (with zebra and bgpd, `neighbor X bfd`), pinto-node running its kernel dataplane
// in a namespace: sessions Up at 100 ms × 3; a silent link cut (nftables drop at the router) takes pinto's
// BGP session down and the route through the router out of the kernel long before the hold time; the link
// back brings BFD, BGP and the route back; the router's AdminDown leaves BGP up (RFC 5882 §3.2); a
// packet sent with TTL 254 is dropped by the kernel (RFC 5881 §5) while the same at TTL 255 is taken.
import t from 'tap'
import { startFrr } from '../harness/frr.js'
import { startBfdd } from '../harness/bfdd.js'
import { waitFor } from '../harness/wait.js'
import { PINTO_AS, bfdPair, cutAndRestore, startBfdPinto, ttlStep } from './bfd-steps.js'

const FRR_AS = 65001
const ROUTE = '203.0.113.0/24'

t.test('BFD with FRR bfdd: cut, restore, AdminDown, TTL 254', async (t) => {
  const { topo, np, nr: nf } = await bfdPair(t, 'frr')
  const frr = await startFrr(topo, nf, {
    routerId: nf.v4!,
    as: FRR_AS,
    holdTime: 90,
    neighbors: [{ name: 'pinto', address: np.v4!, as: PINTO_AS, families: ['ipv4'] }],
    originate: [{ prefix: ROUTE }],
  }, { zebra: true })
  const bfdd = await startBfdd(topo, frr, [{ address: np.v4!, localAddress: nf.v4!, intervalMs: 100, multiplier: 3 }], [np.v4!])

  const p = await startBfdPinto(t, topo, np, nf, FRR_AS, ROUTE)
  const { agent, bfd, peer, hasRoute, upAgain } = p

  await upAgain('start')
  const s = (await bfd())!
  t.equal(s.txIntervalMs, 100, 'sending every 100 ms')
  t.equal(s.detectTimeMs, 300, 'detecting in 3 × 100 ms')
  const theirs = await bfdd.peer(np.v4!)
  t.equal(theirs['status'], 'up', 'bfdd sees the session up')
  t.equal(theirs['remote-id'], s.localDiscriminator, "bfdd learnt pinto's discriminator")
  t.match(await agent.get('/metrics'), { text: /pinto_bfd_session_state\{peer="peer-tor",address="192\.0\.2\.2",state="Up"\} 1/ })

  await t.test('a cut link: BGP down and the route gone at BFD speed; back when the link is', async (t) => {
    await cutAndRestore(t, p, nf.ns, np.v4!)
  })

  await t.test("the router's AdminDown leaves BGP alone (RFC 5882 §3.2)", async (t) => {
    const since = (await peer())!.since
    await bfdd.adminDown(np.v4!, true)
    await waitFor(async () => (await bfd())?.remoteState === 'AdminDown', { timeoutMs: 5000, what: 'pinto to see AdminDown' })
    t.equal((await bfd())!.state, 'Down', 'BFD is Down')
    // Its detection time passes several times over with BGP untouched.
    await waitFor(async () => (await bfd())!.packetsReceived >= 0 && (await peer())!.state === 'Established', { timeoutMs: 1000, what: 'BGP still Established' })
    t.equal((await peer())!.since, since, 'the BGP session was not reset')
    t.ok(await hasRoute(), 'the route stays')
    await bfdd.adminDown(np.v4!, false)
    await waitFor(async () => (await bfd())?.state === 'Up', { timeoutMs: 15_000, what: 'BFD Up after no shutdown' })
    t.equal((await peer())!.since, since, 'still the same BGP session')
  })

  await t.test('GTSM: a packet with TTL 254 is dropped, the same with TTL 255 is taken', (t) => ttlStep(t, p, nf, np.v4!, 'ipv4'))
})
