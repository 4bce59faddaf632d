// receiveIpv4 and receiveIpv6 (prefixes as columns, the table-dump path) against receive (prefix objects):
// the same operations through each leave the same Loc-RIB, the same changes to subscribers, the same
// counters and the same attribute sets, including prefixes already held, stale paths, policy, refused
// sections and withdrawals; and a dump that crosses the table's growth and page boundaries.
import t, { type Test } from 'tap'
import { IPV4_UNICAST, IPV6_UNICAST, formatPrefix, ipv4Prefix, ipv6Prefix, type Ipv4Prefixes, type Ipv6Prefixes, type PathAttributes, type Prefix } from '../../../bgp/index.js'
import type { LocRibChange, Policy, Rib, RibPeer } from '../../../bgp/rib/index.js'
import { ACCEPT_ALL } from '../../../bgp/policy/index.js'
import { compilePoolGuard, guardPoolPrefixes } from '../../../bgp/policy/pool-guard.js'
import { LOCAL_AS, attrs, peer, rib, session } from './helpers.js'
import { Rng } from '../../harness/random.js'
import { parseIpv6 } from '../../../net/index.js'

function columns(prefixes: readonly Prefix[]): Ipv4Prefixes {
  const addr = new Int32Array(prefixes.length)
  const len = new Uint8Array(prefixes.length)
  prefixes.forEach((p, i) => {
    if (p.afi !== 1) throw new Error('IPv4 only')
    addr[i] = p.addr | 0
    len[i] = p.len
  })
  return { count: prefixes.length, addr, len }
}

function columns6(prefixes: readonly Prefix[]): Ipv6Prefixes {
  const addr = new Uint8Array(prefixes.length * 16)
  const len = new Uint8Array(prefixes.length)
  prefixes.forEach((p, i) => {
    if (p.afi !== 2) throw new Error('IPv6 only')
    addr.set(p.addr, i * 16)
    len[i] = p.len
  })
  return { count: prefixes.length, addr, len }
}

function changeText(c: LocRibChange): string {
  const path = (p: { peer?: RibPeer | undefined; attrs: { attrs: PathAttributes }; stale: boolean } | undefined): string =>
    p === undefined ? '-' : `${p.peer?.name ?? 'local'} med=${p.attrs.attrs.med ?? '-'} lp=${p.attrs.attrs.localPref ?? '-'} stale=${p.stale}`
  return `${formatPrefix(c.prefix)} ${path(c.best?.path)} <- ${path(c.previous)}`
}

function state(r: Rib, peers: readonly RibPeer[]): string[] {
  const out: string[] = []
  for (const [p, best] of r.locRib()) {
    out.push(`${formatPrefix(p)} ${best.path.peer?.name} med=${best.path.attrs.attrs.med ?? '-'} stale=${best.path.stale} reason=${best.reason}`)
  }
  out.sort()
  for (const p of peers) out.push(`${p.name} ${JSON.stringify(r.counts(p))}`)
  out.push(`size=${r.size} attributeSets=${r.attributeSets}`)
  return out
}

const halfPolicy: Policy = {
  empty: false,
  // Rejects every prefix whose third octet is odd; raises LOCAL_PREF on /32s.
  apply: (p, a) => (p.afi === 1 && ((p.addr >>> 8) & 1) === 1 ? undefined : p.len === 32 ? { ...a, localPref: 300 } : a),
}

/** One family's differential run: the peers, the prefixes sections are picked from, and how each side receives. */
interface Differential {
  /** IPV4_UNICAST or IPV6_UNICAST. */
  readonly family: number
  readonly seeds: readonly number[]
  readonly peers: () => RibPeer[]
  readonly pool: readonly Prefix[]
  /** The MP_REACH next hop of an announcement (none for IPv4's NLRI field). */
  readonly nextHop?: readonly string[]
  readonly byColumns: (r: Rib, who: RibPeer, info: { routerId: string }, ps: readonly Prefix[], a: PathAttributes | undefined) => ReturnType<Rib['receive']>
}

/**
 * Two plain iBGP peers, one behind `policy`, an eBGP peer, and a peer that is not a cluster node (prefixes
 * in `pools` refused, whole sections outside them taken).
 */
