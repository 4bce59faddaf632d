// Chooses and opens a datastore backend from a PINTO_DATASTORE value: a directory path, etcd://host:port[,...],
// Calico's ETCD_ENDPOINTS shape (http://host:port[,...] plain, https://host:port[,...] TLS), or `kubernetes` (the
// Kubernetes API, credentials from KUBECONFIG or the in-cluster ServiceAccount). Parsing is pure and separate from
// opening; errors name PINTO_DATASTORE (or the TLS variable, or KUBECONFIG) and what was wrong.

import { DatastoreError, type Datastore } from './datastore.js'
import { openEmbeddedDatastore, type EmbeddedOptions } from './datastore-embedded.js'
import type { EtcdOptions } from './datastore-etcd.js'
import type { KubernetesOptions } from './datastore-kubernetes.js'
import { type KubeSource, kubeSourceOf } from './kubernetes/kube-http.js'
import { checkEtcdTlsFiles, etcdTlsFilesFromEnv, readEtcdCredentials, type EtcdTlsFiles } from './etcd-tls.js'

export const DEFAULT_DATASTORE = '/var/lib/pinto/store'

export type DatastoreSpec =
  | { readonly kind: 'embedded'; readonly dir: string }
  | { readonly kind: 'etcd'; readonly endpoints: readonly string[]; readonly tls: boolean }
  | { readonly kind: 'kubernetes' }

/** PINTO_DATASTORE's value for the Kubernetes API (Calico's DATASTORE_TYPE=kubernetes). */
export const KUBERNETES_DATASTORE = 'kubernetes'

const bad = (spec: string, why: string): DatastoreError => new DatastoreError('invalid', `PINTO_DATASTORE=${JSON.stringify(spec)}: ${why}`)

const HOST = /^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)$/

function parseEndpoint(spec: string, endpoint: string, index: number): string {
  const at = endpoint.lastIndexOf(':')
  const host = at > 0 ? endpoint.slice(0, at) : ''
  const port = at > 0 ? endpoint.slice(at + 1) : ''
  if (host === '' || !HOST.test(host)) throw bad(spec, `etcd endpoint ${index + 1} (${JSON.stringify(endpoint)}) needs host:port with a host name, IPv4 or [IPv6] address`)
  if (!/^\d{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65535) {
    throw bad(spec, `etcd endpoint ${index + 1} (${JSON.stringify(endpoint)}) has port ${JSON.stringify(port)}, expected 1-65535`)
  }
  return `${host}:${Number(port)}`
}

export function parseDatastoreSpec(spec: string): DatastoreSpec {
  if (spec.trim() !== spec) throw bad(spec, 'has leading or trailing spaces')
  if (spec === '') throw bad(spec, `is empty; expected a directory path (default ${DEFAULT_DATASTORE}) or etcd://host:port[,host:port]`)
  if (spec === KUBERNETES_DATASTORE) return { kind: 'kubernetes' }
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(spec)
  if (!scheme) {
    if (spec.includes('\0')) throw bad(spec, 'directory path contains a NUL byte')
    return { kind: 'embedded', dir: spec }
  }
  if (scheme[1] === 'http' || scheme[1] === 'https') return parseEndpointUrls(spec, scheme[1])
  if (scheme[1] !== 'etcd') throw bad(spec, `scheme ${scheme[1]}:// is not supported; use a directory path, etcd://host:port[,host:port] or https://host:port[,https://host:port]`)
  const rest = spec.slice('etcd://'.length).replace(/\/$/, '')
  if (rest === '') throw bad(spec, 'etcd:// needs at least one host:port')
  if (rest.includes('/')) throw bad(spec, 'etcd:// takes host:port[,host:port] only, no path')
  return { kind: 'etcd', endpoints: rest.split(',').map((e, i) => parseEndpoint(spec, e, i)), tls: false }
}

/** Calico's ETCD_ENDPOINTS: every endpoint a URL with the same scheme, https meaning TLS. */
function parseEndpointUrls(spec: string, scheme: 'http' | 'https'): DatastoreSpec {
  const endpoints = spec.split(',').map((url, i) => {
    const m = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/]*)\/?$/.exec(url)
    if (!m) throw bad(spec, `etcd endpoint ${i + 1} (${JSON.stringify(url)}) must be ${scheme}://host:port with no path`)
    if (m[1] !== scheme) throw bad(spec, `etcd endpoint ${i + 1} (${JSON.stringify(url)}) is ${m[1]}:// but endpoint 1 is ${scheme}://; use one scheme for all`)
    return parseEndpoint(spec, m[2]!, i)
  })
  return { kind: 'etcd', endpoints, tls: scheme === 'https' }
}

