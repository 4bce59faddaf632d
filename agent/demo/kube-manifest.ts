// Kubernetes manifests as pinto's own tools read them: YAML 1.1 documents as kubectl reads them, and
// deploy/kubernetes/pinto.yaml from the checkout. It parses only; checking against the API schema is the
// tests' (test/deploy/kube-schema.ts), converting a DaemonSet to a node's Pod is kube-pod.ts's.
import { readFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseAllDocuments } from 'yaml'

export type KubeObject = Record<string, unknown>

/** deploy/kubernetes/pinto.yaml in this checkout: every object `kubectl apply -f` would create. */
export const MANIFEST = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'deploy', 'kubernetes', 'pinto.yaml')

/**
 * The documents of a manifest, read as kubectl reads YAML (1.1: `0400` is octal, `yes` is true; a key
 * twice in one mapping is an error). Empty documents are dropped, as kubectl drops them.
 */
export function parseManifest(text: string, file: string): KubeObject[] {
  const out: KubeObject[] = []
  for (const doc of parseAllDocuments(text, { version: '1.1' })) {
    const err = doc.errors[0]
    if (err) throw new Error(`${file}: ${err.message}`)
    const value: unknown = doc.toJS()
    if (value === null || value === undefined) continue
    if (typeof value !== 'object' || Array.isArray(value)) throw new Error(`${file}: a document is not a mapping`)
    out.push(value as KubeObject)
  }
  return out
}

export function readManifest(file: string = MANIFEST): KubeObject[] {
  return parseManifest(readFileSync(file, 'utf8'), file)
}

/** The one object of `kind` (and `name`, when given); an error naming what is missing or doubled. */
export function findObject(docs: readonly KubeObject[], kind: string, name?: string): KubeObject {
  const hits = docs.filter((d) => d.kind === kind && (name === undefined || (typeof d.metadata === 'object' && d.metadata !== null && (d.metadata as { name?: unknown }).name === name)))
  if (hits.length !== 1) throw new Error(`the manifest has ${hits.length} ${kind}${name !== undefined ? ` ${name}` : ''} objects, expected 1`)
  return hits[0]!
}

/** etcd as the datastore: its client URLs and, with TLS, the client's CA, certificate and key files. */
export interface EtcdValues {
  readonly endpoints: string
  readonly tls: { readonly ca: string; readonly cert: string; readonly key: string } | undefined
}

/** Where the DaemonSet mounts the pinto-etcd-secrets Secret. */
const ETCD_SECRETS_DIR = '/etc/pinto/etcd-secrets'

/**
 * Fills the etcd manifest's pinto-config (datastore and the TLS files' paths) and its pinto-etcd-secrets
 * Secret (the files' contents), in place, as an operator edits them before applying.
 */
export async function fillEtcd(docs: readonly KubeObject[], etcd: EtcdValues): Promise<void> {
  const config = findObject(docs, 'ConfigMap', 'pinto-config') as { data: Record<string, string> }
  const secret = findObject(docs, 'Secret', 'pinto-etcd-secrets') as { data?: Record<string, string> }
  Object.assign(config.data, {
    datastore: etcd.endpoints,
    etcd_ca: etcd.tls ? `${ETCD_SECRETS_DIR}/etcd-ca` : '',
    etcd_cert: etcd.tls ? `${ETCD_SECRETS_DIR}/etcd-cert` : '',
    etcd_key: etcd.tls ? `${ETCD_SECRETS_DIR}/etcd-key` : '',
  })
  if (etcd.tls) {
    const b64 = async (f: string): Promise<string> => (await readFile(f)).toString('base64')
    secret.data = { ...secret.data, 'etcd-ca': await b64(etcd.tls.ca), 'etcd-cert': await b64(etcd.tls.cert), 'etcd-key': await b64(etcd.tls.key) }
  }
}
