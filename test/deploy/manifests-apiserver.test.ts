// Both manifest variants against a real kube-apiserver: each applies with `kubectl apply --server-side` (the
// rendered pinto.yaml and the kustomization alike), `kubectl kustomize` renders what render-manifests.js wrote,
// and with the kubernetes-datastore variant's RBAC alone — pinto-node's ServiceAccount token, no more — pinto
// does what pinto-node does: writes its Node's annotations, makes a pool, assigns and releases addresses, reads
// the pods on its node, patches a pod's annotations (through pods/status), lists Services and EndpointSlices.
// What it never does stays refused.
import t from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseAllDocuments } from 'yaml'
import { type Datastore } from '../../config/datastore.js'
import { openDatastore } from '../../config/datastore-open.js'
import { encodeResource, resourceKey } from '../../config/resources/store-keys.js'
import { KubeHttp } from '../../config/kubernetes/kube-http.js'
import { Informer } from '../../config/kubernetes/informer.js'
import { Ipam } from '../../ipam/ipam.js'
import type { IPPool } from '../../config/index.js'
import { kubernetesUnavailable, kubernetesBin } from '../harness/kubernetes-bin.js'
import { KUBE_APISERVER_BINARIES, startKubeApiserver } from '../harness/kube-apiserver.js'

