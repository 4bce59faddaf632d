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
    return { op: i % 3 === 2 ? 'delete' : 'replace', route: r, key: routeKey(r), reason: 'missing' } as RouteOp
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
  const dealt: [number, number][] = []
  let plans = 0
  const dealer = new BatchDealer(list, {
    chunk: 3,
    plan: () => {
      plans++
      return { head: ['nexthop replace id 7 via 192.0.2.12 dev eth0 proto 87'], nhid: (i) => (i % 2 === 0 ? 7 : undefined) }
    },
    onDealt: (from, to) => dealt.push([from, to]),
  })
  const a = dealer.writer()
  const b = dealer.writer()
  const sa = a.script()
  const sb = b.script()
  // Nothing is planned or dealt before a writer asks.
  t.equal(plans, 0)
  t.same(dealt, [])
  const texts = { a: [sa.next().value, sa.next().value], b: [sb.next().value, sb.next().value, sb.next().value] }
  texts.a.push(sa.next().value)
  t.equal(plans, 1, 'the plan is made once, for both writers')
  t.same(dealt, [[0, 3], [3, 6], [6, 9], [9, 11]])
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
