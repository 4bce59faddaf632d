// What each peer is sent: the route-reflection matrix (RFC 4456 §6), split horizon, never back to
// the source, eBGP transformations, next hop self/keep/auto, RFC 8212 on export, export policy,
// families, and the Adj-RIB-Out batching (grouping, limits, collapsing, withdraws only of what was sent).
import t from 'tap'
import { IPV4_UNICAST, formatPrefix, packUpdates, codecOptions, type PathAttributes, type Prefix } from '../../../bgp/index.js'
import type { AdjRibOut, OutBatch, Policy, RibPeer } from '../../../bgp/rib/index.js'
import type { Rib } from '../../../bgp/rib/index.js'
import { LOCAL_AS, ROUTER_ID, attrs, peer, px, rib, session } from './helpers.js'

const CLUSTER = '10.1.1.1'
const client1 = peer({ address: '192.0.2.1', rrClient: true })
const client2 = peer({ address: '192.0.2.2', rrClient: true })
const nonClient1 = peer({ address: '192.0.2.3' })
const nonClient2 = peer({ address: '192.0.2.4' })
const ebgp1 = peer({ address: '192.0.2.5', asn: 65001 })
const ebgp2 = peer({ address: '192.0.2.6', asn: 65002 })

/** The announcements `target` gets for one route learned from `source` (undefined: originated). */
function sentFor(table: Rib, source: RibPeer | undefined, target: RibPeer, a: PathAttributes = attrs(), prefix: Prefix = px('198.18.0.0/26'), nextHop?: string[]) {
  const out = table.attachPeer(target)
  if (source === undefined) table.originate(prefix, a)
  else table.receive(source, session(`10.0.0.${source.id % 250}`), [prefix], a, nextHop)
  table.flush()
  const batches = out.take(100)
  table.detachPeer(target)
  return batches.flatMap((b) => b.announce.map((p) => ({ prefix: formatPrefix(p), attributes: b.attributes!, nextHop: b.nextHop })))
}

t.test('route reflection matrix', async (t) => {
  const rows: { source: RibPeer | undefined; target: RibPeer; reflector: boolean; sent: boolean }[] = [
    { source: client1, target: client2, reflector: true, sent: true },
    { source: client1, target: nonClient1, reflector: true, sent: true },
    { source: nonClient1, target: client1, reflector: true, sent: true },
    { source: nonClient1, target: nonClient2, reflector: true, sent: false },
    { source: client1, target: client1, reflector: true, sent: false },
    { source: ebgp1, target: client1, reflector: true, sent: true },
    { source: ebgp1, target: nonClient1, reflector: true, sent: true },
    { source: client1, target: ebgp1, reflector: true, sent: true },
    { source: ebgp1, target: ebgp1, reflector: true, sent: false },
    { source: ebgp1, target: ebgp2, reflector: true, sent: true },
    { source: undefined, target: nonClient1, reflector: true, sent: true },
    { source: nonClient1, target: nonClient2, reflector: false, sent: false },
    { source: client1, target: client2, reflector: false, sent: false },
    { source: ebgp1, target: nonClient1, reflector: false, sent: true },
    { source: nonClient1, target: ebgp1, reflector: false, sent: true },
    { source: undefined, target: nonClient1, reflector: false, sent: true },
  ]
  for (const r of rows) {
    const table = rib(r.reflector ? { clusterId: CLUSTER } : {})
    const a = attrs({ asns: r.source?.type === 'ebgp' ? [r.source.asn] : [] })
    const got = sentFor(table, r.source, r.target, a)
    const name = `${r.source?.address ?? 'local'} (${r.source?.rrClient ? 'client' : r.source?.type ?? 'local'}) -> ${r.target.address} (${r.target.rrClient ? 'client' : r.target.type}), ${r.reflector ? 'reflector' : 'no reflection'}`
    t.equal(got.length, r.sent ? 1 : 0, name)
  }
})

t.test('reflected paths carry ORIGINATOR_ID and our cluster id first', async (t) => {
  const table = rib({ clusterId: CLUSTER })
  const [fresh] = sentFor(table, client1, client2, attrs({ med: 7 }))
  t.equal(fresh!.attributes.originatorId, `10.0.0.${client1.id % 250}`, 'the source router id when absent')
  t.same(fresh!.attributes.clusterList, [CLUSTER])
  t.equal(fresh!.attributes.med, 7, 'MED stays inside the AS')
  t.equal(fresh!.attributes.localPref, 100, 'LOCAL_PREF filled in for iBGP')
  const [again] = sentFor(rib({ clusterId: CLUSTER }), client1, nonClient1, attrs({ originatorId: '10.9.9.9', clusterList: ['10.2.2.2'] }))
  t.equal(again!.attributes.originatorId, '10.9.9.9', 'an existing ORIGINATOR_ID is kept')
  t.same(again!.attributes.clusterList, [CLUSTER, '10.2.2.2'])
  const [notReflected] = sentFor(rib({ clusterId: CLUSTER }), ebgp1, client1, attrs({ asns: [65001] }))
  t.equal(notReflected!.attributes.originatorId, undefined, 'an eBGP path is not reflected, only advertised')
  t.equal(notReflected!.attributes.clusterList, undefined)
})

