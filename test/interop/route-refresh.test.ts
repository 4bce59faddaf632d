// Route refresh (RFC 2918, RFC 7313) with BIRD, FRR and GoBGP over iBGP, read from the wire with pinto's
// codec: pinto asks (refresh in) and the daemon re-sends its route; the daemon asks (BIRD `reload in`,
// FRR `clear bgp ... soft in`) and pinto re-sends within BoRR ... EoRR when
// enhanced route refresh was negotiated.
import t from 'tap'
import { createTopology } from '../harness/netns.js'
import { startBird, type BirdDaemon } from '../harness/bird.js'
import { startFrr, type FrrDaemon } from '../harness/frr.js'
import { startGobgp } from '../harness/gobgp.js'
import type { Daemon } from '../harness/daemons.js'
import { startCapture } from '../harness/tcpdump.js'
import { waitFor } from '../harness/wait.js'
import { formatPrefix } from '../../bgp/codec/index.js'
import { Pinto } from './pinto.js'
import { daemonRoute, peerTo } from './sessions-suite.js'
import { wireMessages, type WireMessage } from './gr-steps.js'

const AS = 65000
const OURS = '198.18.1.0/24'

function announces(m: WireMessage, prefix: string): boolean {
  return m.msg.type === 'update' && [...m.msg.nlri, ...(m.msg.mpReach?.nlri ?? [])].some((p) => formatPrefix(p) === prefix)
}
const refresh = (m: WireMessage, subtype: number): boolean => m.msg.type === 'route-refresh' && m.msg.subtype === subtype

t.test('route refresh both ways with BIRD, FRR and GoBGP', async (t) => {
  const topo = await createTopology(t)
  const np = await topo.addNode({ name: 'pinto', v4: '192.0.2.1/24' })
  const daemons: Daemon[] = []
  for (const [i, name] of (['bird', 'frr', 'gobgp'] as const).entries()) {
    const node = await topo.addNode({ name, v4: `192.0.2.${2 + i}/24` })
    const spec = {
      routerId: node.v4!,
      as: AS,
      neighbors: [{ name: 'pinto', address: np.v4!, as: AS, families: ['ipv4' as const], passive: true }],
      originate: [{ prefix: `198.18.${10 + i}.0/24` }],
    }
    daemons.push(name === 'bird' ? await startBird(topo, node, spec) : name === 'frr' ? await startFrr(topo, node, spec, { zebra: true }) : await startGobgp(topo, node, spec))
  }
  const cap = await startCapture(topo, np, 'refresh')
  const pinto = await Pinto.start(topo, np, {
    speaker: { asn: AS, routerId: np.v4!, listen: { port: 179, hosts: [np.v4!] } },
    peers: daemons.map((d) => peerTo(d.kind, d.node, np, AS, { families: ['ipv4'] })),
    originate: [{ prefix: OURS }],
  })
  const deadline = Date.now() + 20000
  for (const d of daemons) {
    await pinto.waitEstablished(d.kind, deadline)
    await daemonRoute(d, 'ipv4', np.v4!, OURS)
    await pinto.waitRoute(d.spec.originate![0]!.prefix, `route from ${d.kind}`)
  }

  for (const d of daemons) {
    await t.test(`${d.kind}`, async (t) => {
      const addr = d.node.v4!
      const theirs = d.spec.originate![0]!.prefix
      const wire = async (): Promise<WireMessage[]> => wireMessages(await cap.connections(), np.v4!, addr)
      const st = await pinto.peer(d.kind)
      t.ok(st.negotiated?.routeRefresh, 'route refresh negotiated')
      const enhanced = st.negotiated?.enhancedRouteRefresh === true
      t.comment(`enhanced route refresh negotiated with ${d.kind}: ${enhanced}`)

      // The capture gives each direction in order, not the two interleaved: mark each direction apart.
      const from = async (who: string): Promise<WireMessage[]> => (await wire()).filter((m) => m.from === who)
      // pinto asks
      let markUs = (await from(np.v4!)).length
      let markThem = (await from(addr)).length
      const sent = await pinto.cmd('refresh', { peer: d.kind, direction: 'in' })
      t.same(sent['sent'], [true], 'pinto sent ROUTE-REFRESH')
      await waitFor(async () => (await from(np.v4!)).slice(markUs).some((m) => refresh(m, 0)), { timeoutMs: 10000, intervalMs: 100, what: "pinto's ROUTE-REFRESH on the wire" })
      const resent = await waitFor(async () => {
        const ms = (await from(addr)).slice(markThem)
        return ms.some((m) => announces(m, theirs)) ? ms : undefined
      }, { timeoutMs: 10000, intervalMs: 100, what: `${d.kind} re-sending ${theirs} after pinto's ROUTE-REFRESH` })
      t.pass(`${d.kind} re-sent ${theirs}${resent.some((m) => refresh(m, 1)) ? ' between BoRR and EoRR' : ''}`)
      await pinto.waitRoute(theirs, `${theirs} still there after refresh`)

      // the daemon asks. GoBGP's `softresetin` re-runs its import policy over the Adj-RIB-In it keeps and
      // sends no ROUTE-REFRESH (seen on the wire), so only BIRD and FRR are asked to.
      if (d.kind === 'gobgp') return
      markUs = (await from(np.v4!)).length
      markThem = (await from(addr)).length
      const before = (await pinto.peer(d.kind)).counters.routeRefreshIn
      if (d.kind === 'bird') await (d as BirdDaemon).birdc('reload', 'in', 'pinto')
      else await (d as FrrDaemon).vtysh(`clear bgp ipv4 unicast ${np.v4} soft in`)
      await waitFor(async () => (await from(addr)).slice(markThem).some((m) => refresh(m, 0)), { timeoutMs: 10000, intervalMs: 100, what: `${d.kind}'s ROUTE-REFRESH on the wire` })
      const after = await waitFor(async () => {
        const reply = (await from(np.v4!)).slice(markUs)
        const done = enhanced ? reply.some((m) => refresh(m, 2)) : reply.some((m) => announces(m, OURS))
        return done ? reply : undefined
      }, { timeoutMs: 10000, intervalMs: 100, what: `pinto answering ${d.kind}'s ROUTE-REFRESH` })
      const iAnnounce = after.findIndex((m) => announces(m, OURS))
      t.ok(iAnnounce >= 0, `pinto re-sent ${OURS}`)
      if (enhanced) {
        const iBorr = after.findIndex((m) => refresh(m, 1))
        const iEorr = after.findIndex((m) => refresh(m, 2))
        t.ok(iBorr >= 0 && iBorr < iAnnounce && iAnnounce < iEorr, 'BoRR, the route, then EoRR')
      }
      t.ok((await pinto.peer(d.kind)).counters.routeRefreshIn > before, 'pinto counted the request')
      await daemonRoute(d, 'ipv4', np.v4!, OURS)
    })
  }
})
