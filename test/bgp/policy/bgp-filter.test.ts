// Calico BGPFilter rules compiled into policies: matchOperator with and without prefixLength (as
// confd renders them for BIRD), source, interface, peerType, communities, AS-path prefix, priority,
// the operations, several filters in order, the default accept, and errors that name the field.
import t from 'tap'
import { formatPrefix, type PathAttributes } from '../../../bgp/index.js'
import { compileBgpFilters, kernelMetricOf, priorityToLocalPref, PRIORITY_BASE } from '../../../bgp/policy/index.js'
import type { BGPFilterRule, BGPFilterSpec } from '../../../config/resources/types.js'
import { attrs, peer, px } from '../rib/helpers.js'

const ibgp = peer({ address: '192.0.2.1' })
const ebgp = peer({ address: '192.0.2.3', asn: 65001 })
const filter = (name: string, spec: BGPFilterSpec) => ({ metadata: { name }, spec })

t.test('prefix matching: operator x prefixLength', async (t) => {
  const rows: { rule: Partial<BGPFilterRule>; prefix: string; match: boolean }[] = [
    { rule: { cidr: '10.0.0.0/16', matchOperator: 'Equal' }, prefix: '10.0.0.0/16', match: true },
    { rule: { cidr: '10.0.0.0/16', matchOperator: 'Equal' }, prefix: '10.0.1.0/24', match: false },
    { rule: { cidr: '10.0.0.0/16', matchOperator: 'NotEqual' }, prefix: '10.0.1.0/24', match: true },
    { rule: { cidr: '10.0.0.0/16', matchOperator: 'NotEqual' }, prefix: '10.0.0.0/16', match: false },
    { rule: { cidr: '10.0.0.0/16', matchOperator: 'In' }, prefix: '10.0.0.0/16', match: true },
    { rule: { cidr: '10.0.0.0/16', matchOperator: 'In' }, prefix: '10.0.200.0/26', match: true },
    { rule: { cidr: '10.0.0.0/16', matchOperator: 'In' }, prefix: '10.0.0.0/8', match: false },
    { rule: { cidr: '10.0.0.0/16', matchOperator: 'In' }, prefix: '10.1.0.0/24', match: false },
    { rule: { cidr: '10.0.0.0/16', matchOperator: 'NotIn' }, prefix: '10.1.0.0/24', match: true },
    { rule: { cidr: '10.0.0.0/16', matchOperator: 'NotIn' }, prefix: '10.0.3.0/24', match: false },
    { rule: { cidr: '10.0.0.0/16', matchOperator: 'In', prefixLength: { min: 24 } }, prefix: '10.0.3.0/24', match: true },
    { rule: { cidr: '10.0.0.0/16', matchOperator: 'In', prefixLength: { min: 24 } }, prefix: '10.0.0.0/20', match: false },
    { rule: { cidr: '10.0.0.0/16', matchOperator: 'In', prefixLength: { max: 24 } }, prefix: '10.0.3.0/26', match: false },
    { rule: { cidr: '10.0.0.0/16', matchOperator: 'In', prefixLength: { max: 24 } }, prefix: '10.0.0.0/16', match: true },
    // min below the cidr's own length is raised to it (confd: max(mask, min)).
    { rule: { cidr: '10.0.0.0/16', matchOperator: 'In', prefixLength: { min: 8 } }, prefix: '10.0.0.0/8', match: false },
    { rule: { cidr: '10.0.0.0/16', matchOperator: 'NotIn', prefixLength: { min: 26, max: 28 } }, prefix: '10.0.0.0/24', match: true },
    { rule: { cidr: '10.0.0.0/16', matchOperator: 'NotIn', prefixLength: { min: 26, max: 28 } }, prefix: '10.0.0.64/26', match: false },
    { rule: { cidr: '2001:db8::/32', matchOperator: 'In', prefixLength: { max: 64 } }, prefix: '2001:db8:5::/64', match: true },
    { rule: { cidr: '2001:db8::/32', matchOperator: 'In', prefixLength: { max: 64 } }, prefix: '2001:db8:5::/80', match: false },
    { rule: { cidr: '2001:db8::/32', matchOperator: 'Equal' }, prefix: '2001:db9::/32', match: false },
  ]
  for (const r of rows) {
    const v6 = r.rule.cidr!.includes(':')
    const rule = { action: 'Reject' as const, ...r.rule }
    const policy = compileBgpFilters([filter('f', v6 ? { importV6: [rule] } : { importV4: [rule] })], 'import')
    const rejected = policy.apply(px(r.prefix), attrs(), ibgp) === undefined
    t.equal(rejected, r.match, `${r.rule.matchOperator} ${r.rule.cidr} ${JSON.stringify(r.rule.prefixLength ?? {})} vs ${r.prefix}`)
  }
})

