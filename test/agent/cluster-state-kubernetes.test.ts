// A node's cluster view on the kubernetes datastore, against a real kube-apiserver: it is sent the events of its
// own blocks and of the blocks it borrowed an address from, and none of another node's block writes; it still
// originates its blocks and its borrowed address, knows every block's owner from the affinities, follows a block of
// its own whose affinity is released while its pod holds an address there, and finds a block written without
// pinto's labels (as Calico writes it), which it labels so its watch follows it.
import t from 'tap'
import pino from 'pino'
import { ClusterState } from '../../agent/cluster-state.js'
import { originationFor } from '../../agent/origination.js'
import type { Datastore } from '../../config/datastore.js'
import { BLOCK_LABELLED_LABEL, HOSTNAME_HASH_LABEL, hostnameHash } from '../../config/kubernetes/ipam-objects.js'
import { type AllocationBlock, hostAffinity, newBlock } from '../../ipam/block.js'
import { AFFINITIES_PREFIX, blockKey } from '../../ipam/records.js'
import { parseCidr } from '../../net/index.js'
import { waitFor } from '../harness/wait.js'
import { kubernetesStore, relayWatches } from '../ipam/stores.js'

const k8s = await kubernetesStore(t)
if ('skip' in k8s) t.comment(`skipped: ${k8s.skip}`)
else {
  const { api, store } = k8s

  /** `b` with `ordinal` given to a pod of `node`. */
  const allocate = (b: AllocationBlock, ordinal: number, node: string, handle: string): AllocationBlock => ({
    ...b,
    allocations: b.allocations.map((a, i) => (i === ordinal ? b.attributes.length : a)),
    unallocated: b.unallocated.filter((o) => o !== ordinal),
    attributes: [...b.attributes, { handleId: handle, secondary: { node, namespace: 'default', pod: handle } }],
  })
  const release = (b: AllocationBlock, ordinal: number): AllocationBlock => ({ ...b, allocations: b.allocations.map((a, i) => (i === ordinal ? null : a)), unallocated: [...b.unallocated, ordinal] })
  const affinity = (node: string, cidr: string): Promise<unknown> =>
    store.create(`${AFFINITIES_PREFIX}${node}/${cidr.replace(/[./]/g, '-')}`, JSON.stringify({ state: 'confirmed', node, cidr, type: 'host' }))

  /** A node's view of `inner`, with the block keys of every watch event it is handed. */
  const view = async (inner: Datastore, node: string): Promise<{ cluster: ClusterState; delivered: string[] }> => {
    const delivered: string[] = []
    const cluster = new ClusterState(relayWatches(inner, (e, deliver) => {
      delivered.push(e.key)
      deliver()
    }), pino({ level: 'silent' }), { node })
    t.teardown(() => cluster.close())
    await cluster.start()
    return { cluster, delivered }
  }

  t.test("node-a's view: its blocks and its borrowed address, none of node-b's block writes", async (t) => {
    const { cluster, delivered } = await view(store, 'node-a')
    t.ok(cluster.nodeScoped, 'the view selects its blocks by node')
    const mine = parseCidr('198.18.10.0/28')
    const theirs = parseCidr('198.18.20.0/28')
    await affinity('node-a', '198.18.10.0/28')
    await store.create(blockKey(mine), JSON.stringify(newBlock(mine, hostAffinity('node-a'), new Date(0).toISOString(), 1)))
    await affinity('node-b', '198.18.20.0/28')
    let b = newBlock(theirs, hostAffinity('node-b'), new Date(0).toISOString(), 1)
    let kv = await store.create(blockKey(theirs), JSON.stringify(b))
    await waitFor(() => (originationFor('node-a', cluster.blocks()).blocks.includes('198.18.10.0/28') ? true : undefined), { timeoutMs: 10_000, what: "node-a's block in its origination" })
    await waitFor(() => (cluster.blockOwners().get('198.18.20.0/28') === 'node-b' ? true : undefined), { timeoutMs: 10_000, what: "node-b's block's owner, from the affinities" })

    // node-b's pods come and go: 20 writes of its block.
    for (let i = 0; i < 10; i++) {
      b = allocate(b, i, 'node-b', `b-${i}`)
      kv = await store.update(kv.key, JSON.stringify(b), kv.revision)
      b = release(b, i)
      kv = await store.update(kv.key, JSON.stringify(b), kv.revision)
    }
    // node-a borrows an address of node-b's block: its view gets the block, and originates the /32.
    b = allocate(b, 14, 'node-a', 'a-borrowed')
    kv = await store.update(kv.key, JSON.stringify(b), kv.revision)
    await waitFor(() => (originationFor('node-a', cluster.blocks()).borrowed.includes('198.18.20.14/32') ? true : undefined), { timeoutMs: 10_000, what: "node-a's borrowed address in its origination" })
    t.same(delivered.filter((k) => k === blockKey(theirs)).length, 1, "of node-b's 21 block writes, node-a was handed one: the one that gave it an address")
    t.same(originationFor('node-a', cluster.blocks()), { blocks: ['198.18.10.0/28'], borrowed: ['198.18.20.14/32'] })

    // More of node-b's pods while node-a holds its address: the block is node-a's concern now, each write reaches it.
    b = allocate(b, 3, 'node-b', 'b-late')
    kv = await store.update(kv.key, JSON.stringify(b), kv.revision)
    await waitFor(() => (delivered.filter((k) => k === blockKey(theirs)).length === 2 ? true : undefined), { timeoutMs: 10_000, what: 'the write of a block node-a borrowed from' })

    // The borrowed address released: it leaves node-a's view, and node-b's next writes do not reach it again.
    b = release(b, 14)
    kv = await store.update(kv.key, JSON.stringify(b), kv.revision)
    await waitFor(() => (originationFor('node-a', cluster.blocks()).borrowed.length === 0 ? true : undefined), { timeoutMs: 10_000, what: 'the borrowed address withdrawn' })
    const handed = delivered.filter((k) => k === blockKey(theirs)).length
    for (let i = 5; i < 10; i++) {
      b = allocate(b, i, 'node-b', `b2-${i}`)
      kv = await store.update(kv.key, JSON.stringify(b), kv.revision)
    }
    // A write of node-a's own block after them: once it is here, node-b's writes before it would have been too.
    const own = await store.get(blockKey(mine))
    await store.update(blockKey(mine), JSON.stringify(allocate(JSON.parse(own?.value ?? '{}') as AllocationBlock, 0, 'node-a', 'a-0')), own?.revision ?? 0)
    await waitFor(() => ([...cluster.blocks()].find((x) => x.cidr === '198.18.10.0/28')?.allocations[0] === 0 ? true : undefined), { timeoutMs: 10_000, what: "node-a's own block's write" })
    t.equal(delivered.filter((k) => k === blockKey(theirs)).length, handed, "node-b's writes after the release were not handed to node-a")
    t.same([...cluster.blocks()].map((x) => x.cidr), ['198.18.10.0/28'], 'the view holds node-a’s block only')
    t.equal([...(await cluster.allBlocks())].length >= 2, true, 'every block is still read on demand')

    // Its affinity released while its pod still holds an address there: the block moves from node-a's own stream to
    // its borrowed one (a delete in one, a put in the other, in either order) and is followed there; the block's
    // prefix is withdrawn and the pod's /32 originated.
    const held = await store.get(blockKey(mine))
    const unowned = { ...(JSON.parse(held?.value ?? '{}') as AllocationBlock), affinity: null, affinityClaimTime: null }
    await store.update(blockKey(mine), JSON.stringify(unowned), held?.revision ?? 0)
    await waitFor(() => (originationFor('node-a', cluster.blocks()).borrowed.includes('198.18.10.0/32') ? true : undefined), { timeoutMs: 10_000, what: "node-a's pod's address originated on its own once the block is nobody's" })
    t.same(originationFor('node-a', cluster.blocks()), { blocks: [], borrowed: ['198.18.10.0/32'] })
    const b2 = allocate(unowned, 1, 'node-b', 'b-in-unowned')
    const again = await store.get(blockKey(mine))
    await store.update(blockKey(mine), JSON.stringify(b2), again?.revision ?? 0)
    await waitFor(() => ([...cluster.blocks()].find((x) => x.cidr === '198.18.10.0/28')?.allocations[1] === 1 ? true : undefined), { timeoutMs: 10_000, what: 'the next write of the block, through the borrowed stream' })
    t.ok([...cluster.blocks()].some((x) => x.cidr === '198.18.10.0/28'), 'the block is still in the view')
  })

  t.test('a block written without pinto’s labels (as Calico writes it) is found, labelled and followed', async (t) => {
    await api.kubectlWithInput(`
apiVersion: crd.projectcalico.org/v1
kind: IPAMBlock
metadata: { name: 198-18-30-0-30 }
spec: { cidr: 198.18.30.0/30, affinity: 'host:node-c', allocations: [null, null, null, null], unallocated: [0, 1, 2, 3], attributes: [], sequenceNumber: 1, sequenceNumberForAllocation: {}, strictAffinity: false, deleted: false }
`, 'apply', '-f', '-')
    const { cluster, delivered } = await view(store, 'node-c')
    t.same(originationFor('node-c', cluster.blocks()).blocks, ['198.18.30.0/30'], 'found at start')
    const labels = JSON.parse(await api.kubectl('get', 'ipamblocks.crd.projectcalico.org', '198-18-30-0-30', '-o', 'jsonpath={.metadata.labels}')) as Record<string, string>
    t.equal(labels[HOSTNAME_HASH_LABEL], hostnameHash('node-c'), 'labelled with its node')
    t.equal(labels[BLOCK_LABELLED_LABEL], 'true')
    const kv = await store.get(blockKey(parseCidr('198.18.30.0/30')))
    await store.update(kv?.key ?? '', JSON.stringify(allocate(JSON.parse(kv?.value ?? '{}') as AllocationBlock, 1, 'node-c', 'c-1')), kv?.revision ?? 0)
    await waitFor(() => (delivered.includes(blockKey(parseCidr('198.18.30.0/30'))) ? true : undefined), { timeoutMs: 10_000, what: 'the labelled block followed by the watch' })
  })

  t.test("a Node's status report after the list is no change of the view; a label is", async (t) => {
    await api.kubectlWithInput(JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-e', annotations: { 'projectcalico.org/IPv4Address': '192.0.2.50/24' } } }), 'create', '-f', '-')
    const report = (n: number): Promise<string> => api.kubectl('patch', 'node', 'node-e', '--subresource=status', '--type=merge', '-p', JSON.stringify({ status: { conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: `report ${n}`, lastHeartbeatTime: new Date(Date.now() + n * 1000).toISOString().replace(/\.\d+Z$/, 'Z') }] } }))
    await report(0)
    const { cluster } = await view(store, 'node-e')
    const changes: string[] = []
    cluster.onChange((topic) => changes.push(topic))
    const before = cluster.entry('Node', 'node-e')?.revision ?? 0
    for (let n = 1; n <= 3; n++) await report(n)
    await api.kubectl('label', 'node', 'node-e', 'rack=r1')
    await waitFor(() => (cluster.get('Node', 'node-e')?.metadata.labels?.['rack'] === 'r1' ? true : undefined), { timeoutMs: 10_000, what: "the Node's new label in the view" })
    t.same(changes, ['resources'], 'one change: the label; the three status reports none')
    t.ok((cluster.entry('Node', 'node-e')?.revision ?? 0) > before, 'the revision held follows the Node')
  })

  t.test('the view is not current while its watches reconnect after the apiserver went, and is again once they are answered', async (t) => {
    const { cluster } = await view(store, 'node-d')
    await waitFor(() => (cluster.current ? true : undefined), { timeoutMs: 10_000, what: 'the view current once its watches are answered' })
    await api.crash()
    await waitFor(() => (cluster.current ? undefined : true), { timeoutMs: 20_000, what: 'the view no longer current once its watches broke' })
    await api.restart()
    await waitFor(() => (cluster.current ? true : undefined), { timeoutMs: 30_000, what: 'the view current again' })
    const cidr = parseCidr('198.18.40.0/28')
    await affinity('node-d', '198.18.40.0/28')
    await store.create(blockKey(cidr), JSON.stringify(newBlock(cidr, hostAffinity('node-d'), new Date(0).toISOString(), 1)))
    await waitFor(() => ([...cluster.blocks()].some((b) => b.cidr === '198.18.40.0/28') ? true : undefined), { timeoutMs: 10_000, what: 'a block written after the restart, in the view' })
    t.ok(cluster.current, 'and still current')
  })

}
