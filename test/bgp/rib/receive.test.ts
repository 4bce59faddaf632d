// What the RIB accepts from a peer and how it keeps it: the semantic checks that need the peer
// (loops, first AS, ORIGINATOR_ID / CLUSTER_LIST, next hops), RFC 8212 on import, attributes an
// eBGP peer may not set, add-path keys, Loc-RIB changes per flush, graceful restart, originate.
import t from 'tap'
import { IPV4_UNICAST, IPV6_UNICAST, formatPrefix, type PathAttributes } from '../../../bgp/index.js'
import type { LocRibChange, Policy, RibPeer } from '../../../bgp/rib/index.js'
import { LOCAL_AS, ROUTER_ID, attrs, peer, px, rib, session } from './helpers.js'

const ibgp = peer({ address: '192.0.2.1' })
const ebgp = peer({ address: '192.0.2.3', asn: 65001 })

t.test('validation: accepted or not, with the reason', async (t) => {
  const rows: { name: string; from: RibPeer; a: PathAttributes; nextHop?: string[]; refused?: RegExp; clusterId?: string }[] = [
    { name: 'plain iBGP path', from: ibgp, a: attrs({ asns: [65001] }) },
    { name: 'our AS in the path', from: ibgp, a: attrs({ asns: [65001, LOCAL_AS] }), refused: /AS loop/ },
    { name: 'our AS once, allow local as 1', from: { ...ibgp, allowLocalAs: 1 }, a: attrs({ asns: [65001, LOCAL_AS] }) },
    { name: 'our AS twice, allow local as 1', from: { ...ibgp, allowLocalAs: 1 }, a: attrs({ asns: [LOCAL_AS, 65001, LOCAL_AS] }), refused: /AS loop/ },
    { name: 'eBGP path starting with the peer AS', from: ebgp, a: attrs({ asns: [65001, 3356] }) },
    { name: 'eBGP path starting with another AS', from: ebgp, a: attrs({ asns: [3356, 65001] }), refused: /first AS/ },
    { name: 'eBGP empty path', from: ebgp, a: attrs({}), refused: /first AS/ },
    { name: 'ORIGINATOR_ID is our router id', from: ibgp, a: attrs({ originatorId: ROUTER_ID }), refused: /ORIGINATOR_ID/ },
    { name: 'CLUSTER_LIST holds our cluster', from: ibgp, a: attrs({ clusterList: ['10.9.9.9', '10.1.1.1'] }), clusterId: '10.1.1.1', refused: /CLUSTER_LIST/ },
    { name: 'CLUSTER_LIST without our cluster', from: ibgp, a: attrs({ clusterList: ['10.9.9.9'] }), clusterId: '10.1.1.1' },
    { name: 'next hop 0.0.0.0', from: ibgp, a: attrs({ nextHop: '0.0.0.0' }), refused: /0\.0\.0\.0/ },
    { name: 'loopback next hop', from: ibgp, a: attrs({ nextHop: '127.0.0.1' }), refused: /loopback/ },
    { name: 'multicast next hop', from: ibgp, a: attrs({ nextHop: '224.0.0.5' }), refused: /multicast/ },
    { name: 'next hop is our own address', from: ibgp, a: attrs({ nextHop: ROUTER_ID }), refused: /own address/ },
    { name: 'IPv6 next hop ::', from: ibgp, a: attrs({ nextHop: undefined }), nextHop: ['::'], refused: /::/ },
    { name: 'IPv6 multicast next hop', from: ibgp, a: attrs({ nextHop: undefined }), nextHop: ['ff02::1'], refused: /multicast/ },
    { name: 'IPv6 global + link-local next hop', from: ibgp, a: attrs({ nextHop: undefined }), nextHop: ['2001:db8::1', 'fe80::1'] },
    { name: 'no next hop at all', from: ibgp, a: attrs({ nextHop: undefined }), refused: /no next hop/ },
  ]
  for (const r of rows) {
    const table = rib(r.clusterId === undefined ? {} : { clusterId: r.clusterId })
    const prefix = r.nextHop === undefined ? px('198.18.0.0/26') : px('2001:db8:1::/64')
    // An earlier good path from the same peer must go when the new one is refused (treat-as-withdraw).
    table.receive(r.from, session('10.0.0.1'), [prefix], r.nextHop === undefined ? attrs({ asns: r.from.type === 'ebgp' ? [65001] : [] }) : attrs({ nextHop: undefined }), r.nextHop === undefined ? undefined : ['2001:db8::9'])
    const reason = table.receive(r.from, session('10.0.0.1'), [prefix], r.a, r.nextHop)
    table.flush()
    if (r.refused === undefined) {
      t.equal(reason, undefined, `${r.name}: accepted`)
      t.ok(table.best(prefix), `${r.name}: in the Loc-RIB`)
    } else {
      t.match(reason?.reason, r.refused, `${r.name}: refused`)
      t.equal(table.best(prefix), undefined, `${r.name}: the earlier path is gone`)
      t.equal(table.counts(r.from).accepted, 0, `${r.name}: nothing accepted`)
    }
  }
})

