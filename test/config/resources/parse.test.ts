// Parsing operator text: calicoctl-style YAML for every kind (as Calico's docs write them) parses
// unchanged; multi-document files, Lists and JSON work; unknown, unsupported and mistyped fields are
// errors naming their full path and YAML line, and every fault of a file is reported at once.
import t from 'tap'
import { parseResources, ResourceErrors, tryParseResources, type Resource } from '../../../config/resources/index.js'

const BGP_CONFIGURATION = `apiVersion: projectcalico.org/v3
kind: BGPConfiguration
metadata:
  name: default
spec:
  logSeverityScreen: Info
  nodeToNodeMeshEnabled: true
  nodeMeshMaxRestartTime: 120s
  asNumber: 63400
  serviceClusterIPs:
    - cidr: 10.96.0.0/12
  serviceExternalIPs:
    - cidr: 203.0.113.129/32
    - cidr: 198.51.100.0/24
  listenPort: 178
  bindMode: NodeIP
  communities:
    - name: bgp-large-community
      value: 63400:300:100
  prefixAdvertisements:
    - cidr: 198.18.4.0/26
      communities:
        - bgp-large-community
        - 63400:120
`

const BGP_PEER = `apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata:
  name: some.name
spec:
  node: rack1-host1
  peerIP: 192.0.2.1
  asNumber: 63400
  filters:
    - my-filter
---
kind: BGPPeer
apiVersion: projectcalico.org/v3
metadata:
  name: peer-with-route-reflectors
spec:
  nodeSelector: all()
  peerSelector: route-reflector == 'true'
---
apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata:
  name: tor-peer
spec:
  nodeSelector: rack == 'rack-1'
  peerIP: '[2001:db8::1]:1179'
  asNumber: '1.10'
  localASNumber: 64999
  nextHopMode: Self
  password:
    secretKeyRef:
      name: bgp-secrets
      key: rr-password
  sourceAddress: None
  maxRestartTime: 15m
  keepaliveTime: 10s
  numAllowedLocalASNumbers: 1
  ttlSecurity: 1
  reachableBy: 2001:db8::fffe
  reversePeering: Manual
`

const BGP_FILTER = `apiVersion: projectcalico.org/v3
kind: BGPFilter
metadata:
  name: my-filter
spec:
  exportV4:
    - action: Accept
      matchOperator: In
      cidr: 198.51.0.0/16
      prefixLength:
        min: 24
        max: 28
    - action: Reject
      interface: '*.calico'
  importV4:
    - action: Reject
      matchOperator: NotIn
      cidr: 203.0.0.0/16
    - action: Accept
      source: RemotePeers
      peerType: eBGP
      communities:
        values: ['65000:100']
      asPathPrefix: [65001, 65002]
      operations:
        - addCommunity:
            value: 65000:200:1
        - prependASPath:
            prefix: [64512, 64512]
        - setPriority:
            value: 512
  exportV6:
    - action: Reject
      source: RemotePeers
      matchOperator: NotIn
      cidr: 2001:db8:9000::/64
  importV6:
    - action: Accept
      matchOperator: Equal
      cidr: 2001:db8:5000::/64
    - action: Reject
`

const NODE = `apiVersion: projectcalico.org/v3
kind: Node
metadata:
  name: node-hostname
  labels:
    kubernetes.io/hostname: node-hostname
    route-reflector: 'true'
spec:
  bgp:
    asNumber: 64512
    ipv4Address: 192.0.2.10/24
    ipv6Address: 2001:db8:85a3::8a2e:370:7334/120
    ipv4IPIPTunnelAddr: 198.18.0.1
    routeReflectorClusterID: 224.0.0.1
  orchRefs:
    - nodeName: node-hostname
      orchestrator: k8s
status:
  podCIDRs:
    - 198.18.1.0/24
`

const IP_POOL = `apiVersion: projectcalico.org/v3
kind: IPPool
metadata:
  name: my.ippool-1
spec:
  cidr: 198.18.0.0/16
  ipipMode: CrossSubnet
  natOutgoing: true
  disabled: false
  nodeSelector: all()
  allowedUses:
    - Workload
    - Tunnel
`

const IPAM_CONFIG = `apiVersion: projectcalico.org/v3
kind: IPAMConfiguration
metadata:
  name: default
spec:
  strictAffinity: true
  maxBlocksPerHost: 4
`

