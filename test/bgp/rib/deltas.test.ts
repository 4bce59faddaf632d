// The Loc-RIB's typed deltas against its LocRibChange objects: after random operations (dumps through the
// IPv4 and IPv6 column paths and the object path, multipath, our own routes, withdrawals, sessions going down), every
// flush hands delta listeners exactly the changes it hands change listeners, as numbers: prefix, withdrawn,
// ours, new, next hops, LOCAL_PREF. The streaming walk names every best path as locRib() does.

import t from 'tap'
import { formatIpv4, formatIpv6 } from '../../../net/index.js'
import { IPV4_UNICAST, formatPrefix, ipv4Prefix, type Prefix } from '../../../bgp/index.js'
import { DELTA_LOCAL, DELTA_NEW, DELTA_WITHDRAWN, type BestPath, type LocRibChange, type LocRibDeltas, type Rib } from '../../../bgp/rib/index.js'
import { attrs, peer, px, rib, session } from './helpers.js'
import { Rng } from '../../harness/random.js'

function deltaText(d: LocRibDeltas, i: number): string {
  const prefix = d.family(i) === 4 ? `${formatIpv4(d.ipv4(i))}/${d.len(i)}` : `${formatIpv6(d.ipv6(i))}/${d.len(i)}`
  const f = d.flags(i)
  if ((f & DELTA_WITHDRAWN) !== 0) return `${prefix} withdrawn`
  const hops = Array.from({ length: d.hopCount(i) }, (_, k) => d.nextHops.text(d.hop(i, k))).sort()
  return `${prefix}${(f & DELTA_LOCAL) !== 0 ? ' ours' : ''}${(f & DELTA_NEW) !== 0 ? ' new' : ''} via ${hops.join(',')} lp=${d.localPref(i) ?? '-'}`
}

function bestText(prefix: Prefix, best: BestPath | undefined, isNew: boolean): string {
  if (best === undefined) return `${formatPrefix(prefix)} withdrawn`
  const hops = new Set<string>()
  for (const p of best.multipath.length > 0 ? best.multipath : [best.path]) {
    const a = p.attrs.nextHop[0] ?? p.attrs.attrs.nextHop
    if (a !== undefined) hops.add(a)
  }
  return `${formatPrefix(prefix)}${best.path.peer === undefined ? ' ours' : ''}${isNew ? ' new' : ''} via ${[...hops].sort().join(',')} lp=${best.path.attrs.attrs.localPref ?? '-'}`
}

const changeText = (c: LocRibChange): string => bestText(c.prefix, c.best, c.previous === undefined)

function walked(r: Rib): string[] {
  const out: string[] = []
  r.walkLocRib((d) => {
    for (let i = 0; i < d.count; i++) out.push(deltaText(d, i))
  }, 7)
  return out.sort()
}

t.test('every flush hands delta listeners the changes it hands change listeners', async (t) => {
  for (const seed of [1, 2, 3, 4, 5, 6]) {
    const rng = new Rng(seed)
    const r = rib({ multipath: true })
    const peers = [peer({ address: '192.0.2.1' }), peer({ address: '192.0.2.2' }), peer({ address: '192.0.2.3', asn: 65001 })]
    const byChanges: string[] = []
    const byDeltas: string[] = []
    r.subscribe((cs) => byChanges.push(cs.map(changeText).sort().join('\n')))
    r.subscribeDeltas((d) => byDeltas.push(Array.from({ length: d.count }, (_, i) => deltaText(d, i)).sort().join('\n')))
    const pool: Prefix[] = []
    for (let i = 0; i < 40; i++) pool.push(ipv4Prefix((0xc6120000 + i * 256) >>> 0, [24, 26, 32][i % 3]!))
    pool.push(px('2001:db8:1::/64'), px('2001:db8:2::/64'))
    const pick = (): Prefix[] => Array.from({ length: 1 + rng.int(10) }, () => rng.pick(pool))
    for (let step = 0; step < 300; step++) {
      const who = rng.pick(peers)
      const x = rng.int(100)
      if (x < 45) {
        const ps = pick()
        const v4 = ps.filter((p) => p.afi === 1)
        const v6 = ps.filter((p) => p.afi === 2)
        const a = attrs({ ...(who.type === 'ebgp' ? { asns: [65001] } : {}), ...(rng.int(3) === 0 ? { localPref: 100 + rng.int(3) } : {}), nextHop: rng.pick(['192.0.2.1', '192.0.2.2', '192.0.2.3']) })
        if (rng.int(2) === 0) {
          const addr = new Int32Array(v4.map((p) => (p.afi === 1 ? p.addr | 0 : 0)))
          r.receiveIpv4(who, session(who.address), { count: v4.length, addr, len: new Uint8Array(v4.map((p) => p.len)) }, a)
        } else r.receive(who, session(who.address), v4, a)
        if (v6.length > 0 && rng.int(2) === 0) {
          const addr = new Uint8Array(v6.length * 16)
          v6.forEach((p, k) => addr.set(p.afi === 2 ? p.addr : [], k * 16))
          r.receiveIpv6(who, session(who.address), { count: v6.length, addr, len: new Uint8Array(v6.map((p) => p.len)) }, { ...a, nextHop: undefined }, ['2001:db8::1'])
        } else if (v6.length > 0) r.receive(who, session(who.address), v6, { ...a, nextHop: undefined }, ['2001:db8::1'])
      } else if (x < 65) r.receive(who, session(who.address), pick(), undefined)
      else if (x < 72) r.originate(rng.pick(pool))
      else if (x < 76) r.withdrawOrigin(rng.pick(pool))
      else if (x < 79) r.peerDown(who, rng.int(2) === 0 ? new Set([IPV4_UNICAST]) : new Set())
      else r.flush()
    }
    r.flush()
    t.same(byDeltas, byChanges, `seed ${seed}: the same changes, flush by flush`)
    const full = [...r.locRib()].map(([p, best]) => bestText(p, best, false)).sort()
    t.same(walked(r), full, `seed ${seed}: the walk names every best path`)
  }
})

t.test('a delta listener that stops listening hears nothing more, and the batch is read only during the call', async (t) => {
  const r = rib()
  const from = peer({ address: '192.0.2.1' })
  let seen = 0
  let held: LocRibDeltas | undefined
  const off = r.subscribeDeltas((d) => {
    seen += d.count
    held = d
  })
  r.receive(from, session('192.0.2.1'), [px('198.18.0.0/26'), px('198.18.0.64/26')], attrs())
  r.flush()
  t.equal(seen, 2)
  t.equal(held?.count, 0, 'the batch is emptied once the listeners have read it')
  off()
  r.receive(from, session('192.0.2.1'), [px('198.18.0.128/26')], attrs())
  r.flush()
  t.equal(seen, 2)
})
