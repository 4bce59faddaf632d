// BFD against BIRD 2's `protocol bfd` (`bfd on` in its bgp protocol) over one address family, pinto-node
// running its kernel dataplane: the session Up at 100 ms × 3, a silent link cut taking pinto's BGP session
// and BIRD's route out of the kernel at BFD speed, and both back with the link. Run by the BIRD BFD tests.
import type { Test } from 'tap'
import { startBird } from '../harness/bird.js'
import { waitFor } from '../harness/wait.js'
import { PINTO_AS, addressOf, bfdPair, cutAndRestore, startBfdPinto } from './bfd-steps.js'

const BIRD_AS = 65002

export async function birdBfdSuite(t: Test, family: 'ipv4' | 'ipv6', route: string): Promise<void> {
  const { topo, np, nr: nb } = await bfdPair(t, 'bird')
  const pintoAddress = addressOf(np, family)
  const bird = await startBird(topo, nb, {
    routerId: nb.v4!,
    as: BIRD_AS,
    neighbors: [{ name: 'pinto', address: pintoAddress, as: PINTO_AS, families: [family] }],
    originate: [{ prefix: route }],
  }, { bfd: { intervalMs: 100, multiplier: 3 } })
  const p = await startBfdPinto(t, topo, np, nb, BIRD_AS, route, family)
  await p.upAgain('start')
  // Just Up, BIRD may still be sending at its Down rate (1 s) until its Poll Sequence to 100 ms is done.
  const s = await waitFor(async () => {
    const b = await p.bfd()
    return b !== undefined && b.detectTimeMs === 300 ? b : undefined
  }, { timeoutMs: 5_000, what: 'the BFD intervals agreed at 100 ms × 3' }).catch(async () => (await p.bfd())!)
  t.equal(s.txIntervalMs, 100, 'sending every 100 ms')
  t.equal(s.detectTimeMs, 300, 'detecting in 3 × 100 ms')
  const sessions = await waitFor(async () => {
    const out = await bird.birdc('show', 'bfd', 'sessions')
    return new RegExp(`${pintoAddress.replaceAll('.', '\\.')}\\s+\\S+\\s+Up`).test(out) ? out : undefined
  }, { timeoutMs: 10_000, what: 'BIRD to show the BFD session Up' })
  t.match(sessions, /0\.100\s+0\.300/, 'BIRD sends every 100 ms and detects in 300 ms')
  await t.test('a cut link and back', (t) => cutAndRestore(t, p, nb.ns, pintoAddress))
}
