// Refused UPDATEs: counted per kind, logged once per burst with the count of those left unlogged, and
// exported as pinto_bgp_updates_refused_total{kind}.
import t from 'tap'
import { Registry } from 'prom-client'
import { BURST_MS, Refusals } from '../../../bgp/session/refusals.js'
import { registerPintoMetrics, type MetricsSources } from '../../../agent/metrics.js'

t.test('one line per burst and kind, every refusal counted', async (t) => {
  const r = new Refusals()
  const rows: [string, 'as-loop' | 'rfc8212', number, { unlogged: number } | undefined][] = [
    ['first AS loop logs', 'as-loop', 0, { unlogged: 0 }],
    ['the next within the burst is counted only', 'as-loop', 10, undefined],
    ['another kind logs on its own', 'rfc8212', 20, { unlogged: 0 }],
    ['still the burst', 'as-loop', BURST_MS - 1, undefined],
    ['after the burst: logs, with the two unlogged', 'as-loop', BURST_MS + 5, { unlogged: 2 }],
  ]
  for (const [name, kind, at, want] of rows) {
    const line = r.record(kind, `reason ${name}`, at)
    if (want === undefined) t.equal(line, undefined, name)
    else t.match(line, { kind, unlogged: want.unlogged, reason: `reason ${name}` }, name)
  }
  t.same(r.snapshot(), { 'as-loop': 4, rfc8212: 1 })
})

t.test('/metrics carries the counts per peer and kind', async (t) => {
  const registry = new Registry()
  const peer = { name: 'tor-1', address: '192.0.2.2', kind: 'global', type: 'ebgp', state: 'Established', refused: { 'as-loop': 3, 'next-hop': 1, 'afi-safi-disable': 2 }, disabledFamilies: ['ipv6-unicast'], counters: {}, prefixesReceived: 0, prefixesAccepted: 0, prefixesAdvertised: 0 }
  const src = { bgp: { peerStatus: () => [peer], locRibSize: 0 }, ipam: { pools: async () => [], blocks: async () => [] } } as unknown as MetricsSources
  registerPintoMetrics(registry, src)
  const text = await registry.metrics()
  t.match(text, /pinto_bgp_updates_refused_total\{peer="tor-1",address="192.0.2.2",type="global",kind="as-loop"\} 3/)
  t.match(text, /pinto_bgp_updates_refused_total\{peer="tor-1",address="192.0.2.2",type="global",kind="next-hop"\} 1/)
  t.match(text, /pinto_bgp_updates_refused_total\{peer="tor-1",address="192.0.2.2",type="global",kind="afi-safi-disable"\} 2/)
  t.match(text, /pinto_bgp_families_disabled\{peer="tor-1",address="192.0.2.2",type="global"\} 1/)
})
