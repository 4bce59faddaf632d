// Opens a real datastore for IPAM tests (the embedded one in a temp dir, etcd or a kube-apiserver from the
// harness) and closes and removes it at teardown, even when the test fails.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type Datastore, type NodeBlocks, type WatchEvent, DatastoreError } from '../../config/datastore.js'
import { openEmbeddedDatastore } from '../../config/datastore-embedded.js'

export type Backend = 'embedded' | 'etcd' | 'kubernetes'

interface Teardown {
  teardown(fn: () => void | Promise<void>): void
}

const CRDS = fileURLToPath(new URL('../../../deploy/kubernetes/crds', import.meta.url))

/**
 * A kube-apiserver (stopped at teardown) with pinto's CRDs applied, for PINTO_DATASTORE=kubernetes with `env`;
 * or why it cannot run here. `root` is the file's tap object: a first build of the binaries lifts its timeout.
 */
export async function kubernetesApi(root: Teardown & { setTimeout(ms: number): void }): Promise<{ api: import('../harness/kube-apiserver.js').KubeApiserver; env: Record<string, string>; crds: string } | { skip: string }> {
  const { kubernetesBin, kubernetesUnavailable } = await import('../harness/kubernetes-bin.js')
  const { KUBE_APISERVER_BINARIES, startKubeApiserver } = await import('../harness/kube-apiserver.js')
  const unavailable = await kubernetesUnavailable()
  if (unavailable !== undefined) return { skip: unavailable }
  await kubernetesBin(KUBE_APISERVER_BINARIES, root)
  const api = await startKubeApiserver(root)
  await api.kubectl('apply', '-k', CRDS)
  await api.kubectl('wait', '--for=condition=Established', '--timeout=60s', 'crd', '--all')
  return { api, env: { KUBECONFIG: api.kubeconfig }, crds: CRDS }
}

/** kubernetesApi(), and the kubernetes datastore opened on it (closed at teardown); or why it cannot run here. */
export async function kubernetesStore(root: Teardown & { setTimeout(ms: number): void }): Promise<{ api: import('../harness/kube-apiserver.js').KubeApiserver; store: Datastore } | { skip: string }> {
  const k8s = await kubernetesApi(root)
  if ('skip' in k8s) return k8s
  const { openDatastore } = await import('../../config/datastore-open.js')
  const store = await openDatastore('kubernetes', { kubeEnv: k8s.env })
  root.teardown(() => store.close())
  return { api: k8s.api, store }
}

/** A fresh empty embedded store in its own directory; also returns the directory for child processes. */
export async function embeddedStore(t: Teardown): Promise<{ store: Datastore; spec: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'pinto-ipam-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const store = await openEmbeddedDatastore(dir)
  t.teardown(() => store.close())
  return { store, spec: dir }
}

/** `store` with every watch's events passed through `relay` (which hands each on with `deliver`, now or later). */
export function relayWatches(store: Datastore, relay: (e: WatchEvent, deliver: () => void) => void): Datastore {
  return {
    transactions: store.transactions,
    get: (key) => store.get(key),
    list: (prefix) => store.list(prefix),
    create: (key, value) => store.create(key, value),
    update: (key, value, revision) => store.update(key, value, revision),
    delete: (key, revision) => store.delete(key, revision),
    txn: (ops) => store.txn(ops),
    close: () => store.close(),
    watch: (prefix, from, onEvent, onError) => store.watch(prefix, from, (e) => relay(e, () => onEvent(e)), onError),
    ...(store.nodeBlocks !== undefined ? { nodeBlocks: relayNodeBlocks(store.nodeBlocks, relay) } : {}),
  }
}

function relayNodeBlocks(inner: NodeBlocks, relay: (e: WatchEvent, deliver: () => void) => void): NodeBlocks {
  return {
    list: (node) => inner.list(node),
    watch: (node, from, onEvent, onError) => inner.watch(node, from, (e) => relay(e, () => onEvent(e)), onError),
  }
}

/** `store` as the kubernetes datastore takes a txn: one write and no check, anything more refused as 'invalid'. */
export function withoutTransactions(store: Datastore): Datastore {
  return {
    transactions: false,
    get: (key) => store.get(key),
    list: (prefix) => store.list(prefix),
    create: (key, value) => store.create(key, value),
    update: (key, value, revision) => store.update(key, value, revision),
    delete: (key, revision) => store.delete(key, revision),
    txn: async (ops) => {
      if (ops.length !== 1 || ops[0]?.op === 'check') throw new DatastoreError('invalid', `txn of ${ops.length} ops on a store without transactions`, ops[0]?.key)
      return store.txn(ops)
    },
    close: () => store.close(),
    watch: (prefix, from, onEvent, onError) => store.watch(prefix, from, onEvent, onError),
  }
}
