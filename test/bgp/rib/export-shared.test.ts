// Export results shared between Adj-RIB-Outs: reflector clients that transform() treats alike get the
// same result object (and so the same encoded attributes), peers that differ in what transform() reads
// (next hop mode, local address, type) get their own, and what each is sent stays what it was alone.
import t from 'tap'
import { codecOptions, packUpdates } from '../../../bgp/index.js'
import type { OutBatch, RibPeer } from '../../../bgp/rib/index.js'
import { attrs, peer, px, rib, session } from './helpers.js'

const source = peer({ address: '192.0.2.9', rrClient: true })

function announced(targets: RibPeer[]): Map<RibPeer, OutBatch> {
  const table = rib({ clusterId: '10.1.1.1' })
  const outs = targets.map((p) => [p, table.attachPeer(p)] as const)
  table.receive(source, session('10.0.0.9'), [px('198.18.0.0/26'), px('198.18.0.64/26')], attrs())
  table.flush()
  return new Map(outs.map(([p, out]) => [p, out.take(100).find((b) => b.announce.length > 0)!]))
}

t.test('clients alike share one export result and one encoding', async (t) => {
  const a = peer({ address: '192.0.2.1', rrClient: true })
  const b = peer({ address: '192.0.2.2', rrClient: true })
  const got = announced([a, b])
  const ba = got.get(a)!
  const bb = got.get(b)!
  t.equal(ba.attributes, bb.attributes, 'the same attributes object')
  t.equal(ba.encoded, bb.encoded, 'the same encoding memo')
  const first = packUpdates(ba, codecOptions())
  t.ok(ba.encoded?.as4, 'packing filled the memo')
  const second = packUpdates(bb, codecOptions())
  t.same(second, first, 'the second peer gets the same bytes')
  const { encoded: _, ...plain } = bb
  t.same(packUpdates(plain, codecOptions()), first, 'as it would without the memo')
  const two = packUpdates(bb, codecOptions({ as4: false }))
  t.ok(bb.encoded?.as2, 'a 2-octet peer has its own encoding')
  t.same(two, packUpdates(plain, codecOptions({ as4: false })))
})

t.test('peers transform() treats differently keep their own results', async (t) => {
  const keep = peer({ address: '192.0.2.1', rrClient: true })
  const self = peer({ address: '192.0.2.2', rrClient: true, nextHopMode: 'self' })
  const elsewhere = peer({ address: '192.0.2.3', rrClient: true, nextHopMode: 'self', localAddress: '192.0.2.200' })
  const got = announced([keep, self, elsewhere])
  t.not(got.get(keep)!.attributes, got.get(self)!.attributes)
  t.equal(got.get(self)!.attributes!.nextHop, self.localAddress, 'next hop self is this session\'s address')
  t.equal(got.get(elsewhere)!.attributes!.nextHop, '192.0.2.200', 'another local address, another next hop')
  t.not(got.get(keep)!.attributes!.nextHop, self.localAddress, 'keep: the source\'s next hop')
})
