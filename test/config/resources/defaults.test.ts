// Defaults, overlap checks and the datastore key scheme: withDefaults fills Calico's values without
// touching what the operator wrote; checkPoolOverlap finds overlaps against existing pools; resources
// round-trip through encodeResource/decodeResource and a tampered or misplaced value is refused.
import t from 'tap'
import {
  checkPoolOverlap,
  decodeResource,
  defaultIPAMConfig,
  effectiveBGPConfiguration,
  encodeResource,
  keyOf,
  parseResourceKey,
  parseResources,
  peerEndpoint,
  poolBlockSize,
  resolveKind,
  resourceKey,
  resourceKindPrefix,
  ResourceErrors,
  withDefaults,
  type BGPConfiguration,
  type BGPPeer,
  type IPPool,
  type Resource,
} from '../../../config/resources/index.js'

function one<K extends Resource['kind']>(yaml: string, kind: K): Extract<Resource, { kind: K }> {
  const [r] = parseResources(yaml)
  if (r?.kind !== kind) throw new Error(`expected ${kind}`)
  return r as Extract<Resource, { kind: K }>
}

const pool = (name: string, cidr: string, extra = ''): IPPool =>
  one(`apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: ${name}}\nspec: {cidr: '${cidr}'${extra}}\n`, 'IPPool')

t.test('IPPool defaults: block size by family, Never encap, all(), Workload+Tunnel', async (t) => {
  const v4 = pool('v4', '198.18.0.0/16')
  const d = withDefaults(v4)
  t.same(d.spec, {
    cidr: '198.18.0.0/16',
    blockSize: 26,
    ipipMode: 'Never',
    vxlanMode: 'Never',
    natOutgoing: false,
    disabled: false,
    disableBGPExport: false,
    nodeSelector: 'all()',
    allowedUses: ['Workload', 'Tunnel'],
    assignmentMode: 'Automatic',
  })
  t.same(Object.keys(d.spec)[0], 'cidr', 'written fields stay first')
  t.same(v4.spec, { cidr: '198.18.0.0/16' }, 'the resource as written is untouched')
  t.equal(poolBlockSize(pool('v6', '2001:db8::/64')), 122)
  t.equal(withDefaults(pool('w', '198.18.0.0/16', ', blockSize: 24, ipipMode: Always')).spec.blockSize, 24)
  t.equal(withDefaults(pool('w', '198.18.0.0/16', ', ipipMode: Always')).spec.ipipMode, 'Always')
})

t.test('BGPConfiguration defaults apply to default only; per-node inherits', async (t) => {
  const global = one('apiVersion: projectcalico.org/v3\nkind: BGPConfiguration\nmetadata: {name: default}\nspec: {asNumber: 65001}\n', 'BGPConfiguration')
  t.same(withDefaults(global).spec, { asNumber: 65001, logSeverityScreen: 'Info', nodeToNodeMeshEnabled: true, listenPort: 179, bindMode: 'None' })
  const perNode: BGPConfiguration = one('apiVersion: projectcalico.org/v3\nkind: BGPConfiguration\nmetadata: {name: node.n1}\nspec: {listenPort: 1790}\n', 'BGPConfiguration')
  t.same(withDefaults(perNode).spec, { listenPort: 1790 })
  t.same(effectiveBGPConfiguration(global, perNode), { logSeverityScreen: 'Info', nodeToNodeMeshEnabled: true, asNumber: 65001, listenPort: 1790, bindMode: 'None' })
  t.equal(effectiveBGPConfiguration().asNumber, 64512, 'no configuration at all: AS 64512, mesh on')
  t.equal(effectiveBGPConfiguration().nodeToNodeMeshEnabled, true)
})

