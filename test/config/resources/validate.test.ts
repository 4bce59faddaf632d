// Every validation rule of the resource model, one table row each: a resource that breaks exactly
// that rule must fail with exactly the expected field path(s), and the valid neighbour of each rule
// (the same resource with the fault removed) must pass, so a rule can neither be missing nor too wide.
import t from 'tap'
import { tryParseResources } from '../../../config/resources/index.js'

type Kind = 'BGPConfiguration' | 'BGPPeer' | 'BGPFilter' | 'Node' | 'IPPool' | 'IPAMConfig' | 'IPAMConfiguration'

function doc(kind: Kind, name: string, spec: Record<string, unknown>): string {
  return JSON.stringify({ apiVersion: 'projectcalico.org/v3', kind, metadata: { name }, spec })
}

// [description, kind, name, spec, expected error paths (relative to documents[0]), reason pattern]
type Case = [string, Kind, string, Record<string, unknown>, string[], RegExp?]

const cases: Case[] = [
  // IPPool
  ['pool cidr with host bits set (Calico: not strictly masked)', 'IPPool', 'p', { cidr: '198.18.0.1/16' }, ['spec.cidr'], /"198\.18\.0\.1\/16" has host bits set \(the network is 198\.18\.0\.0\/16\)/],
  ['pool cidr v6 with host bits', 'IPPool', 'p', { cidr: '2001:db8::1/64' }, ['spec.cidr'], /has host bits set \(the network is 2001:db8::\/64\)/],
  ['pool cidr not an address', 'IPPool', 'p', { cidr: '198.18.0.256/16' }, ['spec.cidr'], /"198\.18\.0\.256" is not an IPv4 or IPv6 address/],
  ['pool cidr bad length', 'IPPool', 'p', { cidr: '198.18.0.0/33' }, ['spec.cidr'], /prefix length/],
  ['pool cidr leading zero octet', 'IPPool', 'p', { cidr: '198.018.0.0/16' }, ['spec.cidr'], /leading zero \(018\)/],
  ['pool overlaps v4 link-local', 'IPPool', 'p', { cidr: '169.254.0.0/24' }, ['spec.cidr'], /link-local/],
  ['pool overlaps v6 link-local', 'IPPool', 'p', { cidr: 'fe80::/64' }, ['spec.cidr'], /link-local/],
  ['blockSize below 20', 'IPPool', 'p', { cidr: '198.18.0.0/16', blockSize: 19 }, ['spec.blockSize'], /out of range 20-32/],
  ['blockSize above 32', 'IPPool', 'p', { cidr: '198.18.0.0/16', blockSize: 33 }, ['spec.blockSize'], /out of range 20-32/],
  ['v6 blockSize below 116', 'IPPool', 'p', { cidr: '2001:db8::/64', blockSize: 115 }, ['spec.blockSize'], /116-128/],
  ['v6 blockSize above 128', 'IPPool', 'p', { cidr: '2001:db8::/64', blockSize: 129 }, ['spec.blockSize'], /out of range 0-128/],
  ['v6 pool with a v4 blockSize', 'IPPool', 'p', { cidr: '2001:db8::/64', blockSize: 26 }, ['spec.blockSize'], /116-128 for an IPv6/],
  ['pool smaller than its default block', 'IPPool', 'p', { cidr: '198.18.0.0/27' }, ['spec.cidr'], /smaller than its blocks/],
  ['pool smaller than its block', 'IPPool', 'p', { cidr: '198.18.0.0/24', blockSize: 23 }, ['spec.cidr'], /at least as large as a block/],
  ['IPIP on an IPv6 pool', 'IPPool', 'p', { cidr: '2001:db8::/64', ipipMode: 'Always' }, ['spec.ipipMode'], /IPv6/],
  ['IPIP and VXLAN both on', 'IPPool', 'p', { cidr: '198.18.0.0/16', ipipMode: 'CrossSubnet', vxlanMode: 'Always' }, ['spec.ipipMode'], /both/],
  ['bad ipipMode', 'IPPool', 'p', { cidr: '198.18.0.0/16', ipipMode: 'always' }, ['spec.ipipMode'], /not one of Never, Always, CrossSubnet/],
  ['bad nodeSelector', 'IPPool', 'p', { cidr: '198.18.0.0/16', nodeSelector: "zone == 'a' &&" }, ['spec.nodeSelector'], /offset 14/],
  ['bad allowedUses', 'IPPool', 'p', { cidr: '198.18.0.0/16', allowedUses: ['Workload', 'Pods'] }, ['spec.allowedUses[1]']],
  ['LoadBalancer with Workload', 'IPPool', 'p', { cidr: '198.18.0.0/16', allowedUses: ['LoadBalancer', 'Workload'] }, ['spec.allowedUses']],
  ['LoadBalancer with encapsulation', 'IPPool', 'p', { cidr: '198.18.0.0/16', allowedUses: ['LoadBalancer'], vxlanMode: 'Always' }, ['spec.vxlanMode']],
  ['LoadBalancer with a node selector', 'IPPool', 'p', { cidr: '198.18.0.0/16', allowedUses: ['LoadBalancer'], nodeSelector: "a == 'b'" }, ['spec.nodeSelector']],
  // BGPPeer
  ['node with nodeSelector', 'BGPPeer', 'p', { node: 'n1', nodeSelector: 'all()', peerIP: '192.0.2.1', asNumber: 65000 }, ['spec.node'], /nodeSelector/],
  ['peerIP with peerSelector', 'BGPPeer', 'p', { peerIP: '192.0.2.1', peerSelector: 'has(rr)' }, ['spec.peerIP'], /peerSelector/],
  ['asNumber with peerSelector', 'BGPPeer', 'p', { asNumber: 65000, peerSelector: 'has(rr)' }, ['spec.asNumber'], /peerSelector/],
  ['AS number 0', 'BGPPeer', 'p', { peerIP: '192.0.2.1', asNumber: 0 }, ['spec.asNumber'], /out of range 1-4294967295/],
  ['AS number above 32 bits', 'BGPPeer', 'p', { peerIP: '192.0.2.1', asNumber: 4294967296 }, ['spec.asNumber'], /out of range/],
  ['AS number negative', 'BGPPeer', 'p', { peerIP: '192.0.2.1', asNumber: -1 }, ['spec.asNumber']],
  ['AS number fractional', 'BGPPeer', 'p', { peerIP: '192.0.2.1', asNumber: 65000.5 }, ['spec.asNumber'], /not an integer/],
  ['asdot part above 65535', 'BGPPeer', 'p', { peerIP: '192.0.2.1', asNumber: '1.65536' }, ['spec.asNumber'], /above 65535/],
  ['AS number text', 'BGPPeer', 'p', { peerIP: '192.0.2.1', asNumber: 'AS65000' }, ['spec.asNumber'], /not an AS number/],
  ['localASNumber 0', 'BGPPeer', 'p', { peerIP: '192.0.2.1', asNumber: 65000, localASNumber: 0 }, ['spec.localASNumber']],
  ['peerIP not an address', 'BGPPeer', 'p', { peerIP: '192.0.2', asNumber: 65000 }, ['spec.peerIP'], /not a peer address/],
  ['peerIP port 0', 'BGPPeer', 'p', { peerIP: '192.0.2.1:0', asNumber: 65000 }, ['spec.peerIP'], /invalid port/],
  ['peerIP port too big', 'BGPPeer', 'p', { peerIP: '192.0.2.1:65536', asNumber: 65000 }, ['spec.peerIP'], /invalid port/],
  ['peerIP IPv6 port without brackets', 'BGPPeer', 'p', { peerIP: '2001:db8::1:179x', asNumber: 65000 }, ['spec.peerIP']],
  ['bad keepaliveTime', 'BGPPeer', 'p', { peerIP: '192.0.2.1', asNumber: 65000, keepaliveTime: '10' }, ['spec.keepaliveTime'], /missing unit/],
  ['negative maxRestartTime', 'BGPPeer', 'p', { peerIP: '192.0.2.1', asNumber: 65000, maxRestartTime: '-1s' }, ['spec.maxRestartTime'], /negative/],
  ['keepOriginalNextHop with nextHopMode', 'BGPPeer', 'p', { peerIP: '192.0.2.1', asNumber: 65000, keepOriginalNextHop: true, nextHopMode: 'Keep' }, ['spec.keepOriginalNextHop'], /deprecated/],
  ['bad nextHopMode', 'BGPPeer', 'p', { peerIP: '192.0.2.1', asNumber: 65000, nextHopMode: 'self' }, ['spec.nextHopMode']],
  ['ttlSecurity above 255', 'BGPPeer', 'p', { peerIP: '192.0.2.1', asNumber: 65000, ttlSecurity: 256 }, ['spec.ttlSecurity']],
  ['reachableBy without peerIP', 'BGPPeer', 'p', { peerSelector: 'has(rr)', reachableBy: '192.0.2.254' }, ['spec.reachableBy'], /needs peerIP/],
  ['reachableBy of the other family', 'BGPPeer', 'p', { peerIP: '192.0.2.1', asNumber: 65000, reachableBy: '2001:db8::1' }, ['spec.reachableBy'], /families/],
  ['bad peerSelector', 'BGPPeer', 'p', { peerSelector: 'has(rr' }, ['spec.peerSelector'], /offset 6/],
  ['bad filter name', 'BGPPeer', 'p', { peerIP: '192.0.2.1', asNumber: 65000, filters: ['My_Filter'] }, ['spec.filters[0]']],
  ['password without key', 'BGPPeer', 'p', { peerIP: '192.0.2.1', asNumber: 65000, password: { secretKeyRef: { name: 's' } } }, ['spec.password.secretKeyRef.key'], /required/],
  // BGPConfiguration
  ['BGPConfiguration with another name', 'BGPConfiguration', 'global', {}, ['metadata.name'], /"default" or "node\.<nodename>"/],
  ['BGPConfiguration node. with no node', 'BGPConfiguration', 'node.', {}, ['metadata.name']],
  ['asNumber on a per-node config', 'BGPConfiguration', 'node.n1', { asNumber: 65000, logSeverityScreen: 'Debug' }, ['spec.asNumber'], /only be set on the "default"/],
  ['mesh on a per-node config', 'BGPConfiguration', 'node.n1', { nodeToNodeMeshEnabled: false, serviceClusterIPs: [{ cidr: '10.96.0.0/12' }] }, ['spec.nodeToNodeMeshEnabled', 'spec.serviceClusterIPs']],
  ['mesh password with the mesh off', 'BGPConfiguration', 'default', { nodeToNodeMeshEnabled: false, nodeMeshPassword: { secretKeyRef: { name: 's', key: 'k' } } }, ['spec.nodeMeshPassword']],
  ['mesh restart time with the mesh off', 'BGPConfiguration', 'default', { nodeToNodeMeshEnabled: false, nodeMeshMaxRestartTime: '120s' }, ['spec.nodeMeshMaxRestartTime']],
  ['bad nodeMeshMaxRestartTime', 'BGPConfiguration', 'default', { nodeMeshMaxRestartTime: '2 minutes' }, ['spec.nodeMeshMaxRestartTime']],
  ['bad logSeverityScreen', 'BGPConfiguration', 'default', { logSeverityScreen: 'Verbose' }, ['spec.logSeverityScreen']],
  ['listenPort 0', 'BGPConfiguration', 'default', { listenPort: 0 }, ['spec.listenPort']],
  ['serviceClusterIPs not a network', 'BGPConfiguration', 'default', { serviceClusterIPs: [{ cidr: '10.96.0.1/12' }] }, ['spec.serviceClusterIPs[0].cidr'], /host bits/],
  ['bad community value', 'BGPConfiguration', 'default', { communities: [{ name: 'c', value: '65536:1' }], prefixAdvertisements: [{ cidr: '198.18.0.0/16', communities: ['c'] }] }, ['spec.communities[0].value']],
  ['communities unused', 'BGPConfiguration', 'default', { communities: [{ name: 'c', value: '65000:1' }] }, ['spec.communities'], /not used/],
  ['prefixAdvertisement uses an undefined name', 'BGPConfiguration', 'default', { prefixAdvertisements: [{ cidr: '198.18.0.0/16', communities: ['nope'] }] }, ['spec.prefixAdvertisements[0].communities[0]']],
  ['ignoredInterfaces *', 'BGPConfiguration', 'default', { ignoredInterfaces: ['*'] }, ['spec.ignoredInterfaces[0]']],
  ['unsupported programClusterRoutes', 'BGPConfiguration', 'default', { programClusterRoutes: 'Enabled' }, ['spec.programClusterRoutes'], /does not support/],
  ['bad serviceLoadBalancerAggregation', 'BGPConfiguration', 'default', { serviceLoadBalancerAggregation: 'disabled' }, ['spec.serviceLoadBalancerAggregation']],
  ['serviceLoadBalancerAggregation on a per-node config', 'BGPConfiguration', 'node.n1', { serviceLoadBalancerAggregation: 'Disabled' }, ['spec.serviceLoadBalancerAggregation'], /only be set on the "default"/],
  // BGPFilter
  ['rule without action', 'BGPFilter', 'f', { exportV4: [{ cidr: '198.18.0.0/16', matchOperator: 'In' }] }, ['spec.exportV4[0].action'], /required/],
  ['bad action', 'BGPFilter', 'f', { exportV4: [{ action: 'Deny' }] }, ['spec.exportV4[0].action'], /Accept, Reject/],
  ['cidr without matchOperator', 'BGPFilter', 'f', { importV4: [{ action: 'Reject', cidr: '198.18.0.0/16' }] }, ['spec.importV4[0].matchOperator']],
  ['matchOperator without cidr', 'BGPFilter', 'f', { importV4: [{ action: 'Reject', matchOperator: 'In' }] }, ['spec.importV4[0].cidr']],
  ['bad matchOperator', 'BGPFilter', 'f', { importV4: [{ action: 'Reject', cidr: '198.18.0.0/16', matchOperator: 'Contains' }] }, ['spec.importV4[0].matchOperator']],
  ['prefixLength without cidr', 'BGPFilter', 'f', { exportV4: [{ action: 'Accept', prefixLength: { min: 24 } }] }, ['spec.exportV4[0].prefixLength']],
  ['prefixLength above 32 in a V4 rule', 'BGPFilter', 'f', { exportV4: [{ action: 'Accept', cidr: '198.18.0.0/16', matchOperator: 'In', prefixLength: { max: 33 } }] }, ['spec.exportV4[0].prefixLength.max']],
  ['prefixLength above 128 in a V6 rule', 'BGPFilter', 'f', { exportV6: [{ action: 'Accept', cidr: '2001:db8::/32', matchOperator: 'In', prefixLength: { min: 129 } }] }, ['spec.exportV6[0].prefixLength.min']],
  ['prefixLength min above max', 'BGPFilter', 'f', { exportV4: [{ action: 'Accept', cidr: '198.18.0.0/16', matchOperator: 'In', prefixLength: { min: 28, max: 24 } }] }, ['spec.exportV4[0].prefixLength'], /BIRD refuses/],
  ['prefixLength max shorter than the cidr', 'BGPFilter', 'f', { importV4: [{ action: 'Accept', cidr: '198.18.0.0/24', matchOperator: 'In', prefixLength: { max: 16 } }] }, ['spec.importV4[0].prefixLength'], /\{24,16\}/],
  ['prefixLength with matchOperator Equal', 'BGPFilter', 'f', { importV4: [{ action: 'Accept', cidr: '198.18.0.0/16', matchOperator: 'Equal', prefixLength: { min: 24 } }] }, ['spec.importV4[0].prefixLength'], /In or NotIn/],
  ['LoadBalancer pool with disableBGPExport', 'IPPool', 'p', { cidr: '198.18.0.0/16', allowedUses: ['LoadBalancer'], disableBGPExport: true }, ['spec.disableBGPExport'], /cannot disable BGP export/],
  ['pool nodeSelector with global()', 'IPPool', 'p', { cidr: '198.18.0.0/16', nodeSelector: 'global()' }, ['spec.nodeSelector'], /global\(\)/],
  ['V6 cidr in a V4 rule', 'BGPFilter', 'f', { exportV4: [{ action: 'Accept', cidr: '2001:db8::/32', matchOperator: 'In' }] }, ['spec.exportV4[0].cidr'], /not an IPv4 network/],
  ['filter cidr with host bits', 'BGPFilter', 'f', { exportV4: [{ action: 'Accept', cidr: '198.18.0.1/16', matchOperator: 'In' }] }, ['spec.exportV4[0].cidr']],
  ['bad source', 'BGPFilter', 'f', { exportV4: [{ action: 'Accept', source: 'LocalPeers' }] }, ['spec.exportV4[0].source']],
  ['bad peerType', 'BGPFilter', 'f', { exportV4: [{ action: 'Accept', peerType: 'ebgp' }] }, ['spec.exportV4[0].peerType']],
  ['bad interface', 'BGPFilter', 'f', { exportV4: [{ action: 'Accept', interface: 'a-very-long-interface-name' }] }, ['spec.exportV4[0].interface']],
  ['two community values', 'BGPFilter', 'f', { importV4: [{ action: 'Accept', communities: { values: ['65000:1', '65000:2'] } }] }, ['spec.importV4[0].communities.values'], /at most 1/],
  ['bad community match', 'BGPFilter', 'f', { importV4: [{ action: 'Accept', communities: { values: ['65000'] } }] }, ['spec.importV4[0].communities.values[0]']],
  ['bad asPathPrefix', 'BGPFilter', 'f', { importV4: [{ action: 'Accept', asPathPrefix: [65000, 0] }] }, ['spec.importV4[0].asPathPrefix[1]']],
  ['priority 0', 'BGPFilter', 'f', { importV4: [{ action: 'Accept', priority: 0 }] }, ['spec.importV4[0].priority']],
  ['operations with Reject', 'BGPFilter', 'f', { importV4: [{ action: 'Reject', operations: [{ setPriority: { value: 10 } }] }] }, ['spec.importV4[0].operations'], /only be used with action Accept/],
  ['operation with two actions', 'BGPFilter', 'f', { importV4: [{ action: 'Accept', operations: [{ setPriority: { value: 10 }, addCommunity: { value: '65000:1' } }] }] }, ['spec.importV4[0].operations[0]'], /exactly one/],
  ['operation with none', 'BGPFilter', 'f', { importV4: [{ action: 'Accept', operations: [{}] }] }, ['spec.importV4[0].operations[0]']],
  ['empty operations list', 'BGPFilter', 'f', { importV4: [{ action: 'Accept', operations: [] }] }, ['spec.importV4[0].operations'], /at least 1/],
  ['prependASPath with 11 ASes', 'BGPFilter', 'f', { importV4: [{ action: 'Accept', operations: [{ prependASPath: { prefix: new Array<number>(11).fill(65000) } }] }] }, ['spec.importV4[0].operations[0].prependASPath.prefix']],
  ['bad addCommunity', 'BGPFilter', 'f', { importV4: [{ action: 'Accept', operations: [{ addCommunity: { value: '1:2:3:4' } }] }] }, ['spec.importV4[0].operations[0].addCommunity.value']],
  // Node
  ['ipv4Address not IPv4', 'Node', 'n', { bgp: { ipv4Address: '2001:db8::1/64' } }, ['spec.bgp.ipv4Address'], /not an IPv4 address/],
  ['ipv4Address bad length', 'Node', 'n', { bgp: { ipv4Address: '192.0.2.10/40' } }, ['spec.bgp.ipv4Address']],
  ['ipv6Address not IPv6', 'Node', 'n', { bgp: { ipv6Address: '192.0.2.10/24' } }, ['spec.bgp.ipv6Address']],
  ['routeReflectorClusterID not dotted IPv4', 'Node', 'n', { bgp: { ipv4Address: '192.0.2.10/24', routeReflectorClusterID: '1' } }, ['spec.bgp.routeReflectorClusterID'], /IPv4/],
  ['node AS 0', 'Node', 'n', { bgp: { asNumber: 0 } }, ['spec.bgp.asNumber']],
  ['empty spec.bgp', 'Node', 'n', { bgp: {} }, ['spec.bgp'], /must not be empty/],
  ['bad VXLAN MAC', 'Node', 'n', { vxlanTunnelMACAddr: '66:aa' }, ['spec.vxlanTunnelMACAddr']],
  ['wireguard unsupported', 'Node', 'n', { wireguard: { interfaceIPv4Address: '198.18.0.1' } }, ['spec.wireguard']],
  // IPAMConfig
  ['IPAMConfig with another name', 'IPAMConfig', 'cluster', {}, ['metadata.name'], /singleton/],
  ['maxBlocksPerHost negative', 'IPAMConfig', 'default', { strictAffinity: true, maxBlocksPerHost: -1 }, ['spec.maxBlocksPerHost']],
]

