// The Kubernetes manifests under deploy/kubernetes (the etcd variant, kdd/ the kubernetes-datastore one, base/ what
// they share, crds/): every document passes Kubernetes 1.36's schema with strict field validation, offline; broken
// copies are refused naming the field; each pinto.yaml is what its kustomization renders; and the DaemonSet keeps
// the contracts the image and pinto-node rely on in both variants.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseManifest, validateObject, type KubeObject } from './kube-schema.js'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..')
const DIR = join(ROOT, 'deploy', 'kubernetes')
const RENDER = join(ROOT, 'scripts', 'render-manifests.js')
/** Each variant's parts, as its kustomization names them (directories expanded). */
const PARTS = ['base/service-account.yaml', 'base/cluster-role.yaml', 'base/daemon-set.yaml', 'config-map.yaml', 'secret.yaml']
const KDD_PARTS = [
  ...readdirSync(join(DIR, 'crds')).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml').map((f) => `crds/${f}`),
  'base/service-account.yaml',
  'base/cluster-role.yaml',
  'base/daemon-set.yaml',
  'kdd/datastore-role.yaml',
  'kdd/config-map.yaml',
]

function load(file: string): KubeObject[] {
  return parseManifest(readFileSync(join(DIR, file), 'utf8'), file)
}
function one(file: string): KubeObject {
  const docs = load(file)
  if (docs.length !== 1) throw new Error(`${file}: ${docs.length} documents, expected 1`)
  return docs[0]!
}
function clone<T>(v: T): T {
  return structuredClone(v)
}
// Reaching into parsed YAML in a test: the schema check above is what vouches for the shape.
type Loose = any