t.test('IPAMConfig defaults: maxBlocksPerHost 0 means 20, auto-allocate on, strict off', async (t) => {
  t.same(defaultIPAMConfig().spec, { strictAffinity: false, autoAllocateBlocks: true, maxBlocksPerHost: 20 })
  const written = one('apiVersion: projectcalico.org/v3\nkind: IPAMConfig\nmetadata: {name: default}\nspec: {strictAffinity: true, maxBlocksPerHost: 0}\n', 'IPAMConfig')
  t.same(withDefaults(written).spec, { strictAffinity: true, maxBlocksPerHost: 20, autoAllocateBlocks: true })
  const four = one('apiVersion: projectcalico.org/v3\nkind: IPAMConfig\nmetadata: {name: default}\nspec: {strictAffinity: true, maxBlocksPerHost: 4}\n', 'IPAMConfig')
  t.equal(withDefaults(four).spec.maxBlocksPerHost, 4)
})

t.test('BGPPeer defaults and the port to dial', async (t) => {
  const peer = (peerIP: string): BGPPeer => one(`apiVersion: projectcalico.org/v3\nkind: BGPPeer\nmetadata: {name: p}\nspec: {peerIP: '${peerIP}', asNumber: 65000}\n`, 'BGPPeer')
  t.same(withDefaults(peer('192.0.2.1')).spec, { peerIP: '192.0.2.1', asNumber: 65000, sourceAddress: 'UseNodeIP', reversePeering: 'Auto' })
  t.same(peerEndpoint(peer('192.0.2.1')), { ip: '192.0.2.1', port: 179 })
  t.same(peerEndpoint(peer('192.0.2.1'), 1790), { ip: '192.0.2.1', port: 1790 }, "the peer's listenPort when peerIP has none")
  t.same(peerEndpoint(peer('192.0.2.1:1179'), 1790), { ip: '192.0.2.1', port: 1179 })
  t.same(peerEndpoint(peer('[2001:db8::1]:1179')), { ip: '2001:db8::1', port: 1179 })
  t.same(peerEndpoint(peer('2001:db8::1')), { ip: '2001:db8::1', port: 179 })
})

t.test('checkPoolOverlap against existing pools', async (t) => {
  const existing = [pool('a', '198.18.0.0/16'), pool('b', '198.19.0.0/24'), pool('v6', '2001:db8::/48')]
  t.same(checkPoolOverlap(pool('new', '198.20.0.0/16'), existing), [], 'disjoint')
  t.same(checkPoolOverlap(pool('new', '198.19.1.0/24'), existing), [], 'adjacent is not overlapping')
  t.same(checkPoolOverlap(pool('new', '2001:db9::/48'), existing), [])
  const inside = checkPoolOverlap(pool('new', '198.18.64.0/24'), existing)
  t.same(inside.map((e) => e.path), ['spec.cidr'])
  t.match(inside[0]?.reason, /overlaps IPPool "a" \(198\.18\.0\.0\/16\)/)
  const around = checkPoolOverlap(pool('new', '198.16.0.0/14'), existing)
  t.equal(around.length, 2, 'a supernet overlaps both v4 pools')
  t.equal(checkPoolOverlap(pool('new', '2001:db8:0:1::/64'), existing).length, 1, 'IPv6')
  t.same(checkPoolOverlap(pool('a', '198.18.0.0/17'), existing), [], 'the pool being replaced (same name) is skipped')
})