t.test('the other conditions', async (t) => {
  const rows: { name: string; rule: Partial<BGPFilterRule>; a?: PathAttributes; from?: typeof ibgp; route?: { fromPeer: boolean; interface?: string }; match: boolean }[] = [
    { name: 'peerType eBGP on an eBGP peer', rule: { peerType: 'eBGP' }, from: ebgp, match: true },
    { name: 'peerType eBGP on an iBGP peer', rule: { peerType: 'eBGP' }, from: ibgp, match: false },
    { name: 'peerType iBGP', rule: { peerType: 'iBGP' }, from: ibgp, match: true },
    { name: 'source RemotePeers, learned', rule: { source: 'RemotePeers' }, route: { fromPeer: true }, match: true },
    { name: 'source RemotePeers, ours', rule: { source: 'RemotePeers' }, route: { fromPeer: false }, match: false },
    { name: 'interface glob', rule: { interface: '*.calico' }, route: { fromPeer: false, interface: 'vxlan.calico' }, match: true },
    { name: 'interface glob, other name', rule: { interface: '*.calico' }, route: { fromPeer: false, interface: 'eth0' }, match: false },
    { name: 'interface, none known', rule: { interface: '*' }, route: { fromPeer: true }, match: false },
    { name: 'community present', rule: { communities: { values: ['65000:100'] } }, a: attrs({ communities: [((65000 << 16) | 100) >>> 0] }), match: true },
    { name: 'community absent', rule: { communities: { values: ['65000:100'] } }, a: attrs({ communities: [((65000 << 16) | 101) >>> 0] }), match: false },
    { name: 'large community', rule: { communities: { values: ['4200000000:1:2'] } }, a: attrs({ largeCommunities: [[4200000000, 1, 2]] }), match: true },
    { name: 'AS path prefix', rule: { asPathPrefix: [65001, 3356] }, a: attrs({ asns: [65001, 3356, 7] }), match: true },
    { name: 'AS path prefix across segments', rule: { asPathPrefix: [65001, 3356] }, a: attrs({ asPath: [{ type: 2, asns: [65001] }, { type: 2, asns: [3356] }] }), match: true },
    { name: 'AS path prefix, other order', rule: { asPathPrefix: [65001, 3356] }, a: attrs({ asns: [3356, 65001] }), match: false },
    { name: 'AS path prefix longer than the path', rule: { asPathPrefix: [65001, 3356] }, a: attrs({ asns: [65001] }), match: false },
    { name: 'priority from LOCAL_PREF', rule: { priority: 10 }, a: attrs({ localPref: PRIORITY_BASE - 10 }), match: true },
    { name: 'priority default 1024', rule: { priority: 1024 }, a: attrs(), match: true },
    { name: 'all conditions must hold', rule: { peerType: 'iBGP', cidr: '198.18.0.0/15', matchOperator: 'In' }, from: ebgp, match: false },
  ]
  for (const r of rows) {
    const policy = compileBgpFilters([filter('f', { exportV4: [{ action: 'Reject', ...r.rule }] })], 'export')
    const rejected = policy.apply(px('198.18.0.0/26'), r.a ?? attrs(), r.from ?? ibgp, r.route) === undefined
    t.equal(rejected, r.match, r.name)
  }
})

t.test('operations and the default accept', async (t) => {
  const policy = compileBgpFilters(
    [
      filter('ops', {
        importV4: [
          {
            action: 'Accept',
            cidr: '198.18.0.0/24',
            matchOperator: 'In',
            operations: [{ addCommunity: { value: '65000:7' } }, { addCommunity: { value: '1:2:3' } }, { prependASPath: { prefix: [65010, 65011] } }, { setPriority: { value: 512 } }],
          },
          { action: 'Accept', cidr: '198.18.1.0/24', matchOperator: 'Equal' },
        ],
      }),
    ],
    'import',
  )
  const a = attrs({ asns: [65001], communities: [((65000 << 16) | 7) >>> 0] })
  const out = policy.apply(px('198.18.0.0/26'), a, ibgp)!
  t.same(out.communities, [((65000 << 16) | 7) >>> 0], 'a community already there is not added twice')
  t.same(out.largeCommunities, [[1, 2, 3]])
  t.same(out.asPath, [{ type: 2, asns: [65010, 65011, 65001] }], 'prepended in the order given')
  t.equal(out.localPref, PRIORITY_BASE - 512, 'priority as Calico carries it in LOCAL_PREF')
  t.equal(policy.apply(px('198.18.1.0/24'), a, ibgp), a, 'accept without operations returns the same object')
  t.equal(policy.apply(px('203.0.113.0/24'), a, ibgp), a, 'no rule matches: accepted unchanged')
  t.equal(policy.apply(px('2001:db8::/64'), a, ibgp), a, 'IPv6 rules are separate')
  t.notOk(policy.empty)
  t.ok(compileBgpFilters([filter('x', { exportV4: [{ action: 'Reject' }] })], 'import').empty, 'export rules do not make an import policy')
})

