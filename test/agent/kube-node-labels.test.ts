// Kubernetes Node labels feed BGPPeer nodeSelector and peerSelector. On the kubernetes datastore the labels are
// the core Node's own: `kubectl label node` makes a BGPPeer match and the session comes up, timed from the label to
// Established (the target is 2 s). On etcd each agent syncs its own Kubernetes Node's labels onto its pinto Node, as
// Calico's kube-controllers do: added, changed and removed with Kubernetes, labels set through pinto kept.
import t from 'tap'
import { loadavg, cpus } from 'node:os'
import { type Datastore, decodeResource, encodeResource, openDatastore, resourceKey, type Node, type Resource } from '../../config/index.js'
import { startEtcd } from '../harness/etcd.js'
import { bridgeLoopback } from '../harness/ns-bridge.js'
import { waitFor } from '../harness/wait.js'
import type { AgentProcess } from './agent-process.js'
import { kubeLab, logged, type KubeLab } from './kube-lab.js'

/** The target from label to session; a loaded machine (more runnable work than cores) gets more room. */
const TARGET_MS = 2000
const loaded = (): boolean => (loadavg()[0] ?? 0) > cpus().length
const deadline = (): number => (loaded() ? 10_000 : TARGET_MS)

const mesh = (off: boolean): Resource => ({ apiVersion: 'projectcalico.org/v3', kind: 'BGPConfiguration', metadata: { name: 'default' }, spec: { nodeToNodeMeshEnabled: !off } })
const rackPeer: Resource = { apiVersion: 'projectcalico.org/v3', kind: 'BGPPeer', metadata: { name: 'rack-a' }, spec: { nodeSelector: "rack == 'a'", peerSelector: "rack == 'a'" } }

async function apply(store: Datastore, r: Resource): Promise<void> {
  await store.create(resourceKey(r.kind, r.metadata.name), encodeResource(r))
}

async function established(lab: KubeLab, agent: AgentProcess, address: string): Promise<boolean> {
  return (await lab.peers(agent)).some((p) => p.address === address && p.state === 'Established')
}

/** Runs `kubectl label node ...` and returns the ms from its start until `agent` has `address` Established. */
async function labelToSession(lab: KubeLab, agent: AgentProcess, address: string, ...label: string[]): Promise<number> {
  const t0 = performance.now()
  await lab.api.kubectl('label', 'node', ...label, '--overwrite')
  await waitFor(() => established(lab, agent, address), { timeoutMs: 30_000, intervalMs: 10, what: `the session to ${address}` })
  return Math.round(performance.now() - t0)
}