function peersWith(policy: Policy, pools: readonly string[]): () => RibPeer[] {
  return () => [
    peer({ address: '192.0.2.1' }),
    peer({ address: '192.0.2.2' }),
    peer({ address: '192.0.2.3', importPolicy: policy }),
    peer({ address: '192.0.2.4', asn: 65001 }),
    peer({ address: '192.0.2.5', importPolicy: guardPoolPrefixes(ACCEPT_ALL, compilePoolGuard(pools, []), () => undefined) }),
  ]
}

/** The same random operations through receive() and through the column path leave the same RIB. */
function differential(t: Test, d: Differential): void {
  for (const seed of d.seeds) {
    const rng = new Rng(seed)
    const rnd = (): number => rng.float()
    const peers = d.peers()
    const byObjects = rib()
    const byColumns = rib()
    const seen: [string[], string[]] = [[], []]
    // Flush by flush; within one, the order of prefixes may differ (the column path stores the new ones
    // of a section after those it already held).
    byObjects.subscribe((cs) => seen[0].push(cs.map(changeText).sort().join('\n')))
    byColumns.subscribe((cs) => seen[1].push(cs.map(changeText).sort().join('\n')))
    const pick = (): Prefix[] => Array.from({ length: 1 + Math.floor(rnd() * 12) }, () => d.pool[Math.floor(rnd() * d.pool.length)]!)
    for (let step = 0; step < 400; step++) {
      const who = peers[Math.floor(rnd() * peers.length)]!
      const info = session(who.address)
      const r = rnd()
      if (r < 0.55) {
        const ps = pick()
        const a =
          who.type === 'ebgp'
            ? attrs({ asns: rnd() < 0.1 ? [65001, LOCAL_AS] : [65001], med: Math.floor(rnd() * 3) })
            : attrs({ med: Math.floor(rnd() * 3), ...(rnd() < 0.05 ? { originatorId: '192.0.2.254' } : {}) })
        const why0 = byObjects.receive(who, info, ps, a, d.nextHop)
        const why1 = d.byColumns(byColumns, who, info, ps, a)
        t.same(why1, why0, `seed ${seed} step ${step}: the same verdict`)
      } else if (r < 0.75) {
        const ps = pick()
        byObjects.receive(who, info, ps, undefined)
        d.byColumns(byColumns, who, info, ps, undefined)
      } else if (r < 0.8) {
        const keep = rnd() < 0.5 ? new Set([d.family]) : new Set<number>()
        byObjects.peerDown(who, keep)
        byColumns.peerDown(who, keep)
      } else if (r < 0.83) {
        byObjects.endOfRib(who, d.family)
        byColumns.endOfRib(who, d.family)
      } else {
        byObjects.flush()
        byColumns.flush()
        t.same(state(byColumns, peers), state(byObjects, peers), `seed ${seed} step ${step}: the same RIB`)
      }
    }
    byObjects.flush()
    byColumns.flush()
    t.same(state(byColumns, peers), state(byObjects, peers), `seed ${seed}: the same RIB at the end`)
    t.same(seen[1], seen[0], `seed ${seed}: the same changes, flush by flush`)
  }
}

t.test('receiveIpv4 and receive leave the same RIB, operation by operation', async (t) => {
  // A small pool, so prefixes come back, from several peers, at several lengths.
  const pool: Prefix[] = []
  for (let i = 0; i < 48; i++) pool.push(ipv4Prefix((0xc6120000 + i * 256 + (i % 3) * 64) >>> 0, [24, 26, 32][i % 3]!))
  differential(t, {
    family: IPV4_UNICAST,
    seeds: [1, 2, 3, 4, 5, 6, 7, 8],
    peers: peersWith(halfPolicy, ['198.18.4.0/23', '198.18.16.0/22']),
    pool,
    byColumns: (r, who, info, ps, a) => r.receiveIpv4(who, info, columns(ps), a),
  })
})

/**
 * A dump of 70,000 prefixes (prefix k from `prefixOf`) in sections of 819 through the column path
 * (`receive` of prefixes [i, i + count)), flushed now and then: every prefix held once, with one shared
 * attribute set, across the table's growth and page boundaries; the first two again change nothing.
 */
