// Service addresses to a BIRD top-of-rack (eBGP with every node of a 3-node mesh), from a real kube-apiserver: a
// LoadBalancer Service with externalTrafficPolicy Local and one endpoint (an EndpointSlice the test writes: no
// controller-manager runs; its ingress IP set through the status subresource) reaches BIRD as a /32 from that node
// only, with its cluster IP; the endpoint moved, the route moves; not ready, it goes; Cluster with aggregation
// (Calico's default), the /32 goes and the range covers it from every node; aggregation Disabled, the /32 comes from
// every node; a new ingress IP withdraws the old; the Service deleted, everything of it goes. External IPs: those in
// serviceExternalIPs only, a single-address range from every node under Cluster. Then on etcd with the apiserver's
// kubeconfig beside it: the same Local rule; an agent without credentials says so once and advertises none.

import { readFile } from 'node:fs/promises'
import t from 'tap'
import { birdInstalled } from '../../agent/demo/cluster-spec.js'
import { putResources } from '../../agent/demo/cluster-store.js'
import { startEtcd } from '../harness/etcd.js'
import { bridgeLoopback } from '../harness/ns-bridge.js'
import { waitFor } from '../harness/wait.js'
import { kubernetesApi } from '../ipam/stores.js'
import { labResources, openStore, servicesLab } from './services-lab.js'