t.test('every kind parses from calicoctl-style YAML as written', async (t) => {
  const [config] = parseResources(BGP_CONFIGURATION, 'bgpconfig.yaml')
  t.equal(config?.kind, 'BGPConfiguration')
  if (config?.kind === 'BGPConfiguration') {
    t.equal(config.spec.asNumber, 63400)
    t.equal(config.spec.nodeMeshMaxRestartTime, '120s')
    t.same(config.spec.serviceExternalIPs, [{ cidr: '203.0.113.129/32' }, { cidr: '198.51.100.0/24' }])
    t.same(config.spec.prefixAdvertisements?.[0]?.communities, ['bgp-large-community', '63400:120'])
  }

  const peers = parseResources(BGP_PEER)
  t.same(peers.map((p) => p.metadata.name), ['some.name', 'peer-with-route-reflectors', 'tor-peer'])
  const tor = peers[2]
  if (tor?.kind === 'BGPPeer') {
    t.equal(tor.spec.asNumber, 65546, 'asdot 1.10 is 1*65536+10')
    t.equal(tor.spec.peerIP, '[2001:db8::1]:1179')
    t.same(tor.spec.password, { secretKeyRef: { name: 'bgp-secrets', key: 'rr-password' } })
  }
  t.equal(peers[1]?.kind === 'BGPPeer' ? peers[1].spec.peerSelector : undefined, "route-reflector == 'true'")

  const [filter] = parseResources(BGP_FILTER)
  if (filter?.kind === 'BGPFilter') {
    t.equal(filter.spec.exportV4?.length, 2)
    t.same(filter.spec.exportV4?.[0]?.prefixLength, { min: 24, max: 28 })
    t.same(filter.spec.importV4?.[1]?.operations?.[1], { prependASPath: { prefix: [64512, 64512] } })
    t.equal(filter.spec.importV6?.[1]?.action, 'Reject')
  } else t.fail('BGPFilter expected')

  const [node] = parseResources(NODE)
  if (node?.kind === 'Node') {
    t.equal(node.spec.bgp?.ipv4Address, '192.0.2.10/24', 'addr/len kept as written')
    t.same(node.status, { podCIDRs: ['198.18.1.0/24'] })
    t.equal(node.metadata.labels?.['route-reflector'], 'true')
  } else t.fail('Node expected')

  const [pool] = parseResources(IP_POOL)
  t.same(pool, {
    apiVersion: 'projectcalico.org/v3',
    kind: 'IPPool',
    metadata: { name: 'my.ippool-1' },
    spec: { cidr: '198.18.0.0/16', ipipMode: 'CrossSubnet', natOutgoing: true, disabled: false, nodeSelector: 'all()', allowedUses: ['Workload', 'Tunnel'] },
  }, 'as written: no defaults added')

  const [ipam] = parseResources(IPAM_CONFIG)
  t.equal(ipam?.kind, 'IPAMConfig', "Calico's IPAMConfiguration kind is read as IPAMConfig")
  t.same(ipam?.spec, { strictAffinity: true, maxBlocksPerHost: 4 })
})

t.test('many documents in one file, in order, with empty documents skipped', async (t) => {
  const text = ['---', BGP_CONFIGURATION, '---', IP_POOL, '---', '# just a comment', '---', IPAM_CONFIG, '---', ''].join('\n')
  t.same(parseResources(text).map((r) => r.kind), ['BGPConfiguration', 'IPPool', 'IPAMConfig'])
})

t.test('calicoctl get -o yaml List output parses, typed or generic', async (t) => {
  const typed = `apiVersion: projectcalico.org/v3
items:
- apiVersion: projectcalico.org/v3
  kind: IPPool
  metadata:
    creationTimestamp: "2024-01-10T10:00:00Z"
    name: default-ipv4-ippool
    resourceVersion: "1234"
    uid: 2f3f5c1e-8f6a-4f7e-9d3a-0c1b2a3d4e5f
  spec:
    allowedUses:
    - Workload
    - Tunnel
    blockSize: 26
    cidr: 198.18.0.0/16
    ipipMode: Always
    natOutgoing: true
    nodeSelector: all()
    vxlanMode: Never
- metadata:
    name: v6
  spec:
    cidr: 2001:db8::/64
kind: IPPoolList
metadata:
  resourceVersion: "1234"
`
  const pools = parseResources(typed)
  t.same(pools.map((p) => [p.kind, p.metadata.name]), [['IPPool', 'default-ipv4-ippool'], ['IPPool', 'v6']], 'items may leave out kind in a typed list')
  t.equal(pools[0]?.metadata.uid, '2f3f5c1e-8f6a-4f7e-9d3a-0c1b2a3d4e5f')
  t.equal(pools[0]?.metadata.resourceVersion, '1234')

  const generic = JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [JSON.parse(JSON.stringify(pools[0])), { apiVersion: 'projectcalico.org/v3', kind: 'BGPPeer', metadata: { name: 'p' }, spec: { peerIP: '192.0.2.1', asNumber: 65000 } }] })
  t.same(parseResources(generic).map((r) => r.kind), ['IPPool', 'BGPPeer'])

  const wrongItem = tryParseResources(`apiVersion: projectcalico.org/v3
kind: BGPPeerList
items:
- apiVersion: projectcalico.org/v3
  kind: IPPool
  metadata: {name: x}
  spec: {cidr: 198.18.0.0/16}
`)
  t.same(wrongItem.errors.map((e) => e.path), ['documents[0].items[0].kind'])
})

