// The kubernetes datastore's pure mappings, as tables: pinto's IPAM records and resources to Calico's
// crd.projectcalico.org/v1 objects and back, Calico-written objects (field names, omitted fields, `deleted`) read
// as pinto records, the core Node's annotations as a pinto Node and back, object names, key families, revisions.
import t from 'tap'
import { DatastoreError } from '../../../config/datastore.js'
import { affinityObject, affinityObjectName, affinityPrefixNode, hostnameHash, affinityRecord, blockObject, blockRecord, cidrObjectName, handleObject, handleRecord } from '../../../config/kubernetes/ipam-objects.js'
import { keyFamiliesUnder, keyFamilyOf } from '../../../config/kubernetes/layout.js'
import { nodeValue, nodeWithValue } from '../../../config/kubernetes/node-object.js'
import { type KubeObject, parseRevision } from '../../../config/kubernetes/objects.js'
import { keyValueName, keyValueObject, keyValueRecord, resourceObject, resourceValue } from '../../../config/kubernetes/resource-objects.js'
import { decodeBlock } from '../../../ipam/records.js'

const codeOf = (fn: () => unknown): string => {
  try {
    fn()
    return 'ok'
  } catch (err) {
    return err instanceof DatastoreError ? `${err.code}: ${err.message}` : `not a DatastoreError: ${String(err)}`
  }
}

const block = {
  cidr: '198.18.0.0/30',
  affinity: 'host:node-a',
  affinityClaimTime: '2026-01-02T03:04:05Z',
  allocations: [0, null, 1, null],
  unallocated: [1, 3],
  attributes: [{ handleId: 'pod-1', secondary: { node: 'node-a', pod: 'p1' } }, { handleId: null, secondary: {} }],
  sequenceNumber: 7,
  sequenceNumberForAllocation: { '0': 5, '2': 6 },
}

t.test('block record <-> IPAMBlock, in Calico field names', async (t) => {
  const key = '/pinto/ipam/blocks/198-18-0-0-30'
  const obj = blockObject(key, JSON.stringify(block))
  t.same(obj, {
    apiVersion: 'crd.projectcalico.org/v1',
    kind: 'IPAMBlock',
    metadata: { name: '198-18-0-0-30', labels: { 'ipam.pinto.dev/labelled': 'true', 'projectcalico.org/hostname-hash': hostnameHash('node-a') } },
    spec: {
      cidr: '198.18.0.0/30',
      affinity: 'host:node-a',
      affinityClaimTime: '2026-01-02T03:04:05Z',
      allocations: [0, null, 1, null],
      unallocated: [1, 3],
      attributes: [{ handle_id: 'pod-1', secondary: { node: 'node-a', pod: 'p1' } }, {}],
      sequenceNumber: 7,
      sequenceNumberForAllocation: { '0': 5, '2': 6 },
      deleted: false,
      strictAffinity: false,
    },
  })
  t.same(blockRecord(obj), { key, value: JSON.stringify(block) }, 'reads back as exactly the record written')
  const unowned = { ...block, affinity: null, affinityClaimTime: null }
  const o2 = blockObject(key, JSON.stringify(unowned))
  t.notOk('affinity' in (o2.spec ?? {}) || 'affinityClaimTime' in (o2.spec ?? {}), 'null affinity is omitted, as Calico omits it')
  t.same(o2.metadata.labels, { 'ipam.pinto.dev/labelled': 'true', [`borrowers.ipam.pinto.dev/${hostnameHash('node-a')}`]: '' }, 'a block with no affinity names the nodes holding its addresses as borrowers')
  t.same(blockRecord(o2)?.value, JSON.stringify(unowned))
})

t.test('a Calico-written IPAMBlock reads as a pinto block record', async (t) => {
  const calico: KubeObject = {
    apiVersion: 'crd.projectcalico.org/v1',
    kind: 'IPAMBlock',
    metadata: { name: '2001-db8---122', resourceVersion: '42' },
    spec: {
      cidr: '2001:db8::/122',
      affinity: 'host:node-b',
      allocations: [0, null],
      unallocated: [1],
      attributes: [{ handle_id: 'k8s-pod-network.abc', secondary: { namespace: 'default', node: 'node-b', pod: 'web', timestamp: '2026-01-01 00:00:00 +0000 UTC' } }],
      sequenceNumber: 3,
      sequenceNumberForAllocation: { '0': 2 },
      deleted: false,
      strictAffinity: false,
    },
  }
  const rec = blockRecord(calico)
  t.equal(rec?.key, '/pinto/ipam/blocks/2001-db8---122')
  const b = decodeBlock(rec?.key ?? '', rec?.value ?? '')
  t.equal(b.affinityClaimTime, null, 'no affinityClaimTime: null')
  t.same(b.attributes, [{ handleId: 'k8s-pod-network.abc', secondary: { namespace: 'default', node: 'node-b', pod: 'web', timestamp: '2026-01-01 00:00:00 +0000 UTC' } }])
  t.same(blockRecord({ ...calico, spec: { ...calico.spec, deleted: true } }), { key: rec?.key, value: undefined }, 'deleted: true reads as absent')
})