t.test('every document of every manifest passes the schema with strict field validation', async (t) => {
  const files = ['', 'base', 'kdd', 'crds'].flatMap((d) => readdirSync(join(DIR, d)).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml').map((f) => join(d, f)))
  t.same(files.sort(), [...new Set([...PARTS, ...KDD_PARTS, 'pinto.yaml', 'kdd/pinto.yaml'])].sort(), 'the manifest files')
  for (const file of files) {
    const docs = load(file)
    t.ok(docs.length > 0, `${file} has documents`)
    // The CRDs are Calico's own schemas; the apiserver checks them strictly as manifests-apiserver.test applies them.
    if (file.startsWith('crds/')) continue
    for (const doc of docs.filter((d) => d.kind !== 'CustomResourceDefinition')) t.same(validateObject(doc), [], `${file}: ${String(doc.kind)} ${String((doc.metadata as Loose)?.name)}`)
  }
})

t.test('broken objects are refused, naming the field', async (t) => {
  const ds = one('base/daemon-set.yaml')
  const cases: Array<[string, (d: Loose) => void, { path: string; message: RegExp }]> = [
    ['a misspelled pod field', (d) => (d.spec.template.spec.hostNetwrk = true), { path: 'spec.template.spec.hostNetwrk', message: /unknown field "spec.template.spec.hostNetwrk"/ }],
    ['a misspelled container field', (d) => (d.spec.template.spec.initContainers[0].imge = 'x'), { path: 'spec.template.spec.initContainers[0].imge', message: /unknown field/ }],
    ['a misspelled field under a probe', (d) => (d.spec.template.spec.containers[0].livenessProbe.httpGet.hots = '127.0.0.1'), { path: 'spec.template.spec.containers[0].livenessProbe.httpGet.hots', message: /unknown field/ }],
    ['a misspelled top-level field', (d) => (d.sepc = {}), { path: 'sepc', message: /unknown field "sepc"/ }],
    ['a string for an integer', (d) => (d.spec.template.spec.terminationGracePeriodSeconds = '30'), { path: 'spec.template.spec.terminationGracePeriodSeconds', message: /must be of type integer/ }],
    ['a number for a boolean', (d) => (d.spec.template.spec.hostPID = 1), { path: 'spec.template.spec.hostPID', message: /must be of type boolean/ }],
    ['a value outside an enum', (d) => (d.spec.template.spec.containers[0].volumeMounts[2].mountPropagation = 'Both'), { path: 'spec.template.spec.containers[0].volumeMounts[2].mountPropagation', message: /Unsupported value: must be one of .*"HostToContainer"/ }],
    ['a missing required field', (d) => delete d.spec.selector, { path: 'spec.selector', message: /Required value/ }],
    ['a container without a name', (d) => delete d.spec.template.spec.containers[0].name, { path: 'spec.template.spec.containers[0].name', message: /Required value/ }],
  ]
  for (const [what, mutate, want] of cases) {
    const broken = clone(ds)
    mutate(broken)
    const problems = validateObject(broken)
    const hit = problems.find((p) => p.path === want.path)
    t.ok(hit && want.message.test(hit.message), `${what}: ${JSON.stringify(problems)}`)
  }
  const twoWrong = clone(ds) as Loose
  twoWrong.spec.template.spec.hostNetwrk = true
  twoWrong.spec.template.spec.containers[0].imge = 'x'
  twoWrong.spec.template.spec.priority = 'high'
  t.same(validateObject(twoWrong).map((p) => p.path).sort(), ['spec.template.spec.containers[0].imge', 'spec.template.spec.hostNetwrk', 'spec.template.spec.priority'], 'every problem is reported, not only the first')

  const cm = clone(one('config-map.yaml')) as Loose
  cm.data.veth_mtu = 1440
  t.same(validateObject(cm), [{ path: 'data.veth_mtu', message: 'must be of type string' }], 'an unquoted number in a ConfigMap')
  const secret = clone(one('secret.yaml')) as Loose
  secret.stringdata = { 'etcd-ca': 'x' }
  t.same(validateObject(secret), [{ path: 'stringdata', message: 'unknown field "stringdata"' }], 'stringData misspelled')
  t.match(validateObject({ ...ds, apiVersion: 'extensions/v1beta1' }), [{ path: 'kind', message: /extensions\/v1beta1\/DaemonSet is not a kind/ }])
  t.throws(() => parseManifest('a: 1\na: 2\n', 'dup.yaml'), /dup.yaml: Map keys must be unique/, 'a key twice')
})

t.test('YAML is read as kubectl reads it', async (t) => {
  const ds = one('base/daemon-set.yaml') as Loose
  const certs = ds.spec.template.spec.volumes.find((v: Loose) => v.name === 'etcd-certs')
  t.equal(certs.secret.defaultMode, 0o400, 'defaultMode 0400 is octal')
  t.same(parseManifest('a: yes\nb: 0400\n', 'x.yaml'), [{ a: true, b: 256 }])
})

/** Objects in kustomize's legacy order: by kind's rank, then kind, group, version, namespace, name. */
const kindOrder = ['CustomResourceDefinition', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding', 'ConfigMap', 'Secret', 'DaemonSet']
function sorted(docs: KubeObject[]): KubeObject[] {
  const key = (d: Loose): string => `${String(kindOrder.indexOf(d.kind)).padStart(2, '0')} ${d.apiVersion} ${d.metadata.name}`
  return [...docs].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0))
}

