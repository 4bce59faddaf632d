// Steps both real-cluster tests walk (kube-cluster.test.ts with the Kubernetes API as datastore,
// kube-cluster-etcd.test.ts with etcd): each asserts what it shows on the test it is given.
import type { Test } from 'tap'
import type { KubeCluster } from '../../agent/demo/kube/cluster.js'
import type { KubeNode } from '../../agent/demo/kube/kube-node.js'
import { kubePingMatrix, runningPods, webDeployment, WEB_LABEL, type KubePod } from '../../agent/demo/kube/workload.js'
import { matrixFailures } from '../../agent/demo/observe.js'
import { cidrContains, parseAddr, parseCidr } from '../../net/index.js'
import { waitFor } from '../harness/wait.js'

/**
 * A pod of `node` deleted while the node's kubelet is stopped (no DEL can come): pinto's pod GC frees its
 * address once the pod is gone from the API. `ipamShow` is `pintoctl ipam show --ip=IP` on some node.
 */
export async function podGcBehindStoppedKubelet(t: Test, cluster: KubeCluster, pods: readonly KubePod[], node: KubeNode, ipamShow: (ip: string) => Promise<string>): Promise<void> {
  const orphan = pods.find((p) => p.node === node.spec.name)!
  t.match(await ipamShow(orphan.ip), /is in use/, `${orphan.ip} (${orphan.name}) is in use`)
  await node.stopDaemon('kubelet')
  await cluster.kubectl(['delete', 'pod', orphan.name, '--grace-period=0', '--force', '--wait=false'])
  const freed = await waitFor(async () => ((await ipamShow(orphan.ip).catch(() => '')).includes('is not assigned') ? true : undefined), { timeoutMs: 60_000, what: `${orphan.ip} freed by the pod GC` })
  t.ok(freed, `with ${node.spec.name}'s kubelet stopped, ${orphan.ip} is freed once ${orphan.name} is gone from the API`)
  node.startDaemon('kubelet')
  await cluster.waitNodes(cluster.nodes.length, 'Ready')
}

/**
 * `kubectl drain` of `gone`, then its machine stops and `kubectl delete node`: six web pods (a soft spread) come back
 * on the other nodes with new addresses, none from `gone`'s blocks, and reach each other; `gone`'s blocks are
 * released (`blocksOf`: the block CIDRs a node is affine to, as the datastore holds them).
 */
export async function drainAndDeleteNode(t: Test, cluster: KubeCluster, gone: KubeNode, blocksOf: (node: string) => Promise<string[]>): Promise<void> {
  const name = gone.spec.name
  await cluster.kubectl(['apply', '-f', '-'], JSON.stringify(webDeployment(6, 'soft')))
  await cluster.kubectl(['rollout', 'status', 'deploy/web', '--timeout=180s'])
  const goneBlocks = await blocksOf(name)
  t.ok(goneBlocks.length > 0, `${name} holds blocks ${goneBlocks.join(', ')}`)
  const before = (await runningPods(cluster, WEB_LABEL)).filter((p) => p.node === name)
  t.ok(before.length > 0, `${before.length} web pods on ${name} before the drain`)
  await cluster.kubectl(['drain', name, '--ignore-daemonsets', '--delete-emptydir-data', '--timeout=180s'])
  await cluster.kubectl(['rollout', 'status', 'deploy/web', '--timeout=180s'])
  const after = await runningPods(cluster, WEB_LABEL)
  t.equal(after.length, 6, 'six web pods running again')
  t.notOk(after.some((p) => p.node === name), `none on the drained ${name}`)
  const goneCidrs = goneBlocks.map((b) => parseCidr(b))
  const fromGone = (ip: string): boolean => {
    const a = parseAddr(ip)
    return goneCidrs.some((c) => cidrContains(c, a.family, a.value))
  }
  t.notOk(after.some((p) => before.some((b) => b.ip === p.ip) || fromGone(p.ip)), `the moved pods have new addresses, none from ${name}'s blocks`)
  await gone.stop()
  const t0 = Date.now()
  await cluster.kubectl(['delete', 'node', name])
  await waitFor(async () => ((await blocksOf(name)).length === 0 ? true : undefined), { timeoutMs: 90_000, what: `${name}'s block affinities released` })
  t.pass(`after kubectl delete node, ${name}'s blocks and affinities are released (${((Date.now() - t0) / 1000).toFixed(1)} s, with the grace period)`)
  const survivors = await runningPods(cluster, WEB_LABEL)
  t.same(matrixFailures(await kubePingMatrix(cluster, survivors, new Map(survivors.map((p): [string, string] => [p.name, p.ip])))), [], 'the pods on the remaining nodes reach each other')
}