t.test('bad block writes are refused naming the key and field', async (t) => {
  t.match(codeOf(() => blockObject('/pinto/ipam/blocks/198-18-0-0-30', '{')), /^invalid: .*not JSON/)
  t.match(codeOf(() => blockObject('/pinto/ipam/blocks/198-18-0-0-30', JSON.stringify({ ...block, allocations: 'x' }))), /^invalid: \/pinto\/ipam\/blocks\/198-18-0-0-30: allocations: /)
  t.match(codeOf(() => blockObject('/pinto/ipam/blocks/198-18-0-4-30', JSON.stringify(block))), /^invalid: .*does not belong at this key/)
})

t.test('affinity record <-> BlockAffinity', async (t) => {
  const key = '/pinto/ipam/affinities/node-a/198-18-0-0-30'
  const value = JSON.stringify({ state: 'confirmed', node: 'node-a', cidr: '198.18.0.0/30', type: 'host' })
  const obj = affinityObject(key, value)
  t.same(obj, { apiVersion: 'crd.projectcalico.org/v1', kind: 'BlockAffinity', metadata: { name: 'node-a-198-18-0-0-30', labels: { 'projectcalico.org/hostname-hash': hostnameHash('node-a') } }, spec: { state: 'confirmed', node: 'node-a', type: 'host', cidr: '198.18.0.0/30', deleted: 'false' } })
  t.same(affinityRecord(obj), { key, value })
  // Older Calico writers left out `type`; `deleted` is a string in the v1 CRD.
  t.same(affinityRecord({ metadata: { name: 'x' }, spec: { state: 'pending', node: 'node-a', cidr: '198.18.0.0/30', deleted: 'false' } }), { key, value: JSON.stringify({ state: 'pending', node: 'node-a', cidr: '198.18.0.0/30', type: 'host' }) })
  t.equal(affinityRecord({ metadata: { name: 'x' }, spec: { state: 'confirmed', node: 'node-a', cidr: '198.18.0.0/30', deleted: 'true' } })?.value, undefined)
  t.match(codeOf(() => affinityObject('/pinto/ipam/affinities/node-b/198-18-0-0-30', value)), /^invalid: .*not the key's/)
})

t.test("a BlockAffinity's hostname-hash label is Calico's: SHA3-256 of the node name, base32 without padding", async (t) => {
  // Values from Python's hashlib.sha3_256 and base64.b32encode, an implementation independent of Node's.
  t.equal(hostnameHash('node1'), '7DS2CCNJGGLTHBDQLLFO6SX24SY2YDDEG3W2VN556FA2W4DLLV5A')
  t.equal(hostnameHash('node-00125'), '63KTSOHNUTFWHHAEHWY4HTDUDVR36GMKJ5UXK4JFTRQYNUIZMA7Q')
  t.equal(hostnameHash('a'.repeat(63)), 'KUVRYR6UFNKZDRGRSEZEXY5FM7MPAVG75WE656TGOTVPHXWJVWDA')
  t.ok(hostnameHash('node1').length <= 63, 'a label value fits')
  t.equal(affinityPrefixNode('/pinto/ipam/affinities/node-a/'), 'node-a')
  t.equal(affinityPrefixNode('/pinto/ipam/affinities/node-a/198-18'), 'node-a')
  t.equal(affinityPrefixNode('/pinto/ipam/affinities/node-a'), undefined, 'a node name prefix, not a whole name')
  t.equal(affinityPrefixNode('/pinto/ipam/affinities/'), undefined)
  t.equal(affinityPrefixNode('/pinto/ipam/blocks/x/'), undefined)
})

t.test('a long node name makes an affinity name as Calico cuts and hashes it', async (t) => {
  const node = 'n'.repeat(250)
  const name = affinityObjectName(node, '198-18-0-0-26')
  t.equal(name.length, 252)
  t.match(name, /^n+-198-18-0-0-26-[0-9a-f]{11}$/)
  t.equal(affinityObjectName('short', '198-18-0-0-26'), 'short-198-18-0-0-26')
})

t.test('handle record <-> IPAMHandle, named by the id lowercased', async (t) => {
  const key = '/pinto/ipam/handles/k8s-pod-network.ABC123'
  const value = JSON.stringify({ handleId: 'k8s-pod-network.ABC123', blocks: { '198.18.0.0/30': 2 } })
  const obj = handleObject(key, value)
  t.same(obj, { apiVersion: 'crd.projectcalico.org/v1', kind: 'IPAMHandle', metadata: { name: 'k8s-pod-network.abc123' }, spec: { handleID: 'k8s-pod-network.ABC123', block: { '198.18.0.0/30': 2 }, deleted: false } })
  t.same(handleRecord(obj), { key, value })
  t.equal(handleRecord({ ...obj, spec: { ...obj.spec, deleted: true } })?.value, undefined)
  t.match(codeOf(() => handleObject('/pinto/ipam/handles/a_b', JSON.stringify({ handleId: 'a_b', blocks: {} }))), /^invalid: .*handle id "a_b" lowercased is not a Kubernetes object name/)
})

t.test('resources <-> Calico CRD objects: labels on the object, other metadata in the annotation', async (t) => {
  const pool = { apiVersion: 'projectcalico.org/v3', kind: 'IPPool', metadata: { name: 'pool-a', labels: { zone: 'a' }, annotations: { note: 'x' } }, spec: { cidr: '198.18.0.0/16', blockSize: 26 } }
  const obj = resourceObject('/pinto/resources/ippools/pool-a', 'IPPool', 'pool-a', JSON.stringify(pool))
  t.same(obj, {
    apiVersion: 'crd.projectcalico.org/v1',
    kind: 'IPPool',
    metadata: { name: 'pool-a', labels: { zone: 'a' }, annotations: { 'projectcalico.org/metadata': '{"annotations":{"note":"x"}}' } },
    spec: { cidr: '198.18.0.0/16', blockSize: 26 },
  })
  t.same(JSON.parse(resourceValue({ ...obj, metadata: { ...obj.metadata, resourceVersion: '9', uid: 'u' } }, 'IPPool')), pool)
  const bare = { apiVersion: 'projectcalico.org/v3', kind: 'IPAMConfig', metadata: { name: 'default' }, spec: { strictAffinity: true } }
  const o2 = resourceObject('/pinto/resources/ipamconfigs/default', 'IPAMConfig', 'default', JSON.stringify(bare))
  t.same(o2.metadata, { name: 'default' }, 'no labels or annotations when there are none')
  t.same(o2.spec, { strictAffinity: true, autoAllocateBlocks: true }, "what Calico's CRD requires is filled with the default")
  t.same(JSON.parse(resourceValue(o2, 'IPAMConfig')), { ...bare, spec: { strictAffinity: true, autoAllocateBlocks: true } })
  t.match(codeOf(() => resourceObject('/pinto/resources/ippools/pool-b', 'IPPool', 'pool-b', JSON.stringify(pool))), /^invalid: .*metadata.name/)
  t.match(codeOf(() => resourceObject('/pinto/resources/ippools/pool-a', 'IPPool', 'pool-a', JSON.stringify({ ...pool, kind: 'BGPPeer' }))), /^invalid: .*kind/)
})

t.test('other keys: one KeyValue object each, named by a hash', async (t) => {
  const name = keyValueName('/contract/x/a')
  t.match(name, /^kv-[a-z2-7]{52}$/)
  t.equal(keyValueName('/contract/x/a'), name, 'the same in every process')
  t.not(keyValueName('/contract/x/b'), name)
  const obj = keyValueObject('/contract/x/a', 'v')
  t.same(keyValueRecord(obj), { key: '/contract/x/a', value: 'v' })
  t.equal(keyValueRecord({ metadata: { name: 'kv-x' }, spec: { key: 1 } }), undefined, 'an object that holds no key is not read')
})

t.test('a core Node with Calico annotations reads as a pinto Node, and a write changes only the annotations', async (t) => {
  const node: KubeObject = {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: 'node-a',
      resourceVersion: '100',
      labels: { 'kubernetes.io/hostname': 'node-a', rack: 'r1' },
      annotations: {
        'projectcalico.org/IPv4Address': '192.0.2.10/24',
        'projectcalico.org/ASNumber': '64512',
        'projectcalico.org/IPv4VXLANTunnelAddr': '198.18.0.1',
        'node.alpha.kubernetes.io/ttl': '0',
      },
    },
    spec: { podCIDRs: ['198.19.0.0/24'] },
    status: { addresses: [{ type: 'InternalIP', address: '192.0.2.10' }, { type: 'Hostname', address: 'node-a' }] },
  }
  t.same(JSON.parse(nodeValue(node)), {
    apiVersion: 'projectcalico.org/v3',
    kind: 'Node',
    metadata: { name: 'node-a', labels: { 'kubernetes.io/hostname': 'node-a', rack: 'r1' } },
    spec: {
      bgp: { ipv4Address: '192.0.2.10/24', asNumber: 64512 },
      ipv4VXLANTunnelAddr: '198.18.0.1',
      addresses: [{ address: '192.0.2.10/24', type: 'CalicoNodeIP' }, { address: '192.0.2.10', type: 'InternalIP' }],
      orchRefs: [{ nodeName: 'node-a', orchestrator: 'k8s' }],
    },
    status: { podCIDRs: ['198.19.0.0/24'] },
  })
  t.equal(JSON.parse(nodeValue({ metadata: { name: 'n', annotations: { 'projectcalico.org/ASNumber': '1.10' } } })).spec.bgp.asNumber, 65546, 'asdot AS numbers')
  const key = '/pinto/resources/nodes/node-a'
  const edited = JSON.parse(nodeValue(node))
  edited.spec.bgp = { ipv4Address: '192.0.2.11/24', routeReflectorClusterID: '224.0.0.1' }
  delete edited.spec.ipv4VXLANTunnelAddr
  const written = nodeWithValue(key, JSON.stringify(edited), node)
  t.same(written.metadata.annotations, {
    'projectcalico.org/IPv4Address': '192.0.2.11/24',
    'projectcalico.org/RouteReflectorClusterID': '224.0.0.1',
    'node.alpha.kubernetes.io/ttl': '0',
  }, 'Calico annotations follow the value; others stay')
  t.same(written.metadata.labels, node.metadata.labels)
  t.same(written.spec, node.spec)
  const relabelled = { ...edited, metadata: { ...edited.metadata, labels: { rack: 'r2' } } }
  t.match(codeOf(() => nodeWithValue(key, JSON.stringify(relabelled), node)), /^invalid: .*metadata.labels: a Node's labels are the Kubernetes Node's own/)
  const unlabelled = { ...edited, metadata: { name: 'node-a' } }
  t.equal(codeOf(() => nodeWithValue(key, JSON.stringify(unlabelled), node)), 'ok', 'a value without labels leaves them as they are')
  t.match(codeOf(() => nodeWithValue(key, JSON.stringify({ ...edited, metadata: { name: 'node-a', annotations: { a: 'b' } } }), node)), /^invalid: .*metadata.annotations/)
})