t.test('eBGP may not set LOCAL_PREF, ORIGINATOR_ID or CLUSTER_LIST; iBGP keeps them', async (t) => {
  const table = rib()
  const a = attrs({ asns: [65001], localPref: 900, originatorId: '10.0.0.7', clusterList: ['10.0.0.8'] })
  table.receive(ebgp, session('10.0.0.1'), [px('198.18.0.0/26')], a)
  table.receive(ibgp, session('10.0.0.2'), [px('198.18.1.0/26')], a)
  const fromE = table.best(px('198.18.0.0/26'))!.path.attrs.attrs
  t.equal(fromE.localPref, undefined)
  t.equal(fromE.originatorId, undefined)
  t.equal(fromE.clusterList, undefined)
  const fromI = table.best(px('198.18.1.0/26'))!.path.attrs.attrs
  t.equal(fromI.localPref, 900)
  t.equal(fromI.originatorId, '10.0.0.7')
})

t.test('RFC 8212: an eBGP peer without import policy gets nothing accepted', async (t) => {
  const empty: Policy = { empty: true, apply: (_p, a) => a }
  const cases: { name: string; from: RibPeer; rfc8212?: boolean; accepted: boolean }[] = [
    { name: 'no policy', from: { ...ebgp, importPolicy: undefined }, accepted: false },
    { name: 'empty policy', from: { ...ebgp, importPolicy: empty }, accepted: false },
    { name: 'a policy', from: ebgp, accepted: true },
    { name: 'rfc8212 off', from: { ...ebgp, importPolicy: undefined }, rfc8212: false, accepted: true },
    { name: 'iBGP needs none', from: ibgp, accepted: true },
  ]
  for (const c of cases) {
    const table = rib(c.rfc8212 === undefined ? {} : { rfc8212: c.rfc8212 })
    const reason = table.receive(c.from, session('10.0.0.1'), [px('198.18.0.0/26')], attrs({ asns: c.from.type === 'ebgp' ? [65001] : [] }))
    t.equal(table.best(px('198.18.0.0/26')) !== undefined, c.accepted, c.name)
    if (!c.accepted) t.same(reason?.kind, "rfc8212", `${c.name}: says why`)
  }
})

t.test('import policy: rejects per prefix, changes attributes, shares the unchanged set', async (t) => {
  const policy: Policy = {
    empty: false,
    apply: (p, a) => (formatPrefix(p) === '198.18.0.0/26' ? undefined : formatPrefix(p) === '198.18.1.0/26' ? { ...a, localPref: 300 } : a),
  }
  const table = rib()
  const from = { ...ibgp, importPolicy: policy }
  table.receive(from, session('10.0.0.1'), [px('198.18.0.0/26'), px('198.18.1.0/26'), px('198.18.2.0/26'), px('198.18.3.0/26')], attrs())
  t.equal(table.best(px('198.18.0.0/26')), undefined)
  t.equal(table.best(px('198.18.1.0/26'))!.path.attrs.attrs.localPref, 300)
  t.equal(table.best(px('198.18.2.0/26'))!.path.attrs, table.best(px('198.18.3.0/26'))!.path.attrs, 'one interned set')
  t.same(table.counts(from), { received: 4, accepted: 3 })
  t.equal(table.attributeSets, 2)
})