t.test('toward eBGP: our AS first, no LOCAL_PREF, MED only for our own routes, no RR attributes', async (t) => {
  const target = { ...ebgp2, localAsn: 64999 }
  const [learned] = sentFor(rib({ clusterId: CLUSTER }), client1, target, attrs({ asns: [65010], localPref: 300, med: 9, originatorId: '10.9.9.9', clusterList: ['10.2.2.2'] }))
  t.same(learned!.attributes.asPath, [{ type: 2, asns: [64999, 65010] }], 'the per-peer local AS is prepended')
  t.equal(learned!.attributes.localPref, undefined)
  t.equal(learned!.attributes.med, undefined)
  t.equal(learned!.attributes.originatorId, undefined)
  t.equal(learned!.attributes.clusterList, undefined)
  const [own] = sentFor(rib(), undefined, target, { med: 5 })
  t.same(own!.attributes.asPath, [{ type: 2, asns: [64999] }])
  t.equal(own!.attributes.med, 5, 'our own MED goes out')
  t.equal(own!.attributes.origin, 0)
  const [afterSet] = sentFor(rib(), nonClient1, target, { origin: 0, asPath: [{ type: 1, asns: [1, 2] }], nextHop: '192.0.2.10' })
  t.same(afterSet!.attributes.asPath, [{ type: 2, asns: [64999] }, { type: 1, asns: [1, 2] }], 'a new sequence before an AS_SET')
})

t.test('next hop self / keep / auto', async (t) => {
  const v6 = px('2001:db8:1::/64')
  const rows: { name: string; source: RibPeer | undefined; target: RibPeer; prefix?: Prefix; mp?: string[]; want: string }[] = [
    { name: 'auto toward iBGP keeps', source: ebgp1, target: nonClient1, want: '192.0.2.10' },
    { name: 'auto toward eBGP is self', source: nonClient1, target: ebgp2, want: ROUTER_ID },
    { name: 'self toward iBGP', source: ebgp1, target: { ...nonClient1, nextHopMode: 'self' }, want: ROUTER_ID },
    { name: 'keep toward eBGP', source: ebgp1, target: { ...ebgp2, nextHopMode: 'keep' }, want: '192.0.2.10' },
    { name: 'our own route is always self', source: undefined, target: { ...nonClient1, nextHopMode: 'keep' }, want: ROUTER_ID },
    { name: 'IPv6 keep sends the global address only', source: ebgp1, target: nonClient1, prefix: v6, mp: ['2001:db8::10', 'fe80::10'], want: '2001:db8::10' },
    { name: 'IPv6 self uses localAddress6', source: nonClient1, target: ebgp2, prefix: v6, mp: ['2001:db8::10'], want: '2001:db8::fe' },
    { name: 'IPv6 keep of a link-local only next hop falls back to self', source: ebgp1, target: nonClient1, prefix: v6, mp: ['fe80::10'], want: '2001:db8::fe' },
  ]
  for (const r of rows) {
    const a = attrs({ asns: r.source?.type === 'ebgp' ? [r.source.asn] : [], ...(r.mp ? { nextHop: undefined } : {}) })
    const [got] = sentFor(rib(), r.source, r.target, r.source === undefined ? {} : a, r.prefix ?? px('198.18.0.0/26'), r.mp)
    const hop = r.prefix === undefined ? got!.attributes.nextHop : got!.nextHop?.[0]
    t.equal(hop, r.want, r.name)
    if (r.prefix !== undefined) t.equal(got!.attributes.nextHop, undefined, `${r.name}: no NEXT_HOP attribute for IPv6`)
  }
})

