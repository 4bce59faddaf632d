// The kubernetes datastore's side of bench/ipam-scale.ts: a real kube-apiserver (JSON storage, an audit log
// of the bench's two client identities, pinto's CRDs and ClusterRoles), the preload of the bench's records
// written straight into the apiserver's etcd in its storage layout, and the check that they read back through
// kubectl and through pinto's kubernetes datastore. Bench-only.

import { randomUUID } from 'node:crypto'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { isDeepStrictEqual } from 'node:util'
import { fileURLToPath } from 'node:url'
import { Etcd3 } from 'etcd3'
import { type KubeApiserver, startKubeApiserver } from '../test/harness/kube-apiserver.js'
import { openKubernetesDatastore } from '../config/datastore-kubernetes.js'
import { type KeyFamily, keyFamilyOf } from '../config/kubernetes/layout.js'
import type { KubeObject } from '../config/kubernetes/objects.js'
import { nodeWithValue } from '../config/kubernetes/node-object.js'
import { KubeHttp } from '../config/kubernetes/kube-http.js'
import { affinityPrefix } from '../ipam/records.js'
import { type ScaleRecord, nodeAddress, nodeLabels, nodeName } from './ipam-scale-data.js'

const DEPLOY = fileURLToPath(new URL('../../deploy/kubernetes', import.meta.url))
const TXN_OPS = 128 // etcd's default --max-txn-ops

/** The client identities whose requests the audit log records: the one real pinto-node, and the bench's agents. */
export const NODE_USER = 'pinto-bench-node'
export const AGENTS_USER = 'pinto-bench-agents'

export interface BenchApiserver {
  readonly api: KubeApiserver
  /** Kubeconfigs of the two identities (client certificates), bound to pinto's own ClusterRoles. */
  readonly kubeconfigs: Readonly<Record<typeof NODE_USER | typeof AGENTS_USER, string>>
  /** The apiserver's audit log (Metadata level, the two identities only, one line per request stage). */
  readonly auditLog: string
  /** The admin's connection, for /metrics and the kubelets' Node status writes. */
  readonly admin: KubeHttp
  readonly port: number
}

interface Teardown {
  teardown(fn: () => unknown): void
}

const AUDIT_POLICY = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
    users: [${NODE_USER}, ${AGENTS_USER}]
  - level: None
