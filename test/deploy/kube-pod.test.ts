// The DaemonSet-to-Pod conversion, on the real manifests: env resolved as the kubelet would, host paths
// under the node's root, the Secret as files, the image swapped on request; the Pod passes the 1.36
// schema; whatever it cannot resolve is an error naming the field.
import t from 'tap'
import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseManifest, validateObject, type KubeObject } from './kube-schema.js'
import { podForNode, PodConversionError } from '../../agent/demo/kube-pod.js'

const DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'deploy', 'kubernetes')
const docs = parseManifest(readFileSync(join(DIR, 'pinto.yaml'), 'utf8'), 'pinto.yaml')
const daemonSet = docs.find((d) => d.kind === 'DaemonSet')!
type Loose = any

function env(c: Loose): Record<string, string> {
  return Object.fromEntries(c.env.map((e: Loose) => [e.name, e.value]))
}

t.test('the pod template on one node', async (t) => {
  const before = JSON.stringify(daemonSet)
  const { pod, files } = podForNode({ daemonSet, documents: docs, nodeName: 'node-a', hostRoot: '/tmp/n1', hostPathOverrides: { '/var/run/netns': '/run/netns' } })
  t.equal(JSON.stringify(daemonSet), before, 'the DaemonSet is left as it was')
  t.same(validateObject(pod), [], 'the Pod passes the schema')
  const p = pod as Loose
  t.match(p.metadata, { name: 'pinto-node-node-a', namespace: 'kube-system', labels: { 'k8s-app': 'pinto-node' } })
  t.equal(p.spec.nodeName, 'node-a')
  t.match(p.spec, { hostNetwork: true, hostPID: true })
  const node = env(p.spec.containers[0])
  t.match(node, { PINTO_NODENAME: 'node-a', PINTO_IP: 'autodetect', PINTO_DATASTORE: 'https://<ETCD_IP>:2379', PINTO_ETCD_CA_CERT_FILE: '', PINTO_IPV4POOL_CIDR: '192.168.0.0/16', PINTO_IPV4POOL_IPIP: 'Never', PINTO_LOG_LEVEL: 'info', PINTO_API_LISTEN: '127.0.0.1:9099' })
  t.ok(p.spec.containers[0].env.every((e: Loose) => e.valueFrom === undefined && typeof e.value === 'string'), 'every variable is a plain value')
  t.same(env(p.spec.initContainers[0]), { PINTO_CNI_MTU: '0' })
  const paths = Object.fromEntries(p.spec.volumes.map((v: Loose) => [v.name, v.hostPath.path]))
  t.same(paths, {
    'cni-bin-dir': '/tmp/n1/opt/cni/bin',
    'cni-net-dir': '/tmp/n1/etc/cni/net.d',
    'var-run-pinto': '/tmp/n1/var/run/pinto',
    'var-lib-pinto': '/tmp/n1/var/lib/pinto',
    'var-run-netns': '/run/netns',
    'etcd-certs': '/tmp/n1/var/lib/kubelet/pods/pinto-node-node-a/volumes/kubernetes.io~secret/etcd-certs',
    'bgp-secrets': '/tmp/n1/var/lib/kubelet/pods/pinto-node-node-a/volumes/kubernetes.io~secret/bgp-secrets',
    'fanout-token': '/tmp/n1/var/lib/kubelet/pods/pinto-node-node-a/volumes/kubernetes.io~secret/fanout-token',
  })
  t.equal(p.spec.volumes.find((v: Loose) => v.name === 'cni-bin-dir').hostPath.type, 'DirectoryOrCreate', 'the hostPath type is kept')
  t.same(files.map((f) => [f.path.split('/').pop(), f.content.length, f.mode]), [['etcd-ca', 0, 0o400], ['etcd-cert', 0, 0o400], ['etcd-key', 0, 0o400]])
  t.same([p.spec.initContainers[0].image, p.spec.containers[0].image], ['localhost/pinto-node:0.1.0', 'localhost/pinto-node:0.1.0'])
  const updated = podForNode({ daemonSet, documents: docs, nodeName: 'node-a', hostRoot: '/tmp/n1', image: 'localhost/pinto-node:test' }).pod as Loose
  t.equal(p.spec.restartPolicy, undefined, 'the template\'s restartPolicy unless asked (Always by default)')
  t.equal((podForNode({ daemonSet, documents: docs, nodeName: 'node-a', hostRoot: '/tmp/n1', restartPolicy: 'OnFailure' }).pod as Loose).spec.restartPolicy, 'OnFailure')
  t.same([updated.spec.initContainers[0].image, updated.spec.containers[0].image], ['localhost/pinto-node:test', 'localhost/pinto-node:test'], 'image replaced in every container')
})