t.test('RFC 8212 and export policy', async (t) => {
  const empty: Policy = { empty: true, apply: (_p, a) => a }
  t.equal(sentFor(rib(), nonClient1, { ...ebgp1, exportPolicy: undefined }).length, 0, 'no export policy: nothing to eBGP')
  t.equal(sentFor(rib(), nonClient1, { ...ebgp1, exportPolicy: empty }).length, 0, 'an empty policy counts as none')
  t.equal(sentFor(rib({ rfc8212: false }), nonClient1, { ...ebgp1, exportPolicy: undefined }).length, 1, 'rfc8212 off')
  t.equal(sentFor(rib(), ebgp1, nonClient1, attrs({ asns: [65001] })).length, 1, 'iBGP needs no policy')
  const tagging: Policy = {
    empty: false,
    apply: (p, a, target, route) => {
      t.equal(target.address, ebgp2.address, 'the policy sees the target peer')
      t.equal(route?.fromPeer, true)
      return formatPrefix(p) === '198.18.0.0/26' ? { ...a, communities: [0xfde80001] } : undefined
    },
  }
  const [tagged] = sentFor(rib(), nonClient1, { ...ebgp2, exportPolicy: tagging })
  t.same(tagged!.attributes.communities, [0xfde80001])
  t.same(tagged!.attributes.asPath, [{ type: 2, asns: [LOCAL_AS] }], 'the policy runs before our AS is prepended')
  t.equal(sentFor(rib(), nonClient1, { ...ebgp2, exportPolicy: tagging }, attrs(), px('198.18.9.0/26')).length, 0, 'rejected by policy')
})

t.test('only negotiated families', async (t) => {
  const v4only = { ...nonClient1, families: new Set([IPV4_UNICAST]) }
  t.equal(sentFor(rib(), ebgp1, v4only, attrs({ asns: [65001], nextHop: undefined }), px('2001:db8::/64'), ['2001:db8::10']).length, 0)
})

function announced(batches: OutBatch[]): string[] {
  return batches.flatMap((b) => b.announce.map((p) => `+${formatPrefix(p)}`)).concat(batches.flatMap((b) => b.withdraw.map((p) => `-${formatPrefix(p)}`)))
}

t.test('batching: grouped by attribute set, limited by take(max), ready for packUpdates', async (t) => {
  const table = rib()
  const out = table.attachPeer(nonClient1)
  let signals = 0
  out.onPending(() => signals++)
  const s = session('10.0.0.9')
  table.receive(ebgp1, s, ['198.18.0.0/26', '198.18.1.0/26', '198.18.2.0/26'].map((x) => px(x)), attrs({ asns: [65001] }))
  table.receive(ebgp1, s, ['198.18.3.0/26', '198.18.4.0/26'].map((x) => px(x)), attrs({ asns: [65001, 7] }))
  table.receive(ebgp1, s, [px('2001:db8::/64')], attrs({ asns: [65001], nextHop: undefined }), ['2001:db8::10'])
  table.flush()
  t.equal(signals, 1, 'one signal per burst')
  t.equal(out.pending, 6)
  const first = out.take(4)
  t.equal(first.reduce((n, b) => n + b.announce.length, 0), 4, 'at most max prefixes')
  t.equal(out.pending, 2)
  const rest = out.take(100)
  const all = [...first, ...rest]
  t.equal(all.filter((b) => b.announce.length > 0).length, 4, 'one batch per set and family per take')
  t.equal(out.pending, 0)
  t.equal(out.size, 6)
  const opts = codecOptions({ as4: true })
  for (const b of all) t.ok(packUpdates(b, opts).length > 0, 'packs')
  const v6 = all.find((b) => b.afi === 2)!
  t.same(v6.nextHop, ['2001:db8::10'])
  t.same(out.take(10), [], 'nothing left')
  table.receive(ebgp1, s, [px('198.18.9.0/26')], attrs({ asns: [65001] }))
  table.flush()
  t.equal(signals, 2, 'a new burst signals again')
  t.same([...out.entries()].map((e) => formatPrefix(e.prefix)).sort(), ['198.18.0.0/26', '198.18.1.0/26', '198.18.2.0/26', '198.18.3.0/26', '198.18.4.0/26', '198.18.9.0/26', '2001:db8::/64'])
})

t.test('collapsing: a prefix changed several times goes out once, as it last stood', async (t) => {
  const table = rib()
  const out: AdjRibOut = table.attachPeer(nonClient1)
  const s = session('10.0.0.9')
  const p = px('198.18.0.0/26')
  /** One UPDATE section and a flush; null withdraws. */
  const send = (med?: number | null): void => {
    table.receive(ebgp1, s, [p], med === null ? undefined : attrs({ asns: [65001], ...(med === undefined ? {} : { med }) }))
    table.flush()
  }
  // Announced and withdrawn before take(): never sent, so no withdraw either.
  send()
  send(null)
  t.same(announced(out.take(10)), [], 'nothing for a prefix the peer never had')
  // Sent, then changed twice: one announcement with the last attributes.
  send()
  t.same(announced(out.take(10)), ['+198.18.0.0/26'])
  send(1)
  send(2)
  const b = out.take(10)
  t.same(announced(b), ['+198.18.0.0/26'])
  t.equal(b[0]!.attributes!.med, 2)
  // Withdrawn and announced again between two takes, across flushes: one announcement, no withdraw.
  send(null)
  send(3)
  const again = out.take(10)
  t.same(announced(again), ['+198.18.0.0/26'])
  t.equal(again[0]!.attributes!.med, 3)
  // A real withdraw of something sent.
  send(null)
  t.same(announced(out.take(10)), ['-198.18.0.0/26'])
  t.equal(out.size, 0)
})

