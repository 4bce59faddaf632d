// Graceful restart, pinto restarting (RFC 4724 §4.1): pinto holds iBGP sessions with BIRD, FRR and GoBGP
// (all helpers), is SIGKILLed and started again with restartingFor. Throughout, each daemon's RIB is probed
// back to back and must always hold pinto's route; the capture (decoded with pinto's codec) must show no
// withdrawal of it, an OPEN with the Restart State bit after the restart, and End-of-RIB from pinto.
import t from 'tap'
import { createTopology } from '../harness/netns.js'
import { startBird } from '../harness/bird.js'
import { startFrr } from '../harness/frr.js'
import { startGobgp } from '../harness/gobgp.js'
import { startCapture } from '../harness/tcpdump.js'
import type { Daemon } from '../harness/daemons.js'
import { waitFor } from '../harness/wait.js'
import { Pinto } from './pinto.js'
import { daemonRoute, peerTo, pintoRoute } from './sessions-suite.js'
import { Watcher, lastConnection, openRestartState, sentEndOfRib, wireMessages, withdrawals } from './gr-steps.js'

const AS = 65000
const OURS = '198.18.1.0/24'

t.test('pinto restarts (SIGKILL) while BIRD, FRR and GoBGP keep its routes', async (t) => {
  const topo = await createTopology(t)
  const np = await topo.addNode({ name: 'pinto', v4: '192.0.2.1/24' })
  const specs = [
    { name: 'bird', v4: '192.0.2.2/24' },
    { name: 'frr', v4: '192.0.2.3/24' },
    { name: 'gobgp', v4: '192.0.2.4/24' },
  ]
  const daemons: Daemon[] = []
  for (const [i, s] of specs.entries()) {
    const node = await topo.addNode(s)
    const spec = {
      routerId: node.v4!,
      as: AS,
      holdTime: 9,
      gracefulRestart: true,
      neighbors: [{ name: 'pinto', address: np.v4!, as: AS, families: ['ipv4' as const], passive: true }],
      originate: [{ prefix: `198.18.${10 + i}.0/24` }],
    }
    daemons.push(s.name === 'bird' ? await startBird(topo, node, spec) : s.name === 'frr' ? await startFrr(topo, node, spec, { zebra: true }) : await startGobgp(topo, node, spec))
  }
  const cap = await startCapture(topo, np, 'gr-pinto')
  const pinto = await Pinto.start(topo, np, {
    speaker: { asn: AS, routerId: np.v4!, listen: { port: 179, hosts: [np.v4!] } },
    peers: daemons.map((d) => peerTo(d.kind, d.node, np, AS, { families: ['ipv4'], restartTime: 60 })),
    originate: [{ prefix: OURS, communities: ['65000:1'] }],
  })
  let deadline = Date.now() + 20000
  for (const d of daemons) {
    await pinto.waitEstablished(d.kind, deadline)
    await daemonRoute(d, 'ipv4', np.v4!, OURS)
    const st = await pinto.peer(d.kind)
    t.ok(st.negotiated?.gracefulRestart, `${d.kind} negotiated graceful restart`)
  }

  const watchers = daemons.map(
    (d) => new Watcher(d.kind, async () => (await d.routes('ipv4')).some((r) => r.prefix === OURS && r.fromPeer === np.v4)),
  )
  t.teardown(() => Promise.all(watchers.map((w) => w.stop())))
  // Let every watcher see the route at least once before the kill.
  while (watchers.some((w) => w.samples < 2)) await new Promise((r) => setTimeout(r, 20))

  await pinto.kill()
  // The daemons notice the dead connection (the kernel closed it) and hold the routes as stale.
  const killedAt = Date.now()
  while (watchers.some((w) => w.samples < 6) && Date.now() - killedAt < 3000) await new Promise((r) => setTimeout(r, 20))
  await pinto.restart({ speaker: { asn: AS, routerId: np.v4!, listen: { port: 179, hosts: [np.v4!] }, restartingFor: 60 } })

  deadline = Date.now() + 20000
  for (const d of daemons) {
    await pinto.waitEstablished(d.kind, deadline)
    await pintoRoute(pinto, d.kind, d.spec.originate![0]!.prefix)
    await d.waitEstablished(np.v4!, deadline)
  }
  // Converged: each daemon got pinto's End-of-RIB on the new session (so its stale marks are cleared).
  const ends = daemons.map((d) => d.node.v4!)
  for (const a of ends) {
    await waitFor(async () => {
      const msgs = wireMessages(await cap.connections(), np.v4!, a)
      return lastConnection(msgs) > 0 && sentEndOfRib(msgs, np.v4!, lastConnection(msgs))
    }, {
      timeoutMs: 15000,
      intervalMs: 100,
      what: `End-of-RIB from pinto to ${a} after the restart, in the capture`,
    })
  }
  // A few more probes after convergence.
  const convergedSamples = watchers.map((w) => w.samples)
  while (watchers.some((w, i) => w.samples < convergedSamples[i]! + 2)) await new Promise((r) => setTimeout(r, 20))
  for (const w of watchers) await w.stop()

  const conns = await cap.stop()
  for (const [i, d] of daemons.entries()) {
    const w = watchers[i]!
    t.same(w.misses, [], `${d.kind} held pinto's route in all ${w.samples} probes across the restart`)
    const msgs = wireMessages(conns, np.v4!, d.node.v4!)
    t.same(withdrawals(msgs, [OURS]), [], `${d.kind}: no withdrawal of ${OURS} on the wire`)
    t.equal(openRestartState(msgs, np.v4!, 0), false, `${d.kind}: first OPEN from pinto without Restart State`)
    // Some daemons refuse the first connections after the kill (GoBGP resets them until it has noticed
    // the old session die): the session that counts is the last one.
    const last = lastConnection(msgs)
    t.equal(openRestartState(msgs, np.v4!, last), true, `${d.kind}: OPEN after the restart carries Restart State`)
    t.ok(sentEndOfRib(msgs, np.v4!, last), `${d.kind}: pinto sent End-of-RIB after the restart`)
    const r = await daemonRoute(d, 'ipv4', np.v4!, OURS)
    t.same(r.communities, ['65000:1'], `${d.kind} has the re-sent route`)
  }
})