`

/**
 * kube-apiserver over an etcd with etcd's own default limits, storing core objects as JSON (so the preload can
 * write them), auditing the two bench identities; pinto's CRDs applied, and its two ClusterRoles from
 * deploy/kubernetes bound to both identities, so the agents run with the RBAC pinto is deployed with.
 */
export async function startBenchApiserver(t: Teardown): Promise<BenchApiserver> {
  const dir = mkdtempSync(join(tmpdir(), 'pinto-bench-audit-'))
  const policy = join(dir, 'audit-policy.yaml')
  writeFileSync(policy, AUDIT_POLICY)
  const auditLog = join(dir, 'audit.log')
  const api = await startKubeApiserver(t, {
    etcdDefaults: true,
    readyTimeoutMs: 300_000,
    extraArgs: ['--storage-media-type=application/json', `--audit-policy-file=${policy}`, `--audit-log-path=${auditLog}`, '--audit-log-format=json', '--audit-log-maxsize=0'],
  })
  await api.kubectl('apply', '-k', join(DEPLOY, 'crds'))
  await api.kubectl('wait', '--for=condition=Established', '--timeout=120s', 'crd', '--all')
  await api.kubectl('apply', '-f', join(DEPLOY, 'base', 'cluster-role.yaml'), '-f', join(DEPLOY, 'kdd', 'datastore-role.yaml'))
  const port = Number(new URL(api.url).port)
  const kubeconfigs = {} as Record<typeof NODE_USER | typeof AGENTS_USER, string>
  for (const user of [NODE_USER, AGENTS_USER] as const) {
    for (const role of ['pinto-node', 'pinto-node-datastore']) await api.kubectl('create', 'clusterrolebinding', `${user}-${role}`, `--clusterrole=${role}`, `--user=${user}`)
    const cert = await api.ca.issue(user)
    const file = join(api.dir, `${user}.kubeconfig`)
    writeFileSync(file, JSON.stringify({
      apiVersion: 'v1', kind: 'Config', 'current-context': user,
      clusters: [{ name: 'bench', cluster: { server: api.url, 'certificate-authority': api.ca.cert } }],
      users: [{ name: user, user: { 'client-certificate': cert.cert, 'client-key': cert.key } }],
      contexts: [{ name: user, context: { cluster: 'bench', user } }],
    }), { mode: 0o600 })
    kubeconfigs[user] = file
  }
  const admin = await KubeHttp.connect({ kubeconfig: api.kubeconfig }, 60_000)
  t.teardown(() => admin.close())
  return { api, kubeconfigs, auditLog, admin, port }
}

const rfc3339 = (d: Date): string => d.toISOString().replace(/\.\d+Z$/, 'Z')

/** A Node as a kubelet registers it: its labels, conditions, capacity, addresses, system info and a few images. */
export function kubeletNode(i: number, now: Date): KubeObject {
  const name = nodeName(i)
  const at = rfc3339(now)
  const condition = (type: string, status: string, reason: string, message: string): Record<string, string> => ({ type, status, lastHeartbeatTime: at, lastTransitionTime: at, reason, message })
  const resources = { cpu: '8', 'ephemeral-storage': '101430960Ki', 'hugepages-1Gi': '0', 'hugepages-2Mi': '0', memory: '32827152Ki', pods: '110' }
  const images = ['registry.k8s.io/kube-proxy:v1.37.2', 'docker.io/pinto/pinto-node:v0.1.0', 'registry.k8s.io/pause:3.10', 'registry.k8s.io/coredns/coredns:v1.12.0',
    'docker.io/library/nginx:1.27', 'quay.io/prometheus/node-exporter:v1.9.0', 'docker.io/library/redis:7.4', 'registry.k8s.io/metrics-server/metrics-server:v0.7.2']
  return {
    apiVersion: 'v1', kind: 'Node',
    metadata: {
      name, uid: randomUUID(), creationTimestamp: at, labels: nodeLabels(i),
      annotations: { 'node.alpha.kubernetes.io/ttl': '0', 'volumes.kubernetes.io/controller-managed-attach-detach': 'true' },
    },
    spec: {},
    status: {
      capacity: resources, allocatable: { ...resources, cpu: '7800m', memory: '31700752Ki' },
      conditions: [
        condition('MemoryPressure', 'False', 'KubeletHasSufficientMemory', 'kubelet has sufficient memory available'),
        condition('DiskPressure', 'False', 'KubeletHasNoDiskPressure', 'kubelet has no disk pressure'),
        condition('PIDPressure', 'False', 'KubeletHasSufficientPID', 'kubelet has sufficient PID available'),
        condition('Ready', 'True', 'KubeletReady', 'kubelet is posting ready status'),
      ],
      addresses: [{ type: 'InternalIP', address: nodeAddress(i) }, { type: 'Hostname', address: name }],
      daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
      nodeInfo: {
        machineID: randomUUID().replace(/-/g, ''), systemUUID: randomUUID(), bootID: randomUUID(), kernelVersion: '6.18.0-1-amd64', osImage: 'Debian GNU/Linux 13 (trixie)',
        containerRuntimeVersion: 'containerd://2.1.4', kubeletVersion: 'v1.37.2', kubeProxyVersion: '', operatingSystem: 'linux', architecture: 'amd64',
      },
      images: images.map((n, k) => ({ names: [`${n.split(':')[0]}@sha256:${randomUUID().replace(/-/g, '')}${randomUUID().replace(/-/g, '')}`, n], sizeBytes: 10_000_000 + k * 7_340_033 })),
    },
  }
}

/** Where the apiserver keeps an object of `family` named `name` in etcd (its default --etcd-prefix /registry). */
export function storageKey(family: KeyFamily, name: string): string {
  if (family.path === '/api/v1/nodes') return `/registry/minions/${name}`
  const m = /^\/apis\/([^/]+)\/[^/]+\/([^/]+)$/.exec(family.path)
  if (m === null) throw new Error(`no storage layout known for ${family.path}`)
  return `/registry/${m[1]}/${m[2]}/${name}`
}

/**
 * The object pinto would have written for a record, as the apiserver stores it: the family's own mapping
 * (toObject; for a Node, the kubelet's Node with pinto's annotations from nodeWithValue), with the metadata
 * the apiserver adds on a create (uid, creationTimestamp, generation).
 */
export function storedObject(r: ScaleRecord, now: Date): { family: KeyFamily; storageKey: string; object: KubeObject } {
  const family = keyFamilyOf(r.key)
  let object: KubeObject
  if (family.node) {
    const name = family.objectName(r.key)
    object = nodeWithValue(r.key, r.value, kubeletNode(Number(name.slice('node-'.length)), now))
  } else {
    const o = family.toObject(r.key, r.value)
    object = { ...o, metadata: { ...o.metadata, uid: randomUUID(), creationTimestamp: rfc3339(now), generation: 1 } }
  }
  return { family, storageKey: storageKey(family, object.metadata.name), object }
}

export interface KubePreload {
  /** Objects written per collection path. */
  readonly counts: ReadonlyMap<string, number>
  /** Bytes of JSON written per collection path. */
  readonly bytes: ReadonlyMap<string, number>
  /** Every `every`-th record, kept for the read-back check. */
  readonly samples: readonly ScaleRecord[]
}

/**
 * Writes the records' objects straight into the apiserver's etcd, in transactions of 128 keys (eight in flight):
 * a create through the API per object, each a request with admission and an etcd commit of its own, would take
 * most of the bench's time at full size. The apiserver's watch cache follows etcd, so the objects are served as
 * if created through it.
 */
export async function preloadApiserver(api: KubeApiserver, records: Iterable<ScaleRecord>, sampleEvery: number): Promise<KubePreload> {
  const client = new Etcd3({ hosts: api.etcd.url })
  const counts = new Map<string, number>()
  const bytes = new Map<string, number>()
  const samples: ScaleRecord[] = []
  const batch: { key: string; value: string }[] = []
  const inFlight = new Set<Promise<unknown>>()
  const flush = async (): Promise<void> => {
    const ops = batch.splice(0).map((kv) => ({ request_put: { key: Buffer.from(kv.key), value: Buffer.from(kv.value) } }))
    const p = client.kv.txn({ success: ops })
    inFlight.add(p)
    void p.finally(() => inFlight.delete(p))
    if (inFlight.size >= 8) await Promise.race(inFlight)
  }
  const now = new Date()
  let i = 0
  try {
    for (const r of records) {
      const { family, storageKey: key, object } = storedObject(r, now)
      const json = JSON.stringify(object)
      counts.set(family.path, (counts.get(family.path) ?? 0) + 1)
      bytes.set(family.path, (bytes.get(family.path) ?? 0) + json.length)
      if (i++ % sampleEvery === 0 || family.path.endsWith('/ippools')) samples.push(r)
      batch.push({ key, value: json })
      if (batch.length >= TXN_OPS) await flush()
    }
    if (batch.length > 0) await flush()
    await Promise.all(inFlight)
  } finally {
    client.close()
  }
  return { counts, bytes, samples }
}

/**
 * Checks the preload as a user and as pinto see it: each collection's size through kubectl (a list of one
 * object and its remainingItemCount), one Node through kubectl, and the sampled records through pinto's
 * kubernetes datastore (get, and one node's affinities by list), each equal to the record written.
 * Returns one line per check; throws on a mismatch.
 */
export async function checkPreload(b: BenchApiserver, preload: KubePreload): Promise<string[]> {
  const lines: string[] = []
  const sizes: string[] = []
  for (const [path, expected] of preload.counts) {
    const page = JSON.parse(await b.api.kubectl('get', '--raw', `${path}?limit=1`)) as { items: unknown[]; metadata: { remainingItemCount?: number } }
    const seen = page.items.length + (page.metadata.remainingItemCount ?? 0)
    if (seen !== expected) throw new Error(`preload check: kubectl get --raw ${path} counts ${seen} objects, ${expected} were written`)
    sizes.push(`${path.slice(path.lastIndexOf('/') + 1)} ${seen}`)
  }
  lines.push(`kubectl counts every object written: ${sizes.join(', ')}`)
  const node = JSON.parse(await b.api.kubectl('get', 'node', nodeName(0), '-o', 'json')) as KubeObject
  const v4 = node.metadata.annotations?.['projectcalico.org/IPv4Address']
  if (v4 !== `${nodeAddress(0)}/24`) throw new Error(`preload check: kubectl get node ${nodeName(0)}: projectcalico.org/IPv4Address is ${v4}`)
  lines.push(`kubectl get node ${nodeName(0)}: projectcalico.org/IPv4Address ${v4}, ${Object.keys(node.metadata.labels ?? {}).length} labels, status of ${JSON.stringify(node.status).length} bytes`)
  const store = await openKubernetesDatastore({ kubeconfig: b.api.kubeconfig })
  try {
    for (const r of preload.samples) {
      const kv = await store.get(r.key)
      if (kv === undefined) throw new Error(`preload check: pinto's kubernetes datastore has no ${r.key}`)
      const want = JSON.parse(r.value) as Record<string, unknown>
      const got = JSON.parse(kv.value) as Record<string, unknown>
      // A Node reads as its projection of the core Node, which adds the Node's addresses and orchRefs.
      const same = keyFamilyOf(r.key).node ? isDeepStrictEqual((got.spec as { bgp?: unknown }).bgp, (want.spec as { bgp?: unknown }).bgp) && isDeepStrictEqual((got.metadata as { labels?: unknown }).labels, (want.metadata as { labels?: unknown }).labels) : isDeepStrictEqual(got, want)
      if (!same) throw new Error(`preload check: ${r.key} reads back through pinto as ${kv.value.slice(0, 300)}, written ${r.value.slice(0, 300)}`)
    }
    const affs = await store.list(affinityPrefix(nodeName(0)))
    lines.push(`pinto's kubernetes datastore reads ${preload.samples.length} sampled records back equal to what was written; ${nodeName(0)} lists ${affs.items.length} affinities`)
  } finally {
    await store.close()
  }
  return lines
}
