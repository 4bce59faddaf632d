// An import-policy change toward a BIRD peer that has route refresh turned off: pinto cannot ask it to
// re-send, so it re-runs import over the routes it kept as received. A route the old policy rejected
// appears, one the new policy rejects leaves, and the session is never reset.
import t from 'tap'
import { waitFor } from '../harness/wait.js'
import { Pinto } from './pinto.js'
import { besideBird, peerTo } from './sessions-suite.js'
import type { PeerJson } from './runner-config.js'

const PINTO_AS = 65000
const BIRD_AS = 65001

const rejecting = (cidr: string): PeerJson['importPolicy'] => ({
  filters: [{ name: 'from-tor', spec: { importV4: [{ cidr, matchOperator: 'Equal', action: 'Reject' }, { cidr: '198.18.0.0/16', matchOperator: 'In', action: 'Accept' }] } }],
})

t.test('no route refresh: a policy change re-imports what BIRD sent, the session kept', async (t) => {
  const { topo, np, nb } = await besideBird(t, BIRD_AS, PINTO_AS, {
    routeRefresh: false,
    originate: [{ prefix: '198.18.1.0/24' }, { prefix: '198.18.2.0/24' }, { prefix: '198.18.3.0/24' }],
  })
  const base: PeerJson = { ...peerTo('bird', nb, np, BIRD_AS, { families: ['ipv4'] }), importPolicy: rejecting('198.18.2.0/24') }
  const pinto = await Pinto.start(topo, np, {
    speaker: { asn: PINTO_AS, routerId: np.v4!, listen: { port: 179, hosts: [np.v4!] } },
    peers: [base],
  })
  await pinto.waitEstablished('bird', Date.now() + 20000)
  await pinto.waitRoute('198.18.1.0/24', 'BIRD route accepted by the first policy')
  await pinto.waitRoute('198.18.3.0/24', 'BIRD route accepted by the first policy')
  const st = await waitFor(async () => {
    const p = await pinto.peer('bird')
    return p.prefixesReceived >= 3 ? p : undefined
  }, { timeoutMs: 10000, intervalMs: 100, what: "BIRD's three routes reaching pinto" })
  t.equal(st.negotiated?.routeRefresh, false, 'route refresh not negotiated')
  t.equal(st.importTable, 3, 'the three routes kept as received')
  t.equal(st.prefixesAccepted, 2)
  t.notOk((await pinto.locRib()).some((r) => r.prefix === '198.18.2.0/24'), '198.18.2.0/24 rejected by the first policy')

  const r = await pinto.cmd('set-peers', { peers: [{ ...base, importPolicy: rejecting('198.18.1.0/24') }] })
  t.same((r['summary'] as { updated: string[] }).updated, ['bird'], 'the policy change updates the peer in place')
  await pinto.waitRoute('198.18.2.0/24', 'the route the old policy rejected, accepted now')
  await waitFor(async () => ((await pinto.locRib()).some((x) => x.prefix === '198.18.1.0/24') ? undefined : true), {
    timeoutMs: 10000,
    intervalMs: 100,
    what: 'pinto: 198.18.1.0/24 withdrawn by the new policy',
  })
  t.ok((await pinto.locRib()).some((x) => x.prefix === '198.18.3.0/24'), 'an unchanged verdict stays')
  const after = await pinto.peer('bird')
  t.equal(after.since, st.since, 'the session was never reset')
  t.equal(after.counters.routeRefreshOut, 0, 'no ROUTE-REFRESH sent to a peer without the capability')
  t.equal(after.prefixesAccepted, 2)
})
