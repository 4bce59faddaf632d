// `kubectl delete node` on etcd: each agent ties its pinto Node to its Kubernetes Node (Calico's orchRef), and the
// first Ready node by name deletes the pinto Node of a Kubernetes Node that is deleted, as Calico's kube-controllers
// do, so the node clean-up's grace starts as on the kubernetes datastore: the node's affinities are released and its
// routes and sessions leave the others. A Node not tied to Kubernetes is never deleted. When the leading node's
// agent is gone and its Kubernetes Node is no longer Ready, the next node leads.
import t from 'tap'
import { randomUUID } from 'node:crypto'
import { type Datastore, decodeResource, encodeResource, openDatastore, resourceKey, type Node } from '../../config/index.js'
import { affinityPrefix } from '../../ipam/index.js'
import { CHECK_MS } from '../../agent/controllers/kube-nodes.js'
import { startEtcd } from '../harness/etcd.js'
import { bridgeLoopback } from '../harness/ns-bridge.js'
import { waitFor } from '../harness/wait.js'
import { kubeLab, logged } from './kube-lab.js'

const LEADING = /^this node deletes the Nodes whose Kubernetes Node is deleted/

async function pintoNode(store: Datastore, name: string): Promise<Node | undefined> {
  const kv = await store.get(resourceKey('Node', name))
  return kv === undefined ? undefined : decodeResource(kv.value, kv.key, 'Node')
}

const lab = await kubeLab(t)
if ('skip' in lab) t.comment(`skipped: ${lab.skip}`)
else {
  t.test('etcd datastore: a deleted Kubernetes Node deletes its pinto Node, and its IPAM, routes and sessions go', async (t) => {
    const etcd = await startEtcd(t)
    const spec = `etcd://${etcd.endpoint}`
    const store = await openDatastore(spec)
    t.teardown(() => store.close())
    // A host outside Kubernetes, its Node written by hand: no orchRef.
    const bare: Node = { apiVersion: 'projectcalico.org/v3', kind: 'Node', metadata: { name: 'a-bare-metal' }, spec: {} }
    await store.create(resourceKey('Node', bare.metadata.name), encodeResource(bare))

    const names = ['d1', 'd2', 'd3']
    const nodes = []
    for (const [i, name] of names.entries()) {
      const n = await lab.addNode(name, `192.0.2.${41 + i}`)
      await bridgeLoopback(t, lab.topo, n.ns, Number(etcd.endpoint.split(':')[1]))
      await lab.registerNode(n)
      nodes.push(n)
    }
    const env = { PINTO_DATASTORE: spec, PINTO_NODE_GC_GRACE_SECONDS: '3' }
    const agents = nodes.map((n) => lab.startAgent(t, n, env))
    const [a1, a2, a3] = agents as [(typeof agents)[0], (typeof agents)[0], (typeof agents)[0]]
    const [n1, n2, n3] = nodes as [(typeof nodes)[0], (typeof nodes)[0], (typeof nodes)[0]]
    await Promise.all(agents.map((a) => a.ready(120_000)))

    for (const name of names) t.same((await pintoNode(store, name))?.spec.orchRefs, [{ nodeName: name, orchestrator: 'k8s' }], `${name}'s Node is tied to its Kubernetes Node`)
    await waitFor(() => logged(a1, LEADING).length === 1, { timeoutMs: 15_000, what: 'd1 leading' })
    t.pass('d1, the first Ready node by name, deletes the Nodes of deleted Kubernetes Nodes')

    // d3 holds a block: one pod's address.
    const add = await lab.cni(n3, a3, 'ADD', { containerId: `c-${randomUUID().slice(0, 8)}`, netns: await lab.pod('d3-pod'), ifname: 'eth0' })
    t.equal(add.code, 0, `a pod on d3 gets an address: ${add.stdout.slice(0, 200)}`)
    const affinities = async (name: string): Promise<string[]> => (await store.list(affinityPrefix(name))).items.map((kv) => kv.key)
    t.equal((await affinities('d3')).length, 1, 'd3 has a block affinity')
    const viaD3 = async (n: typeof n1): Promise<boolean> => (await lab.routes(n)).some((r) => r.via.includes('via 192.0.2.43 '))
    await waitFor(() => viaD3(n1), { timeoutMs: 15_000, what: "d3's block routed on d1" })
    await waitFor(async () => (await lab.peers(a1)).some((p) => p.address === '192.0.2.43' && p.state === 'Established'), { timeoutMs: 30_000, what: 'd1 with d3 Established' })

    const t0 = Date.now()
    await lab.api.kubectl('delete', 'node', 'd3')
    await waitFor(async () => (await pintoNode(store, 'd3')) === undefined, { timeoutMs: 15_000, what: "d3's pinto Node deleted" })
    t.comment(`kubectl delete node d3 -> its pinto Node deleted in ${Date.now() - t0} ms`)
    // The agent logs once the delete is answered: its line may reach us just after etcd shows the delete.
    await waitFor(() => logged(a1, /^Kubernetes Node "d3" is deleted/).length > 0 || undefined, { timeoutMs: 5000, what: "d1's log line" })
    t.equal(logged(a1, /^Kubernetes Node "d3" is deleted: deleted its Node "d3"/).length, 1, 'd1 deleted it and says so')
    await waitFor(async () => (await affinities('d3')).length === 0, { timeoutMs: 30_000, what: "d3's affinities released after the grace" })
    t.pass("d3's block affinity is released after the grace period")
    await waitFor(async () => !(await viaD3(n1)) && !(await viaD3(n2)), { timeoutMs: 15_000, what: "d3's routes gone from d1 and d2" })
    await waitFor(async () => !(await lab.peers(a1)).some((p) => p.address === '192.0.2.43'), { timeoutMs: 15_000, what: "d1's session with d3 dropped" })
    t.pass("d3's routes left d1's and d2's kernels, and its sessions are dropped")
    t.ok(await pintoNode(store, 'a-bare-metal'), 'the Node not tied to Kubernetes is kept')
    await a3.stop()

    // d1's agent stops and its kubelet with it: its Kubernetes Node goes NotReady, and d2 leads.
    await a1.stop()
    const notReady = { status: { conditions: [{ type: 'Ready', status: 'Unknown', reason: 'NodeStatusUnknown', lastHeartbeatTime: new Date().toISOString(), lastTransitionTime: new Date().toISOString() }] } }
    await lab.api.kubectl('patch', 'node', 'd1', '--subresource=status', '--type=merge', '-p', JSON.stringify(notReady))
    await waitFor(() => logged(a2, LEADING).length === 1, { timeoutMs: CHECK_MS * 2 + 15_000, what: 'd2 leading once d1 is not Ready' })
    t.pass('d2 leads once d1 is no longer Ready')
    await lab.api.kubectl('delete', 'node', 'd1')
    await waitFor(async () => (await pintoNode(store, 'd1')) === undefined, { timeoutMs: 15_000, what: "d1's pinto Node deleted by d2" })
    await waitFor(() => logged(a2, /^Kubernetes Node "d1" is deleted/).length > 0 || undefined, { timeoutMs: 5000, what: "d2's log line" })
    t.equal(logged(a2, /^Kubernetes Node "d1" is deleted/).length, 1, "d2 deleted d1's Node")
    t.ok(await pintoNode(store, 'd2'), "d2's Node stays")
    await a2.stop()
  })
}
