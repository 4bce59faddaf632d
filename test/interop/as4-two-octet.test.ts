// RFC 6793 toward a 2-octet speaker: BIRD runs `enable as4 off`, and pinto (AS 65000) exports a route
// whose path holds a 4-octet AS (prepended by its export filter). The UPDATE carries AS_TRANS in AS_PATH
// and the real path in AS4_PATH, which BIRD merges back: it must see 4200000001, not 23456. (BIRD reads
// capability 65 even with as4 off, so pinto's own AS stays 2-octet here: BIRD would refuse a wide one.)
import t from 'tap'
import { Pinto, asns } from './pinto.js'
import { besideBird, daemonRoute, peerTo } from './sessions-suite.js'

const PINTO_AS = 65000
const WIDE_AS = 4200000001
const BIRD_AS = 65001

t.test('a 4-octet AS in the path toward a 2-octet BIRD', async (t) => {
  const { topo, np, nb, bird } = await besideBird(t, BIRD_AS, PINTO_AS, { as4: false, originate: [{ prefix: '198.18.1.0/24' }] })
  const accept = (dir: 'importV4' | 'exportV4'): { filters: { name: string; spec: Record<string, unknown> }[] } => ({
    filters: [{ name: dir, spec: { [dir]: [{ cidr: '198.18.0.0/15', matchOperator: 'In', action: 'Accept', ...(dir === 'exportV4' ? { operations: [{ prependASPath: { prefix: [WIDE_AS] } }] } : {}) }] } }],
  })
  const pinto = await Pinto.start(topo, np, {
    speaker: { asn: PINTO_AS, routerId: np.v4!, listen: { port: 179, hosts: [np.v4!] } },
    peers: [{ ...peerTo('bird', nb, np, BIRD_AS, { families: ['ipv4'] }), importPolicy: accept('importV4'), exportPolicy: accept('exportV4') }],
    originate: [{ prefix: '198.18.100.0/24' }],
  })
  await pinto.waitEstablished('bird', Date.now() + 20000)
  const seen = await daemonRoute(bird, 'ipv4', np.v4!, '198.18.100.0/24')
  t.same(seen.asPath, [PINTO_AS, WIDE_AS], 'BIRD rebuilt the real path from AS4_PATH: our AS, then the prepended 4-octet one, not AS_TRANS')
  const got = await pinto.waitRoute('198.18.1.0/24', "BIRD's route")
  t.same(asns(got), [BIRD_AS], "BIRD's route with its own AS")
})
