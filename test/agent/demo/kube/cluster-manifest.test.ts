// clusterManifest: the shipped manifest with a demo cluster's choices, each of which must reach the objects.
import t from 'tap'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { clusterManifest, MANIFESTS, POD_CIDR } from '../../../../agent/demo/kube/cluster.js'
import { findObject } from '../../../../agent/demo/kube-manifest.js'

interface Ds { spec: { template: { spec: { nodeSelector: Record<string, string>; initContainers: { image: string }[]; containers: { name: string; image: string; env: { name: string; value?: string }[] }[] } } } }

t.test('image, pool, agent env and node selector reach the DaemonSet and ConfigMap', async (t) => {
  const docs = await clusterManifest(MANIFESTS.kubernetes, 'localhost/x:1', { PINTO_POD_GC_GRACE_SECONDS: '3' }, { pool: 'a' })
  const ds = findObject(docs, 'DaemonSet', 'pinto-node') as unknown as Ds
  const pod = ds.spec.template.spec
  t.same([...pod.initContainers, ...pod.containers].map((c) => c.image), [...pod.initContainers, ...pod.containers].map(() => 'localhost/x:1'), 'every container runs the image')
  t.match(pod.nodeSelector, { pool: 'a', 'kubernetes.io/os': 'linux' }, 'the selector joins the shipped one')
  t.ok(pod.containers.find((c) => c.name === 'pinto-node')!.env.some((e) => e.name === 'PINTO_POD_GC_GRACE_SECONDS' && e.value === '3'), 'the agent gets the env')
  t.equal((findObject(docs, 'ConfigMap', 'pinto-config') as { data: Record<string, string> }).data['ipv4pool_cidr'], POD_CIDR)
})

t.test('etcd: the endpoints and TLS files fill pinto-config and pinto-etcd-secrets', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pinto-etcd-tls-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  for (const f of ['ca', 'cert', 'key']) writeFileSync(join(dir, f), `${f}-pem`)
  const docs = await clusterManifest(MANIFESTS.etcd, 'localhost/x:1', {}, {}, { endpoints: 'https://192.0.2.2:2379', tls: { ca: join(dir, 'ca'), cert: join(dir, 'cert'), key: join(dir, 'key') } })
  const config = (findObject(docs, 'ConfigMap', 'pinto-config') as { data: Record<string, string> }).data
  t.match(config, { datastore: 'https://192.0.2.2:2379', etcd_ca: '/etc/pinto/etcd-secrets/etcd-ca', etcd_cert: '/etc/pinto/etcd-secrets/etcd-cert', etcd_key: '/etc/pinto/etcd-secrets/etcd-key' })
  const secret = (findObject(docs, 'Secret', 'pinto-etcd-secrets') as { data: Record<string, string> }).data
  t.equal(Buffer.from(secret['etcd-key']!, 'base64').toString(), 'key-pem', 'the key file\'s contents in the Secret')
})