export interface OpenOptions {
  readonly embedded?: EmbeddedOptions
  readonly etcd?: Omit<EtcdOptions, 'tls'>
  /** PINTO_ETCD_*_FILE: read here, once, when an https:// datastore is opened. */
  readonly etcdTls?: EtcdTlsFiles
  readonly kubernetes?: KubernetesOptions
  /**
   * Where the kubernetes datastore finds its credentials: KUBECONFIG's file, else the in-cluster ServiceAccount
   * when KUBERNETES_SERVICE_HOST is set. Default: this process's environment.
   */
  readonly kubeEnv?: Readonly<Record<string, string | undefined>>
}

/** The kubeconfig file or the in-cluster ServiceAccount, from KUBECONFIG and KUBERNETES_SERVICE_HOST. */
export function kubeSourceFromEnv(env: Readonly<Record<string, string | undefined>>): KubeSource {
  const source = kubeSourceOf(env)
  if (source !== undefined) return source
  throw new DatastoreError('invalid', `PINTO_DATASTORE=${KUBERNETES_DATASTORE} needs credentials: set KUBECONFIG to a kubeconfig file, or run in a pod (KUBERNETES_SERVICE_HOST and its ServiceAccount)`)
}

export async function openDatastore(spec: string, options: OpenOptions = {}): Promise<Datastore> {
  const parsed = parseDatastoreSpec(spec)
  const files = options.etcdTls ?? {}
  checkEtcdTlsFiles(parsed, files)
  if (parsed.kind === 'embedded') return openEmbeddedDatastore(parsed.dir, options.embedded)
  if (parsed.kind === 'kubernetes') {
    const source = kubeSourceFromEnv(options.kubeEnv ?? process.env)
    // The Kubernetes client is loaded only for this datastore, as etcd3 is for etcd.
    const { openKubernetesDatastore } = await import('./datastore-kubernetes.js')
    return openKubernetesDatastore(source, options.kubernetes)
  }
  const tls = parsed.tls ? readEtcdCredentials(files) : undefined
  // etcd3 and grpc-js are loaded only for an etcd datastore: their heap and code would otherwise be
  // carried for its whole life by a node on the embedded store.
  const { openEtcdDatastore } = await import('./datastore-etcd.js')
  return openEtcdDatastore(parsed.endpoints, { ...options.etcd, ...(tls ? { tls } : {}) })
}

/** The datastore a process in this environment uses (PINTO_DATASTORE and PINTO_ETCD_*_FILE), as pinto-node does. */
export async function openDatastoreFromEnv(env: Readonly<Record<string, string | undefined>>, options: Omit<OpenOptions, 'etcdTls'> = {}): Promise<Datastore> {
  const set = env['PINTO_DATASTORE'] || undefined
  const spec = set ?? DEFAULT_DATASTORE
  try {
    return await openDatastore(spec, { ...options, etcdTls: etcdTlsFilesFromEnv(env), kubeEnv: env })
  } catch (err) {
    // A reader (embedded.create false) found no store: say which path, and where it came from.
    if (!(err instanceof DatastoreError) || err.code !== 'not-found' || options.embedded?.create !== false) throw err
    const from = set !== undefined ? `PINTO_DATASTORE=${spec}` : `PINTO_DATASTORE is not set; ${DEFAULT_DATASTORE} is its default`
    throw new DatastoreError('not-found', `the datastore ${spec} does not exist (${from}); set PINTO_DATASTORE to the agents' store: its directory, etcd://host:port, or kubernetes`)
  }
}