t.test('flush emits each change once, with the previous best, and nothing when nothing changed', async (t) => {
  const table = rib()
  const seen: LocRibChange[][] = []
  const off = table.subscribe((c) => seen.push([...c]))
  const p = px('198.18.0.0/26')
  table.receive(ibgp, session('10.0.0.1'), [p], attrs({ med: 1 }))
  table.receive(ibgp, session('10.0.0.1'), [p], attrs({ med: 2 }))
  table.flush()
  t.equal(seen.length, 1)
  t.equal(seen[0]!.length, 1, 'two announcements, one change')
  const first = seen[0]![0]!
  t.equal(first.previous, undefined)
  t.equal(first.best!.path.attrs.attrs.med, 2)
  t.equal(first.prefix.pathId, 0)
  table.flush()
  t.equal(seen.length, 1, 'an empty flush emits nothing')
  // The same path again (a graceful-restart re-send) is no change.
  table.receive(ibgp, session('10.0.0.1'), [p], attrs({ med: 2 }))
  table.flush()
  t.equal(seen.length, 1)
  // Withdraw then announce again within one flush: one change against the path before.
  table.receive(ibgp, session('10.0.0.1'), [p], undefined)
  table.receive(ibgp, session('10.0.0.1'), [p], attrs({ med: 3 }))
  table.flush()
  t.equal(seen.length, 2)
  t.same(seen[1]![0]!.previous, first.best!.path, 'the path before, by content')
  table.receive(ibgp, session('10.0.0.1'), [p], undefined)
  table.flush()
  t.equal(seen[2]![0]!.best, undefined)
  t.equal(table.size, 0, 'an empty destination is dropped')
  off()
  table.receive(ibgp, session('10.0.0.1'), [p], attrs())
  table.flush()
  t.equal(seen.length, 3, 'unsubscribed')
})

t.test('what a listener changes during a flush comes out in the next flush, with the previous best', async (t) => {
  const table = rib()
  const seen: string[][] = []
  const a = px('198.18.0.0/26')
  const b = px('198.18.0.64/26')
  let reacted = false
  table.subscribe((c) => {
    seen.push(c.map((x) => `${formatPrefix(x.prefix)} ${x.best?.path.attrs.attrs.med ?? '-'} was ${x.previous?.attrs.attrs.med ?? '-'}`))
    if (reacted) return
    reacted = true
    // A listener that reacts to the Loc-RIB: a change to a prefix just settled and one to another.
    table.receive(ibgp, session('10.0.0.1'), [a], attrs({ med: 2 }))
    table.receive(ibgp, session('10.0.0.1'), [b], attrs({ med: 5 }))
  })
  table.receive(ibgp, session('10.0.0.1'), [a], attrs({ med: 1 }))
  table.flush()
  t.same(seen, [['198.18.0.0/26 1 was -']])
  table.flush()
  t.same(seen[1]!.sort(), ['198.18.0.0/26 2 was 1', '198.18.0.64/26 5 was -'])
  table.flush()
  t.equal(seen.length, 2, 'and nothing is left for a third')
})

