// BFD over IPv6 against BIRD 2's `protocol bfd` (`bfd on` in its bgp protocol), pinto-node running its
// kernel dataplane and peering over IPv6 only: the session Up at 100 ms × 3, a silent link cut taking
// pinto's BGP session and BIRD's IPv6 route out of the kernel at BFD speed, and both back with the link.
import t from 'tap'
import { createTopology } from '../harness/netns.js'
import { startBird } from '../harness/bird.js'
import { waitFor } from '../harness/wait.js'
import { PINTO_AS, addressOf, cutAndRestore, startBfdPinto } from './bfd-steps.js'

const BIRD_AS = 65002
const ROUTE = '2001:db8:fe::/48'

t.test('BFD over IPv6 with BIRD: Up at 100 ms x 3, a cut, the link back', async (t) => {
  const topo = await createTopology(t)
  const np = await topo.addNode({ name: 'pinto', v4: '192.0.2.1/24', v6: '2001:db8::1/64' })
  const nb = await topo.addNode({ name: 'bird', v4: '192.0.2.2/24', v6: '2001:db8::2/64' })
  const pinto6 = addressOf(np, 'ipv6')
  const bird = await startBird(topo, nb, {
    routerId: nb.v4!,
    as: BIRD_AS,
    neighbors: [{ name: 'pinto', address: pinto6, as: PINTO_AS, families: ['ipv6'] }],
    originate: [{ prefix: ROUTE }],
  }, { bfd: { intervalMs: 100, multiplier: 3 } })
  const p = await startBfdPinto(t, topo, np, nb, BIRD_AS, ROUTE, 'ipv6')
  await p.upAgain('start')
  const s = (await p.bfd())!
  t.equal(s.txIntervalMs, 100, 'sending every 100 ms')
  t.equal(s.detectTimeMs, 300, 'detecting in 3 × 100 ms')
  const sessions = await waitFor(async () => {
    const out = await bird.birdc('show', 'bfd', 'sessions')
    return /2001:db8::1\s+\S+\s+Up/.test(out) ? out : undefined
  }, { timeoutMs: 10_000, what: 'BIRD to show the BFD session Up' })
  t.match(sessions, /0\.100\s+0\.300/, 'BIRD sends every 100 ms and detects in 300 ms')
  await t.test('a cut link and back', (t) => cutAndRestore(t, p, nb.ns, pinto6))
})