t.test('keys find their family; a prefix reaches the families under it', async (t) => {
  const cases: [string, string][] = [
    ['/pinto/resources/ippools/p', 'IPPool'],
    ['/pinto/resources/nodes/n', 'Node'],
    ['/pinto/resources/ipamconfigs/default', 'IPAMConfig'],
    ['/pinto/ipam/blocks/198-18-0-0-26', 'IPAMBlock'],
    ['/pinto/ipam/affinities/n/198-18-0-0-26', 'BlockAffinity'],
    ['/pinto/ipam/handles/h', 'IPAMHandle'],
    ['/pinto/restart/n', 'KeyValue'],
    ['/contract/x', 'KeyValue'],
  ]
  for (const [key, kind] of cases) t.equal(keyFamilyOf(key).what.split(' ')[0], kind, key)
  const under = (p: string): string[] => keyFamiliesUnder(p).map((f) => f.what.split(' ')[0] as string)
  t.same(under('/pinto/ipam/affinities/n/'), ['BlockAffinity'])
  t.same(under('/pinto/ipam/'), ['IPAMBlock', 'BlockAffinity', 'IPAMHandle', 'KeyValue'])
  t.same(under('/pinto/resources/'), ['BGPConfiguration', 'BGPPeer', 'BGPFilter', 'IPPool', 'IPAMConfig', 'Node', 'KeyValue'])
  t.same(under('/contract/'), ['KeyValue'])
  t.match(codeOf(() => keyFamilyOf('/pinto/ipam/blocks/Bad_Name').objectName('/pinto/ipam/blocks/Bad_Name')), /^invalid: .*not a block name/)
  t.equal(cidrObjectName('2001:db8::/122'), '2001-db8---122')
})

t.test('resourceVersion is read as an integer revision, or refused', async (t) => {
  t.equal(parseRevision('12345', 'x'), 12345)
  for (const bad of ['', 'abc', '0', '12a', '-1', '1e3', undefined, 12]) t.match(codeOf(() => parseRevision(bad, 'get /k')), /^invalid: get \/k: resourceVersion .* is not a decimal integer/, String(bad))
})
