// Chooses and opens a datastore backend from a PINTO_DATASTORE value: a directory path or etcd://host:port[,...].
// Parsing is pure and separate from opening; errors name PINTO_DATASTORE and what was wrong with the value.

import { DatastoreError, type Datastore } from './datastore.js'
import { openEmbeddedDatastore, type EmbeddedOptions } from './datastore-embedded.js'
import { openEtcdDatastore, type EtcdOptions } from './datastore-etcd.js'

export const DEFAULT_DATASTORE = '/var/lib/pinto/store'

export type DatastoreSpec =
  | { readonly kind: 'embedded'; readonly dir: string }
  | { readonly kind: 'etcd'; readonly endpoints: readonly string[] }

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
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//.exec(spec)
  if (!scheme) {
    if (spec.includes('\0')) throw bad(spec, 'directory path contains a NUL byte')
    return { kind: 'embedded', dir: spec }
  }
  if (scheme[1] !== 'etcd') throw bad(spec, `scheme ${scheme[1]}:// is not supported; use a directory path or etcd://host:port[,host:port]`)
  const rest = spec.slice('etcd://'.length).replace(/\/$/, '')
  if (rest === '') throw bad(spec, 'etcd:// needs at least one host:port')
  if (rest.includes('/')) throw bad(spec, 'etcd:// takes host:port[,host:port] only, no path')
  return { kind: 'etcd', endpoints: rest.split(',').map((e, i) => parseEndpoint(spec, e, i)) }
}

export interface OpenOptions {
  readonly embedded?: EmbeddedOptions
  readonly etcd?: EtcdOptions
}

export async function openDatastore(spec: string, options: OpenOptions = {}): Promise<Datastore> {
  const parsed = parseDatastoreSpec(spec)
  return parsed.kind === 'embedded' ? openEmbeddedDatastore(parsed.dir, options.embedded) : openEtcdDatastore(parsed.endpoints, options.etcd)
}
