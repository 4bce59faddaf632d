// PendingEchoes, on a fake clock: the monitor line of each of felix's writes is matched in order per key,
// a line that shows no pending write is not taken, and a write whose line never came expires.

import t from 'tap'
import { PendingEchoes } from '../../felix/pending-echoes.js'
import type { KernelRoute } from '../../felix/kernel-route.js'
import type { RouteOp } from '../../felix/route-diff.js'

const route = (gw: string): KernelRoute => ({ family: 4, table: 254, dst: '198.19.0.51/32', tos: 0, metric: 0, type: 'unicast', protocol: 87, nexthops: [{ gateway: gw, dev: 'eth0', onlink: false }] })
const KEY = '254 198.19.0.51/32 0 0'
const replace = (gw: string): RouteOp => ({ op: 'replace', route: route(gw), key: KEY, reason: 'missing' })
const del = (): RouteOp => ({ op: 'delete', route: route('192.0.2.2'), key: KEY, reason: 'stale' })
const shows = (gw: string | undefined) => (r: KernelRoute | undefined): boolean => (gw === undefined ? r === undefined : r?.nexthops[0]?.gateway === gw)

t.test('a replace then a delete: both lines are echoes, in order', async (t) => {
  const now = 0
  const p = new PendingEchoes(5_000, () => now)
  p.note([replace('192.0.2.2')])
  p.note([del()])
  t.notOk(p.take(KEY, shows(undefined)), 'the delete line first is not the oldest write: not taken')
  t.ok(p.take(KEY, shows('192.0.2.2')), "the replace's late line is felix's own")
  t.ok(p.take(KEY, shows(undefined)), "then the delete's")
  t.notOk(p.take(KEY, shows(undefined)), 'nothing is pending any more')
})

t.test('a line that shows another route is not an echo', async (t) => {
  const p = new PendingEchoes(5_000, () => 0)
  p.note([replace('192.0.2.2')])
  t.notOk(p.take(KEY, shows('192.0.2.9')), 'someone else wrote another next hop')
  t.notOk(p.take('254 198.19.0.52/32 0 0', shows('192.0.2.2')), 'another key has nothing pending')
})

t.test('a write whose line never came expires after the window', async (t) => {
  let now = 0
  const p = new PendingEchoes(5_000, () => now)
  p.note([replace('192.0.2.2')])
  now = 5_001
  t.notOk(p.take(KEY, shows('192.0.2.2')), 'expired')
  p.note([replace('192.0.2.3')])
  t.ok(p.take(KEY, shows('192.0.2.3')), 'a later write is matched on its own')
  p.clear()
  p.note([replace('192.0.2.4')])
  now = 20_000
  for (let i = 0; i < 3000; i++) p.note([{ ...replace('192.0.2.5'), key: `k${i}` }])
  t.notOk(p.take(KEY, shows('192.0.2.4')), 'old entries go as new ones come')
  t.ok(p.take('k2999', shows('192.0.2.5')), 'the newest are still pending')
})
