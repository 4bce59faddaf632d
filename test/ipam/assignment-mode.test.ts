// IPPool assignmentMode on the real allocator and embedded store: a Manual pool gives nothing to an ordinary
// request, and addresses to a request that names it (by name or CIDR, as a CNI config's ipv4_pools does).
import t from 'tap'
import { Ipam } from '../../ipam/ipam.js'
import { eligiblePools, toPool, type PoolSpec } from '../../ipam/pools.js'
import { embeddedStore } from './stores.js'

const AUTO: PoolSpec = { name: 'auto', cidr: '198.18.0.0/28', blockSize: 30 }
const MANUAL: PoolSpec = { name: 'manual', cidr: '198.18.1.0/28', blockSize: 30, assignmentMode: 'Manual' }

t.test('eligibility: a Manual pool only when requested', async (t) => {
  const pools = [toPool(AUTO), toPool(MANUAL), toPool({ ...AUTO, name: 'auto2', cidr: '198.18.2.0/28', assignmentMode: 'Automatic' })]
  const cases: [string[] | undefined, string[]][] = [
    [undefined, ['auto', 'auto2']],
    [['manual'], ['manual']],
    [['198.18.1.0/28'], ['manual']],
    [['auto', 'manual'], ['auto', 'manual']],
    [['auto2'], ['auto2']],
  ]
  for (const [requested, want] of cases) {
    t.same(eligiblePools(pools, 4, 'n1', 'Workload', requested).map((p) => p.spec.name), want, `requested ${JSON.stringify(requested)}`)
  }
})

t.test('an ordinary pod gets nothing from a Manual pool; a pod naming it does', async (t) => {
  const { store } = await embeddedStore(t)
  const ipam = new Ipam(store, { pools: [MANUAL] })
  await t.rejects(ipam.autoAssign({ handle: 'net.plain', node: 'n1', num4: 1 }), { code: 'no-pool', message: /assignmentMode Manual .*: manual/ })
  t.same(await ipam.affinities('n1'), [], 'no block was claimed for the refused request')
  const byName = await ipam.autoAssign({ handle: 'net.named', node: 'n1', num4: 1, pools: ['manual'] })
  t.match(byName.ipv4[0]?.address, /^198\.18\.1\./)
  const byCidr = await ipam.autoAssign({ handle: 'net.cidr', node: 'n1', num4: 1, pools: ['198.18.1.0/28'] })
  t.match(byCidr.ipv4[0]?.address, /^198\.18\.1\./)

  const both = new Ipam(store, { pools: [MANUAL, AUTO] })
  for (let i = 0; i < 3; i++) {
    const r = await both.autoAssign({ handle: `net.p${i}`, node: 'n1', num4: 1 })
    t.match(r.ipv4[0]?.address, /^198\.18\.0\./, 'ordinary pods go to the Automatic pool beside it')
  }
})
