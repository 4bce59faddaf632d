// Per-family pool lists (Calico's IPv4Pools / IPv6Pools) on the real allocator and embedded store: each family
// takes from its own list, a family with no list from any pool that serves the node, and a list naming no usable
// pool is refused for that family alone.
import t from 'tap'
import { Ipam } from '../../ipam/ipam.js'
import type { PoolSpec } from '../../ipam/pools.js'
import { embeddedStore } from './stores.js'

const POOLS: PoolSpec[] = [
  { name: 'a4', cidr: '198.18.0.0/28', blockSize: 30 },
  { name: 'b4', cidr: '198.18.1.0/28', blockSize: 30 },
  { name: 'a6', cidr: '2001:db8:18::/120', blockSize: 126 },
  { name: 'b6', cidr: '2001:db8:19::/120', blockSize: 126 },
]

t.test('each family from its own list, or any pool', async (t) => {
  const { store } = await embeddedStore(t)
  const ipam = new Ipam(store, { pools: POOLS })
  const r = await ipam.autoAssign({ handle: 'net.c1', node: 'n1', num4: 1, num6: 1, familyPools: { 4: ['b4'] } })
  t.match(r.ipv4[0]?.address, /^198\.18\.1\./, 'IPv4 from b4')
  t.match(r.ipv6[0]?.address, /^2001:db8:1[89]::/, 'IPv6 from either: no list for it')
  const s = await ipam.autoAssign({ handle: 'net.c2', node: 'n1', num4: 1, num6: 1, familyPools: { 4: ['198.18.0.0/28'], 6: ['b6'] } })
  t.match(s.ipv4[0]?.address, /^198\.18\.0\./)
  t.match(s.ipv6[0]?.address, /^2001:db8:19::/)
  await t.rejects(ipam.autoAssign({ handle: 'net.c3', node: 'n1', num4: 1, num6: 1, familyPools: { 6: ['a4'] } }), { code: 'no-pool', message: /no enabled IPv6 pool among a4/ })
  t.same(await ipam.handleAddresses('net.c3'), [], 'the refused request holds nothing')
})
