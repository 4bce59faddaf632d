// Steps both real-cluster tests walk (kube-cluster.test.ts with the Kubernetes API as datastore,
// kube-cluster-etcd.test.ts with etcd): each asserts what it shows on the test it is given.
import type { Test } from 'tap'
import type { KubeCluster } from '../../agent/demo/kube/cluster.js'
import type { KubeNode } from '../../agent/demo/kube/kube-node.js'
import type { KubePod } from '../../agent/demo/kube/workload.js'
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
