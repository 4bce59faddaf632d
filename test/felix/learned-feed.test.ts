// The agent's feed of Loc-RIB deltas into felix's desired table, for IPv6 (rules checked on address bytes):
// after random announcements and withdrawals of IPv6 prefixes of many lengths, the table holds exactly the
// best routes that the text-based rules keep: not inside a service range (byte-aligned or not), not a
// prefix routed statically, and not this node's own block (another node announcing it is a conflict).

import t from 'tap'
import { IPV4_UNICAST, IPV6_UNICAST, formatPrefix, type Prefix } from '../../bgp/index.js'
import { DesiredTable } from '../../felix/index.js'
import { parsePrefix } from '../../bgp/codec/nlri.js'
import { prefixMatcher } from '../../bgp/policy/match.js'
import { LearnedFeed, type ProgramRules } from '../../felix/learned-feed.js'
import { attrs, peer, px, rib, session } from '../bgp/rib/helpers.js'
import { pool } from '../felix/render-fixtures.js'
import { Rng } from '../harness/random.js'

/** The oracle for the feed's service check: inside one of the CIDRs by the policy code's own matcher. */
function insideAny(cidrs: readonly string[]): (p: Prefix) => boolean {
  const tests = cidrs.map((c) => prefixMatcher(c, 'In', parsePrefix(c).afi, undefined, c))
  return (p) => tests.some((m) => m(p))
}

const SERVICES = ['2001:db8:ff::/112', '2001:db8:f0::/44', '2001:db8:7:8000::/49']
const FIXED = ['2001:db8:5::/64']
const OWNED = '2001:db8:6:1::/122'

function randomPrefix(r: Rng): Prefix {
  const third = r.pick(['1', '5', '6', '7', 'f1', 'ff', 'f0'])
  const fourth = r.pick(['0', '1', '8000', 'c000'])
  const len = r.pick([48, 49, 56, 64, 112, 122, 128])
  const p = px(`2001:db8:${third}:${fourth}::${r.int(3) === 0 ? r.int(4096).toString(16) : '0'}/128`)
  // Host bits clear, as the RIB holds a network.
  const addr = Uint8Array.from((p as { addr: Uint8Array }).addr)
  for (let b = len; b < 128; b++) addr[b >> 3]! &= ~(0x80 >> (b & 7))
  return { afi: 2, len, addr, pathId: 0 }
}

t.test('IPv6 deltas are programmed as the text-based rules say', async (t) => {
  for (const seed of [1, 2, 3]) {
    const rng = new Rng(seed)
    const r = rib()
    const from = peer({ address: '192.0.2.12', families: new Set([IPV6_UNICAST]) })
    const d = new DesiredTable({ protocol: 87 })
    d.setContext({ pools: [pool('v6', '2001:db8::/32')], vteps: [], localNode: { name: 'a', ipv6Address: '2001:db8::11/64', parentInterface: 'eth0' } }, { hop: (id) => (id >= 0 && id < r.nextHops.size ? { address: r.nextHops.text(id) } : undefined) })
    let conflicts: readonly string[] = []
    const feed = new LearnedFeed(r, d, (cs) => (conflicts = cs.map((c) => c.block)))
    r.subscribeDeltas((deltas) => feed.apply(deltas))
    const rules: ProgramRules = { me: 'a', services: SERVICES, owners: new Map([[OWNED, 'a']]), fixed: FIXED, nodeOfAddress: new Map([['2001:db8::12', 'b']]) }
    feed.setRules(rules)
    const held = new Map<string, Prefix>()
    for (let step = 0; step < 400; step++) {
      const ps = Array.from({ length: 1 + rng.int(20) }, () => (rng.int(30) === 0 ? px(rng.pick([OWNED, ...FIXED])) : randomPrefix(rng)))
      if (rng.int(3) === 0) {
        r.receive(from, session(from.address), ps, undefined)
        for (const p of ps) held.delete(formatPrefix(p))
      } else {
        r.receive(from, session(from.address), ps, attrs({ nextHop: undefined }), ['2001:db8::12'])
        for (const p of ps) held.set(formatPrefix(p), p)
      }
      if (rng.int(4) === 0) r.flush()
    }
    r.flush()
    const isService = insideAny(SERVICES)
    const want = [...held].filter(([text, p]) => !isService(p) && !FIXED.includes(text) && text !== OWNED).map(([text]) => text).sort()
    const got = [...d].map(([, x]) => x.dst).sort()
    t.same(got, want, `seed ${seed}: ${want.length} of ${held.size} prefixes programmed`)
    t.same(conflicts, held.has(OWNED) ? [OWNED] : [], `seed ${seed}: our own block announced by a peer is a conflict`)
    t.ok(got.every((dst) => d.get(`254 ${dst} 0 1024`)?.nexthops[0]?.gateway === '2001:db8::12'), `seed ${seed}: through the peer's next hop`)
  }
})

t.test('service ranges: a learned route inside one is not programmed, a covering one is (IPv4 and IPv6)', async (t) => {
  const r = rib()
  const from = peer({ address: '192.0.2.12', families: new Set([IPV4_UNICAST, IPV6_UNICAST]) })
  const d = new DesiredTable({ protocol: 87 })
  const pools = [pool('v4', '198.18.0.0/15'), pool('v6', '2001:db8::/32')]
  d.setContext({ pools, vteps: [], localNode: { name: 'a', ipv4Address: '192.0.2.11/24', ipv6Address: '2001:db8::11/64', parentInterface: 'eth0' } }, { hop: (id) => (id >= 0 && id < r.nextHops.size ? { address: r.nextHops.text(id) } : undefined) })
  const feed = new LearnedFeed(r, d, () => undefined)
  r.subscribeDeltas((deltas) => feed.apply(deltas))
  feed.setRules({ me: 'a', services: ['203.0.113.0/26', '2001:db8:5::/112'], owners: new Map(), fixed: [], nodeOfAddress: new Map([['192.0.2.12', 'b'], ['2001:db8::12', 'b']]) })
  const cases: [string, boolean][] = [
    ['203.0.113.5/32', false],
    ['203.0.113.0/26', false],
    ['203.0.113.0/24', true],
    ['203.0.113.64/26', true],
    ['198.18.0.0/26', true],
    ['2001:db8:5::1/128', false],
    ['2001:db8:5::/112', false],
    ['2001:db8:5::/64', true],
  ]
  for (const [prefix] of cases) {
    if (prefix.includes(':')) r.receive(from, session(from.address), [px(prefix)], attrs({ nextHop: undefined }), ['2001:db8::12'])
    else r.receive(from, session(from.address), [px(prefix)], attrs({ nextHop: '192.0.2.12' }))
  }
  r.flush()
  const programmed = new Set([...d].map(([, x]) => x.dst))
  for (const [prefix, want] of cases) t.equal(programmed.has(prefix), want, `${prefix}: ${want ? 'programmed' : 'a service route, not programmed'}`)
})
