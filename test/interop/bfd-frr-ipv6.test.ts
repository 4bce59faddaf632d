// BFD over IPv6 against FRR's bfdd (with zebra and bgpd, `neighbor X bfd`), pinto-node running its kernel
// dataplane in a namespace and peering over IPv6 only: the session Up at 100 ms × 3; a silent link cut
// (nftables drop at the router) takes pinto's BGP session down and the router's IPv6 route out of the
// kernel at BFD speed, and the link back brings both back; a packet with hop limit 254 is dropped by the
// kernel (RFC 5881 §5) while the same with 255 is taken.
import t from 'tap'
import { startFrr } from '../harness/frr.js'
import { startBfdd } from '../harness/bfdd.js'
import { runPintoctl } from '../agent/pintoctl/run.js'
import { PINTO_AS, bfdPair, addressOf, cutAndRestore, startBfdPinto, ttlStep } from './bfd-steps.js'

const FRR_AS = 65001
const ROUTE = '2001:db8:ff::/48'

t.test('BFD over IPv6 with FRR bfdd: Up, cut, restore, hop limit 254', async (t) => {
  const { topo, np, nr: nf } = await bfdPair(t, 'frr')
  const pinto6 = addressOf(np, 'ipv6')
  const frr = await startFrr(topo, nf, {
    routerId: nf.v4!,
    as: FRR_AS,
    holdTime: 90,
    neighbors: [{ name: 'pinto', address: pinto6, as: PINTO_AS, families: ['ipv6'] }],
    originate: [{ prefix: ROUTE }],
  }, { zebra: true })
  const bfdd = await startBfdd(topo, frr, [{ address: pinto6, localAddress: addressOf(nf, 'ipv6'), intervalMs: 100, multiplier: 3 }], [pinto6])

  const p = await startBfdPinto(t, topo, np, nf, FRR_AS, ROUTE, 'ipv6')
  await p.upAgain('start')
  const s = (await p.bfd())!
  t.equal(s.txIntervalMs, 100, 'sending every 100 ms')
  t.equal(s.detectTimeMs, 300, 'detecting in 3 × 100 ms')
  const theirs = await bfdd.peer(pinto6)
  t.equal(theirs['status'], 'up', 'bfdd sees the session up')
  t.equal(theirs['remote-id'], s.localDiscriminator, "bfdd learnt pinto's discriminator")
  t.match(await p.agent.get('/metrics'), { text: /pinto_bfd_session_state\{peer="[^"]+",address="2001:db8::2",state="Up"\} 1/ })

  const status = await runPintoctl(['node', 'status', '--api', `unix:${p.agent.apiSocket}`])
  t.equal(status.status, 0, `pintoctl node status: ${status.stderr}`)
  t.match(status.stdout, /BFD status\n[^]*\| 2001:db8::2 +\| Up +\| Up +\| 100\/100 ms x3 \| 100 ms \| 300 ms \|/, 'pintoctl node status shows the IPv6 session Up')

  await t.test('a cut link: BGP down and the IPv6 route gone at BFD speed; back when the link is', (t) => cutAndRestore(t, p, nf.ns, pinto6))
  await t.test('GTSM: a packet with hop limit 254 is dropped, the same with 255 is taken', (t) => ttlStep(t, p, nf, pinto6, 'ipv6'))
})
