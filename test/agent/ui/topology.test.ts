// The status page's topology layout: rows by role, one box per node across its v4/v6 sessions, edges
// coloured by session, nodes known only from IPAM drawn through the reflectors.

import t from 'tap'
import { layoutTopology, nodeOfPeer, PER_ROW, type TopologyPeer } from '../../../agent/ui/topology.js'

const self = { name: 'node1', asn: 64512, routerId: '192.0.2.11' }
const peer = (name: string, type: string, state = 'Established', session: 'ibgp' | 'ebgp' = 'ibgp', address = '192.0.2.1'): TopologyPeer => ({ name, type, session, state, address, peerAsn: session === 'ebgp' ? 65000 : 64512 })

t.test('mesh with a top-of-rack router: ToR above, this node, the other nodes below', async (t) => {
  const lay = layoutTopology({
    self,
    peers: [peer('mesh-node3', 'mesh', 'Active', 'ibgp', '192.0.2.13'), peer('mesh-node2', 'mesh', 'Established', 'ibgp', '192.0.2.12'), peer('peer-tor', 'global', 'Established', 'ebgp', '192.0.2.1')],
    nodes: ['node1', 'node2', 'node3'],
  })
  const at = Object.fromEntries(lay.nodes.map((n) => [n.label, n]))
  t.same(lay.rows.map((r) => r.role), ['external', 'self', 'node'])
  t.ok(at['peer-tor']!.y < at['node1']!.y && at['node1']!.y < at['node2']!.y, 'rows top to bottom')
  t.equal(at['node2']!.y, at['node3']!.y)
  t.ok(at['node2']!.x < at['node3']!.x, 'sorted by name, left to right')
  t.equal(at['node1']!.x, lay.width / 2, 'this node centred')
  t.equal(at['peer-tor']!.detail, 'AS 65000 · 192.0.2.1')
  t.same(lay.edges.map((e) => [e.to, e.state]), [['external:peer-tor', 'Established'], ['node:node2', 'Established'], ['node:node3', 'Active']])
  t.equal(lay.nodes.length, 4, 'IPAM nodes with a session are not drawn twice')
  for (const n of lay.nodes) t.ok(n.x > 0 && n.x < lay.width && n.y > 0 && n.y < lay.height, `${n.label} inside the picture`)
})

t.test('a reflector client: reflectors between, other nodes reached through them', async (t) => {
  const lay = layoutTopology({ self, peers: [peer('node-node9', 'reflector', 'Established', 'ibgp', '192.0.2.19')], nodes: ['node2', 'node9', 'node1'] })
  t.same(lay.rows.map((r) => r.role), ['reflector', 'self', 'node'])
  const n2 = lay.nodes.find((n) => n.label === 'node2')!
  t.equal(n2.state, undefined)
  t.equal(n2.detail, 'no session of ours')
  t.same(lay.edges, [{ from: 'self', to: 'reflector:node9', state: 'Established' }, { from: 'reflector:node9', to: 'node:node2', state: undefined }])
})

t.test('a reflector: its clients are nodes below it, and its row says what it is', async (t) => {
  const lay = layoutTopology({ self, peers: [peer('node-node3', 'reflector-client'), peer('node-node2', 'node-selector')] })
  t.same(lay.rows.map((r) => r.label), ['this node · route reflector', 'nodes'])
  t.same(lay.nodes.filter((n) => n.role === 'node').map((n) => n.label), ['node2', 'node3'])
})

t.test('IPv4 and IPv6 sessions to one node share a box, Established only when both are', async (t) => {
  const lay = layoutTopology({ self, peers: [peer('mesh-node2', 'mesh', 'Established', 'ibgp', '192.0.2.12'), peer('mesh6-node2', 'mesh', 'Connect', 'ibgp', '2001:db8::12')] })
  const boxes = lay.nodes.filter((n) => n.role === 'node')
  t.equal(boxes.length, 1)
  t.equal(boxes[0]!.state, 'Connect')
  t.equal(boxes[0]!.detail, '192.0.2.12 · 2001:db8::12')
})

t.test('wide rows wrap; no peers leaves this node alone', async (t) => {
  const many = Array.from({ length: PER_ROW + 3 }, (_, i) => peer(`mesh-n${String(i).padStart(2, '0')}`, 'mesh'))
  const lay = layoutTopology({ self, peers: many })
  t.equal(new Set(lay.nodes.filter((n) => n.role === 'node').map((n) => n.y)).size, 2, 'two rows of nodes')
  const alone = layoutTopology({ self, peers: [] })
  t.same(alone.nodes.map((n) => n.role), ['self'])
  t.same(alone.edges, [])
  t.equal(nodeOfPeer('peer-tor'), 'peer-tor')
  t.equal(nodeOfPeer('node6-x'), 'x')
})
