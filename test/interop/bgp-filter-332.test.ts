// Calico 3.32's BGPFilter match fields and operations against two real BIRD peers sharing one filter,
// one eBGP (AS 65001) and one iBGP (AS 65000): peerType picks the rules per peer, communities and
// asPathPrefix match what BIRD sent, setPriority writes LOCAL_PREF = 2^31-1 - priority, and an
// export rule matching that priority adds a community BIRD receives.
import t from 'tap'
import { createTopology } from '../harness/netns.js'
import { waitFor } from '../harness/wait.js'
import { Pinto, asns } from './pinto.js'
import { daemonRoute, peerTo, startBirdFacing } from './sessions-suite.js'
import type { PeerJson } from './runner-config.js'
import { PRIORITY_BASE } from '../../bgp/policy/index.js'

const PINTO_AS = 65000
const EBGP_AS = 65001

const filter = {
  name: 'calico-332',
  spec: {
    importV4: [
      { peerType: 'iBGP', cidr: '198.18.0.0/16', matchOperator: 'In', action: 'Accept', operations: [{ setPriority: { value: 512 } }] },
      { communities: { values: ['65001:7'] }, action: 'Accept', operations: [{ addCommunity: { value: '65000:70' } }] },
      { asPathPrefix: [EBGP_AS, 64999], action: 'Accept' },
      { peerType: 'eBGP', action: 'Reject' },
    ],
    exportV4: [
      { priority: 512, action: 'Accept', operations: [{ addCommunity: { value: '65000:512' } }] },
      { peerType: 'iBGP', cidr: '198.18.100.0/24', matchOperator: 'Equal', action: 'Reject' },
    ],
  },
}

t.test('BGPFilter peerType, communities, asPathPrefix and priority with BIRD', async (t) => {
  const topo = await createTopology(t)
  const np = await topo.addNode({ name: 'pinto', v4: '192.0.2.1/24' })
  const ne = await topo.addNode({ name: 'birde', v4: '192.0.2.2/24' })
  const ni = await topo.addNode({ name: 'birdi', v4: '192.0.2.3/24' })
  const ebgp = await startBirdFacing(topo, ne, np, EBGP_AS, PINTO_AS, [
    { prefix: '198.18.1.0/24', communities: ['65001:7'] },
    { prefix: '198.18.2.0/24', prepend: [64999] },
    { prefix: '198.18.3.0/24' },
  ])
  const ibgp = await startBirdFacing(topo, ni, np, PINTO_AS, PINTO_AS, [{ prefix: '198.18.10.0/24' }])
  const policy = { importPolicy: { filters: [filter] }, exportPolicy: { filters: [filter] } } as Partial<PeerJson>
  const pinto = await Pinto.start(topo, np, {
    speaker: { asn: PINTO_AS, routerId: np.v4!, listen: { port: 179, hosts: [np.v4!] } },
    peers: [peerTo('ebgp', ne, np, EBGP_AS, { families: ['ipv4'], ...policy }), peerTo('ibgp', ni, np, PINTO_AS, { families: ['ipv4'], ...policy })],
    originate: [{ prefix: '198.18.100.0/24' }, { prefix: '198.18.101.0/24' }],
  })
  await pinto.waitEstablished('ebgp', Date.now() + 20000)
  await pinto.waitEstablished('ibgp', Date.now() + 20000)

  await t.test('import: what pinto accepts, changed as the rules say', async (t) => {
    const i = await pinto.waitRoute('198.18.10.0/24', 'the iBGP route, priority 512')
    t.equal(i.attrs.localPref, PRIORITY_BASE - 512, 'peerType iBGP rule: setPriority 512 is LOCAL_PREF 2^31-1-512')
    const c = await pinto.waitRoute('198.18.1.0/24', 'the route with community 65001:7')
    t.same([...(c.attrs.communities ?? [])].sort(), ['65000:70', '65001:7'], 'communities match, then addCommunity')
    const a = await pinto.waitRoute('198.18.2.0/24', 'the route with AS path 65001 64999')
    t.same(asns(a), [EBGP_AS, 64999], 'asPathPrefix [65001, 64999] matched')
    const st = await waitFor(async () => {
      const p = await pinto.peer('ebgp')
      return p.prefixesReceived >= 3 ? p : undefined
    }, { timeoutMs: 10000, what: "the eBGP peer's three routes" })
    t.equal(st.prefixesAccepted, 2, 'the eBGP route no earlier rule matched is rejected by the peerType eBGP rule')
    t.notOk((await pinto.locRib()).some((r) => r.prefix === '198.18.3.0/24'), '198.18.3.0/24 rejected')
  })

  await t.test('export: what each BIRD receives', async (t) => {
    const p = await daemonRoute(ebgp, 'ipv4', np.v4!, '198.18.10.0/24')
    t.ok(p.communities.includes('65000:512'), `priority 512 matched on export: ${p.communities.join(' ')}`)
    t.same(p.asPath, [PINTO_AS])
    await daemonRoute(ebgp, 'ipv4', np.v4!, '198.18.100.0/24')
    await daemonRoute(ibgp, 'ipv4', np.v4!, '198.18.101.0/24')
    t.notOk((await ibgp.routes('ipv4')).some((r) => r.prefix === '198.18.100.0/24' && r.fromPeer === np.v4), 'the peerType iBGP reject applies to the iBGP peer only')
    const plain = await daemonRoute(ebgp, 'ipv4', np.v4!, '198.18.101.0/24')
    t.notOk(plain.communities.includes('65000:512'), 'a route of the normal priority does not match priority 512')
  })
})