t.test('each pinto.yaml is what its kustomization renders', async (t) => {
  const check = spawnSync(process.execPath, [RENDER, '--check'], { encoding: 'utf8' })
  t.equal(check.status, 0, `render --check: ${check.stderr}`)
  t.same(load('pinto.yaml'), sorted(PARTS.flatMap(load)), 'etcd: the parts\' objects, in kustomize\'s order (the tag in base/kustomization.yaml equals the parts\')')
  t.same(load('kdd/pinto.yaml'), sorted(KDD_PARTS.flatMap(load)), 'kdd: the same')

  const dir = mkdtempSync(join(tmpdir(), 'pinto-manifests-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  cpSync(DIR, dir, { recursive: true })
  const k = join(dir, 'base', 'kustomization.yaml')
  writeFileSync(k, readFileSync(k, 'utf8').replace('newTag: "0.1.0"', 'newTag: "0.1.1"'))
  const stale = spawnSync(process.execPath, [RENDER, '--check', '--dir', dir], { encoding: 'utf8' })
  t.equal(stale.status, 1, 'a changed tag leaves pinto.yaml stale')
  t.match(stale.stderr, /pinto\.yaml is not what kustomization\.yaml renders to/)
  const rendered = spawnSync(process.execPath, [RENDER, '--dir', dir], { encoding: 'utf8' })
  t.equal(rendered.status, 0, rendered.stderr)
  for (const variant of ['pinto.yaml', 'kdd/pinto.yaml']) {
    const images = parseManifest(readFileSync(join(dir, variant), 'utf8'), variant).flatMap((d: Loose) =>
      d.kind === 'DaemonSet' ? [...d.spec.template.spec.initContainers, ...d.spec.template.spec.containers].map((c: Loose) => c.image) : [],
    )
    t.same(images, ['localhost/pinto-node:0.1.1', 'localhost/pinto-node:0.1.1'], `${variant}: newTag reaches every container`)
  }

  writeFileSync(k, `${readFileSync(k, 'utf8')}namePrefix: test-\n`)
  const unknown = spawnSync(process.execPath, [RENDER, '--check', '--dir', dir], { encoding: 'utf8' })
  t.equal(unknown.status, 1)
  t.match(unknown.stderr, /field namePrefix is not one this renderer applies/)
})

t.test('the DaemonSet keeps its contracts', async (t) => {
  const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version
  const ds = one('base/daemon-set.yaml') as Loose
  const cm = one('config-map.yaml') as Loose
  const kddCm = one('kdd/config-map.yaml') as Loose
  const secret = one('secret.yaml') as Loose
  const sa = one('base/service-account.yaml') as Loose
  const pod = ds.spec.template.spec
  t.match(ds.metadata, { name: 'pinto-node', namespace: 'kube-system' })
  t.same(ds.spec.updateStrategy, { type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1 } })
  t.match(pod, { hostNetwork: true, hostPID: true, priorityClassName: 'system-node-critical', serviceAccountName: 'pinto-node', dnsPolicy: 'Default' })
  t.ok(pod.terminationGracePeriodSeconds > 0, 'SIGTERM gets time for the graceful stop')
  t.same(pod.tolerations, [{ effect: 'NoSchedule', operator: 'Exists' }, { key: 'CriticalAddonsOnly', operator: 'Exists' }, { effect: 'NoExecute', operator: 'Exists' }])
  const [install] = pod.initContainers
  const [node] = pod.containers
  for (const c of [install, node]) {
    t.equal(c.image, `localhost/pinto-node:${version}`, `${c.name}: the tag is package.json's version`)
    t.equal(c.securityContext?.privileged, true, `${c.name} is privileged`)
  }
  t.same(install.command, ['pintoctl', 'install-cni', '--bin-dir', '/host/opt/cni/bin', '--conf-dir', '/host/etc/cni/net.d'])
  t.equal(node.command, undefined, 'pinto-node is the image\'s entrypoint')

  const env = Object.fromEntries(node.env.map((e: Loose) => [e.name, e]))
  t.same(env.PINTO_NODENAME.valueFrom, { fieldRef: { fieldPath: 'spec.nodeName' } })
  for (const name of ['PINTO_IP', 'PINTO_DATASTORE', 'PINTO_ETCD_CA_CERT_FILE', 'PINTO_ETCD_CERT_FILE', 'PINTO_ETCD_KEY_FILE', 'PINTO_IPV4POOL_CIDR', 'PINTO_IPV4POOL_IPIP', 'PINTO_IPV4POOL_VXLAN', 'PINTO_IPV4POOL_NAT_OUTGOING', 'PINTO_LOG_LEVEL', 'PINTO_API_LISTEN', 'PINTO_RESTART_TIME', 'PINTO_STATE_DIR']) {
    t.ok(env[name], `${name} is set`)
  }
  for (const c of [install, node]) {
    for (const e of c.env) {
      const ref = e.valueFrom?.configMapKeyRef
      if (!ref) continue
      t.equal(ref.name, 'pinto-config', `${e.name} reads pinto-config`)
      t.type(cm.data[ref.key], 'string', `${e.name}: pinto-config has ${ref.key}`)
      if (ref.optional !== true) t.type(kddCm.data[ref.key], 'string', `${e.name}: kdd's pinto-config has ${ref.key}`)
      // Optional: etcd's settings, which kdd's pinto-config leaves out, and the fan-out's, which both carry (a
      // pinto-config from before them still serves).
      else if (ref.key.startsWith('fanout_')) t.type(kddCm.data[ref.key], 'string', `${e.name}: both pinto-configs have ${ref.key}`)
      else t.equal(kddCm.data[ref.key], undefined, `${e.name}: an etcd setting kdd's pinto-config leaves out`)
    }
    const volumes = new Set(pod.volumes.map((v: Loose) => v.name))
    for (const m of c.volumeMounts) t.ok(volumes.has(m.name), `${c.name} mounts ${m.name}, a volume of the pod`)
  }

  const listen = env.PINTO_API_LISTEN.value as string
  for (const [probe, path] of [['livenessProbe', '/livez'], ['readinessProbe', '/readyz']] as const) {
    t.same(node[probe].httpGet, { host: '127.0.0.1', path, port: Number(listen.split(':')[1]) }, `${probe} on the API's listener`)
    t.equal(listen.split(':')[0], '127.0.0.1')
  }
  const hostPaths = Object.fromEntries(pod.volumes.filter((v: Loose) => v.hostPath).map((v: Loose) => [v.name, v.hostPath.path]))
  t.same(hostPaths, { 'cni-bin-dir': '/opt/cni/bin', 'cni-net-dir': '/etc/cni/net.d', 'var-run-pinto': '/var/run/pinto', 'var-lib-pinto': '/var/lib/pinto', 'var-run-netns': '/var/run/netns' })
  t.equal(node.volumeMounts.find((m: Loose) => m.name === 'var-run-netns').mountPropagation, 'HostToContainer')
  const certs = node.volumeMounts.find((m: Loose) => m.name === 'etcd-certs')
  t.match(certs, { mountPath: '/etc/pinto/etcd-secrets', readOnly: true })
  t.same(Object.keys(secret.data).sort(), ['etcd-ca', 'etcd-cert', 'etcd-key'])
  for (const [key, file] of [['etcd_ca', 'etcd-ca'], ['etcd_cert', 'etcd-cert'], ['etcd_key', 'etcd-key']] as const) {
    t.equal(cm.data[key], '', `${key} is empty by default (no TLS files)`)
    t.match(readFileSync(join(DIR, 'config-map.yaml'), 'utf8'), `${key}: "${certs.mountPath}/${file}"`, `${key}'s commented value names the mounted ${file}`)
  }
  t.equal(kddCm.data.datastore, 'kubernetes', "kdd's datastore is the Kubernetes API")
  t.match(cm.data.datastore, /^https:\/\//, "the etcd variant's is etcd")
  t.equal(pod.volumes.find((v: Loose) => v.name === 'etcd-certs').secret.optional, true, 'the etcd Secret is optional: kdd has none')
  t.not(sa.automountServiceAccountToken, false, 'the API token is mounted: pinto-node reads Nodes, pods and Services')
  t.not(pod.automountServiceAccountToken, false)
  for (const [file, role] of [['base/cluster-role.yaml', 'pinto-node'], ['kdd/datastore-role.yaml', 'pinto-node-datastore']] as const) {
    const binding = load(file).find((d: Loose) => d.kind === 'ClusterRoleBinding') as Loose
    t.same(binding.roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role }, `${file}: binds ${role}`)
    t.same(binding.subjects, [{ kind: 'ServiceAccount', name: sa.metadata.name, namespace: sa.metadata.namespace }], `${file}: to the pod's ServiceAccount`)
  }
})
