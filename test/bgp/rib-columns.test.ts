// receiveIpv4 (prefixes as columns, the table-dump path) against receive (prefix objects): the same
// operations through each leave the same Loc-RIB, the same changes to subscribers, the same counters and
// the same attribute sets, including prefixes already held, stale paths, policy, refused sections and
// withdrawals; and a dump that crosses the table's growth and page boundaries.
import t from 'tap'
import { IPV4_UNICAST, formatPrefix, ipv4Prefix, type Ipv4Prefixes, type PathAttributes, type Prefix } from '../../bgp/index.js'
import type { LocRibChange, Policy, Rib, RibPeer } from '../../bgp/rib/index.js'
import { ACCEPT_ALL } from '../../bgp/policy/index.js'
import { compilePoolGuard, guardPoolPrefixes } from '../../bgp/policy/pool-guard.js'
import { LOCAL_AS, attrs, peer, rib, session } from './rib-helpers.js'
import { Rng } from '../harness/random.js'

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

t.test('receiveIpv4 and receive leave the same RIB, operation by operation', async (t) => {
  for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
    const rng = new Rng(seed)
    const rnd = (): number => rng.float()
    const peers = [
      peer({ address: '192.0.2.1' }),
      peer({ address: '192.0.2.2' }),
      peer({ address: '192.0.2.3', importPolicy: halfPolicy }),
      peer({ address: '192.0.2.4', asn: 65001 }),
      // A peer that is not a cluster node: pool prefixes refused, whole sections outside the pools taken.
      peer({ address: '192.0.2.5', importPolicy: guardPoolPrefixes(ACCEPT_ALL, compilePoolGuard(['198.18.4.0/23', '198.18.16.0/22'], []), () => undefined) }),
    ]
    const byObjects = rib()
    const byColumns = rib()
    const seen: [string[], string[]] = [[], []]
    // Flush by flush; within one, the order of prefixes may differ (the column path stores the new ones
    // of a section after those it already held).
    byObjects.subscribe((cs) => seen[0].push(cs.map(changeText).sort().join('\n')))
    byColumns.subscribe((cs) => seen[1].push(cs.map(changeText).sort().join('\n')))
    // A small pool, so prefixes come back, from several peers, at several lengths.
    const pool: Prefix[] = []
    for (let i = 0; i < 48; i++) pool.push(ipv4Prefix((0xc6120000 + i * 256 + (i % 3) * 64) >>> 0, [24, 26, 32][i % 3]!))
    const pick = (): Prefix[] => Array.from({ length: 1 + Math.floor(rnd() * 12) }, () => pool[Math.floor(rnd() * pool.length)]!)
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
        const why0 = byObjects.receive(who, info, ps, a)
        const why1 = byColumns.receiveIpv4(who, info, columns(ps), a)
        t.same(why1, why0, `seed ${seed} step ${step}: the same verdict`)
      } else if (r < 0.75) {
        const ps = pick()
        byObjects.receive(who, info, ps, undefined)
        byColumns.receiveIpv4(who, info, columns(ps), undefined)
      } else if (r < 0.8) {
        const keep = rnd() < 0.5 ? new Set([IPV4_UNICAST]) : new Set<number>()
        byObjects.peerDown(who, keep)
        byColumns.peerDown(who, keep)
      } else if (r < 0.83) {
        byObjects.endOfRib(who, IPV4_UNICAST)
        byColumns.endOfRib(who, IPV4_UNICAST)
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
})

t.test('a dump of 70,000 prefixes in sections crosses growth and page boundaries intact', async (t) => {
  const from = peer({ address: '192.0.2.1' })
  const table = rib()
  const n = 70_000
  const section = 819
  for (let i = 0; i < n; i += section) {
    const count = Math.min(section, n - i)
    const addr = new Int32Array(count)
    const len = new Uint8Array(count)
    for (let k = 0; k < count; k++) {
      addr[k] = (0x0a000000 + ((i + k) << 8)) | 0
      len[k] = 24
    }
    t.equal(table.receiveIpv4(from, session('192.0.2.1'), { count, addr, len }, attrs()), undefined)
    if ((i / section) % 7 === 6) table.flush()
  }
  table.flush()
  t.equal(table.size, n)
  t.same(table.counts(from), { received: n, accepted: n })
  t.equal(table.attributeSets, 1, 'one shared attribute set')
  for (const k of [0, 32_767, 32_768, 65_535, 65_536, n - 1]) {
    const p = ipv4Prefix((0x0a000000 + (k << 8)) >>> 0, 24)
    t.equal(table.best(p)?.path.peer, from, `${formatPrefix(p)} is held`)
  }
  t.equal(table.best(ipv4Prefix((0x0a000000 + (n << 8)) >>> 0, 24)), undefined, 'and nothing past the end')
  // The same again: nothing changes, nothing is counted twice.
  let changed = 0
  table.subscribe((c) => (changed += c.length))
  table.receiveIpv4(from, session('192.0.2.1'), { count: 2, addr: Int32Array.of(0x0a000000, 0x0a000100), len: Uint8Array.of(24, 24) }, attrs())
  table.flush()
  t.equal(changed, 0)
  t.same(table.counts(from), { received: n + 2, accepted: n })
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
