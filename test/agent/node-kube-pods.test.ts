// The whole pinto-node on the kubernetes datastore, against a real kube-apiserver: its IPAM service honours a pod's
// ipAddrs annotation, and its pod GC (over the agent's watched IPAM blocks) frees an allocation whose pod the API
// does not have once the grace period is over.
import t from 'tap'
import { join } from 'node:path'
import { IpamClient } from '../../cni/ipam-client.js'
import { Topology } from '../harness/netns.js'
import { bridgeLoopback } from '../harness/ns-bridge.js'
import { waitFor } from '../harness/wait.js'
import { kubernetesApi } from '../ipam/stores.js'
import { startAgent } from './agent-process.js'

const k8s = await kubernetesApi(t)
if ('skip' in k8s) t.comment(`skipped: ${k8s.skip}`)
else {
  const { api } = k8s
  const topo = await Topology.create(t)
  const node = await topo.addNode({ name: 'kpods', v4: '192.0.2.41/24' })
  await bridgeLoopback(t, topo, node.ns, Number(new URL(api.url).port))
  await api.kubectlWithInput(JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'n1' } }), 'create', '-f', '-')
  await api.kubectl('create', 'namespace', 'web')
  await api.kubectl('-n', 'web', 'create', 'serviceaccount', 'default')
  const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'fixed', namespace: 'web', annotations: { 'cni.projectcalico.org/ipAddrs': '["198.18.7.7"]' } }, spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] } }
  await api.kubectlWithInput(JSON.stringify(pod), 'create', '-f', '-')
  const agent = startAgent(t, node.ns, { PINTO_IP: '192.0.2.41/24', PINTO_BGP_PORT: '1179', PINTO_DATASTORE: 'kubernetes', KUBECONFIG: api.kubeconfig, PINTO_POD_GC_GRACE_SECONDS: '2', PINTO_IPAM_REPAIR_SECONDS: '0' })
  await agent.ready(120_000)
  const ipam = (): IpamClient => new IpamClient(join(agent.dir, 'pinto.sock'))

  t.test('the IPAM service honours the pod\'s ipAddrs', async (t) => {
    const r = await ipam().assign({ handle: 'k8s-pod-network.f1xed', num4: 1, num6: 0, attrs: { namespace: 'web', pod: 'fixed', containerID: 'f1xed', ifname: 'eth0' } })
    t.same(r.ipv4.map((a) => a.address), ['198.18.7.7'])
    await waitFor(async () => (await api.kubectl('-n', 'web', 'get', 'pod', 'fixed', '-o', 'jsonpath={.metadata.annotations.cni\\.projectcalico\\.org/podIP}')) === '198.18.7.7/32', { timeoutMs: 20_000, what: 'the podIP annotation' })
  })

  t.test('the pod GC frees the addresses of a pod the API does not have, and keeps the living pod\'s', async (t) => {
    await ipam().assign({ handle: 'k8s-pod-network.90ne', num4: 1, num6: 0, attrs: { namespace: 'web', pod: 'gone', containerID: '90ne', ifname: 'eth0' } })
    const held = async (prefix: string): Promise<number> => (await ipam().allocations(prefix)).length
    t.equal(await held('k8s-pod-network.90ne'), 1)
    await waitFor(async () => (await held('k8s-pod-network.90ne')) === 0, { timeoutMs: 60_000, intervalMs: 250, what: 'the absent pod\'s address freed' })
    t.equal(await held('k8s-pod-network.f1xed'), 1, 'the living pod keeps its address')
    t.match(agent.stdout(), /released the addresses of a pod gone from the Kubernetes API without a CNI DEL/)
  })
}