t.test('several filters apply in order: the first match in any decides', async (t) => {
  const first = filter('first', { exportV4: [{ action: 'Reject', cidr: '198.18.0.0/24', matchOperator: 'Equal' }] })
  const second = filter('second', { exportV4: [{ action: 'Accept', cidr: '198.18.0.0/16', matchOperator: 'In', operations: [{ addCommunity: { value: '1:1' } }] }, { action: 'Reject' }] })
  const policy = compileBgpFilters([first, second], 'export')
  const cases: [string, string][] = [
    ['198.18.0.0/24', 'rejected'],
    ['198.18.5.0/24', 'tagged'],
    ['203.0.113.0/24', 'rejected'],
  ]
  for (const [prefix, want] of cases) {
    const out = policy.apply(px(prefix), attrs(), ebgp)
    t.equal(out === undefined ? 'rejected' : out.communities?.includes(0x10001) ? 'tagged' : 'plain', want, `${formatPrefix(px(prefix))}`)
  }
})

t.test('bad rules are errors naming the filter and the field', async (t) => {
  const rows: { rule: Partial<BGPFilterRule>; list?: keyof BGPFilterSpec; error: RegExp }[] = [
    { rule: { cidr: '10.0.0.0/33', matchOperator: 'In' }, error: /BGPFilter bad: spec\.importV4\[0\]\.cidr/ },
    { rule: { cidr: '2001:db8::/32', matchOperator: 'In' }, error: /importV4\[0\]\.cidr: 2001:db8::\/32 is not an IPv4 prefix/ },
    { rule: { cidr: '10.0.0.0/8' }, error: /cidr and matchOperator must be set together/ },
    { rule: { cidr: '10.0.0.0/8', matchOperator: 'Equal', prefixLength: { min: 16 } }, error: /importV4\[0\]\.prefixLength: only meaningful with matchOperator In or NotIn/ },
    { rule: { communities: { values: ['65536:1'] } }, error: /communities\.values\[0\]: "65536:1" is not a community/ },
    { rule: { communities: { values: ['1'] } }, error: /neither a community/ },
    { rule: { operations: [{ addCommunity: { value: '1:2:3:4' } }] }, error: /operations\[0\]\.addCommunity\.value/ },
    { rule: { operations: [{ prependASPath: { prefix: [0] } }] }, error: /operations\[0\]\.prependASPath\.prefix\[0\]: 0 is not an AS number/ },
    { rule: { operations: [{ setPriority: { value: -1 } }] }, error: /operations\[0\]\.setPriority\.value/ },
    { rule: { action: 'Reject', operations: [{ setPriority: { value: 1 } }] }, error: /only allowed with action Accept/ },
    { rule: { asPathPrefix: [] }, error: /asPathPrefix: empty/ },
  ]
  for (const r of rows) {
    const spec: BGPFilterSpec = { importV4: [{ action: 'Accept', ...r.rule }] }
    t.throws(() => compileBgpFilters([filter('bad', spec)], 'import'), r.error, String(r.error))
  }
})

t.test("kernel metric from LOCAL_PREF, as Calico's BIRD sets krt_metric", async (t) => {
  t.equal(kernelMetricOf(priorityToLocalPref(512)), 512, 'a setPriority 512 route: metric 512')
  t.equal(kernelMetricOf(priorityToLocalPref(1024)), 1024, "a Calico node's normal priority: 1024")
  t.equal(kernelMetricOf(undefined), undefined, 'no LOCAL_PREF (eBGP): the kernel default')
  t.equal(kernelMetricOf(100), undefined, 'the plain LOCAL_PREF 100 is no priority: the kernel default')
  t.equal(kernelMetricOf(PRIORITY_BASE), undefined, 'priority 0 is outside 1..2^31-2')
  t.equal(kernelMetricOf(0xffffffff), undefined, 'above the base: no metric')
})
