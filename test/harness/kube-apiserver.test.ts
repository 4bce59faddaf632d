// The kube-apiserver harness against the real thing: the versions go.mod pins, RBAC refusing an anonymous
// client, server-side apply of a ConfigMap, a CRD and an object of it (and the CRD's schema refusing a bad one),
// a watch from an old resourceVersion that replays the change and then sees a new one, a frozen and a killed
// apiserver coming back with its data, and nothing left behind after stop.

import t from 'tap'
import { existsSync, readFileSync } from 'node:fs'
import { request, type RequestOptions } from 'node:https'
import { isAlive } from './pid.js'
import { KUBE_APISERVER_BINARIES, startKubeApiserver, type KubeApiserver } from './kube-apiserver.js'
import { kubernetesBin, kubernetesUnavailable, kubernetesVersions } from './kubernetes-bin.js'
import { waitFor } from './wait.js'

const unavailable = await kubernetesUnavailable()
if (unavailable !== undefined) t.comment(`skipped: ${unavailable}`)
else await kubernetesBin(KUBE_APISERVER_BINARIES, t)

const CRD = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.smoke.pinto.example
spec:
  group: smoke.pinto.example
  scope: Cluster
  names: { kind: Widget, listKind: WidgetList, plural: widgets, singular: widget }
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                size: { type: integer }
`

const configMap = (value: string): string => `
apiVersion: v1
kind: ConfigMap
metadata: { name: smoke, namespace: default }
data: { a: "${value}" }
`

interface ObjectMeta {
  readonly metadata: { readonly resourceVersion: string; readonly managedFields?: readonly { manager: string; operation: string }[] }
}
interface ConfigMapJson extends ObjectMeta {
  readonly data: Record<string, string>
}
interface WatchEvent {
  readonly type: string
  readonly object: ConfigMapJson
}

/** An https request to the apiserver with the harness's CA, with or without the admin token. */
function apiRequest(api: KubeApiserver, path: string, withToken: boolean): RequestOptions & { url: string } {
  return { url: `${api.url}${path}`, ca: readFileSync(api.ca.cert), headers: withToken ? { authorization: `Bearer ${api.token}` } : {} }
}

function statusOf(api: KubeApiserver, path: string, withToken: boolean): Promise<number> {
  const { url, ...opts } = apiRequest(api, path, withToken)
  return new Promise((resolve, reject) => {
    request(url, opts, (res) => {
      res.resume()
      resolve(res.statusCode ?? 0)
    }).on('error', reject).end()
  })
}

/** A watch as a queue of its events; close() ends it. */
function watch(api: KubeApiserver, path: string): { next(what: string): Promise<WatchEvent>; close(): void } {
  const { url, ...opts } = apiRequest(api, path, true)
  const events: WatchEvent[] = []
  let failure: Error | undefined
  let buffered = ''
  const req = request(url, opts, (res) => {
    if (res.statusCode !== 200) failure = new Error(`watch ${path}: HTTP ${res.statusCode}`)
    res.on('data', (chunk: Buffer) => {
      buffered += chunk.toString()
      let nl: number
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl)
        buffered = buffered.slice(nl + 1)
        if (line.trim() !== '') events.push(JSON.parse(line) as WatchEvent)
      }
    })
  })
  req.on('error', (err) => {
    failure ??= err
  })
  req.end()
  return {
    next: (what) => waitFor(() => {
      if (failure !== undefined) throw failure
      return events.shift()
    }, { timeoutMs: 30_000, what }),
    close: () => req.destroy(),
  }
}

t.test('a real kube-apiserver: apply, read back, watch, freeze, crash and restart, stop', { skip: unavailable ?? false }, async (t) => {
  const api = await startKubeApiserver(t)
  const versions = await kubernetesVersions()

  const version = JSON.parse(await api.kubectl('version', '-o', 'json')) as { clientVersion: { gitVersion: string }; serverVersion: { gitVersion: string } }
  t.equal(version.serverVersion.gitVersion, versions.kubernetes, 'the apiserver reports the version go.mod pins')
  t.equal(version.clientVersion.gitVersion, versions.kubernetes, 'so does kubectl')
  const etcdVersion = await (await fetch(`${api.etcd.url}/version`)).json() as { etcdserver: string }
  t.equal(`v${etcdVersion.etcdserver}`, versions.etcd, 'etcd is the one go.mod pins')

  t.equal(await statusOf(api, '/api/v1/namespaces/default/configmaps', false), 403, 'RBAC refuses an anonymous client')
  t.equal(await statusOf(api, '/api/v1/namespaces/default/configmaps', true), 200, 'the admin token is accepted')

  // A ConfigMap by server-side apply, read back with its field manager.
  await api.kubectlWithInput(configMap('1'), 'apply', '--server-side', '--field-manager=pinto-test', '-f', '-')
  const first = JSON.parse(await api.kubectl('get', 'configmap', 'smoke', '-n', 'default', '-o', 'json', '--show-managed-fields')) as ConfigMapJson
  t.same(first.data, { a: '1' })
  t.ok(first.metadata.managedFields?.some((f) => f.manager === 'pinto-test' && f.operation === 'Apply'), 'applied server-side by pinto-test')

  // A CRD, established, and an object of it; its schema refuses a wrong type.
  await api.kubectlWithInput(CRD, 'apply', '--server-side', '--field-manager=pinto-test', '-f', '-')
  await api.kubectl('wait', '--for=condition=Established', 'crd/widgets.smoke.pinto.example', '--timeout=60s')
  await api.kubectlWithInput('{"apiVersion":"smoke.pinto.example/v1","kind":"Widget","metadata":{"name":"w1"},"spec":{"size":3}}',
    'apply', '--server-side', '--field-manager=pinto-test', '-f', '-')
  const widget = JSON.parse(await api.kubectl('get', 'widgets.smoke.pinto.example', 'w1', '-o', 'json')) as { spec: { size: number } }
  t.same(widget.spec, { size: 3 })
  await t.rejects(api.kubectlWithInput('{"apiVersion":"smoke.pinto.example/v1","kind":"Widget","metadata":{"name":"w2"},"spec":{"size":"big"}}',
    'apply', '--server-side', '--field-manager=pinto-test', '-f', '-'), /spec\.size/, 'the schema refuses a string size')

  // A watch from the first version replays the change made since, then sees the next one as it happens.
  await api.kubectlWithInput(configMap('2'), 'apply', '--server-side', '--field-manager=pinto-test', '-f', '-')
  const w = watch(api, `/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=${first.metadata.resourceVersion}&fieldSelector=metadata.name%3Dsmoke`)
  const replayed = await w.next('the replayed MODIFIED event')
  t.equal(replayed.type, 'MODIFIED')
  t.same(replayed.object.data, { a: '2' })
  t.ok(BigInt(replayed.object.metadata.resourceVersion) > BigInt(first.metadata.resourceVersion), 'a later resourceVersion')
  await api.kubectlWithInput(configMap('3'), 'apply', '--server-side', '--field-manager=pinto-test', '-f', '-')
  const live = await w.next('the live MODIFIED event')
  t.equal(live.type, 'MODIFIED')
  t.same(live.object.data, { a: '3' })
  w.close()

  // Frozen, it does not answer; thawed, it does.
  api.freeze()
  await t.rejects(api.kubectl('get', 'configmap', 'smoke', '--request-timeout=2s'), /kubectl get/, 'a frozen apiserver does not answer')
  api.thaw()
  t.match(await api.kubectl('get', 'configmap', 'smoke', '-o', 'jsonpath={.data.a}'), /^3$/)

  // Killed and restarted on the same etcd, port and certificates, with its data.
  const before = api.pid
  await api.crash()
  t.notOk(isAlive(before), 'the killed apiserver is gone')
  await api.restart()
  t.not(api.pid, before, 'a new process')
  t.match(await api.kubectl('get', 'configmap', 'smoke', '-o', 'jsonpath={.data.a}'), /^3$/, 'the data survived in etcd')
  t.match(await api.kubectl('get', 'widgets.smoke.pinto.example', 'w1', '-o', 'jsonpath={.spec.size}'), /^3$/)

  // Nothing left: neither process, nor the directory with the certificates, keys, kubeconfig and etcd's data.
  const pids = [api.pid, api.etcd.pid]
  await api.stop()
  await waitFor(() => pids.every((p) => !isAlive(p)), { timeoutMs: 5000, what: 'the apiserver and etcd to be gone' })
  t.notOk(existsSync(api.dir), 'its directory is removed')
  t.notOk(existsSync(api.etcd.dataDir), "etcd's data dir is removed")
})
