// Which sessions a node gets from the cluster's resources: the mesh in one direction, reflectors
// with their clients and the reverse peerings, explicit global and per-node BGPPeers, dedupe.
import t from 'tap'
import { desiredPeers, higherAddress } from '../../agent/bgp-peers.js'
import type { BGPPeer, Node } from '../../config/resources/index.js'

const node = (name: string, ip: string, extra: { labels?: Record<string, string>; cluster?: string; asn?: number; ip6?: string } = {}): Node => ({
  apiVersion: 'projectcalico.org/v3',
  kind: 'Node',
  metadata: { name, ...(extra.labels ? { labels: extra.labels } : {}) },
  spec: {
    bgp: {
      ipv4Address: `${ip}/24`,
      ...(extra.ip6 ? { ipv6Address: `${extra.ip6}/64` } : {}),
      ...(extra.cluster ? { routeReflectorClusterID: extra.cluster } : {}),
      ...(extra.asn ? { asNumber: extra.asn } : {}),
    },
  },
})
const peer = (name: string, spec: BGPPeer['spec']): BGPPeer => ({ apiVersion: 'projectcalico.org/v3', kind: 'BGPPeer', metadata: { name }, spec })

const a = node('a', '192.0.2.11')
const b = node('b', '192.0.2.12', { ip6: '2001:db8::12' })
const c = node('c', '192.0.2.13', { asn: 65010 })

t.test('full mesh: every other node, the higher address connects', async (t) => {
  const { peers } = desiredPeers({ localNode: 'b', nodes: [a, b, c], peers: [], config: { nodeToNodeMeshEnabled: true, asNumber: 64512 } })
  t.same(
    peers.map((p) => [p.name, p.address, p.peerAsn, p.passive, p.kind]),
    [
      ['mesh-a', '192.0.2.11', 64512, false, 'mesh'],
      ['mesh-c', '192.0.2.13', 65010, true, 'mesh'],
    ],
  )
  t.ok(higherAddress('192.0.2.12', '192.0.2.11'))
  t.notOk(higherAddress('192.0.2.9', '192.0.2.10'), 'numeric, not textual')
})

t.test('IPv6 sessions between nodes that both have IPv6 addresses', async (t) => {
  const d = node('d', '192.0.2.14', { ip6: '2001:db8::14' })
  const { peers } = desiredPeers({ localNode: 'd', nodes: [a, b, d], peers: [], config: {} })
  t.same(peers.map((p) => [p.name, p.family, p.address]).sort(), [
    ['mesh-a', 'ipv4', '192.0.2.11'],
    ['mesh-b', 'ipv4', '192.0.2.12'],
    ['mesh6-b', 'ipv6', '2001:db8::12'],
  ])
})

t.test('route reflectors: clients peer with the reflectors, reflectors with everyone (reverse peering)', async (t) => {
  const rr1 = node('rr1', '192.0.2.1', { labels: { 'route-reflector': 'true' }, cluster: '224.0.0.1' })
  const rr2 = node('rr2', '192.0.2.2', { labels: { 'route-reflector': 'true' }, cluster: '224.0.0.1' })
  const nodes = [rr1, rr2, a, b]
  const peers = [peer('rrs', { nodeSelector: 'all()', peerSelector: "route-reflector == 'true'" })]
  const config = { nodeToNodeMeshEnabled: false }
  const onClient = desiredPeers({ localNode: 'a', nodes, peers, config }).peers
  t.same(onClient.map((p) => [p.address, p.kind, p.rrClient]).sort(), [
    ['192.0.2.1', 'reflector', false],
    ['192.0.2.2', 'reflector', false],
  ])
  const onRr = desiredPeers({ localNode: 'rr1', nodes, peers, config }).peers
  t.same(onRr.map((p) => [p.address, p.kind, p.rrClient]).sort(), [
    ['192.0.2.11', 'reflector-client', true],
    ['192.0.2.12', 'reflector-client', true],
    ['192.0.2.2', 'node-selector', false],
  ])
})

t.test('explicit peers: global, per node, per selector; Calico fields carried', async (t) => {
  const nodes = [a, node('x', '192.0.2.20', { labels: { rack: 'r1' } })]
  const peers = [
    peer('tor', { peerIP: '192.0.2.254', asNumber: 65000, keepOriginalNextHop: true, maxRestartTime: '300s', filters: ['f1'] }),
    peer('only-x', { node: 'x', peerIP: '198.51.100.1:1179', asNumber: 65001, numAllowedLocalASNumbers: 2 }),
    peer('rack', { nodeSelector: "rack == 'r1'", peerIP: '198.51.100.2', asNumber: 65002, localASNumber: 65100 }),
  ]
  const onA = desiredPeers({ localNode: 'a', nodes, peers, config: { nodeToNodeMeshEnabled: false } }).peers
  t.same(onA.map((p) => p.name), ['peer-tor'])
  t.match(onA[0], { kind: 'global', peerAsn: 65000, nextHopMode: 'keep', restartTime: 300, filters: ['f1'], passive: false, localAddress: '192.0.2.11' })
  const onX = desiredPeers({ localNode: 'x', nodes, peers, config: { nodeToNodeMeshEnabled: false } }).peers
  t.same(onX.map((p) => [p.name, p.kind, p.port]), [
    ['peer-tor', 'global', 179],
    ['peer-only-x', 'node-specific', 1179],
    ['peer-rack', 'node-specific', 179],
  ])
  t.equal(onX[1]!.allowLocalAs, 2)
  t.equal(onX[2]!.localAsn, 65100)
})

t.test('the same address is peered once; passwords and ttlSecurity travel with the peering', async (t) => {
  const peers = [
    peer('dup', { peerIP: '192.0.2.12', asNumber: 64512 }),
    peer('md5', { peerIP: '192.0.2.99', asNumber: 65000, ttlSecurity: 1, password: { secretKeyRef: { name: 's', key: 'k' } } }),
  ]
  const r = desiredPeers({ localNode: 'a', nodes: [a, b], peers, config: { nodeMeshPassword: { secretKeyRef: { name: 'mesh', key: 'pw', optional: true } } } })
  t.same(r.peers.map((p) => [p.name, p.address, p.ttlSecurity, p.password]), [
    ['peer-dup', '192.0.2.12', 0, undefined],
    ['peer-md5', '192.0.2.99', 1, { ref: { name: 's', key: 'k' }, field: 'BGPPeer md5: spec.password.secretKeyRef' }],
  ])
  t.same(r.problems, [])
  const mesh = desiredPeers({ localNode: 'a', nodes: [a, b], peers: [], config: { nodeMeshPassword: { secretKeyRef: { name: 'mesh', key: 'pw', optional: true } } } })
  t.same(mesh.peers.map((p) => [p.name, p.password]), [['mesh-b', { ref: { name: 'mesh', key: 'pw', optional: true }, field: 'BGPConfiguration default: spec.nodeMeshPassword.secretKeyRef' }]])
})

t.test('a node that is not registered yet has no peers and says why', async (t) => {
  const r = desiredPeers({ localNode: 'zz', nodes: [a], peers: [], config: {} })
  t.same(r.peers, [])
  t.match(r.problems[0]?.message, /not registered/)
})
