// The dealer of one write's ip -batch scripts: chunks made only when a writer asks, shared between writers in
// the order they ask, each script opening with the shared head, and every script line mapping back to its op.

import t from 'tap'
import { BatchDealer, batchScript } from '../../felix/batch-dealer.js'
import type { KernelRoute } from '../../felix/kernel-route.js'
import type { RouteOp } from '../../felix/route-diff.js'
import { routeKey } from '../../felix/index.js'

const route = (i: number): KernelRoute => ({
  family: 4, table: 254, dst: `198.18.${i}.0/26`, tos: 0, metric: 0, type: 'unicast', protocol: 87, nexthops: [{ gateway: '192.0.2.12', dev: 'eth0', onlink: false }],
})
const ops = (n: number): RouteOp[] =>
  Array.from({ length: n }, (_, i) => {
    const r = route(i)
    return { op: i % 3 === 2 ? 'delete' : 'replace', route: r, key: routeKey(r), reason: 'missing' }
  })

t.test('one writer: whole lines, in op order, a chunk at a time', async (t) => {
  const list = ops(10)
  const w = new BatchDealer(list, { chunk: 4 }).writer()
  const chunks = [...w.script()]
  t.same(chunks.map((c) => c.split('\n').length - 1), [4, 4, 2])
  t.ok(chunks.every((c) => c.endsWith('\n')))
  t.equal(chunks.join(''), batchScript(list))
  t.same(chunks.join('').split('\n')[2], 'route delete 198.18.2.0/26 table 254 proto 87 metric 0')
  t.same([...w.taken()], [0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
  t.same([...new BatchDealer([]).writer().script()], [])
})

t.test('two writers share the chunks in the order they ask; each line maps back to its op', async (t) => {
  const list = ops(11)
  let plans = 0
  const dealer = new BatchDealer(list, {
    chunk: 3,
    plan: () => {
      plans++
      return { head: ['nexthop replace id 7 via 192.0.2.12 dev eth0 proto 87'], nhid: (i) => (i % 2 === 0 ? 7 : undefined) }
    },
  })
  const a = dealer.writer()
  const b = dealer.writer()
  const sa = a.script()
  const sb = b.script()
  // Nothing is planned or dealt before a writer asks.
  t.equal(plans, 0)
  t.equal(dealer.dealt, 0)
  const texts = { a: [sa.next().value, sa.next().value], b: [sb.next().value, sb.next().value, sb.next().value] }
  texts.a.push(sa.next().value)
  t.equal(plans, 1, 'the plan is made once, for both writers')
  t.ok(sa.next().done)
  t.ok(sb.next().done)
  t.equal(dealer.dealt, 11)
  // a: head, ops 0-2, ops 9-10; b: head, ops 3-5, ops 6-8.
  t.equal(texts.a[0], 'nexthop replace id 7 via 192.0.2.12 dev eth0 proto 87\n')
  t.equal(texts.b[0], texts.a[0])
  t.same((texts.a[1] as string).split('\n')[0], 'route replace 198.18.0.0/26 nhid 7 proto 87')
  t.same((texts.a[1] as string).split('\n')[1], 'route replace 198.18.1.0/26 via 192.0.2.12 dev eth0 proto 87')
  t.same([...a.taken()], [0, 1, 2, 9, 10])
  t.same([...b.taken()], [3, 4, 5, 6, 7, 8])
  t.same(a.line(0), { head: 0 })
  t.same(a.line(1), { op: 0 })
  t.same(a.line(4), { op: 9 })
  t.same(a.line(5), { op: 10 })
  t.equal(a.line(6), undefined, 'past the end of the script')
  t.same(b.line(3), { op: 5 })
  t.same(b.line(4), { op: 6 })
  t.equal(b.line(-1), undefined)
})

t.test('a writer that never asks takes nothing; ops nobody asked for are left undealt', async (t) => {
  const dealer = new BatchDealer(ops(10), { chunk: 4 })
  const idle = dealer.writer()
  const busy = dealer.writer().script()
  busy.next()
  t.equal(dealer.dealt, 4)
  t.same([...idle.taken()], [])
  t.equal(idle.line(0), undefined)
})

t.test('a writer with a limit stops taking chunks there, says it is full, and the next one goes on', async (t) => {
  const dealer = new BatchDealer(ops(10), { chunk: 3 })
  const first = dealer.writer(6)
  let ended = false
  void first.ended.then(() => (ended = true))
  t.equal([...first.script()].length, 2)
  await first.ended
  t.ok(ended, 'ended once the script is all made')
  t.ok(first.full)
  const second = dealer.writer(6)
  t.same([...second.script()].map((c) => c.split('\n').length - 1), [3, 1])
  t.notOk(second.full, 'nothing left: not full')
  t.ok(dealer.done)
  t.same([...second.taken()], [6, 7, 8, 9])
  t.same(second.line(3), { op: 9 })
})

t.test('a writer without the head: its lines map to ops from the first line on', async (t) => {
  const dealer = new BatchDealer(ops(4), { chunk: 2, plan: () => ({ head: ['nexthop replace id 7 via 192.0.2.12 dev eth0 proto 87'] }) })
  const w = dealer.writer(Infinity, false)
  t.same([...w.script()].join('').split('\n')[0], 'route replace 198.18.0.0/26 via 192.0.2.12 dev eth0 proto 87')
  t.same(w.line(0), { op: 0 })
})

t.test('a writer goes past its limit when too little is left for a fresh one to be worth starting', async (t) => {
  const dealer = new BatchDealer(ops(9), { chunk: 2 })
  const w = dealer.writer(8)
  t.same([...w.script()].length, 5, 'the last op is under a quarter of the limit: taken too')
  t.notOk(w.full)
  const d2 = new BatchDealer(ops(12), { chunk: 2 })
  const w2 = d2.writer(8)
  t.same([...w2.script()].length, 4, '4 left, a quarter of 8 or more: the next writer takes them')
  t.ok(w2.full)
})
