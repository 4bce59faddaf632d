// pinto's etcd variant in the real Kubernetes cluster (agent/demo/kube/): deploy/kubernetes/pinto.yaml with its
// pinto-config and pinto-etcd-secrets filled in for an etcd with TLS on a fabric host of its own, as an operator
// whose cluster keeps Calico's data in etcd installs it. The DaemonSet goes Ready; a Kubernetes Node's label
// reaches its pinto Node in etcd; pods get addresses and reach each other; a pod deleted behind a stopped
// kubelet has its address freed; a drained node's pods come back elsewhere with new addresses, and once it is
// deleted from Kubernetes its pinto Node leaves etcd and its blocks are released: the node is the first by name,
// so the node that takes over from it does that.

import t from 'tap'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { CLUSTER_BINARIES, KubeCluster, POD_CIDR } from '../../agent/demo/kube/cluster.js'
import { kubePingMatrix, runningPods, webDeployment, WEB_LABEL } from '../../agent/demo/kube/workload.js'
import { matrixFailures } from '../../agent/demo/observe.js'
import { ROOT } from '../../agent/demo/cluster-spec.js'
import { ETCD_BIN } from '../../agent/demo/etcd.js'
import { AFFINITIES_PREFIX } from '../../ipam/records.js'
import { cidrContains, parseAddr, parseCidr } from '../../net/index.js'
import { kubernetesBin, kubernetesUnavailable } from '../harness/kubernetes-bin.js'
import { waitFor } from '../harness/wait.js'
import { drainAndDeleteNode, podGcBehindStoppedKubelet } from './kube-steps.js'

const hasPodman = existsSync('/usr/bin/podman')
const unavailable = await kubernetesUnavailable()
const skip = process.getuid?.() !== 0 ? 'needs root' : !hasPodman ? 'podman is not installed (it builds pinto\'s image)' : !existsSync(ETCD_BIN) ? `${ETCD_BIN} is not installed (Debian: etcd-server)` : unavailable ?? false

/** The file's own tap object: its timeout is the test process's (a subtest's would not lift it). */
const file = t