function dump(t: Test, prefixOf: (k: number) => Prefix, receive: (table: Rib, from: RibPeer, prefixes: readonly Prefix[]) => ReturnType<Rib['receive']>): void {
  const from = peer({ address: '192.0.2.1' })
  const table = rib()
  const n = 70_000
  const section = 819
  for (let i = 0; i < n; i += section) {
    const ps = Array.from({ length: Math.min(section, n - i) }, (_, k) => prefixOf(i + k))
    t.equal(receive(table, from, ps), undefined)
    if ((i / section) % 7 === 6) table.flush()
  }
  table.flush()
  t.equal(table.size, n)
  t.same(table.counts(from), { received: n, accepted: n })
  t.equal(table.attributeSets, 1, 'one shared attribute set')
  for (const k of [0, 32_767, 32_768, 65_535, 65_536, n - 1]) {
    const p = prefixOf(k)
    t.equal(table.best(p)?.path.peer, from, `${formatPrefix(p)} is held`)
  }
  t.equal(table.best(prefixOf(n)), undefined, 'and nothing past the end')
  // The same again: nothing changes, nothing is counted twice.
  let changed = 0
  table.subscribe((c) => (changed += c.length))
  receive(table, from, [prefixOf(0), prefixOf(1)])
  table.flush()
  t.equal(changed, 0)
  t.same(table.counts(from), { received: n + 2, accepted: n })
}

t.test('a dump of 70,000 prefixes in sections crosses growth and page boundaries intact', async (t) => {
  dump(t, (k) => ipv4Prefix((0x0a000000 + (k << 8)) >>> 0, 24), (table, from, ps) => table.receiveIpv4(from, session('192.0.2.1'), columns(ps), attrs()))
})

t.test('a section every network of which passesIpv4 is taken whole; one network that does not sends all to apply()', async (t) => {
  let applied = 0
  const policy: Policy = {
    empty: false,
    // Refuses 10.0.9.0/24 alone; passes everything else unchanged.
    apply: (p, a) => (applied++, p.afi === 1 && p.addr === 0x0a000900 && p.len === 24 ? undefined : a),
    passesIpv4: (addr, len) => !(addr === 0x0a000900 && len === 24),
  }
  const from = peer({ address: '192.0.2.1', importPolicy: policy })
  const table = rib()
  const section = (first: number, count: number): Ipv4Prefixes => ({ count, addr: Int32Array.from({ length: count }, (_, k) => 0x0a000000 + ((first + k) << 8)), len: new Uint8Array(count).fill(24) })
  t.equal(table.receiveIpv4(from, session('192.0.2.1'), section(0, 8), attrs()), undefined)
  table.flush()
  t.equal(applied, 0, 'apply() is not called for a section that passes')
  t.equal(table.size, 8)
  table.receiveIpv4(from, session('192.0.2.1'), section(8, 4), attrs())
  table.flush()
  t.equal(applied, 4, 'each network of a section with one that does not pass goes through apply()')
  t.equal(table.size, 11, '10.0.9.0/24 refused, its neighbours taken')
  t.equal(table.best(ipv4Prefix(0x0a000900, 24)), undefined)
  t.same(table.counts(from), { received: 12, accepted: 11 })
})

t.test('receiveIpv6 and receive leave the same RIB, operation by operation', async (t) => {
  const half6: Policy = {
    empty: false,
    // Rejects every prefix whose sixth byte is odd; raises LOCAL_PREF on /128s.
    apply: (p, a) => (p.afi === 2 && (p.addr[5]! & 1) === 1 ? undefined : p.len === 128 ? { ...a, localPref: 300 } : a),
  }
  const pool: Prefix[] = []
  for (let i = 0; i < 48; i++) {
    const a = parseIpv6('2001:db8::')!
    a[6] = i >> 3
    a[7] = (i * 37) & 0xff
    a[15] = i
    pool.push(ipv6Prefix(a, [48, 62, 64, 128][i % 4]!))
  }
  const nextHop = ['2001:db8::10']
  differential(t, {
    family: IPV6_UNICAST,
    seeds: [11, 12, 13, 14, 15, 16],
    peers: peersWith(half6, ['198.18.0.0/16', '2001:db8:0:100::/56']),
    pool,
    nextHop,
    byColumns: (r, who, info, ps, a) => r.receiveIpv6(who, info, columns6(ps), a, nextHop),
  })
})

t.test('an IPv6 dump of 70,000 prefixes in sections crosses growth and page boundaries intact', async (t) => {
  const net = (k: number): Prefix => {
    const a = parseIpv6('2001:db8::')!
    a[4] = k >> 16
    a[5] = (k >> 8) & 0xff
    a[6] = k & 0xff
    return ipv6Prefix(a, 56)
  }
  dump(t, net, (table, from, ps) => table.receiveIpv6(from, session('192.0.2.1'), columns6(ps), attrs(), ['2001:db8::10']))
})