t.test('datastore keys', async (t) => {
  t.equal(resourceKey('IPPool', 'default-ipv4-ippool'), '/pinto/resources/ippools/default-ipv4-ippool')
  t.equal(resourceKey('BGPConfiguration', 'node.n1'), '/pinto/resources/bgpconfigurations/node.n1')
  t.equal(resourceKey('IPAMConfig', 'default'), '/pinto/resources/ipamconfigs/default')
  t.equal(resourceKindPrefix('BGPPeer'), '/pinto/resources/bgppeers/')
  t.same(parseResourceKey('/pinto/resources/bgpfilters/f1'), { kind: 'BGPFilter', name: 'f1' })
  t.equal(parseResourceKey('/pinto/resources/widgets/x'), undefined)
  t.equal(parseResourceKey('/pinto/resources/ippools/'), undefined)
  t.equal(parseResourceKey('/pinto/resources/ippools/a/b'), undefined)
  t.equal(parseResourceKey('/other/ippools/a'), undefined)
  t.throws(() => resourceKey('IPPool', 'a/b'))
  for (const [text, kind] of [['ippool', 'IPPool'], ['ippools', 'IPPool'], ['IPPool', 'IPPool'], ['bgpPeers', 'BGPPeer'], ['bgpconfig', 'BGPConfiguration'], ['nodes', 'Node'], ['ipamconfiguration', 'IPAMConfig'], ['bgpfilter', 'BGPFilter']] as const) {
    t.equal(resolveKind(text), kind, text)
  }
  t.equal(resolveKind('networkpolicy'), undefined)
})

t.test('encode/decode round-trips every kind as written', async (t) => {
  const text = `apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: p, labels: {tier: a}, resourceVersion: "7", uid: u-1, creationTimestamp: "2024-01-10T10:00:00Z"}
spec: {cidr: 198.18.0.0/16}
---
apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata: {name: rr}
spec: {nodeSelector: all(), peerSelector: "has(rr)"}
---
apiVersion: projectcalico.org/v3
kind: BGPConfiguration
metadata: {name: default}
spec: {asNumber: "1.10", nodeToNodeMeshEnabled: false}
---
apiVersion: projectcalico.org/v3
kind: BGPFilter
metadata: {name: f}
spec: {exportV4: [{action: Reject, cidr: 198.18.0.0/16, matchOperator: In}]}
---
apiVersion: projectcalico.org/v3
kind: Node
metadata: {name: n1}
spec: {bgp: {ipv4Address: 192.0.2.10/24}}
---
apiVersion: projectcalico.org/v3
kind: IPAMConfiguration
metadata: {name: default}
spec: {strictAffinity: true}
`
  for (const r of parseResources(text)) {
    const key = keyOf(r)
    const back = decodeResource(encodeResource(r), key)
    t.same(back, r, key)
  }
  const p = pool('p', '198.18.0.0/16')
  const typed: IPPool = decodeResource(encodeResource(p), undefined, 'IPPool')
  t.equal(typed.spec.cidr, '198.18.0.0/16')
})

t.test('decodeResource refuses bad, tampered or misplaced values, naming the key', async (t) => {
  const p = pool('p', '198.18.0.0/16')
  const key = resourceKey('IPPool', 'p')
  const cases: [string, string, string, RegExp][] = [
    ['not JSON', '{nope', key, /not JSON/],
    ['wrong name for the key', encodeResource(p), resourceKey('IPPool', 'q'), /key names IPPool\/q/],
    ['wrong kind for the key', encodeResource(p), resourceKey('BGPPeer', 'p'), /key names BGPPeer\/p/],
    ['tampered to an invalid pool', encodeResource({ ...p, spec: { cidr: '198.18.0.1/16' } }), key, /spec\.cidr: "198\.18\.0\.1\/16" has host bits set/],
    ['a stored field pinto does not know', JSON.stringify({ ...p, spec: { ...p.spec, colour: 'red' } }), key, /spec\.colour: unknown field/],
    ['a list', JSON.stringify({ apiVersion: 'projectcalico.org/v3', kind: 'IPPoolList', items: [p, p] }), key, /exactly one resource/],
  ]
  for (const [what, value, k, message] of cases) {
    try {
      decodeResource(value, k)
      t.fail(`${what} should fail`)
    } catch (e) {
      t.ok(e instanceof ResourceErrors, what)
      t.match((e as Error).message, message, what)
      t.match((e as Error).message, k, `${what}: names the key`)
    }
  }
  t.throws(() => decodeResource(encodeResource(p), undefined, 'BGPPeer'), /expected BGPPeer, got IPPool/)
})
