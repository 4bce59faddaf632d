// What the speaker's face offers other folders instead of its RIB: a peer's Adj-RIB-Out as the peer's
// session holds it (what the other side receives, through an export policy change too), the Loc-RIB a
// page at a time in prefix order, and our own routes changed together under one flush.

import t from 'tap'
import { compileBgpFilters, formatPrefix, parsePrefix, type PeerConfig } from '../../bgp/index.js'
import { waitFor } from '../harness/wait.js'
import { loopbackSpeakers } from './loopback-speakers.js'

t.test("a peer's Adj-RIB-Out is what the peer receives", async (t) => {
  const { a, b } = await loopbackSpeakers(t)
  const toB: PeerConfig = { name: 'node-b', kind: 'mesh', address: '127.0.0.2', port: b.port!, localAddress: '127.0.0.1', peerAsn: 64512, holdTime: 9 }
  a.setPeers([toB])
  b.addPeer({ name: 'node-a', kind: 'mesh', address: '127.0.0.1', port: a.port!, localAddress: '127.0.0.2', peerAsn: 64512, holdTime: 9, passive: true })
  t.same(a.adjRibOut('node-b'), [], 'a configured peer not yet Established has an empty Adj-RIB-Out')
  t.equal(a.adjRibOut('nobody'), undefined, 'no peer of that name')
  t.equal(a.adjRibIn('nobody'), undefined)
  await waitFor(() => a.peerStatus()[0]?.state === 'Established' && b.peerStatus()[0]?.state === 'Established', { timeoutMs: 10_000, what: 'both sessions Established' })
  a.updateOrigins(['198.18.0.0/26', '198.18.0.64/26', '198.18.1.0/26'].map((p) => ({ prefix: parsePrefix(p), attrs: { localPref: 120 } })))
  b.originate(parsePrefix('198.18.9.0/24'))
  const out = (): string[] => [...(a.adjRibOut('node-b') ?? [])].map((r) => formatPrefix(r.prefix)).sort()
  const received = (): string[] => [...(b.adjRibIn('node-a') ?? [])].map((p) => formatPrefix(p.prefix)).sort()
  await waitFor(() => received().length === 3 && a.locRibSize === 4, { timeoutMs: 5000, what: 'routes exchanged' })
  t.same(out(), received(), 'the Adj-RIB-Out holds what b received')
  t.same(out(), ['198.18.0.0/26', '198.18.0.64/26', '198.18.1.0/26'], "b's own route is not sent back to it")
  t.match([...a.adjRibOut('node-b')!][0], { nextHop: ['127.0.0.1'], attributes: { localPref: 120 } })

  const reject = compileBgpFilters([{ metadata: { name: 'no-64' }, spec: { exportV4: [{ action: 'Reject', matchOperator: 'Equal', cidr: '198.18.0.64/26' }] } }], 'export')
  t.same(a.setPeers([{ ...toB, exportPolicy: reject }]).updated, ['node-b'], 'a new export policy applies without a session reset')
  await waitFor(() => received().length === 2, { timeoutMs: 5000, what: 'the rejected route withdrawn from b' })
  t.same(out(), received(), 'after the export policy change, still what b holds')
  t.notOk(out().includes('198.18.0.64/26'))

  a.updateOrigins([{ prefix: parsePrefix('198.18.2.0/26') }], [parsePrefix('198.18.0.0/26')])
  await waitFor(() => received().includes('198.18.2.0/26') && !received().includes('198.18.0.0/26'), { timeoutMs: 5000, what: 'an origination and a withdrawal sent together' })
  t.same(out(), received())
})

t.test('the Loc-RIB a page at a time, in prefix order, following changes', async (t) => {
  const { a } = await loopbackSpeakers(t)
  const batches: number[] = []
  a.subscribeDeltas((d) => batches.push(d.count))
  const all = ['198.18.0.128/26', '198.18.0.0/26', '2001:db8::/64', '198.18.0.0/24', '198.18.0.64/26']
  a.updateOrigins(all.map((p) => ({ prefix: parsePrefix(p) })))
  t.same(batches, [5], 'one flush for the whole change')
  const first = a.locRibPage(2)
  t.same(first.items.map(formatPrefix), ['198.18.0.0/24', '198.18.0.0/26'])
  t.match(first, { total: 5, more: true })
  const second = a.locRibPage(10, first.items[1])
  t.same(second.items.map(formatPrefix), ['198.18.0.64/26', '198.18.0.128/26', '2001:db8::/64'])
  t.equal(second.more, false)
  a.updateOrigins([{ prefix: parsePrefix('198.18.0.96/27') }], [parsePrefix('198.18.0.0/24')])
  t.same(a.locRibPage(10).items.map(formatPrefix), ['198.18.0.0/26', '198.18.0.64/26', '198.18.0.96/27', '198.18.0.128/26', '2001:db8::/64'], 'kept current by the deltas')
})