t.test('add-path: paths from one peer are keyed by path id', async (t) => {
  const table = rib()
  table.receive(ibgp, session('10.0.0.1'), [px('198.18.0.0/26', 1)], attrs({ nextHop: '192.0.2.11' }))
  table.receive(ibgp, session('10.0.0.1'), [px('198.18.0.0/26', 2)], attrs({ nextHop: '192.0.2.12' }))
  t.equal(table.paths(px('198.18.0.0/26')).length, 2)
  t.equal(table.best(px('198.18.0.0/26'))!.reason, 'path-id')
  table.receive(ibgp, session('10.0.0.1'), [px('198.18.0.0/26', 1)], undefined)
  t.equal(table.paths(px('198.18.0.0/26')).length, 1)
  t.equal(table.best(px('198.18.0.0/26'))!.path.attrs.attrs.nextHop, '192.0.2.12')
  t.same([...table.adjRibIn(ibgp)].map((p) => p.prefix.pathId), [2])
})

t.test('ECMP: the multipath set reaches subscribers', async (t) => {
  const table = rib({ multipath: true })
  const e1 = peer({ address: '192.0.2.21', asn: 65001 })
  const e2 = peer({ address: '192.0.2.22', asn: 65001 })
  let last: LocRibChange | undefined
  table.subscribe((c) => (last = c[0]))
  table.receive(e1, session('10.0.0.1'), [px('198.18.0.0/26')], attrs({ asns: [65001], nextHop: '192.0.2.21' }))
  table.flush()
  t.equal(last!.best!.multipath.length, 1)
  table.receive(e2, session('10.0.0.2'), [px('198.18.0.0/26')], attrs({ asns: [65001], nextHop: '192.0.2.22' }))
  table.flush()
  t.same(last!.best!.multipath.map((p) => p.attrs.attrs.nextHop), ['192.0.2.21', '192.0.2.22'], 'a new equal path is a change though the best stays')
  t.equal(table.best(px('198.18.0.0/26'))!.multipath.length, 2, 'read back as well')
  // The set is kept beside the destination: it must go when the second path goes, and not come back.
  table.receive(e2, session('10.0.0.2'), [px('198.18.0.0/26')], undefined)
  table.flush()
  t.same(last!.best!.multipath.map((p) => p.attrs.attrs.nextHop), ['192.0.2.21'], 'one path left: no multipath set')
  table.receive(e1, session('10.0.0.1'), [px('198.18.0.0/26')], undefined)
  table.flush()
  t.equal(last!.best, undefined, 'withdrawn')
  table.receive(e1, session('10.0.0.1'), [px('198.18.0.0/26')], attrs({ asns: [65001], nextHop: '192.0.2.21' }))
  table.flush()
  t.equal(last!.best!.multipath.length, 1, 'a new destination for the prefix starts without one')
})

t.test('graceful restart: stale paths stay usable until End-of-RIB or the sweep', async (t) => {
  const table = rib()
  const other = peer({ address: '192.0.2.2' })
  const s = session('10.0.0.1')
  table.receive(ibgp, s, [px('198.18.0.0/26'), px('198.18.1.0/26')], attrs({ nextHop: '192.0.2.1' }))
  table.receive(ibgp, s, [px('2001:db8:1::/64')], attrs({ nextHop: undefined }), ['2001:db8::1'])
  table.receive(other, session('10.0.0.9'), [px('198.18.0.0/26')], attrs({ nextHop: '192.0.2.2' }))
  table.flush()
  t.equal(table.best(px('198.18.0.0/26'))!.path.peer, ibgp, 'lower router id first')

  table.peerDown(ibgp, new Set([IPV4_UNICAST]))
  table.flush()
  t.equal(table.paths(px('2001:db8:1::/64')).length, 0, 'a family not kept goes at once')
  t.ok(table.best(px('198.18.1.0/26'))!.path.stale, 'kept, marked stale')
  t.equal(table.best(px('198.18.0.0/26'))!.path.peer, ibgp, 'a stale path only loses by the normal rules')

  // The peer comes back and re-sends one prefix: it is fresh again; End-of-RIB removes the other.
  const changes: LocRibChange[] = []
  table.subscribe((c) => changes.push(...c))
  table.receive(ibgp, session('10.0.0.1'), [px('198.18.0.0/26')], attrs({ nextHop: '192.0.2.1' }))
  table.flush()
  t.equal(changes.length, 0, 'the same route again is no change')
  t.notOk(table.best(px('198.18.0.0/26'))!.path.stale)
  table.endOfRib(ibgp, IPV6_UNICAST)
  t.ok(table.best(px('198.18.1.0/26')), 'End-of-RIB of another family leaves IPv4 alone')
  table.endOfRib(ibgp, IPV4_UNICAST)
  table.flush()
  t.equal(table.best(px('198.18.1.0/26')), undefined)
  t.equal(table.best(px('198.18.0.0/26'))!.path.peer, ibgp)

  // Down again; the restart timer runs out.
  table.peerDown(ibgp, new Set([IPV4_UNICAST]))
  table.sweepStale(ibgp)
  table.flush()
  t.equal(table.best(px('198.18.0.0/26'))!.path.peer, other, 'the other peer takes over')
  t.equal(table.counts(ibgp).accepted, 0)
})

