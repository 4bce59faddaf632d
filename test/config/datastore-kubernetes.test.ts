// The kubernetes datastore against a real kube-apiserver (built from k8s.io/kubernetes) with pinto's CRDs applied:
// the shared contract; Calico-shaped objects applied with kubectl reading through pinto as the records they are,
// and pinto's writes reading through kubectl in Calico's field names; the core Node's annotations as a pinto Node,
// its labels Kubernetes' own, a heartbeat no event; 410 Gone as 'compacted'; a watch that resumes after its
// connection is cut, and after an apiserver restart resumes or says compacted; credentials and a missing CRD
// named in the errors.
import t from 'tap'
import { readFileSync, writeFileSync } from 'node:fs'
import { type AddressInfo, type Socket, connect, createServer } from 'node:net'
import { join } from 'node:path'
import { DatastoreError, type Datastore, type WatchEvent } from '../../config/datastore.js'
import { openDatastore } from '../../config/datastore-open.js'
import { hostnameHash } from '../../config/kubernetes/ipam-objects.js'
import { decodeResource } from '../../config/resources/store-keys.js'
import { decodeAffinity, decodeBlock, decodeHandle } from '../../ipam/records.js'
import { waitFor as waitUntil } from '../harness/wait.js'
import { kubernetesApi } from '../ipam/stores.js'
import { datastoreContract, waitFor } from './datastore-contract.js'

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p
    return 'resolved'
  } catch (err) {
    return err instanceof DatastoreError ? `${err.code}: ${err.message}` : `not a DatastoreError: ${String(err)}`
  }
}