t.test('pinto with etcd as its datastore in a three-node Kubernetes cluster', { skip }, async (t) => {
  await kubernetesBin(CLUSTER_BINARIES, file)
  file.setTimeout(15 * 60_000)
  const { buildImage } = (await import(pathToFileURL(join(ROOT, 'scripts', 'image.js')).href)) as { buildImage: () => { image: string } }
  const { podmanEnv } = (await import(pathToFileURL(join(ROOT, 'scripts', 'podman-env.js')).href)) as { podmanEnv: () => NodeJS.ProcessEnv }
  const agentEnv = { PINTO_POD_GC_GRACE_SECONDS: '3', PINTO_NODE_GC_GRACE_SECONDS: '3' }
  const cluster = KubeCluster.prepare({ nodes: 3, image: buildImage().image, podmanEnv: podmanEnv(), datastore: 'etcd', agentEnv, say: (l) => t.comment(l) })
  t.teardown(() => cluster.destroy())
  const started = Date.now()
  await cluster.start()
  t.comment(`cluster up, pinto rolled out from the etcd manifest, in ${((Date.now() - started) / 1000).toFixed(1)} s`)
  const etcd = cluster.etcd!
  const ds = JSON.parse(await cluster.kubectl(['-n', 'kube-system', 'get', 'ds', 'pinto-node', '-o', 'json'])) as { spec: { template: { spec: { containers: { name: string; env?: { name: string; valueFrom?: { configMapKeyRef?: { key: string } } }[] }[] } } }; status: { numberReady: number } }
  t.equal(ds.status.numberReady, 3, 'the DaemonSet is Ready on every node')
  const config = JSON.parse(await cluster.kubectl(['-n', 'kube-system', 'get', 'configmap', 'pinto-config', '-o', 'json'])) as { data: Record<string, string> }
  t.equal(config.data['datastore'], etcd.datastore, `pinto-config names the etcd: ${etcd.datastore}`)
  const nodeNames = cluster.nodes.map((n) => n.spec.name)
  const affinities = async (node: string): Promise<string[]> => (await etcd.list(`${AFFINITIES_PREFIX}${node}/`)).map((kv) => kv.key)

  // A label set on the Kubernetes Node reaches the node's pinto Node in etcd, as Calico's kube-controllers sync it.
  const agentPod = async (node: string): Promise<string> => {
    const pods = JSON.parse(await cluster.kubectl(['-n', 'kube-system', 'get', 'pods', '-l', 'k8s-app=pinto-node', '--field-selector', `spec.nodeName=${node}`, '-o', 'json'])) as { items: { metadata: { name: string } }[] }
    return pods.items[0]!.metadata.name
  }
  // pintoctl in the third node's pinto-node: its kubelet stays up throughout, and the node stays.
  const pintoctl = async (args: readonly string[]): Promise<string> => cluster.kubectl(['-n', 'kube-system', 'exec', await agentPod(nodeNames[2]!), '-c', 'pinto-node', '--', 'pintoctl', ...args])
  await cluster.kubectl(['label', 'node', nodeNames[0]!, 'rack=r1'])
  const synced = await waitFor(async () => {
    const node = JSON.parse(await pintoctl(['get', 'node', nodeNames[0]!, '-o', 'json']).catch(() => '{}')) as { metadata?: { labels?: Record<string, string> } }
    return node.metadata?.labels?.['rack'] === 'r1' ? true : undefined
  }, { timeoutMs: 30_000, what: 'the label on the pinto Node' })
  t.ok(synced, `kubectl label node ${nodeNames[0]} rack=r1: the pinto Node in etcd has it`)

  await cluster.kubectl(['apply', '-f', '-'], JSON.stringify(webDeployment(6)))
  await cluster.kubectl(['rollout', 'status', 'deploy/web', '--timeout=180s'])
  const pods = await runningPods(cluster, WEB_LABEL)
  t.same([...new Set(pods.map((p) => p.node))].sort(), [...nodeNames].sort(), 'six pods spread over the three nodes')
  const pool = parseCidr(POD_CIDR)
  t.ok(pods.every((p) => { const a = parseAddr(p.ip); return cidrContains(pool, a.family, a.value) }), `six addresses from the pool: ${pods.map((p) => p.ip).join(', ')}`)
  t.same(matrixFailures(await kubePingMatrix(cluster, pods, new Map(pods.map((p): [string, string] => [p.name, p.ip])))), [], 'every pod pings every other pod')
  const held = await Promise.all(nodeNames.map(async (n) => (await affinities(n)).length))
  t.ok(held.every((n) => n > 0), `each node's block affinity is in etcd (${held.join(', ')})`)

  // A pod deleted while its node's kubelet is stopped: pinto's pod GC frees its address in etcd.
  const node2 = cluster.nodes[1]!
  await podGcBehindStoppedKubelet(t, cluster, pods, node2, (ip) => pintoctl(['ipam', 'show', `--ip=${ip}`]))

  // kubectl drain, then the machine goes and kubectl delete node: the pods come back on the other two with new
  // addresses. The node is the first by name, the one that deletes the pinto Nodes of deleted Kubernetes Nodes: its
  // agent goes with it, the second node takes over, deletes its pinto Node in etcd, and its blocks are released
  // after the grace.
  const gone = cluster.nodes[0]!
  await drainAndDeleteNode(t, cluster, gone, async (node) => (await etcd.list(`${AFFINITIES_PREFIX}${node}/`)).map((kv) => (JSON.parse(kv.value) as { cidr: string }).cidr))
  t.match(await pintoctl(['get', 'node', gone.spec.name]).catch((err: Error) => err.message), /does not exist/, `${gone.spec.name}'s pinto Node is gone from etcd`)
  const successor = await cluster.kubectl(['-n', 'kube-system', 'logs', await agentPod(nodeNames[1]!), '-c', 'pinto-node'])
  t.match(successor, /this node deletes the Nodes whose Kubernetes Node is deleted/, `${nodeNames[1]} took over once ${gone.spec.name} was gone`)
  t.match(successor, new RegExp(`Kubernetes Node \\\\?"${gone.spec.name}\\\\?" is deleted`), `${nodeNames[1]} deleted it and says so`)
  const check = await pintoctl(['ipam', 'check']).catch((err: Error) => err.message)
  t.match(check, /found 0 problems/, `pintoctl ipam check: ${check.trim().split('\n').at(-1) ?? ''}`)
})
