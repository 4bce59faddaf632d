// Which prefixes a peer that is not a cluster node may announce: anything outside the pools; inside a pool
// (the pool, a block, a /32) only what an explicit Accept import rule of its BGPFilters matches.
import t from 'tap'
import { ACCEPT_ALL, compileBgpFilters } from '../../../bgp/policy/index.js'
import { compilePoolGuard, guardPoolPrefixes, type PoolPrefixVerdict } from '../../../bgp/policy/pool-guard.js'
import type { BGPFilterSpec } from '../../../config/resources/types.js'
import { formatPrefix, ipv4Prefix } from '../../../bgp/codec/nlri.js'
import { attrs, peer, px } from '../rib/helpers.js'

const tor = peer({ address: '192.0.2.1', asn: 65001 })
const POOLS = ['198.18.0.0/16', '2001:db8:1::/48']
const filter = (name: string, spec: BGPFilterSpec) => ({ metadata: { name }, spec })

t.test('verdicts: pool prefixes refused unless an Accept rule covers them', async (t) => {
  const accept24 = filter('tor-in', { importV4: [{ action: 'Accept', cidr: '198.18.7.0/24', matchOperator: 'In' }] })
  const acceptEqual = filter('tor-eq', { importV4: [{ action: 'Accept', cidr: '198.18.0.0/16', matchOperator: 'Equal' }] })
  const rejectOnly = filter('tor-rej', { importV4: [{ action: 'Reject', cidr: '198.18.0.0/16', matchOperator: 'In' }] })
  const notIn = filter('tor-notin', { importV4: [{ action: 'Accept', cidr: '10.0.0.0/8', matchOperator: 'NotIn' }] })
  const withCommunity = filter('tor-comm', { importV4: [{ action: 'Accept', cidr: '198.18.0.0/16', matchOperator: 'In', communities: { values: ['65001:7'] } }] })
  const lengths = filter('tor-len', { importV4: [{ action: 'Accept', cidr: '198.18.0.0/16', matchOperator: 'In', prefixLength: { min: 26 } }] })
  const rows: { filters: ReturnType<typeof filter>[]; prefix: string; communities?: number[]; want: PoolPrefixVerdict }[] = [
    { filters: [], prefix: '203.0.113.0/24', want: 'outside' },
    { filters: [], prefix: '198.18.0.0/16', want: 'refused' },
    { filters: [], prefix: '198.18.7.0/24', want: 'refused' },
    { filters: [], prefix: '198.18.7.9/32', want: 'refused' },
    { filters: [], prefix: '198.0.0.0/8', want: 'outside' },
    { filters: [], prefix: '2001:db8:1:5::/64', want: 'refused' },
    { filters: [], prefix: '2001:db8:2::/48', want: 'outside' },
    { filters: [accept24], prefix: '198.18.7.0/24', want: 'accepted' },
    { filters: [accept24], prefix: '198.18.7.9/32', want: 'accepted' },
    { filters: [accept24], prefix: '198.18.8.0/24', want: 'refused' },
    { filters: [accept24], prefix: '198.18.0.0/16', want: 'refused' },
    { filters: [acceptEqual], prefix: '198.18.0.0/16', want: 'accepted' },
    { filters: [acceptEqual], prefix: '198.18.7.0/24', want: 'refused' },
    { filters: [rejectOnly], prefix: '198.18.7.0/24', want: 'refused' },
    { filters: [notIn], prefix: '198.18.7.0/24', want: 'refused' },
    { filters: [withCommunity], prefix: '198.18.7.0/24', want: 'refused' },
    { filters: [withCommunity], prefix: '198.18.7.0/24', communities: [((65001 << 16) | 7) >>> 0], want: 'accepted' },
    { filters: [lengths], prefix: '198.18.7.0/24', want: 'refused' },
    { filters: [lengths], prefix: '198.18.7.64/26', want: 'accepted' },
    { filters: [rejectOnly, accept24], prefix: '198.18.7.0/24', want: 'accepted' },
  ]
  for (const r of rows) {
    const guard = compilePoolGuard(POOLS, r.filters)
    const a = attrs(r.communities !== undefined ? { communities: r.communities } : {})
    t.equal(guard.verdict(px(r.prefix), a, tor), r.want, `${r.prefix} with ${r.filters.map((f) => f.metadata.name).join(',') || 'no filter'}${r.communities ? ' + community' : ''}`)
  }
})

t.test('the guarded policy rejects and reports refused prefixes; the inner policy still decides the rest', async (t) => {
  const named = [filter('tor', { importV4: [
    { action: 'Reject', cidr: '198.18.7.0/25', matchOperator: 'Equal' },
    { action: 'Accept', cidr: '198.18.7.0/24', matchOperator: 'In' },
  ] })]
  const refused: string[] = []
  const policy = guardPoolPrefixes(compileBgpFilters(named, 'import'), compilePoolGuard(POOLS, named), (p, from) => refused.push(`${from.name} ${p.afi === 1 ? p.len : ''}`))
  t.ok(policy.apply(px('198.18.7.0/24'), attrs(), tor), 'accepted explicitly')
  t.equal(policy.apply(px('198.18.7.0/25'), attrs(), tor), undefined, 'the inner Reject still wins')
  t.equal(policy.apply(px('198.18.9.0/24'), attrs(), tor), undefined, 'refused by the guard')
  t.ok(policy.apply(px('203.0.113.0/24'), attrs(), tor), 'an ordinary route passes')
  t.same(refused, [`${tor.name} 24`], 'only the guard refusal is reported')
  const open = guardPoolPrefixes(ACCEPT_ALL, compilePoolGuard(POOLS, []), () => undefined)
  t.equal(open.empty, false, 'keeps the inner policy for RFC 8212')
  t.equal(open.passesAll, undefined, 'not a pass-everything policy any more')
})

t.test('passesIpv4 answers as the verdict does: outside every pool, and only over a pass-everything policy', async (t) => {
  const pools = ['198.18.0.0/16', '198.19.128.0/17', '10.1.2.0/24', '2001:db8:1::/48']
  const guard = compilePoolGuard(pools, [])
  const open = guardPoolPrefixes(ACCEPT_ALL, guard, () => undefined)
  const passes = open.passesIpv4
  if (passes === undefined) return t.fail('a guard over ACCEPT_ALL has passesIpv4')
  // Networks in, around and across the pools' edges, at every length.
  const bases = [0xc6120000, 0xc612ffff, 0xc6110000, 0xc613ffff, 0xc6138000, 0xc6137fff, 0x0a010200, 0x0a0102ff, 0x0a010300, 0x0a000000, 0xcb007100, 0xc0000000]
  let checked = 0
  for (const base of bases) {
    for (let len = 0; len <= 32; len++) {
      const p = ipv4Prefix(base, len)
      const outside = guard.verdict(p, attrs(), tor) === 'outside'
      t.equal(passes(p.addr | 0, len), outside, `${formatPrefix(p)}: passesIpv4 ${outside ? 'true' : 'false'} as the verdict is ${outside ? 'outside' : 'not'}`)
      checked++
    }
  }
  t.equal(checked, bases.length * 33)
  const filtered = guardPoolPrefixes(compileBgpFilters([filter('tor', { importV4: [{ action: 'Reject', cidr: '203.0.113.0/24', matchOperator: 'In' }] })], 'import'), guard, () => undefined)
  t.equal(filtered.passesIpv4, undefined, 'an inner policy that may change a prefix leaves every prefix to apply()')
})
