// BFD against BIRD 2's `protocol bfd` (`bfd on` in its bgp protocol), pinto-node running its kernel
// dataplane: the session Up at 100 ms × 3, a silent link cut taking pinto's BGP session and BIRD's route
// out of the kernel at BFD speed, and both back with the link.
import t from 'tap'
import { createTopology } from '../harness/netns.js'
import { startBird } from '../harness/bird.js'
import { waitFor } from '../harness/wait.js'
import { PINTO_AS, cutAndRestore, startBfdPinto } from './bfd-steps.js'

const BIRD_AS = 65002
const ROUTE = '203.0.113.0/24'

t.test('BFD with BIRD: Up at 100 ms x 3, a cut, the link back', async (t) => {
  const topo = await createTopology(t)
  const np = await topo.addNode({ name: 'pinto', v4: '192.0.2.1/24' })
  const nb = await topo.addNode({ name: 'bird', v4: '192.0.2.2/24' })
  const bird = await startBird(topo, nb, {
    routerId: nb.v4!,
    as: BIRD_AS,
    neighbors: [{ name: 'pinto', address: np.v4!, as: PINTO_AS, families: ['ipv4'] }],
    originate: [{ prefix: ROUTE }],
  }, { bfd: { intervalMs: 100, multiplier: 3 } })
  const p = await startBfdPinto(t, topo, np, nb, BIRD_AS, ROUTE)
  await p.upAgain('start')
  const s = (await p.bfd())!
  t.equal(s.txIntervalMs, 100, 'sending every 100 ms')
  t.equal(s.detectTimeMs, 300, 'detecting in 3 × 100 ms')
  const sessions = await waitFor(async () => {
    const out = await bird.birdc('show', 'bfd', 'sessions')
    return /192\.0\.2\.1\s+\S+\s+Up/.test(out) ? out : undefined
  }, { timeoutMs: 10_000, what: 'BIRD to show the BFD session Up' })
  t.match(sessions, /0\.100\s+0\.300/, 'BIRD sends every 100 ms and detects in 300 ms')
  await t.test('a cut link and back', (t) => cutAndRestore(t, p, nb.ns, np.v4!))
})