t.test('originate: ORIGIN IGP, empty AS_PATH, preferred over learned paths, withdrawn cleanly', async (t) => {
  const table = rib()
  const p = px('198.18.0.0/26')
  table.receive(ibgp, session('10.0.0.1'), [p], attrs({ localPref: 1000 }))
  table.originate(p)
  table.flush()
  const best = table.best(p)!
  t.equal(best.path.peer, undefined)
  t.equal(best.reason, 'local-origin')
  t.same(best.path.attrs.attrs, { origin: 0, asPath: [] })
  table.withdrawOrigin(p)
  table.flush()
  t.equal(table.best(p)!.path.peer, ibgp)
  t.same([...table.locRib()].map(([q]) => formatPrefix(q)), ['198.18.0.0/26'])
})

t.test('peer down without graceful restart removes every path of the peer', async (t) => {
  const table = rib()
  table.receive(ibgp, session('10.0.0.1'), [px('198.18.0.0/26'), px('2001:db8::/64')], attrs({ nextHop: undefined }), ['2001:db8::1'])
  table.peerDown(ibgp, new Set())
  table.flush()
  t.equal(table.size, 0)
  t.same([...table.adjRibIn(ibgp)], [])
  t.equal(table.attributeSets, 0, 'interned sets released')
})

t.test('a prefix with one path from a peer keeps no object of its own; reads and changes carry its content', async (t) => {
  const table = rib()
  const p = px('198.18.0.0/26')
  const other = peer({ address: '192.0.2.2' })
  const changes: LocRibChange[] = []
  table.subscribe((c) => changes.push(...c))
  table.receive(ibgp, session('10.0.0.1'), [p], attrs({ med: 1 }))
  table.flush()
  const first = table.best(p)!.path
  t.same(table.best(p)!.path, first, 'read twice: the same path')
  // Withdrawn and announced again with other attributes before a flush: a change.
  table.receive(ibgp, session('10.0.0.1'), [p], undefined)
  table.receive(ibgp, session('10.0.0.1'), [p], attrs({ med: 2 }))
  table.flush()
  t.equal(table.best(p)!.path.attrs.attrs.med, 2)
  t.equal(changes.length, 2, 'the change is seen')
  t.same(changes[1]?.previous, first, 'with the path before')
  // Replaced again: again a change.
  table.receive(ibgp, session('10.0.0.1'), [p], attrs({ med: 3 }))
  table.flush()
  t.equal(changes.length, 3)
  t.same(table.paths(p).map((x) => x.attrs.attrs.med), [3])
  // A worse path joins (higher MED from another iBGP peer): the paths become objects, the best stays.
  table.receive(other, session('10.0.0.2'), [p], attrs({ med: 9 }))
  table.flush()
  t.equal(changes.length, 3, 'no change: the best is the same path')
  t.same(table.paths(p).map((x) => x.attrs.attrs.med).sort(), [3, 9])
  t.equal(table.best(p)!.path.peer, ibgp)
  // The better one goes: a change to the other, with the compact path's content as the previous.
  table.receive(ibgp, session('10.0.0.1'), [p], undefined)
  table.flush()
  t.equal(changes.length, 4)
  t.equal(changes[3]!.previous!.attrs.attrs.med, 3)
  t.equal(changes[3]!.best!.path.peer, other)
  // And the last: the destination is freed, and the prefix can come back as a compact path.
  table.receive(other, session('10.0.0.2'), [p], undefined)
  table.flush()
  t.equal(table.size, 0)
  table.receive(ibgp, session('10.0.0.1'), [p], attrs({ med: 4 }))
  table.flush()
  t.equal(table.best(p)!.path.attrs.attrs.med, 4)
  t.equal(table.size, 1)
})