const k8s = await kubernetesApi(t)
if ('skip' in k8s) t.comment(`skipped: ${k8s.skip}`)
else {
  const { api, env, crds: CRDS } = k8s
  const open = (): Promise<Datastore> => openDatastore('kubernetes', { kubeEnv: env })
  const store = await open()
  t.teardown(() => store.close())

  t.test('contract', async (t) => {
    datastoreContract(t, open)
  })

  t.test('Calico-shaped IPAM objects and an IPPool applied with kubectl read through pinto as they are', async (t) => {
    await api.kubectlWithInput(`
apiVersion: crd.projectcalico.org/v1
kind: IPAMBlock
metadata: { name: 198-18-4-0-30 }
spec:
  cidr: 198.18.4.0/30
  affinity: host:calico-node-1
  allocations: [0, null, 0, null]
  unallocated: [1, 3]
  attributes:
    - handle_id: k8s-pod-network.0123abcd
      secondary: { namespace: default, node: calico-node-1, pod: web-0 }
  sequenceNumber: 12
  sequenceNumberForAllocation: { "0": 10, "2": 11 }
  deleted: false
  strictAffinity: false
---
apiVersion: crd.projectcalico.org/v1
kind: BlockAffinity
metadata: { name: calico-node-1-198-18-4-0-30 }
spec: { state: confirmed, node: calico-node-1, cidr: 198.18.4.0/30, deleted: "false" }
---
apiVersion: crd.projectcalico.org/v1
kind: IPAMHandle
metadata: { name: k8s-pod-network.0123abcd }
spec: { handleID: k8s-pod-network.0123abcd, block: { 198.18.4.0/30: 2 }, deleted: false }
---
apiVersion: crd.projectcalico.org/v1
kind: IPAMHandle
metadata: { name: k8s-pod-network.gone }
spec: { handleID: k8s-pod-network.gone, block: {}, deleted: true }
---
apiVersion: crd.projectcalico.org/v1
kind: IPPool
metadata: { name: default-ipv4-ippool, labels: { team: net } }
spec: { cidr: 198.18.0.0/16, blockSize: 30, ipipMode: Never, vxlanMode: Never, natOutgoing: true, nodeSelector: all() }
`, 'apply', '-f', '-')
    const b = await store.get('/pinto/ipam/blocks/198-18-4-0-30')
    t.same(decodeBlock(b?.key ?? '', b?.value ?? ''), {
      cidr: '198.18.4.0/30', affinity: 'host:calico-node-1', affinityClaimTime: null,
      allocations: [0, null, 0, null], unallocated: [1, 3],
      attributes: [{ handleId: 'k8s-pod-network.0123abcd', secondary: { namespace: 'default', node: 'calico-node-1', pod: 'web-0' } }],
      sequenceNumber: 12, sequenceNumberForAllocation: { '0': 10, '2': 11 },
    })
    const a = await store.get('/pinto/ipam/affinities/calico-node-1/198-18-4-0-30')
    t.same(decodeAffinity(a?.key ?? '', a?.value ?? ''), { state: 'confirmed', node: 'calico-node-1', cidr: '198.18.4.0/30', type: 'host' })
    const h = await store.get('/pinto/ipam/handles/k8s-pod-network.0123abcd')
    t.same(decodeHandle(h?.key ?? '', h?.value ?? ''), { handleId: 'k8s-pod-network.0123abcd', blocks: { '198.18.4.0/30': 2 } })
    t.equal(await store.get('/pinto/ipam/handles/k8s-pod-network.gone'), undefined, 'a handle Calico marked deleted reads as absent')
    t.same((await store.list('/pinto/ipam/handles/')).items.map((kv) => kv.key), ['/pinto/ipam/handles/k8s-pod-network.0123abcd'], 'and is not listed')
    const p = await store.get('/pinto/resources/ippools/default-ipv4-ippool')
    const pool = decodeResource(p?.value ?? '', p?.key, 'IPPool')
    t.same(pool.metadata, { name: 'default-ipv4-ippool', labels: { team: 'net' } })
    t.match(pool.spec, { cidr: '198.18.0.0/16', blockSize: 30, natOutgoing: true, nodeSelector: 'all()' })
    t.equal(b?.revision, Number(await api.kubectl('get', 'ipamblock', '198-18-4-0-30', '-o', 'jsonpath={.metadata.resourceVersion}')), 'the revision is the resourceVersion')

    // pinto's writes read through kubectl in Calico's field names.
    const block = decodeBlock(b?.key ?? '', b?.value ?? '')
    block.allocations[1] = 1
    block.unallocated = [3]
    block.attributes.push({ handleId: 'pinto.h2', secondary: { node: 'calico-node-1' } })
    block.sequenceNumberForAllocation['1'] = 12
    block.sequenceNumber = 13
    await store.update(b?.key ?? '', JSON.stringify(block), b?.revision ?? 0)
    const spec = JSON.parse(await api.kubectl('get', 'ipamblock', '198-18-4-0-30', '-o', 'jsonpath={.spec}')) as Record<string, unknown>
    t.same(spec.attributes, [
      { handle_id: 'k8s-pod-network.0123abcd', secondary: { namespace: 'default', node: 'calico-node-1', pod: 'web-0' } },
      { handle_id: 'pinto.h2', secondary: { node: 'calico-node-1' } },
    ])
    t.match(spec, { allocations: [0, 1, 0, null], unallocated: [3], sequenceNumber: 13, deleted: false, strictAffinity: false })
    await store.create('/pinto/ipam/handles/pinto.h2', JSON.stringify({ handleId: 'pinto.h2', blocks: { '198.18.4.0/30': 1 } }))
    t.same(JSON.parse(await api.kubectl('get', 'ipamhandle', 'pinto.h2', '-o', 'jsonpath={.spec}')), { handleID: 'pinto.h2', block: { '198.18.4.0/30': 1 }, deleted: false })
    await store.create('/pinto/resources/ipamconfigs/default', JSON.stringify({ apiVersion: 'projectcalico.org/v3', kind: 'IPAMConfig', metadata: { name: 'default' }, spec: { maxBlocksPerHost: 4 } }))
    t.same(JSON.parse(await api.kubectl('get', 'ipamconfigs.crd.projectcalico.org', 'default', '-o', 'jsonpath={.spec}')), { autoAllocateBlocks: true, maxBlocksPerHost: 4, strictAffinity: false })
  })

  t.test("one node's affinities are listed by Calico's hostname-hash label, with those written before it", async (t) => {
    const value = (node: string, cidr: string): string => JSON.stringify({ state: 'confirmed', node, cidr, type: 'host' })
    await store.create('/pinto/ipam/affinities/lbl-a/198-18-8-0-30', value('lbl-a', '198.18.8.0/30'))
    await store.create('/pinto/ipam/affinities/lbl-b/198-18-8-4-30', value('lbl-b', '198.18.8.4/30'))
    t.equal(await api.kubectl('get', 'blockaffinities.crd.projectcalico.org', 'lbl-a-198-18-8-0-30', '-o', 'jsonpath={.metadata.labels.projectcalico\\.org/hostname-hash}'), hostnameHash('lbl-a'), 'pinto writes the label Calico writes')
    // One written without the label, as an older writer left it.
    await api.kubectlWithInput(`
apiVersion: crd.projectcalico.org/v1
kind: BlockAffinity
metadata: { name: lbl-a-198-18-8-8-30 }
spec: { state: confirmed, node: lbl-a, cidr: 198.18.8.8/30, deleted: "false" }
`, 'apply', '-f', '-')
    const keys = (await store.list('/pinto/ipam/affinities/lbl-a/')).items.map((kv) => kv.key)
    t.same(keys, ['/pinto/ipam/affinities/lbl-a/198-18-8-0-30', '/pinto/ipam/affinities/lbl-a/198-18-8-8-30'], "lbl-a's own, labelled or not, and not lbl-b's")
    t.same((await store.list('/pinto/ipam/affinities/lbl-b/')).items.map((kv) => kv.key), ['/pinto/ipam/affinities/lbl-b/198-18-8-4-30'])
    t.same((await store.list('/pinto/ipam/affinities/lbl-')).items.map((kv) => kv.key).sort(), [...keys, '/pinto/ipam/affinities/lbl-b/198-18-8-4-30'].sort(), 'a prefix that names no whole node lists the kind')
  })

  t.test('a core Node with Calico annotations reads as a pinto Node; pinto writes its annotations, not its labels', async (t) => {
    await api.kubectlWithInput(`
apiVersion: v1
kind: Node
metadata:
  name: kdd-node-1
  labels: { rack: r1 }
  annotations:
    projectcalico.org/IPv4Address: 192.0.2.21/24
    projectcalico.org/ASNumber: "64513"
    projectcalico.org/IPv4IPIPTunnelAddr: 198.18.9.1
spec: { podCIDRs: [198.19.1.0/24] }
`, 'apply', '-f', '-')
    const key = '/pinto/resources/nodes/kdd-node-1'
    const kv = await store.get(key)
    const node = decodeResource(kv?.value ?? '', key, 'Node')
    t.same(node.metadata, { name: 'kdd-node-1', labels: { rack: 'r1' } })
    t.same(node.spec.bgp, { ipv4Address: '192.0.2.21/24', asNumber: 64513, ipv4IPIPTunnelAddr: '198.18.9.1' })
    t.same(node.status, { podCIDRs: ['198.19.1.0/24'] })
    node.spec.bgp = { ...node.spec.bgp, routeReflectorClusterID: '224.0.0.1' }
    delete node.spec.bgp.ipv4IPIPTunnelAddr
    const written = await store.update(key, JSON.stringify(node), kv?.revision ?? 0)
    const ann = JSON.parse(await api.kubectl('get', 'node', 'kdd-node-1', '-o', 'jsonpath={.metadata.annotations}')) as Record<string, string>
    t.match(ann, { 'projectcalico.org/IPv4Address': '192.0.2.21/24', 'projectcalico.org/ASNumber': '64513', 'projectcalico.org/RouteReflectorClusterID': '224.0.0.1' })
    t.notOk('projectcalico.org/IPv4IPIPTunnelAddr' in ann, 'a field the write left out loses its annotation')
    t.equal(await code(store.update(key, JSON.stringify(node), kv?.revision ?? 0)), `conflict: key ${key} is at revision ${written.revision}, not ${kv?.revision}`)
    const relabel = { ...node, metadata: { name: 'kdd-node-1', labels: { rack: 'r2' } } }
    t.match(await code(store.update(key, JSON.stringify(relabel), written.revision)), /^invalid: .*metadata.labels/)
    t.match(await code(store.create('/pinto/resources/nodes/kdd-absent', JSON.stringify({ ...node, metadata: { name: 'kdd-absent' } }))), /^not-found: .*no Kubernetes Node kdd-absent; the kubelet registers Nodes/)
    t.match(await code(store.delete(key)), /^invalid: .*kubectl delete node/)
  })

  t.test('a Node watch sees a label change and not a status heartbeat', async (t) => {
    await api.kubectlWithInput('apiVersion: v1\nkind: Node\nmetadata: { name: kdd-node-2, labels: { rack: r1 } }\n', 'apply', '-f', '-')
    const listed = await store.list('/pinto/resources/nodes/')
    const events: WatchEvent[] = []
    const w = store.watch('/pinto/resources/nodes/', listed.revision + 1, (e) => events.push(e))
    t.teardown(() => w.close())
    await api.kubectl('label', 'node', 'kdd-node-2', 'rack=r2', '--overwrite')
    await waitFor(() => events.length >= 1, 'the label change', 20_000)
    const heartbeat = (i: number): string => JSON.stringify({ status: { conditions: [{ type: 'Ready', status: 'True', reason: `beat-${i}`, message: 'test', lastHeartbeatTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z') }] } })
    for (let i = 0; i < 3; i++) await api.kubectl('patch', 'node', 'kdd-node-2', '--subresource=status', '--type=merge', '-p', heartbeat(i))
    await api.kubectl('label', 'node', 'kdd-node-2', 'rack=r3', '--overwrite')
    await waitFor(() => events.length >= 2, 'the second label change', 20_000)
    const labels = events.map((e) => (e.type === 'put' ? (JSON.parse(e.value) as { metadata: { labels?: Record<string, string> } }).metadata.labels?.rack : e.type))
    t.same(labels, ['r2', 'r3'], 'two label changes, no event for the heartbeats')
    t.ok(events.every((e) => e.key === '/pinto/resources/nodes/kdd-node-2'))
  })

  t.test('a watch from before the apiserver keeps history is compacted', async (t) => {
    const errors: Error[] = []
    const w = store.watch('/contract-compacted/', 2, () => undefined, (e) => errors.push(e))
    t.teardown(() => w.close())
    await waitFor(() => errors.length > 0, 'the compacted error', 20_000)
    t.equal((errors[0] as DatastoreError).code, 'compacted', (errors[0] as Error).message)
  })

  t.test('credentials and CRDs are named when they fail', async (t) => {
    t.match(await code(openDatastore('kubernetes', { kubeEnv: {} })), /^invalid: PINTO_DATASTORE=kubernetes needs credentials: set KUBECONFIG/)
    t.match(await code(openDatastore('kubernetes', { kubeEnv: { KUBECONFIG: join(api.dir, 'absent') } })), /^invalid: kubernetes datastore: cannot use KUBECONFIG=.*absent/)
    const bad = join(api.dir, 'kubeconfig-bad-token')
    writeFileSync(bad, readFileSync(api.kubeconfig, 'utf8').replace(api.token, 'not-the-token'))
    t.match(await code(openDatastore('kubernetes', { kubeEnv: { KUBECONFIG: bad } })), /^unavailable: .*refused \(401\).*check the credentials/)
    await api.kubectl('delete', 'crd', 'bgpfilters.crd.projectcalico.org')
    t.teardown(() => api.kubectl('apply', '-f', join(CRDS, 'crd.projectcalico.org_bgpfilters.yaml')))
    await waitUntil(async () => (await code(store.list('/pinto/resources/bgpfilters/'))).startsWith('unavailable'), { timeoutMs: 30_000, intervalMs: 200, what: 'the CRD to go' })
    t.match(await code(store.list('/pinto/resources/bgpfilters/')), /^unavailable: .*has no BGPFilter \(bgpfilters.crd.projectcalico.org\); install pinto's CRDs \(deploy\/kubernetes\/crds\/\)/)
  })

  t.test('a dropped watch connection resumes from the last revision it carried', async (t) => {
    // A loopback TCP relay in front of the apiserver (its certificate names 127.0.0.1), cut under the watch.
    const sockets = new Set<Socket>()
    const relay = createServer((inbound) => {
      const outbound = connect(Number(new URL(api.url).port), '127.0.0.1')
      for (const s of [inbound, outbound]) {
        sockets.add(s)
        s.on('error', () => undefined)
        s.on('close', () => sockets.delete(s))
      }
      inbound.pipe(outbound).pipe(inbound)
    })
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve))
    t.teardown(() => {
      for (const s of sockets) s.destroy()
      relay.close()
    })
    const config = join(api.dir, 'kubeconfig-relay')
    writeFileSync(config, readFileSync(api.kubeconfig, 'utf8').replace(api.url, `https://127.0.0.1:${(relay.address() as AddressInfo).port}`))
    const viaRelay = await openDatastore('kubernetes', { kubeEnv: { KUBECONFIG: config } })
    t.teardown(() => viaRelay.close())
    const p = '/contract-relay/'
    const a = await store.create(`${p}a`, '1')
    const events: WatchEvent[] = []
    const errors: Error[] = []
    const w = viaRelay.watch(p, a.revision + 1, (e) => events.push(e), (e) => errors.push(e))
    t.teardown(() => w.close())
    const b = await store.create(`${p}b`, '2')
    await waitFor(() => events.length >= 1, 'the first event', 20_000)
    const cut = sockets.size
    for (const s of sockets) s.destroy()
    const c = await store.create(`${p}c`, '3')
    await waitFor(() => events.length >= 2 || errors.length > 0, 'the event after the cut', 20_000)
    t.ok(cut > 0, `${cut} relayed sockets cut`)
    t.same(errors, [])
    t.same(events.map((e) => [e.key.slice(p.length), e.revision]), [['b', b.revision], ['c', c.revision]], 'nothing lost, nothing twice')
  })

  t.test('across an apiserver restart a watch resumes or reports compacted: it never loses an event silently', async (t) => {
    const p = '/contract-restart/'
    const a = await store.create(`${p}a`, '1')
    const events: WatchEvent[] = []
    const errors: Error[] = []
    const w = store.watch(p, a.revision + 1, (e) => events.push(e), (e) => errors.push(e))
    t.teardown(() => w.close())
    const b = await store.create(`${p}b`, '2')
    await waitFor(() => events.length >= 1, 'the first event', 20_000)
    await api.crash()
    await api.restart()
    const c = await store.create(`${p}c`, '3')
    await waitFor(() => events.length >= 2 || errors.length > 0, 'the event after the restart, or the error', 60_000)
    t.same(events[0], { type: 'put', key: `${p}b`, value: '2', revision: b.revision })
    if (errors.length > 0) {
      // The restarted apiserver's watch cache starts after the last revision the watch saw: the caller relists.
      t.equal((errors[0] as DatastoreError).code, 'compacted', (errors[0] as Error).message)
      t.equal(events.length, 1, 'no event after the error')
      t.same((await store.list(p)).items.map((kv) => [kv.key.slice(p.length), kv.revision]), [['a', a.revision], ['b', b.revision], ['c', c.revision]], 'the relist has what the watch missed')
    } else {
      t.same(events.map((e) => [e.key.slice(p.length), e.revision]), [['b', b.revision], ['c', c.revision]], 'resumed: nothing lost, nothing twice')
    }
  })
}