t.test('JSON input, single and with tabs', async (t) => {
  const json = '{\n\t"apiVersion": "projectcalico.org/v3",\n\t"kind": "IPPool",\n\t"metadata": {"name": "j"},\n\t"spec": {"cidr": "198.18.0.0/24", "blockSize": 28}\n}'
  const [pool] = parseResources(json, 'pool.json')
  t.equal(pool?.kind === 'IPPool' ? pool.spec.blockSize : undefined, 28)
})

function errorsOf(text: string): { path: string; line: number | undefined; reason: string }[] {
  return tryParseResources(text, 'in.yaml').errors.map((e) => ({ path: e.path, line: e.line, reason: e.reason }))
}

t.test('unknown and unsupported fields are errors with full path and line', async (t) => {
  const errs = errorsOf(`apiVersion: projectcalico.org/v3
kind: IPPool
metadata:
  name: p
  namespace: kube-system
spec:
  cidr: 198.18.0.0/16
  ipip:
    enabled: true
  natOutgoingg: true
---
apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata:
  name: q
spec:
  peerIp: 192.0.2.1
  localWorkloadSelector: app == 'bgp'
extra: 1
`)
  t.same(errs.map((e) => [e.path, e.line]), [
    ['documents[0].metadata.namespace', 5],
    ['documents[0].spec.ipip', 9],
    ['documents[0].spec.natOutgoingg', 10],
    ['documents[1].spec.peerIp', 17],
    ['documents[1].spec.localWorkloadSelector', 18],
    ['documents[1].extra', 19],
  ])
  t.match(errs[1]?.reason, /Calico field that pinto does not support/)
  t.match(errs[2]?.reason, /did you mean "natOutgoing"/)
  t.match(errs[3]?.reason, /did you mean "peerIP"/)
  t.match(errs[5]?.reason, /unknown field "extra"/)
})

t.test('apiVersion, kind, metadata and types are checked; every fault is collected', async (t) => {
  const errs = errorsOf(`apiVersion: projectcalico.org/v1
kind: IPPool
metadata:
  name: p
spec:
  cidr: 198.18.0.0/16
---
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata:
  name: np
---
apiVersion: projectcalico.org/v3
kind: IPPool
spec:
  cidr: 198.18.0.0/16
  blockSize: "26"
  natOutgoing: "true"
---
apiVersion: projectcalico.org/v3
kind: IPPool
metadata:
  name: Bad_Name
  labels:
    "bad key!": x
spec: {}
---
- just
- a list
`)
  t.same(errs.map((e) => e.path), [
    'documents[0].apiVersion',
    'documents[1].kind',
    'documents[2].metadata.name',
    'documents[2].spec.blockSize',
    'documents[2].spec.natOutgoing',
    'documents[3].metadata.name',
    'documents[3].metadata.labels["bad key!"]',
    'documents[3].spec.cidr',
    'documents[4]',
  ])
  t.match(errs[4]?.reason, /expected true or false, got "true"/)
  t.match(errs[7]?.reason, /cidr is required/)
})

t.test('YAML syntax errors name the document and line', async (t) => {
  const errs = errorsOf(`${IP_POOL}---\napiVersion: projectcalico.org/v3\nkind: IPPool\nspec: {cidr: [1,\n`)
  t.equal(errs.length >= 1, true)
  t.equal(errs[0]?.path, 'documents[1]')
  t.match(errs[0]?.reason, /YAML syntax/)
  t.ok(errs[0]?.line !== undefined && errs[0].line >= 16, `line ${String(errs[0]?.line)}`)
})

