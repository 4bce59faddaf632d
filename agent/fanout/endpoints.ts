// Where a fan-out Service's replicas are: the ready endpoints of its EndpointSlices, at the port named `fanout`
// (or the Service's only port), as felix finds Typha through its Service. Read when the agent starts and again
// once every replica it knew has failed.

import { isJsonObject, type KubeHttp } from '../../config/index.js'
import { endpointReady } from '../service-routes.js'

/** `host:port` of every ready endpoint in `slices` (an EndpointSliceList), in a stable order. */
export function readyEndpoints(slices: unknown): string[] {
  const out = new Set<string>()
  const items = isJsonObject(slices) && Array.isArray(slices.items) ? slices.items : []
  for (const slice of items) {
    if (!isJsonObject(slice) || !Array.isArray(slice.endpoints) || !Array.isArray(slice.ports)) continue
    const ports = slice.ports.filter(isJsonObject)
    const port = (ports.find((p) => p.name === 'fanout') ?? (ports.length === 1 ? ports[0] : undefined))?.port
    if (typeof port !== 'number') continue
    for (const e of slice.endpoints) {
      if (!isJsonObject(e) || !Array.isArray(e.addresses) || !endpointReady(e)) continue
      const address: unknown = e.addresses[0]
      if (typeof address === 'string') out.add(address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`)
    }
  }
  return [...out].sort()
}

/** Reads the ready endpoints of Service `namespace/name`; fails naming the Service when it has none. */
export async function fanoutEndpoints(http: KubeHttp, namespace: string, name: string): Promise<string[]> {
  const r = await http.request('GET', `/apis/discovery.k8s.io/v1/namespaces/${namespace}/endpointslices`, { labelSelector: `kubernetes.io/service-name=${name}` })
  if (r.status !== 200) throw new Error(`PINTO_FANOUT_SERVICE=${namespace}/${name}: listing its EndpointSlices answered ${r.status}`)
  const found = readyEndpoints(r.body)
  if (found.length === 0) throw new Error(`PINTO_FANOUT_SERVICE=${namespace}/${name}: the Service has no ready endpoint (is pinto-fanout running?)`)
  return found
}