const lab = await kubeLab(t)
if ('skip' in lab) t.comment(`skipped: ${lab.skip}`)
else {
  t.test('kubernetes datastore: a label put on a core Node makes a BGPPeer match, and the session comes up', async (t) => {
    await apply(lab.store, mesh(true))
    await apply(lab.store, rackPeer)
    const n1 = await lab.addNode('l1', '192.0.2.21')
    const n2 = await lab.addNode('l2', '192.0.2.22')
    await lab.registerNode(n1, { rack: 'a' })
    await lab.registerNode(n2, { rack: 'b' })
    const a1 = lab.startAgent(t, n1)
    const a2 = lab.startAgent(t, n2)
    await Promise.all([a1.ready(120_000), a2.ready(120_000)])
    t.same(await lab.peers(a2), [], 'l2 (rack b) has no peer')

    const ms = await labelToSession(lab, a2, '192.0.2.21', 'l2', 'rack=a')
    t.comment(`kubectl label node l2 rack=a -> session Established on l2: ${ms} ms (load ${loadavg()[0]?.toFixed(2)} on ${cpus().length} cores)`)
    t.ok(ms < deadline(), `label to session ${ms} ms, within ${deadline()} ms`)
    await waitFor(() => established(lab, a1, '192.0.2.22'), { timeoutMs: 5000, what: 'l1 with l2 Established' })

    await lab.api.kubectl('label', 'node', 'l2', 'rack=b', '--overwrite')
    await waitFor(async () => (await lab.peers(a2)).length === 0 && (await lab.peers(a1)).length === 0, { timeoutMs: 10_000, what: 'the session removed once l2 is out of rack a' })
    t.pass('the label taken away removes the session on both sides')
    await Promise.all([a1.stop(), a2.stop()])
  })

  t.test('etcd datastore: each agent syncs its own Kubernetes Node labels onto its Node, and they feed the selectors', async (t) => {
    const etcd = await startEtcd(t)
    const spec = `etcd://${etcd.endpoint}`
    const store = await openDatastore(spec)
    t.teardown(() => store.close())
    await apply(store, mesh(true))
    await apply(store, rackPeer)
    const n1 = await lab.addNode('e1', '192.0.2.31')
    const n2 = await lab.addNode('e2', '192.0.2.32')
    for (const n of [n1, n2]) await bridgeLoopback(t, lab.topo, n.ns, Number(etcd.endpoint.split(':')[1]))
    await lab.registerNode(n1, { rack: 'a' })
    await lab.registerNode(n2, { rack: 'b', 'topology.kubernetes.io/zone': 'z1' })
    const env = { PINTO_DATASTORE: spec }
    const a1 = lab.startAgent(t, n1, env)
    const a2 = lab.startAgent(t, n2, env)
    await Promise.all([a1.ready(120_000), a2.ready(120_000)])

    const pintoNode = async (name: string): Promise<Node> => {
      const kv = await store.get(resourceKey('Node', name))
      if (kv === undefined) throw new Error(`no Node ${name} in etcd`)
      return decodeResource(kv.value, kv.key, 'Node')
    }
    const labelsOf = async (name: string): Promise<Record<string, string>> => (await pintoNode(name)).metadata.labels ?? {}
    await waitFor(async () => (await labelsOf('e2'))['rack'] === 'b', { timeoutMs: 15_000, what: 'e2\'s labels in etcd' })
    t.match(await labelsOf('e2'), { rack: 'b', 'topology.kubernetes.io/zone': 'z1', 'kubernetes.io/hostname': 'e2' }, 'the Kubernetes Node\'s labels are on the pinto Node')
    t.equal(logged(a2, /^syncing the labels of Kubernetes Node "e2"/).length, 1, 'the agent says it syncs its own Node')
    t.same(await lab.peers(a2), [], 'e2 (rack b) has no peer')

    // A label set through pinto, which Kubernetes never had, is kept by every sync.
    const before = await store.get(resourceKey('Node', 'e2'))
    const own = decodeResource(before!.value, before!.key, 'Node')
    own.metadata.labels = { ...own.metadata.labels, 'pinto-only': 'kept' }
    await store.update(before!.key, encodeResource(own), before!.revision)

    const ms = await labelToSession(lab, a2, '192.0.2.31', 'e2', 'rack=a')
    t.comment(`etcd mode: kubectl label node e2 rack=a -> session Established on e2: ${ms} ms`)
    t.ok(ms < deadline() * 2, `label to session ${ms} ms (one more write, to etcd, than on the kubernetes datastore)`)
    t.match(await labelsOf('e2'), { rack: 'a', 'pinto-only': 'kept' })

    await lab.api.kubectl('label', 'node', 'e2', 'rack-', 'topology.kubernetes.io/zone-')
    await waitFor(async () => !('rack' in (await labelsOf('e2'))), { timeoutMs: 15_000, what: 'rack removed from e2 in etcd' })
    const after = await labelsOf('e2')
    t.notOk('topology.kubernetes.io/zone' in after, 'a label Kubernetes removed is removed')
    t.equal(after['pinto-only'], 'kept', 'the label set through pinto is still there')
    t.same(JSON.parse((await pintoNode('e2')).metadata.annotations?.['projectcalico.org/kube-labels'] ?? '{}'), { 'kubernetes.io/hostname': 'e2', 'kubernetes.io/os': 'linux' }, 'the annotation records what was synced, as Calico does')
    await waitFor(async () => (await lab.peers(a2)).length === 0, { timeoutMs: 10_000, what: 'e2\'s session removed' })
    t.equal(logged(a1, /syncing the labels/).length, 1, 'e1 syncs its own Node too')
    await Promise.all([a1.stop(), a2.stop()])
  })
}
