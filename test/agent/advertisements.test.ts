// The advertisement plans: which communities an originated route gets from prefixAdvertisements (named and
// literal, standard and large), which service CIDRs every node originates, and which prefixes the export
// allow-list lets go to a cluster node and to an external peer (disableBGPExport).
import t from 'tap'
import { parsePrefix } from '../../bgp/codec/nlri.js'
import { formatCommunity } from '../../bgp/codec/json.js'
import { compileBgpFilters } from '../../bgp/policy/index.js'
import { compileCommunityRules, communitiesFor, exportAllowList, serviceCidrs } from '../../agent/advertisements.js'
import type { BGPConfigurationSpec, IPPool } from '../../config/resources/types.js'
import { attrs, peer } from '../bgp/rib/helpers.js'

const CONFIG: BGPConfigurationSpec = {
  communities: [{ name: 'rack', value: '65000:100' }, { name: 'big', value: '65000:1:2' }],
  prefixAdvertisements: [
    { cidr: '198.18.0.0/16', communities: ['rack', '65000:7'] },
    { cidr: '198.18.4.0/22', communities: ['big', '4200000000:3:4', 'rack'] },
    { cidr: '198.18.4.0/24', communities: ['65000:7'] },
    { cidr: '2001:db8::/32', communities: ['big'] },
  ],
}

t.test('communities per route: every advertisement holding it adds its own, once each', async (t) => {
  const rules = compileCommunityRules(CONFIG)
  const rows: [string, string[], string[]][] = [
    ['198.18.0.0/26', ['65000:100', '65000:7'], []],
    ['198.18.4.0/26', ['65000:100', '65000:7'], ['65000:1:2', '4200000000:3:4']],
    ['198.18.5.7/32', ['65000:100', '65000:7'], ['65000:1:2', '4200000000:3:4']],
    ['198.18.0.0/15', [], []],
    ['198.19.0.0/26', [], []],
    ['203.0.113.0/24', [], []],
    ['2001:db8:0:1::/122', [], ['65000:1:2']],
  ]
  for (const [prefix, standard, large] of rows) {
    const got = communitiesFor(parsePrefix(prefix), rules)
    t.same((got.communities ?? []).map((c) => formatCommunity(c)), standard, `${prefix}: standard`)
    t.same((got.largeCommunities ?? []).map((c) => c.join(':')), large, `${prefix}: large`)
  }
  t.same(communitiesFor(parsePrefix('198.18.0.0/26'), []), {}, 'no advertisement: no attribute')
})

t.test('an unusable community names its field', async (t) => {
  t.throws(() => compileCommunityRules({ prefixAdvertisements: [{ cidr: '198.18.0.0/16', communities: ['nosuch'] }] }), /spec\.prefixAdvertisements\[0\]\.communities\[0\]/)
  t.throws(() => compileCommunityRules({ communities: [{ name: 'x', value: '70000:1' }], prefixAdvertisements: [{ cidr: '198.18.0.0/16', communities: ['x'] }] }), /communities\[0\] \(x = 70000:1\)/)
})

t.test('service CIDRs: the three lists, each CIDR once', async (t) => {
  const config: BGPConfigurationSpec = {
    serviceClusterIPs: [{ cidr: '203.0.113.0/26' }, { cidr: '2001:db8:5::/112' }],
    serviceExternalIPs: [{ cidr: '203.0.113.64/26' }, { cidr: '203.0.113.0/26' }],
    serviceLoadBalancerIPs: [{ cidr: '203.0.113.128/25' }],
  }
  const cidrs = serviceCidrs(config)
  t.same(cidrs, ['203.0.113.0/26', '2001:db8:5::/112', '203.0.113.64/26', '203.0.113.128/25'])
  t.same(serviceCidrs({}), [])
})

const pool = (name: string, cidr: string, disableBGPExport?: boolean): IPPool => ({
  apiVersion: 'projectcalico.org/v3', kind: 'IPPool', metadata: { name }, spec: { cidr, ...(disableBGPExport !== undefined ? { disableBGPExport } : {}) },
})

t.test('export allow-list: pools, services, and disableBGPExport toward nodes and external peers', async (t) => {
  const pools = [pool('open', '198.18.0.0/16'), pool('quiet', '198.19.0.0/16', true), pool('v6', '2001:db8:1::/48'), pool('quiet6', '2001:db8:2::/48', true)]
  const services = ['203.0.113.0/24', '198.19.200.0/24']
  const external = compileBgpFilters([exportAllowList(pools, services, false)], 'export')
  const toNode = compileBgpFilters([exportAllowList(pools, services, true)], 'export')
  const target = peer({ address: '192.0.2.9' })
  const rows: [string, boolean, boolean][] = [
    // prefix, to an external peer, to a node
    ['198.18.3.0/26', true, true],
    ['198.19.3.0/26', false, true],
    ['198.19.3.7/32', false, true],
    ['203.0.113.0/24', true, true],
    // A service range inside a disableBGPExport pool stays in: the pool is rejected first, as Calico does.
    ['198.19.200.0/24', false, true],
    ['192.0.2.0/24', false, false],
    ['2001:db8:1:4::/122', true, true],
    ['2001:db8:2:4::/122', false, true],
    ['2001:db8:9::/48', false, false],
  ]
  for (const [prefix, ext, node] of rows) {
    t.equal(external.apply(parsePrefix(prefix), attrs(), target) !== undefined, ext, `${prefix} to an external peer`)
    t.equal(toNode.apply(parsePrefix(prefix), attrs(), target) !== undefined, node, `${prefix} to a node`)
  }
})

t.test("export allow-list: another node's Service address is not passed on to an external peer", async (t) => {
  const services = ['203.0.113.0/24', '203.0.113.250/32', '2001:db8:5::/112']
  const pools = [pool('open', '198.18.0.0/16')]
  const external = compileBgpFilters([exportAllowList(pools, services, false)], 'export')
  const toNode = compileBgpFilters([exportAllowList(pools, services, true)], 'export')
  const target = peer({ address: '192.0.2.9' })
  const ours = { fromPeer: false }
  const learned = { fromPeer: true }
  const rows: [string, boolean, boolean, boolean][] = [
    // prefix, ours to an external peer, learned to an external peer, learned to a node (a reflector passes it on)
    ['203.0.113.7/32', true, false, true],
    ['203.0.113.250/32', true, false, true],
    ['2001:db8:5::7/128', true, false, true],
    ['203.0.113.0/24', true, true, true],
    ['2001:db8:5::/112', true, true, true],
    ['198.18.3.0/26', true, true, true],
  ]
  for (const [prefix, own, ext, node] of rows) {
    t.equal(external.apply(parsePrefix(prefix), attrs(), target, ours) !== undefined, own, `${prefix}, ours, to an external peer`)
    t.equal(external.apply(parsePrefix(prefix), attrs(), target, learned) !== undefined, ext, `${prefix}, learned, to an external peer`)
    t.equal(toNode.apply(parsePrefix(prefix), attrs(), target, learned) !== undefined, node, `${prefix}, learned, to a node`)
  }
})