t.test('each rule fails with exactly its path', async (t) => {
  for (const [what, kind, name, spec, paths, reason] of cases) {
    const { errors, resources } = tryParseResources(doc(kind, name, spec))
    t.same(errors.map((e) => e.path), paths.map((p) => `documents[0].${p}`), what)
    t.equal(resources.length, 0, `${what}: nothing returned`)
    if (reason !== undefined) t.match(errors[0]?.reason, reason, `${what}: ${errors[0]?.reason ?? ''}`)
  }
})

// The valid neighbours: each rule's boundary, accepted.
const valid: [string, Kind, string, Record<string, unknown>][] = [
  ['v4 blockSize 20 and 32', 'IPPool', 'p', { cidr: '198.18.0.0/16', blockSize: 20 }],
  ['v4 pool equal to its block', 'IPPool', 'p', { cidr: '198.18.0.0/32', blockSize: 32 }],
  ['disabled pool smaller than a block (Calico skips the size check)', 'IPPool', 'p', { cidr: '198.18.0.0/28', disabled: true }],
  ['v6 blockSize 116', 'IPPool', 'p', { cidr: '2001:db8::/64', blockSize: 116 }],
  ['v6 blockSize 128', 'IPPool', 'p', { cidr: '2001:db8::/120', blockSize: 128 }],
  ['v6 pool with VXLAN', 'IPPool', 'p', { cidr: '2001:db8::/64', vxlanMode: 'Always', ipipMode: 'Never' }],
  ['IPIP with VXLAN Never', 'IPPool', 'p', { cidr: '198.18.0.0/16', ipipMode: 'Always', vxlanMode: 'Never' }],
  ['LoadBalancer pool', 'IPPool', 'p', { cidr: '198.18.0.0/16', allowedUses: ['LoadBalancer'], nodeSelector: 'all()' }],
  ['AS 4294967295', 'BGPPeer', 'p', { peerIP: '192.0.2.1', asNumber: 4294967295 }],
  ['asdot 65535.65535', 'BGPPeer', 'p', { peerIP: '192.0.2.1', asNumber: '65535.65535' }],
  ['AS as decimal string', 'BGPPeer', 'p', { peerIP: '192.0.2.1', asNumber: '65000' }],
  ['peer port 65535', 'BGPPeer', 'p', { peerIP: '192.0.2.1:65535', asNumber: 65000 }],
  ['bare IPv6 peer', 'BGPPeer', 'p', { peerIP: '2001:db8::1', asNumber: 65000 }],
  ['nextHopMode with keepOriginalNextHop false', 'BGPPeer', 'p', { peerIP: '192.0.2.1', asNumber: 65000, keepOriginalNextHop: false, nextHopMode: 'Keep' }],
  ['global peer (no node, no nodeSelector)', 'BGPPeer', 'p', { peerIP: '192.0.2.1', asNumber: 65000, keepaliveTime: '1m30s', maxRestartTime: '500ms' }],
  ['selector peer with global()', 'BGPPeer', 'p', { nodeSelector: 'global()', peerSelector: "route-reflector == 'true'" }],
  ['per-node config with allowed fields', 'BGPConfiguration', 'node.rack1-host1', { logSeverityScreen: 'Debug', listenPort: 1790, bindMode: 'NodeIP', ignoredInterfaces: ['eth*'] }],
  ['serviceLoadBalancerAggregation Disabled', 'BGPConfiguration', 'default', { serviceLoadBalancerIPs: [{ cidr: '203.0.113.0/24' }], serviceLoadBalancerAggregation: 'Disabled' }],
  ['mesh password with mesh on', 'BGPConfiguration', 'default', { nodeToNodeMeshEnabled: true, nodeMeshPassword: { secretKeyRef: { name: 's', key: 'k' } } }],
  ['filter with prefixLength', 'BGPFilter', 'f', { exportV6: [{ action: 'Accept', cidr: '2001:db8::/32', matchOperator: 'In', prefixLength: { min: 48, max: 128 } }] }],
  ['filter with bare address as cidr', 'BGPFilter', 'f', { exportV4: [{ action: 'Reject', cidr: '198.18.0.1', matchOperator: 'Equal' }] }],
  ['node ipv4Address bare', 'Node', 'n', { bgp: { ipv4Address: '192.0.2.10' } }],
  ['strictAffinity with autoAllocateBlocks false', 'IPAMConfig', 'default', { strictAffinity: true, autoAllocateBlocks: false }],
  ['maxBlocksPerHost 0 without strictAffinity', 'IPAMConfig', 'default', { maxBlocksPerHost: 0 }],
  // ipam.go's SetIPAMConfig refuses these two, Calico's resource validator does not (its docs show the first).
  ['maxBlocksPerHost with strictAffinity false', 'IPAMConfiguration', 'default', { strictAffinity: false, maxBlocksPerHost: 4 }],
  ['strictAffinity and autoAllocateBlocks both false', 'IPAMConfig', 'default', { strictAffinity: false, autoAllocateBlocks: false }],
  ['LoadBalancer pool with nodeSelector absent (all() by default)', 'IPPool', 'p', { cidr: '198.18.0.0/16', allowedUses: ['LoadBalancer'] }],
]

t.test('the boundary of each rule is accepted', async (t) => {
  for (const [what, kind, name, spec] of valid) {
    const { errors, resources } = tryParseResources(doc(kind, name, spec))
    t.same(errors.map((e) => `${e.path}: ${e.reason}`), [], what)
    t.equal(resources.length, 1, what)
  }
})