t.test('ConfigMap and Secret values as set, Secret decoded', async (t) => {
  const config = structuredClone(docs.find((d) => d.kind === 'ConfigMap')!) as Loose
  config.data.datastore = 'etcd://192.0.2.1:2379'
  const secret = structuredClone(docs.find((d) => d.kind === 'Secret')!) as Loose
  secret.data['etcd-ca'] = Buffer.from('-----BEGIN CERTIFICATE-----\n').toString('base64')
  const ds = structuredClone(daemonSet) as Loose
  ds.spec.template.spec.containers[0].env.push({ name: 'FROM_SECRET', valueFrom: { secretKeyRef: { name: 'pinto-etcd-secrets', key: 'etcd-ca' } } })
  const { pod, files } = podForNode({ daemonSet: ds, documents: [config, secret], nodeName: 'n', hostRoot: '/r' })
  const e = env((pod as Loose).spec.containers[0])
  t.equal(e.PINTO_DATASTORE, 'etcd://192.0.2.1:2379')
  t.equal(e.FROM_SECRET, '-----BEGIN CERTIFICATE-----\n')
  t.equal(files.find((f) => f.path.endsWith('/etcd-ca'))!.content.toString(), '-----BEGIN CERTIFICATE-----\n')
})

t.test('what it cannot resolve is an error naming the field', async (t) => {
  const base = { documents: docs, nodeName: 'n', hostRoot: '/r' }
  const broken = (mutate: (d: Loose) => void): KubeObject => {
    const d = structuredClone(daemonSet) as Loose
    mutate(d)
    return d
  }
  const config = docs.find((d) => d.kind === 'ConfigMap')!
  t.throws(() => podForNode({ ...base, documents: docs.filter((d) => d !== config), daemonSet }), new PodConversionError('spec.template.spec.initContainers[0].env[0].valueFrom.configMapKeyRef', 'no ConfigMap pinto-config in kube-system'))
  t.throws(
    () => podForNode({ ...base, daemonSet: broken((d) => (d.spec.template.spec.containers[0].env[2].valueFrom.configMapKeyRef.key = 'etcd_endpoint')) }),
    new PodConversionError('spec.template.spec.containers[0].env[2].valueFrom.configMapKeyRef', 'ConfigMap pinto-config has no key "etcd_endpoint"'),
  )
  const optional = podForNode({ ...base, daemonSet: broken((d) => (d.spec.template.spec.containers[0].env[2].valueFrom.configMapKeyRef = { name: 'pinto-config', key: 'nope', optional: true })) })
  t.equal(env((optional.pod as Loose).spec.containers[0]).PINTO_DATASTORE, '', 'an optional key that is missing is empty')
  t.throws(() => podForNode({ ...base, daemonSet: broken((d) => (d.spec.template.spec.containers[0].env[0].valueFrom.fieldRef.fieldPath = 'status.hostIP')) }), /containers\[0\]\.env\[0\]\.valueFrom\.fieldRef\.fieldPath: "status.hostIP" is not resolved here/)
  t.throws(() => podForNode({ ...base, daemonSet: broken((d) => (d.spec.template.spec.containers[0].envFrom = [{ configMapRef: { name: 'pinto-config' } }])) }), /containers\[0\]\.envFrom: not resolved here/)
  t.throws(() => podForNode({ ...base, daemonSet: broken((d) => d.spec.template.spec.volumes.push({ name: 'scratch', emptyDir: {} })) }), /volumes\[8\]: volume scratch: only hostPath and secret volumes are converted/)
  t.throws(() => podForNode({ ...base, daemonSet: broken((d) => (d.spec.template.spec.containers[0].env[1] = { name: 'PINTO_IP', value: '$(NODE_IP)' })) }), /env\[1\]\.value: \$\(VAR\) references are not expanded here/)
  t.throws(() => podForNode({ ...base, hostRoot: 'rel/dir', daemonSet }), /hostRoot: "rel\/dir" is not an absolute path/)
  t.throws(() => podForNode({ ...base, daemonSet: docs[0]! }), /kind: v1\/ServiceAccount is not an apps\/v1 DaemonSet/)
  const badSecret = structuredClone(docs.find((d) => d.kind === 'Secret')!) as Loose
  badSecret.data['etcd-key'] = 'not base64!'
  t.throws(() => podForNode({ ...base, documents: [config, badSecret], daemonSet }), /Secret pinto-etcd-secrets data.etcd-key: not a base64 string/)
})