const DIR = fileURLToPath(new URL('../../../deploy/kubernetes', import.meta.url))
const unavailable = await kubernetesUnavailable()
if (unavailable !== undefined) t.comment(`skipped: ${unavailable}`)
else {
  await kubernetesBin(KUBE_APISERVER_BINARIES, t)
  const api = await startKubeApiserver(t)
  const objects = (text: string): unknown[] => parseAllDocuments(text, { version: '1.1' }).map((d) => d.toJS() as unknown).filter((o) => o !== null)

  t.test('kubectl kustomize renders what pinto.yaml holds, for each variant', async (t) => {
    for (const variant of ['.', 'kdd']) {
      const dir = join(DIR, variant)
      const { readFileSync } = await import('node:fs')
      t.same(objects(await api.kubectl('kustomize', dir)), objects(readFileSync(join(dir, 'pinto.yaml'), 'utf8')), `${variant}: the same objects in the same order`)
    }
  })

  t.test('the etcd variant applies server-side, and is removed again', async (t) => {
    const out = await api.kubectl('apply', '--server-side', '-f', join(DIR, 'pinto.yaml'))
    t.match(out, /daemonset\.apps\/pinto-node serverside-applied/)
    t.match(out, /clusterrole\.rbac\.authorization\.k8s\.io\/pinto-node serverside-applied/)
    await api.kubectl('delete', '-f', join(DIR, 'pinto.yaml'), '--wait=true')
  })

  t.test('the kubernetes-datastore variant applies server-side, twice (the second changes nothing)', async (t) => {
    const first = await api.kubectl('apply', '--server-side', '-k', join(DIR, 'kdd'))
    t.match(first, /customresourcedefinition\.apiextensions\.k8s\.io\/ipamblocks\.crd\.projectcalico\.org serverside-applied/)
    t.match(first, /clusterrole\.rbac\.authorization\.k8s\.io\/pinto-node-datastore serverside-applied/)
    await api.kubectl('wait', '--for=condition=Established', '--timeout=60s', 'crd', '--all')
    const second = await api.kubectl('apply', '--server-side', '-f', join(DIR, 'kdd', 'pinto.yaml'))
    t.notMatch(second, /configured|created/, second)
    t.equal(await api.kubectl('-n', 'kube-system', 'get', 'configmap', 'pinto-config', '-o', 'jsonpath={.data.datastore}'), 'kubernetes')
  })

  t.test('the fan-out applies server-side over the kubernetes-datastore variant, with the settings pinto-node reads', async (t) => {
    const out = await api.kubectl('apply', '--server-side', '-k', join(DIR, 'fanout'))
    t.match(out, /deployment\.apps\/pinto-fanout serverside-applied/)
    t.match(out, /service\/pinto-fanout serverside-applied/)
    t.equal(await api.kubectl('-n', 'kube-system', 'get', 'configmap', 'pinto-config', '-o', 'jsonpath={.data.fanout_service}'), '', 'off until the operator names it')
    const env = JSON.parse(await api.kubectl('-n', 'kube-system', 'get', 'ds', 'pinto-node', '-o', 'jsonpath={.spec.template.spec.containers[0].env}')) as { name: string }[]
    t.ok(env.some((e) => e.name === 'PINTO_FANOUT_SERVICE') && env.some((e) => e.name === 'PINTO_FANOUT_TOKEN_FILE'), 'pinto-node reads the fan-out settings')
    t.equal(await api.kubectl('-n', 'kube-system', 'get', 'deploy', 'pinto-fanout', '-o', 'jsonpath={.spec.template.spec.serviceAccountName}'), 'pinto-node')
  })

  t.test("with pinto-node's ServiceAccount alone, pinto does what pinto-node does", async (t) => {
    const token = (await api.kubectl('-n', 'kube-system', 'create', 'token', 'pinto-node', '--duration=1h')).trim()
    const kubeconfig = join(api.dir, 'pinto-node.kubeconfig')
    const admin = objects(await api.kubectl('config', 'view', '--raw', '-o', 'yaml'))[0] as { clusters: unknown[] }
    writeFileSync(
      kubeconfig,
      JSON.stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: admin.clusters,
        users: [{ name: 'pinto-node', user: { token } }],
        contexts: [{ name: 'pinto-node', context: { cluster: (admin.clusters[0] as { name: string }).name, user: 'pinto-node' } }],
        'current-context': 'pinto-node',
      }),
      { mode: 0o600 },
    )
    // What a kubelet registers, and a pod on it in a namespace (the ServiceAccount admission wants its account).
    await api.kubectlWithInput('{"apiVersion":"v1","kind":"Node","metadata":{"name":"rbac-node","labels":{"rack":"r1"}}}', 'create', '-f', '-')
    await api.kubectl('create', 'namespace', 'rbac')
    await api.kubectlWithInput('{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"default","namespace":"rbac"}}', 'create', '-f', '-')
    await api.kubectlWithInput(
      '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"rbac"},"spec":{"nodeName":"rbac-node","containers":[{"name":"c","image":"localhost/agnhost"}]}}',
      'create',
      '-f',
      '-',
    )

    const store: Datastore = await openDatastore('kubernetes', { kubeEnv: { KUBECONFIG: kubeconfig } })
    t.teardown(() => store.close())
    const nodeKey = resourceKey('Node', 'rbac-node')
    const node = await store.get(nodeKey)
    t.ok(node, 'reads its Node')
    const written = JSON.parse(node!.value) as { spec: Record<string, unknown> }
    written.spec.bgp = { ipv4Address: '192.0.2.10/24', asNumber: 64512 }
    await store.update(nodeKey, JSON.stringify(written), node!.revision)
    t.equal(await api.kubectl('get', 'node', 'rbac-node', '-o', 'jsonpath={.metadata.annotations.projectcalico\\.org/IPv4Address}'), '192.0.2.10/24', 'writes its BGP address through nodes/status')

    const pool: IPPool = { apiVersion: 'projectcalico.org/v3', kind: 'IPPool', metadata: { name: 'rbac-pool' }, spec: { cidr: '198.18.8.0/24', blockSize: 26 } }
    await store.create(resourceKey('IPPool', 'rbac-pool'), encodeResource(pool))
    const ipam = new Ipam(store, { pools: [{ name: 'rbac-pool', cidr: '198.18.8.0/24', blockSize: 26 }] })
    const got = await ipam.autoAssign({ handle: 'k8s-pod-network.rbac', node: 'rbac-node', num4: 2, attrs: { namespace: 'rbac', pod: 'p', node: 'rbac-node' } })
    t.equal(got.ipv4.length, 2, 'assigns: a block claimed, a handle made, the block written')
    t.equal((await ipam.releaseByHandle('k8s-pod-network.rbac')).released.length, 2, 'releases')
    t.ok((await store.list('/pinto/')).items.length > 0, 'lists across the kinds it reads')

    const http = await KubeHttp.connect({ kubeconfig }, 3500)
    t.teardown(() => http.close())
    for (const [path, what] of [
      ['/api/v1/pods', 'pods on rbac-node'],
      ['/api/v1/services', 'services'],
      ['/apis/discovery.k8s.io/v1/endpointslices', 'endpoint slices'],
      ['/api/v1/nodes', 'nodes'],
    ] as const) {
      const informer = new Informer(http, { path, what, ...(path === '/api/v1/pods' ? { fieldSelector: 'spec.nodeName=rbac-node' } : {}) })
      t.teardown(() => informer.close())
      await informer.start()
      t.pass(`lists and watches ${what}`)
    }
    const patch = await http.request('PATCH', '/api/v1/namespaces/rbac/pods/p/status', undefined, { metadata: { annotations: { 'cni.projectcalico.org/podIP': '198.18.8.1/32' } } }, 'application/merge-patch+json')
    t.equal(patch.status, 200, `patches a pod's annotations through pods/status: ${patch.text.slice(0, 200)}`)
    t.equal((await http.request('GET', '/api/v1/namespaces/rbac')).status, 200, 'reads a namespace')

    // What pinto-node never does.
    const as = ['--as=system:serviceaccount:kube-system:pinto-node']
    for (const [verb, resource] of [
      ['delete', 'nodes'],
      ['update', 'nodes'],
      ['get', 'secrets'],
      ['delete', 'pods'],
      ['create', 'pods'],
      ['patch', 'pods'],
      ['delete', 'ippools.crd.projectcalico.org'],
      ['update', 'bgppeers.crd.projectcalico.org'],
      ['create', 'customresourcedefinitions.apiextensions.k8s.io'],
    ] as const) {
      // --quiet: the answer is the exit status alone, 0 yes and 1 no.
      const answer = await api.kubectl('auth', 'can-i', '--quiet', '-n', 'rbac', verb, resource, ...as).then(
        () => 'yes',
        (e: Error) => (/\(exit 1\)/.test(e.message) ? 'no' : e.message),
      )
      t.equal(answer, 'no', `${verb} ${resource}: refused`)
    }
  })
}