t.test('a destination keeps its prefix exactly: every length of both families, and its path id 0', async (t) => {
  const table = rib()
  const prefixes = ['0.0.0.0/0', '198.18.0.0/15', '198.18.7.9/32', '::/0', '2001:db8::/32', '2001:db8::1/128']
  for (const text of prefixes) {
    const p = px(text)
    table.receive(ibgp, session('10.0.0.1'), [p], text.includes(':') ? attrs({ nextHop: undefined }) : attrs(), text.includes(':') ? ['2001:db8::9'] : undefined)
  }
  table.flush()
  for (const text of prefixes) {
    const path = table.best(px(text))!.path
    t.equal(formatPrefix(path.prefix), text)
    t.equal(path.prefix.pathId, 0)
    t.equal(path.prefix.afi, text.includes(':') ? 2 : 1)
    t.equal(path.stale, false)
  }
})

t.test('dropFamily (RFC 4760 §7): the family named goes, stale paths too; the other family and its stale paths stay', async (t) => {
  const table = rib()
  const kept = peer({ address: '192.0.2.5', importTable: true })
  const s = session('10.0.0.5')
  const v6 = [px('2001:db8:1::/64'), px('2001:db8:2::/64')]
  table.receive(kept, s, [px('198.18.0.0/26'), px('198.18.1.0/26')], attrs({ nextHop: '192.0.2.5' }))
  table.receive(kept, s, v6, attrs({ nextHop: undefined }), ['2001:db8::5'])
  table.flush()
  t.same(table.counts(kept), { received: 4, accepted: 4, importTable: 4 })
  const changes: LocRibChange[] = []
  table.subscribe((c) => changes.push(...c))

  table.dropFamily(kept, IPV6_UNICAST)
  table.flush()
  t.same(changes.map((c) => [formatPrefix(c.prefix), c.best === undefined ? 'gone' : 'kept']).sort(), v6.map((p) => [formatPrefix(p), 'gone']))
  t.same(table.counts(kept), { received: 4, accepted: 2, importTable: 2 }, 'received stays what the session sent')
  t.ok(table.best(px('198.18.0.0/26')) && table.best(px('198.18.1.0/26')), 'IPv4 stays')

  // Through a graceful restart: both families stale, IPv4 dropped; End-of-RIB for IPv6 leaves the re-sent one.
  table.receive(kept, s, v6, attrs({ nextHop: undefined }), ['2001:db8::5'])
  table.peerDown(kept, new Set([IPV4_UNICAST, IPV6_UNICAST]))
  table.receive(kept, s, [v6[0]!], attrs({ nextHop: undefined }), ['2001:db8::5'])
  table.dropFamily(kept, IPV4_UNICAST)
  table.flush()
  t.equal(table.best(px('198.18.0.0/26')), undefined, 'stale IPv4 paths went with the family')
  t.ok(table.best(v6[1]!)?.path.stale, 'stale IPv6 stays')
  table.endOfRib(kept, IPV6_UNICAST)
  table.flush()
  t.equal(table.best(v6[1]!), undefined, 'End-of-RIB still sweeps the IPv6 stale path')
  t.equal(table.best(v6[0]!)?.path.stale, false)
  t.equal(table.counts(kept).accepted, 1)
  table.peerDown(kept, new Set())
  table.flush()
  t.equal(table.attributeSets, 0, 'interned sets released')
})
