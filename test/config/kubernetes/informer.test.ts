// The informer against a real kube-apiserver: a paged first list, a field selector, each change once and in
// order with the object before it, and after the apiserver is killed and started again, a cache that matches the
// apiserver's objects (changes made while it was away included) and keeps following them.
import t from 'tap'
import { KubeHttp } from '../../../config/kubernetes/kube-http.js'
import { Informer, type InformerEvent } from '../../../config/kubernetes/informer.js'
import type { KubeObject } from '../../../config/kubernetes/objects.js'
import { waitFor } from '../../harness/wait.js'
import { kubernetesApi } from '../../ipam/stores.js'

const k8s = await kubernetesApi(t)
if ('skip' in k8s) t.comment(`skipped: ${k8s.skip}`)
else {
  const { api } = k8s
  const http = await KubeHttp.connect({ kubeconfig: api.kubeconfig }, 3500)
  t.teardown(() => http.close())
  await api.kubectl('create', 'namespace', 'inf')
  const configMap = (name: string, data: string, label = 'a'): string =>
    `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"${name}","namespace":"inf","labels":{"set":"${label}"}},"data":{"v":"${data}"}}`
  for (let i = 0; i < 5; i++) await api.kubectlWithInput(configMap(`cm-${i}`, String(i), i === 4 ? 'b' : 'a'), 'create', '-f', '-')

  const events: InformerEvent<KubeObject>[] = []
  const errors: string[] = []
  const informer = new Informer(http, { path: '/api/v1/namespaces/inf/configmaps', what: 'config maps in inf', labelSelector: 'set=a', pageSize: 2 }, (e) => errors.push(e.message))
  t.teardown(() => informer.close())
  informer.onEvent((e) => events.push(e))
  const data = (o: KubeObject | undefined): unknown => (o?.['data'] as { v?: string } | undefined)?.v

  t.test('the first list, in pages of 2, with the label selector', async (t) => {
    await informer.start()
    t.same(informer.list().map((o) => o.metadata.name).sort(), ['cm-0', 'cm-1', 'cm-2', 'cm-3'])
    t.same(events.map((e) => `${e.type} ${e.object.metadata.name}`).sort(), ['added cm-0', 'added cm-1', 'added cm-2', 'added cm-3'])
    t.ok(informer.counts.lists === 1 && http.counts.requests >= 2, `one list of ${http.counts.requests} requests`)
  })

  t.test('each change once, in order, with the object before it', async (t) => {
    events.length = 0
    await api.kubectl('-n', 'inf', 'patch', 'configmap', 'cm-1', '-p', '{"data":{"v":"one"}}')
    await api.kubectl('-n', 'inf', 'delete', 'configmap', 'cm-2')
    await api.kubectlWithInput(configMap('cm-5', '5'), 'create', '-f', '-')
    await api.kubectl('-n', 'inf', 'label', 'configmap', 'cm-4', 'set=a', '--overwrite')
    await waitFor(() => events.length >= 4, { timeoutMs: 15_000, what: 'four events' })
    t.same(events.map((e) => `${e.type} ${e.object.metadata.name}`), ['modified cm-1', 'deleted cm-2', 'added cm-5', 'added cm-4'])
    t.equal(data(events[0]?.old), '1', 'the modification carries the object before it')
    t.equal(data(events[0]?.object), 'one')
    t.equal(informer.get('inf/cm-1') && data(informer.get('inf/cm-1')), 'one', 'the cache is keyed namespace/name')
    t.equal(informer.get('inf/cm-2'), undefined)
  })

  t.test('after the apiserver is killed and started again, the cache matches it and follows it', async (t) => {
    await api.crash()
    await api.restart()
    await api.kubectl('-n', 'inf', 'delete', 'configmap', 'cm-3')
    await api.kubectlWithInput(configMap('cm-6', '6'), 'create', '-f', '-')
    await waitFor(() => informer.get('inf/cm-6') !== undefined && informer.get('inf/cm-3') === undefined, { timeoutMs: 60_000, what: 'the changes after the restart' })
    const names = (await api.kubectl('-n', 'inf', 'get', 'configmap', '-l', 'set=a', '-o', 'name')).trim().split('\n').map((n) => n.replace('configmap/', ''))
    t.same(informer.list().map((o) => o.metadata.name).sort(), names.sort(), 'the cache holds what the apiserver holds')
    t.match(errors[0], /kubernetes apiserver https:\/\/127.0.0.1:\d+: .*config maps in inf/, `the outage was reported, naming the server and what: ${errors[0] ?? ''}`)
    t.comment(`lists ${informer.counts.lists}, watches ${informer.counts.watches}, relists after 410 ${informer.counts.relists}`)
  })
}