// An apiserver, 3 agents twice over and BIRD on a shared 2-core machine: more than tap's default 300 s.
t.setTimeout(900_000)
const bird = await birdInstalled()
const k8s = bird ? await kubernetesApi(t) : { skip: 'bird2 is not installed' }
if ('skip' in k8s) t.comment(`skipped: ${k8s.skip}`)
else {
  const { api } = k8s
  const lab = await servicesLab(t, api, 3)
  const [n1, n2, n3] = lab.nodes as [(typeof lab.nodes)[0], (typeof lab.nodes)[0], (typeof lab.nodes)[0]]
  const all = lab.nodes.map((n) => n.address)
  const kubectl = (...args: string[]): Promise<string> => api.kubectl(...args)
  const apply = (o: unknown): Promise<string> => api.kubectlWithInput(JSON.stringify(o), 'apply', '-f', '-')

  // The apiserver gives cluster IPs from 198.51.100.0/24 (the harness's service range).
  const LB_RANGE = '203.0.113.0/26'
  const CONFIG = {
    serviceClusterIPs: [{ cidr: '198.51.100.0/24' }],
    serviceLoadBalancerIPs: [{ cidr: LB_RANGE }],
    serviceExternalIPs: [{ cidr: '203.0.113.64/26' }, { cidr: '203.0.113.200/32' }],
  }

  const service = (name: string, spec: Record<string, unknown>): Record<string, unknown> => ({
    apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: 'shop' }, spec: { ports: [{ port: 80, protocol: 'TCP' }], ...spec },
  })
  /** The Service's one EndpointSlice: one endpoint on `node`, ready or not. */
  const slice = (svc: string, node: string, ready = true): Record<string, unknown> => ({
    apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice',
    metadata: { name: `${svc}-1`, namespace: 'shop', labels: { 'kubernetes.io/service-name': svc } },
    addressType: 'IPv4', ports: [{ port: 80, protocol: 'TCP' }],
    endpoints: [{ addresses: ['198.18.0.10'], nodeName: node, conditions: { ready } }],
  })
  /** The request counts an agent logs when it stops watching Services (its last such line). */
  const requestCounts = async (log: string): Promise<Record<string, number> | undefined> => {
    const line = (await readFile(log, 'utf8')).split('\n').reverse().find((l) => l.includes('Services no longer watched'))
    return line === undefined ? undefined : (JSON.parse(line) as { kubernetesApi?: Record<string, number> }).kubernetesApi
  }
  const clusterIP = async (svc: string): Promise<string> => (await kubectl('-n', 'shop', 'get', 'svc', svc, '-o', 'jsonpath={.spec.clusterIP}')).trim()
  const setIngress = (svc: string, ip: string): Promise<string> =>
    kubectl('-n', 'shop', 'patch', 'svc', svc, '--subresource=status', '--type=merge', '-p', JSON.stringify({ status: { loadBalancer: { ingress: [{ ip }] } } }))

  t.test('kubernetes datastore', async (t) => {
    const store = await openStore(t, 'kubernetes', { KUBECONFIG: api.kubeconfig })
    for (const n of lab.nodes) await apply({ apiVersion: 'v1', kind: 'Node', metadata: { name: n.name } })
    await putResources(store, labResources(CONFIG))
    await kubectl('create', 'namespace', 'shop')
    for (const n of lab.nodes) await lab.startAgent(n, { PINTO_DATASTORE: 'kubernetes', KUBECONFIG: api.kubeconfig })
    await waitFor(async () => [...(await lab.tor.sessions()).values()].every((s) => s === 'Established') && (await lab.tor.sessions()).size === 3, { timeoutMs: 60_000, what: 'BIRD sessions with the 3 nodes' })
    await lab.waitNextHops(LB_RANGE, all, 'the LoadBalancer range from every node')

    await apply(service('web', { type: 'LoadBalancer', externalTrafficPolicy: 'Local' }))
    await apply(slice('web', 'node1'))
    await setIngress('web', '203.0.113.10')
    const webIP = await clusterIP('web')
    t.match(webIP, /^198\.51\.100\./, `web's cluster IP ${webIP}`)

    await t.test('Local: from the node with the endpoint only', async (t) => {
      t.same(await lab.waitNextHops('203.0.113.10/32', [n1.address], 'the ingress /32 from node1 only'), [n1.address], 'the ingress IP /32 from node1 only')
      t.same(await lab.waitNextHops(`${webIP}/32`, [n1.address], 'the cluster IP /32 from node1 only'), [n1.address], 'its cluster IP /32 from node1 only')
      t.same(await lab.nextHops(LB_RANGE), all, 'the range still from every node')
    })

    await t.test('the endpoint moves to node2: so does the route', async (t) => {
      await apply(slice('web', 'node2'))
      t.same(await lab.waitNextHops('203.0.113.10/32', [n2.address], 'the /32 from node2 only'), [n2.address], 'the /32 from node2, not node1')
      t.same(await lab.waitNextHops(`${webIP}/32`, [n2.address], 'the cluster IP from node2 only'), [n2.address], 'the cluster IP /32 moved too')
    })

    await t.test('the endpoint not ready: withdrawn; ready again: back', async (t) => {
      await apply(slice('web', 'node2', false))
      t.same(await lab.waitNextHops('203.0.113.10/32', [], 'the /32 withdrawn'), [], 'no node advertises a Service with no ready endpoint')
      await apply(slice('web', 'node2'))
      t.same(await lab.waitNextHops('203.0.113.10/32', [n2.address], 'the /32 back from node2'), [n2.address], 'ready again: back from node2')
    })

    await t.test('Cluster: covered by the range from every node (aggregation); Disabled: the /32 from every node', async (t) => {
      await kubectl('-n', 'shop', 'patch', 'svc', 'web', '--type=merge', '-p', '{"spec":{"externalTrafficPolicy":"Cluster"}}')
      t.same(await lab.waitNextHops('203.0.113.10/32', [], 'the /32 withdrawn under aggregation'), [], 'no /32: the range covers a Cluster Service')
      t.same(await lab.waitNextHops(`${webIP}/32`, [], 'the cluster IP /32 withdrawn'), [], 'nor for its cluster IP')
      t.same(await lab.nextHops(LB_RANGE), all, 'the range from every node')
      await putResources(store, labResources({ ...CONFIG, serviceLoadBalancerAggregation: 'Disabled' }))
      t.same(await lab.waitNextHops('203.0.113.10/32', all, 'the /32 from every node'), all, 'aggregation Disabled: the /32 from every node')
      t.same(await lab.waitNextHops(`${webIP}/32`, all, 'the cluster IP /32 from every node'), all, 'its cluster IP /32 from every node')
      t.same(await lab.waitNextHops(LB_RANGE, [], 'the range no longer originated'), [], 'aggregation Disabled: the range is not originated')
    })

    await t.test('a new ingress IP withdraws the old /32', async (t) => {
      await setIngress('web', '203.0.113.11')
      t.same(await lab.waitNextHops('203.0.113.11/32', all, 'the new /32 from every node'), all, 'the new /32 from every node')
      t.same(await lab.waitNextHops('203.0.113.10/32', [], 'the old /32 withdrawn'), [], 'the old /32 is gone')
    })

    await t.test('the Service deleted: its /32s withdrawn', async (t) => {
      await kubectl('-n', 'shop', 'delete', 'svc', 'web')
      t.same(await lab.waitNextHops('203.0.113.11/32', [], 'the ingress /32 withdrawn'), [], 'the ingress IP /32 withdrawn')
      t.same(await lab.waitNextHops(`${webIP}/32`, [], 'the cluster IP /32 withdrawn'), [], 'the cluster IP /32 withdrawn')
      await putResources(store, labResources(CONFIG))
      await lab.waitNextHops(LB_RANGE, all, 'the range from every node again')
    })

    await t.test('external IPs: inside serviceExternalIPs only; a single-address range from every node under Cluster', async (t) => {
      await apply(service('ext', { type: 'NodePort', externalTrafficPolicy: 'Local', externalIPs: ['203.0.113.70', '203.0.113.200', '192.0.2.200'] }))
      await apply(slice('ext', 'node3'))
      t.same(await lab.waitNextHops('203.0.113.70/32', [n3.address], '203.0.113.70/32 from node3'), [n3.address], 'Local: an external IP from node3 only')
      t.same(await lab.waitNextHops('203.0.113.200/32', [n3.address], '203.0.113.200/32 from node3'), [n3.address], 'Local: the single-address one from node3 only')
      t.same(await lab.nextHops('192.0.2.200/32'), [], 'an external IP outside serviceExternalIPs is never advertised')
      await kubectl('-n', 'shop', 'patch', 'svc', 'ext', '--type=merge', '-p', '{"spec":{"externalTrafficPolicy":"Cluster"}}')
      t.same(await lab.waitNextHops('203.0.113.200/32', all, '203.0.113.200/32 from every node'), all, 'Cluster: a single-address range from every node')
      t.same(await lab.waitNextHops('203.0.113.70/32', all, '203.0.113.70/32 from every node'), all, 'with it the Service\'s other addresses')
      await kubectl('-n', 'shop', 'delete', 'svc', 'ext')
      t.same(await lab.waitNextHops('203.0.113.200/32', [], '203.0.113.200/32 withdrawn'), [], 'deleted: the single-address one withdrawn')
      t.same(await lab.waitNextHops('203.0.113.70/32', [], '203.0.113.70/32 withdrawn'), [], 'deleted: the other withdrawn')
    })

    await t.test('what the agents asked of the apiserver', async (t) => {
      for (const n of lab.nodes) await lab.stopAgent(n)
      for (const n of lab.nodes) {
        const counts = await requestCounts(n.log)
        t.ok(counts, `${n.name} logged its request counts`)
        t.comment(`${n.name}: ${JSON.stringify(counts)} (requests and streams: the kubernetes datastore's pool, which the Services share)`)
        t.ok(counts !== undefined && counts['lists']! >= 2 && counts['watches']! >= 2, `${n.name}: one list and one watch at least of each kind`)
      }
    })
  })

  t.test('etcd with KUBECONFIG beside it; an agent without credentials', async (t) => {
    const etcd = await startEtcd(t)
    const spec = `etcd://${etcd.endpoint}`
    for (const n of lab.nodes) await bridgeLoopback(t, lab.topo, n.ns, Number(etcd.endpoint.split(':')[1]))
    const store = await openStore(t, spec)
    await putResources(store, labResources(CONFIG))
    await lab.startAgent(n1, { PINTO_DATASTORE: spec, KUBECONFIG: api.kubeconfig })
    await lab.startAgent(n2, { PINTO_DATASTORE: spec, KUBECONFIG: api.kubeconfig })
    await lab.startAgent(n3, { PINTO_DATASTORE: spec })
    await lab.waitNextHops(LB_RANGE, all, 'the LoadBalancer range from every node')

    await apply(service('local', { type: 'LoadBalancer', externalTrafficPolicy: 'Local' }))
    await apply(slice('local', 'node2'))
    await setIngress('local', '203.0.113.20')
    t.same(await lab.waitNextHops('203.0.113.20/32', [n2.address], 'the /32 from node2'), [n2.address], 'etcd datastore, KUBECONFIG: the /32 from node2 only')
    await apply(slice('local', 'node3'))
    t.same(await lab.waitNextHops('203.0.113.20/32', [], 'the /32 withdrawn'), [], 'the endpoint on the node without credentials: no node advertises it')
    const log = await readFile(n3.log, 'utf8')
    const said = log.split('\n').filter((l) => l.includes('no Kubernetes credentials'))
    t.equal(said.length, 1, 'the agent without credentials said so once')
    t.match(said[0], /Service addresses are not advertised.*Node labels are not synced.*annotations are not read/, 'naming what is off: Services, Node labels, pod annotations and GC')
    await kubectl('-n', 'shop', 'delete', 'svc', 'local')
    for (const n of lab.nodes) await lab.stopAgent(n)
    for (const n of [n1, n2]) t.comment(`${n.name}: ${JSON.stringify(await requestCounts(n.log))} (its own pool: the Services' requests alone)`)
  })
}
