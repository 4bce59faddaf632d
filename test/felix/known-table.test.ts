// The known table: felix's routes and other protocols' kept apart, each key seen once, and after a write
// felix's routes are the desired ones but where another protocol holds the key.

import t from 'tap'
import { KnownTable } from '../../felix/known-table.js'
import { routeKey, type KernelRoute } from '../../felix/kernel-route.js'
import { RouteDeltaTracker } from '../../felix/route-diff.js'

const P = 87
const r = (dst: string, protocol: number, gateway = '192.0.2.12', dev = 'eth0'): KernelRoute => ({
  family: 4, table: 254, dst, tos: 0, metric: 0, type: 'unicast', protocol, nexthops: [{ gateway, dev, onlink: false }],
})
const veth = (dst: string): KernelRoute => ({ family: 4, table: 254, dst, tos: 0, metric: 0, type: 'unicast', protocol: 3, nexthops: [{ dev: 'pinto1234', onlink: false }] })
const map = (...routes: KernelRoute[]) => new Map(routes.map((x) => [routeKey(x), x]))
const dsts = (k: KnownTable) => [...k].map(([key, x]) => `${key}=${x.protocol}`).sort()

t.test('as read: felix is seen where two routes share a key; each key once', async (t) => {
  const mine = r('198.18.0.0/26', P)
  const twin = r('198.18.0.0/26', 12, '192.0.2.13')
  const other = r('198.18.1.0/26', 12)
  const k = KnownTable.read([twin, mine, other], P)
  t.equal(k.get(routeKey(mine)), mine)
  t.equal(k.get(routeKey(other)), other)
  t.equal(k.get('254 198.18.9.0/26 0 0'), undefined)
  t.same(dsts(k), ['254 198.18.0.0/26 0 0=87', '254 198.18.1.0/26 0 0=12'])
  t.same([...k.values()].length, 2)
})

t.test('written: felix has the desired routes, a held key keeps its holder, a deleted veth route goes', async (t) => {
  const stale = r('198.18.5.0/26', P)
  const holder = r('198.18.2.0/26', 12)
  const gonePod = veth('198.18.0.9/32')
  const before = KnownTable.read([stale, holder, gonePod, r('198.18.3.0/26', 12)], P)
  const desired = map(r('198.18.0.0/26', P), r('198.18.2.0/26', P, '192.0.2.14'))
  const diff = new RouteDeltaTracker({ protocol: P, vethPrefix: 'pinto', graceMs: 0 }).diff(desired, before, 0, new Set())
  t.same(diff.ops.map((o) => `${o.op} ${o.route.dst}`).sort(), ['delete 198.18.0.9/32', 'delete 198.18.5.0/26', 'replace 198.18.0.0/26'])
  t.equal(diff.conflicts.length, 1)
  const after = before.written(desired, diff.ops, diff.conflicts)
  t.same(dsts(after), ['254 198.18.0.0/26 0 0=87', '254 198.18.2.0/26 0 0=12', '254 198.18.3.0/26 0 0=12'])
  t.equal(after.get(routeKey(holder)), holder, 'the holder, not the desired route it blocks')
  t.equal(after.get(routeKey(gonePod)), undefined)
  t.equal(before.get(routeKey(gonePod)), gonePod, 'the table before the write is left as it was')
  // Against the table after the write, the same desired routes need nothing more.
  const again = new RouteDeltaTracker({ protocol: P, vethPrefix: 'pinto', graceMs: 0 }).diff(desired, after, 0, new Set())
  t.same(again.ops, [])
  t.equal(again.conflicts.length, 1)
})
