// eBGP with policy against BIRD: first RFC 8212 (no policy: BIRD's routes arrive but none is accepted,
// and pinto sends none), then Calico BGPFilter import/export rules applied at runtime through set-peers
// (soft reset, the session kept): cidr Equal/In with prefix length, community add, AS path prepend.
import t from 'tap'
import { createTopology } from '../harness/netns.js'
import { waitFor } from '../harness/wait.js'
import { Pinto, asns } from './pinto.js'
import { daemonRoute, peerTo, startBirdFacing } from './sessions-suite.js'
import type { PeerJson } from './runner-config.js'

const PINTO_AS = 65000
const BIRD_AS = 65001

t.test('eBGP with BIRD: RFC 8212, then BGPFilter import and export rules', async (t) => {
  const topo = await createTopology(t)
  const np = await topo.addNode({ name: 'pinto', v4: '192.0.2.1/24' })
  const nb = await topo.addNode({ name: 'bird', v4: '192.0.2.2/24' })
  const bird = await startBirdFacing(topo, nb, np, BIRD_AS, PINTO_AS, [{ prefix: '198.18.1.0/24' }, { prefix: '198.18.2.0/24' }, { prefix: '198.18.3.0/26' }])
  const base: PeerJson = peerTo('bird', nb, np, BIRD_AS, { families: ['ipv4'] })
  const pinto = await Pinto.start(topo, np, {
    speaker: { asn: PINTO_AS, routerId: np.v4!, listen: { port: 179, hosts: [np.v4!] } },
    peers: [base],
    originate: [{ prefix: '198.18.100.0/24' }, { prefix: '198.18.101.0/24' }, { prefix: '198.18.102.0/25' }],
  })
  await pinto.waitEstablished('bird', Date.now() + 20000)
  await bird.waitEstablished(np.v4!, Date.now() + 10000)

  await t.test('RFC 8212: nothing accepted or sent without a policy', async (t) => {
    const st = await waitFor(async () => {
      const p = await pinto.peer('bird')
      return p.prefixesReceived >= 3 ? p : undefined
    }, { timeoutMs: 10000, intervalMs: 100, what: "BIRD's three routes reaching pinto" })
    t.equal(st.prefixesAccepted, 0, 'received but none accepted')
    t.equal(st.prefixesAdvertised, 0, 'nothing advertised')
    const loc = (await pinto.locRib()).map((r) => r.prefix)
    t.notOk(loc.includes('198.18.1.0/24'), "BIRD's route is not in the Loc-RIB")
    // BIRD has heard pinto's End-of-RIB (the session is up and the table went out), and holds nothing from it.
    t.same((await bird.routes('ipv4')).filter((r) => r.fromPeer === np.v4), [], 'BIRD got no route from pinto')
  })

  await t.test('BGPFilter rules: the right routes pass, changed as the rules say', async (t) => {
    const before = (await pinto.peer('bird')).since
    const withPolicy: PeerJson = {
      ...base,
      importPolicy: {
        filters: [{
          name: 'from-tor',
          spec: {
            importV4: [
              { cidr: '198.18.1.0/24', matchOperator: 'Equal', action: 'Accept', operations: [{ addCommunity: { value: '65000:77' } }] },
              { cidr: '198.18.0.0/16', matchOperator: 'In', prefixLength: { min: 26 }, action: 'Accept' },
              { cidr: '198.18.0.0/16', matchOperator: 'In', action: 'Reject' },
            ],
          },
        }],
      },
      exportPolicy: {
        filters: [{
          name: 'to-tor',
          spec: {
            exportV4: [
              { cidr: '198.18.100.0/24', matchOperator: 'Equal', action: 'Accept', operations: [{ prependASPath: { prefix: [65000, 65000] } }] },
              { cidr: '198.18.101.0/24', matchOperator: 'Equal', action: 'Reject' },
              { cidr: '198.18.102.0/25', matchOperator: 'Equal', action: 'Accept', operations: [{ addCommunity: { value: '65000:102' } }] },
            ],
          },
        }],
      },
    }
    const r = await pinto.cmd('set-peers', { peers: [withPolicy] })
    t.same((r['summary'] as { updated: string[] }).updated, ['bird'], 'a policy change updates the peer in place')

    const r1 = await pinto.waitRoute('198.18.1.0/24', 'import Equal + add community')
    t.same(r1.attrs.communities, ['65000:77'], 'community added on import')
    t.same(asns(r1), [BIRD_AS])
    await pinto.waitRoute('198.18.3.0/26', 'import In with prefixLength min 26')
    const loc = (await pinto.locRib()).map((x) => x.prefix)
    t.notOk(loc.includes('198.18.2.0/24'), '198.18.2.0/24 rejected on import')

    const e0 = await daemonRoute(bird, 'ipv4', np.v4!, '198.18.100.0/24')
    t.same(e0.asPath, [PINTO_AS, PINTO_AS, PINTO_AS], 'export prepend, then our AS')
    const e2 = await daemonRoute(bird, 'ipv4', np.v4!, '198.18.102.0/25')
    t.same(e2.communities, ['65000:102'], 'community added on export')
    t.same(e2.asPath, [PINTO_AS])
    t.notOk((await bird.routes('ipv4')).some((x) => x.prefix === '198.18.101.0/24'), '198.18.101.0/24 rejected on export')
    t.equal((await pinto.peer('bird')).since, before, 'the session was never reset')
  })
})
