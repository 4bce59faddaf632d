// What an ADD asks the apiserver before it assigns, on the kubernetes datastore against a real kube-apiserver: the
// pod and its namespace come from the agent's watched caches when they hold them (no request), and are read (the
// pod, or the namespace) only when they do not; the annotations found either way shape the assignment alike.
import t from 'tap'
import { KubePods } from '../../agent/kube-pods.js'
import { KubeHttp } from '../../config/index.js'
import { waitFor } from '../harness/wait.js'
import { kubernetesStore } from '../ipam/stores.js'

const k8s = await kubernetesStore(t)
if ('skip' in k8s) t.comment(`skipped: ${k8s.skip}`)
else {
  const { api, store } = k8s
  const http = (store as { api?: unknown }).api
  if (!(http instanceof KubeHttp)) throw new Error('the kubernetes datastore carries no apiserver connection')
  const pods = new KubePods({ node: 'node1', store, source: undefined, gcGraceSeconds: 0, log: () => undefined })
  t.teardown(() => pods.stop())
  const make = async (o: object): Promise<void> => void (await api.kubectlWithInput(JSON.stringify(o), 'create', '-f', '-'))
  const pod = (ns: string, name: string, nodeName: string): object => ({
    apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: ns },
    spec: { nodeName, automountServiceAccountToken: false, containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] },
  })
  const ask = (ns: string, name: string): Parameters<KubePods['ipamHooks']['plan']>[0] =>
    ({ handle: `net.${name}`, node: 'node1', num4: 1, attrs: { namespace: ns, pod: name, containerID: name } })

  t.test('the pod and its namespace from the watched caches: no request; a pod the cache lacks is read', async (t) => {
    await make({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'silvered', annotations: { 'cni.projectcalico.org/ipv4pools': '["silver"]' } } })
    await api.kubectl('-n', 'silvered', 'create', 'serviceaccount', 'default').catch((err: Error) => {
      if (!/already exists/.test(err.message)) throw err
    })
    await pods.start()
    await make(pod('silvered', 'here', 'node1'))
    await waitFor(() => (pods.pod('silvered/here') !== undefined && pods.namespace('silvered') !== undefined) || undefined, { timeoutMs: 10_000, what: 'the pod and its namespace in the watched caches' })
    let before = http.counts.requests
    const planned = await pods.ipamHooks.plan(ask('silvered', 'here'))
    t.equal(http.counts.requests - before, 0, 'no request to the apiserver')
    t.type(planned, 'function', "the namespace's ipv4pools shape the assignment")

    // A pod this node's cache does not hold (bound elsewhere, as a watch that lags would have it): read, the namespace still from the cache.
    await make(pod('silvered', 'elsewhere', 'node2'))
    before = http.counts.requests
    const read = await pods.ipamHooks.plan(ask('silvered', 'elsewhere'))
    t.equal(http.counts.requests - before, 1, 'one request: the pod')
    t.type(read, 'function', 'the same annotations honoured')

    // A namespace the cache does not hold yet is read beside the pod.
    before = http.counts.requests
    t.equal(await pods.ipamHooks.plan(ask('nowhere', 'ghost')), undefined, 'a pod the apiserver lacks: an ordinary ADD')
    t.equal(http.counts.requests - before, 2, 'two requests: the pod and the namespace, together')
  })
}