t.test('a better path from the target itself turns into a withdraw toward it', async (t) => {
  const table = rib()
  const out = table.attachPeer(ebgp2)
  const p = px('198.18.0.0/26')
  table.receive(ebgp1, session('10.0.0.1'), [p], attrs({ asns: [65001, 1, 2] }))
  table.flush()
  t.same(announced(out.take(10)), ['+198.18.0.0/26'])
  table.receive(ebgp2, session('10.0.0.2'), [p], attrs({ asns: [65002] }))
  table.flush()
  t.same(announced(out.take(10)), ['-198.18.0.0/26'], 'never back to the peer it came from')
})

t.test('attach sends the current Loc-RIB; refresh queues it again; detach forgets', async (t) => {
  const table = rib()
  table.originate(px('198.18.0.0/26'))
  table.receive(ebgp1, session('10.0.0.1'), [px('198.18.1.0/26')], attrs({ asns: [65001] }))
  table.flush()
  const out = table.attachPeer(nonClient1)
  t.equal(out.pending, 2)
  t.same(announced(out.take(10)).sort(), ['+198.18.0.0/26', '+198.18.1.0/26'])
  out.refresh(IPV4_UNICAST)
  t.equal(out.pending, 2, 'route refresh: everything again')
  out.take(10)
  table.detachPeer(nonClient1)
  t.equal(out.size, 0)
})

t.test('an Adj-RIB-Out withdraws an emptied destination before its index serves another prefix', async (t) => {
  const table = rib()
  const src = peer({ address: '192.0.2.5', asn: 65005 })
  const to = peer({ address: '192.0.2.6', asn: 65006 })
  const out = table.attachPeer(to)
  const a = px('198.18.0.0/24')
  const b = px('198.18.1.0/24')
  const from = session('10.0.0.5')
  const sent = (batches: OutBatch[], what: 'announce' | 'withdraw'): string[] => batches.flatMap((x) => x[what]).map(formatPrefix).sort()
  table.receive(src, from, [a], attrs({ asns: [65005] }))
  table.flush()
  t.same(sent(out.take(100), 'announce'), ['198.18.0.0/24'])
  table.receive(src, from, [a], undefined)
  table.flush()
  t.equal(table.size, 1, 'an emptied destination the peer holds stays until it is withdrawn')
  table.receive(src, from, [b], attrs({ asns: [65005] }))
  table.flush()
  const next = out.take(100)
  t.same(sent(next, 'withdraw'), ['198.18.0.0/24'], 'the withdrawal names the old prefix')
  t.same(sent(next, 'announce'), ['198.18.1.0/24'])
  t.equal(table.size, 1, 'withdrawn, the destination is freed')
  table.receive(src, from, [a], attrs({ asns: [65005] }))
  table.flush()
  t.same(sent(out.take(100), 'announce'), ['198.18.0.0/24'], 'back on a freed index, sent as itself')
  t.same([...out.entries()].map((e) => formatPrefix(e.prefix)).sort(), ['198.18.0.0/24', '198.18.1.0/24'])
  t.equal(out.size, 2)
  // Queued but never sent, emptied and freed, its index taken by another prefix: that one goes out.
  const c = px('198.18.2.0/24')
  const d = px('198.18.3.0/24')
  table.receive(src, from, [c], attrs({ asns: [65005] }))
  table.flush()
  table.receive(src, from, [c], undefined)
  table.flush()
  table.receive(src, from, [d], attrs({ asns: [65005] }))
  table.flush()
  const last = out.take(100)
  t.same(sent(last, 'announce'), ['198.18.3.0/24'])
  t.same(sent(last, 'withdraw'), [], 'nothing to withdraw for a prefix never sent')
  // The session goes: what it held is let go, and emptied destinations are freed.
  table.receive(src, from, [a, b, d], undefined)
  table.flush()
  t.equal(table.size, 3, 'held by the Adj-RIB-Out')
  table.detachPeer(to)
  t.equal(table.size, 0)
})
