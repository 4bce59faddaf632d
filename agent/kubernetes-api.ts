// pinto-node's way to the Kubernetes API beside its datastore, for what it reads of the cluster whatever the datastore
// (Services and EndpointSlices): the kubernetes datastore's own connection pool, or with etcd or the embedded store a
// pool of its own from KUBECONFIG or the in-cluster ServiceAccount. Without credentials there is none, and the caller
// says so once. It opens; it reads nothing.

import { KubeHttp, kubeSourceOf, type Datastore } from '../config/index.js'

export interface KubernetesApi {
  readonly http: KubeHttp
  /** Where the credentials came from, for the log. */
  readonly from: string
  /** Closes a pool opened here; the datastore's own is the datastore's to close. */
  close(): void
}

/** Each request to the apiserver is answered within this or fails (as the kubernetes datastore's). */
const TIMEOUT_MS = 3500

/**
 * The datastore's pool when the datastore is the Kubernetes API, else one from `env`'s KUBECONFIG or in-cluster
 * ServiceAccount; undefined without credentials; an Error naming the variable or file when they cannot be used.
 */
export async function openKubernetesApi(store: Datastore, env: Readonly<Record<string, string | undefined>>): Promise<KubernetesApi | Error | undefined> {
  // The kubernetes datastore hands out its pool as `api` (KubernetesDatastore), without this module loading it.
  const own = (store as { readonly api?: unknown }).api
  if (own instanceof KubeHttp) return { http: own, from: 'the kubernetes datastore', close: () => undefined }
  try {
    const source = kubeSourceOf(env)
    if (source === undefined) return undefined
    const http = await KubeHttp.connect(source, TIMEOUT_MS)
    return { http, from: 'kubeconfig' in source ? `KUBECONFIG=${source.kubeconfig}` : 'the in-cluster ServiceAccount', close: () => http.close() }
  } catch (err) {
    return err as Error
  }
}
