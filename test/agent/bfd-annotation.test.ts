// The pinto.dev/bfd annotation: defaults, explicit intervals, refusals naming the item (authentication
// included), and BGPPeers and the mesh carrying the parameters into the desired peers.
import t from 'tap'
import { BFD_DEFAULTS, parseBfdAnnotation } from '../../agent/bfd-annotation.js'
import { desiredPeers } from '../../agent/bgp-peers.js'
import type { BGPPeer, Node } from '../../config/resources/index.js'

const a = (v: string) => ({ 'pinto.dev/bfd': v })

t.test('parsing', async (t) => {
  t.equal(parseBfdAnnotation(undefined), undefined)
  t.equal(parseBfdAnnotation(a('false')), undefined)
  t.same(parseBfdAnnotation(a('true')), BFD_DEFAULTS)
  t.same(parseBfdAnnotation(a('minTx=100ms, minRx=200ms,multiplier=5')), { desiredMinTxUs: 100_000, requiredMinRxUs: 200_000, detectMult: 5 })
  t.same(parseBfdAnnotation(a('multiplier=3')), { ...BFD_DEFAULTS, detectMult: 3 })
  t.throws(() => parseBfdAnnotation(a('minTx=5ms')), /minTx=5ms: the interval must be 10ms to 60s/)
  t.throws(() => parseBfdAnnotation(a('minRx=fast')), /pinto\.dev\/bfd"\]: minRx:/)
  t.throws(() => parseBfdAnnotation(a('multiplier=0')), /multiplier=0: must be an integer 1–255/)
  t.throws(() => parseBfdAnnotation(a('auth=md5')), /BFD authentication is not supported/)
  t.throws(() => parseBfdAnnotation(a('echo=50ms')), /unknown key "echo"/)
  t.throws(() => parseBfdAnnotation(a('100ms')), /"100ms" is not key=value/)
})

t.test('desired peers carry BFD; a bad annotation leaves the peering out with a problem', async (t) => {
  const node: Node = { apiVersion: 'projectcalico.org/v3', kind: 'Node', metadata: { name: 'n1' }, spec: { bgp: { ipv4Address: '192.0.2.1/24' } } }
  const other: Node = { apiVersion: 'projectcalico.org/v3', kind: 'Node', metadata: { name: 'n2' }, spec: { bgp: { ipv4Address: '192.0.2.3/24' } } }
  const peer = (name: string, ip: string, ann?: string): BGPPeer => ({
    apiVersion: 'projectcalico.org/v3', kind: 'BGPPeer', metadata: { name, ...(ann !== undefined ? { annotations: a(ann) } : {}) }, spec: { peerIP: ip, asNumber: 65001 },
  })
  const { peers, problems } = desiredPeers({
    localNode: 'n1', nodes: [node, other], config: {}, meshBfd: BFD_DEFAULTS,
    peers: [peer('tor', '192.0.2.2', 'minTx=100ms,minRx=100ms,multiplier=3'), peer('plain', '192.0.2.4'), peer('bad', '192.0.2.5', 'auth=sha1')],
  })
  t.same(peers.find((p) => p.name === 'peer-tor')?.bfd, { desiredMinTxUs: 100_000, requiredMinRxUs: 100_000, detectMult: 3 })
  t.equal(peers.find((p) => p.name === 'peer-plain')?.bfd, undefined, 'no annotation: no BFD')
  t.same(peers.find((p) => p.name === 'mesh-n2')?.bfd, BFD_DEFAULTS, 'the mesh takes the BGPConfiguration annotation')
  t.notOk(peers.some((p) => p.name === 'peer-bad'))
  t.match(problems, [{ resource: 'BGPPeer bad', message: /authentication is not supported/ }])
})