t.test('parseResources throws ResourceErrors with all faults and the source', async (t) => {
  try {
    parseResources('apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: a}\nspec: {cidr: 198.18.0.1/16, ipipMode: Always, vxlanMode: Always}\n---\napiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: b}\nspec: {cidr: 198.19.0.0/16, ipipMode: Sometimes}\n', 'pools.yaml')
    t.fail('should throw')
  } catch (e) {
    t.ok(e instanceof ResourceErrors)
    const errs = (e as ResourceErrors).errors
    t.same(errs.map((x) => x.path), ['documents[0].spec.cidr', 'documents[0].spec.ipipMode', 'documents[1].spec.ipipMode'])
    t.match((e as Error).message, /^3 errors:\n {2}pools\.yaml: documents\[0\]\.spec\.cidr \(line 4\): "198\.18\.0\.1\/16" has host bits set/)
    t.match((e as Error).message, /\(the network is 198\.18\.0\.0\/16\)/)
    t.match((e as Error).message, /pools\.yaml: documents\[1\]\.spec\.ipipMode \(line 9\): "Sometimes" is not one of Never, Always, CrossSubnet/)
  }
})

t.test('a kind/name twice in one set and overlapping pools in one set are errors', async (t) => {
  const pool = (name: string, cidr: string): string => `apiVersion: projectcalico.org/v3\nkind: IPPool\nmetadata: {name: ${name}}\nspec: {cidr: ${cidr}}\n`
  const errs = errorsOf([pool('a', '198.18.0.0/16'), pool('b', '198.18.128.0/24'), pool('a', '198.19.0.0/16'), pool('c', '2001:db8::/64')].join('---\n'))
  t.same(errs.map((e) => e.path), ['documents[1].spec.cidr', 'documents[2].metadata.name'])
  t.match(errs[0]?.reason, /overlaps IPPool "a" \(198\.18\.0\.0\/16\) at documents\[0\]/)
  const ok: Resource[] = parseResources([pool('a', '198.18.0.0/24'), pool('b', '198.18.1.0/24')].join('---\n'))
  t.equal(ok.length, 2)
})

t.test('one run reports every problem of a document, cross-field ones too, with a suggestion for each unknown field', async (t) => {
  const errs = errorsOf(`apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: p}
spec:
  cidr: 198.18.0.0/16
  blockSize: 33
  ipipMode: Sometimes
  blockSzie: 26
  natOutgoin: true
  nodeSelectr: all()
  zzz: 1
---
apiVersion: projectcalico.org/v3
kind: IPPol
metadata: {name: x}
---
apiVersion: projectcalico.org/v3
kind: IPPool
metadata: {name: q}
spec: {cidr: 10.0.0.0/33, ipipMode: Sometimes}
`)
  const at = (path: string): string | undefined => errs.find((e) => e.path === path)?.reason
  t.match(at('documents[0].spec.blockSize'), /blockSize 33 is out of range 20-32/, 'the cross-field blockSize rule, beside a faulty field')
  t.match(at('documents[0].spec.ipipMode'), /"Sometimes" is not one of/)
  t.match(at('documents[0].spec.blockSzie'), /did you mean "blockSize"\?/, 'a swap of two letters is one edit')
  t.match(at('documents[0].spec.natOutgoin'), /did you mean "natOutgoing"\?/)
  t.match(at('documents[0].spec.nodeSelectr'), /did you mean "nodeSelector"\?/)
  t.match(at('documents[0].spec.zzz'), /fields here: .*blockSize.*cidr/, 'nothing near: the fields the place takes')
  t.equal(at('documents[1].kind'), 'unknown kind "IPPol" (did you mean "IPPool"?)')
  t.match(at('documents[2].spec.cidr'), /invalid prefix length/, 'a bad cidr is reported beside a bad ipipMode')
  t.match(at('documents[2].spec.ipipMode'), /"Sometimes"/)
})

t.test('a rule comparing a faulty field raises no second, false error', async (t) => {
  const errs = errorsOf(`apiVersion: projectcalico.org/v3
kind: BGPPeer
metadata: {name: tor}
spec: {peerIP: [1], reachableBy: 192.0.2.1, asNumber: 65000}
`)
  t.same(errs.map((e) => e.path), ['documents[0].spec.peerIP'], 'only the faulty peerIP, not "reachableBy needs peerIP"')
})

t.test("a bare true or number where Calico wants a string reads as Calico's client reads it", async (t) => {
  const [node] = parseResources(`apiVersion: projectcalico.org/v3
kind: Node
metadata:
  name: n1
  labels:
    route-reflector: true
    rack: 12
  annotations:
    checked: false
spec: {}
`)
  t.same(node?.metadata.labels, { 'route-reflector': 'true', rack: '12' }, 'label values "true" and "12"')
  t.same(node?.metadata.annotations, { checked: 'false' })
  const errs = errorsOf(`apiVersion: projectcalico.org/v3
kind: Node
metadata:
  name: n1
  labels:
    nested: {a: b}
    empty: [1]
spec: {}
`)
  t.same(errs.map((e) => e.path), ['documents[0].metadata.labels.nested', 'documents[0].metadata.labels.empty'], 'a mapping or list as a label value is still refused')
})
