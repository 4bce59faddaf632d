// pinto's projectcalico.org/v3 resources as Calico stores them in the Kubernetes API (its crd.projectcalico.org/v1
// kinds, cluster-scoped, one object per resource, spec as is), and every other key as one object of pinto's own
// KeyValue kind. The v3 labels are the object's labels; the rest of the v3 metadata (annotations, uid...) goes in
// the `projectcalico.org/metadata` annotation, as Calico keeps it. Pure: no I/O.

import { createHash } from 'node:crypto'
import type { ResourceKind } from '../resources/types.js'
import { type KubeObject, invalid, isObject, parseValue } from './objects.js'
import { CALICO_CRD_VERSION, type ObjectRecord } from './ipam-objects.js'

export const V3_API_VERSION = 'projectcalico.org/v3'
/** Where Calico keeps the v3 metadata that is not the object's own (annotations, uid, creationTimestamp...). */
export const METADATA_ANNOTATION = 'projectcalico.org/metadata'

export type CalicoResourceKind = Exclude<ResourceKind, 'Node'>

/** pinto's kinds and Calico's CRD plurals (the same as pinto's key segments). */
export const CALICO_RESOURCE_PLURALS: Readonly<Record<CalicoResourceKind, string>> = {
  BGPConfiguration: 'bgpconfigurations',
  BGPPeer: 'bgppeers',
  BGPFilter: 'bgpfilters',
  IPPool: 'ippools',
  IPAMConfig: 'ipamconfigs',
}

/** Fields Calico's CRDs require, filled with the v3 defaults when a resource leaves them out. */
const REQUIRED_DEFAULTS: Partial<Record<CalicoResourceKind, Readonly<Record<string, unknown>>>> = {
  IPAMConfig: { strictAffinity: false, autoAllocateBlocks: true },
}

export function resourceObject(key: string, kind: CalicoResourceKind, name: string, value: string): KubeObject {
  const r = parseValue(key, value)
  if (r.kind !== kind) throw invalid(key, `kind: the value is ${JSON.stringify(r.kind)}, the key holds ${kind}`)
  const meta = isObject(r.metadata) ? r.metadata : {}
  if (meta.name !== name) throw invalid(key, `metadata.name: the value names ${JSON.stringify(meta.name)}, the key ${JSON.stringify(name)}`)
  if (r.spec !== undefined && !isObject(r.spec)) throw invalid(key, 'spec: not an object')
  const { name: _, labels, resourceVersion: __, ...stash } = meta
  if (labels !== undefined && !isObject(labels)) throw invalid(key, 'metadata.labels: not an object')
  return {
    apiVersion: CALICO_CRD_VERSION,
    kind,
    metadata: {
      name,
      ...(labels !== undefined && Object.keys(labels).length > 0 ? { labels: labels as Record<string, string> } : {}),
      ...(Object.keys(stash).length > 0 ? { annotations: { [METADATA_ANNOTATION]: JSON.stringify(stash) } } : {}),
    },
    spec: { ...REQUIRED_DEFAULTS[kind], ...(r.spec ?? {}) },
  }
}

/** The v3 resource of a Calico CRD object, as JSON: its labels, its stashed metadata, its spec. */
export function resourceValue(obj: KubeObject, kind: CalicoResourceKind): string {
  let stash: Record<string, unknown> = {}
  const text = obj.metadata.annotations?.[METADATA_ANNOTATION]
  if (text !== undefined) {
    try {
      const parsed: unknown = JSON.parse(text)
      if (isObject(parsed)) stash = parsed
    } catch {
      // A stash that is not JSON is Calico's to repair; the resource reads without it.
    }
  }
  const { name: _, labels: __, resourceVersion: ___, ...rest } = stash
  const labels = obj.metadata.labels
  return JSON.stringify({
    apiVersion: V3_API_VERSION,
    kind,
    metadata: { name: obj.metadata.name, ...(labels !== undefined && Object.keys(labels).length > 0 ? { labels } : {}), ...rest },
    spec: isObject(obj.spec) ? obj.spec : {},
  })
}

export const KEYVALUE_GROUP = 'datastore.pinto.dev'
export const KEYVALUE_API_VERSION = `${KEYVALUE_GROUP}/v1`

const BASE32 = 'abcdefghijklmnopqrstuvwxyz234567'

/** `kv-` and the key's SHA-256 in lowercase base32: a valid object name for any key, the same in every process. */
export function keyValueName(key: string): string {
  const digest = createHash('sha256').update(key, 'utf8').digest()
  let bits = 0
  let acc = 0
  let out = ''
  for (const byte of digest) {
    acc = (acc << 8) | byte
    bits += 8
    while (bits >= 5) {
      out += BASE32[(acc >>> (bits - 5)) & 31]
      bits -= 5
    }
    acc &= (1 << bits) - 1
  }
  if (bits > 0) out += BASE32[(acc << (5 - bits)) & 31]
  return `kv-${out}`
}

export function keyValueObject(key: string, value: string): KubeObject {
  return { apiVersion: KEYVALUE_API_VERSION, kind: 'KeyValue', metadata: { name: keyValueName(key) }, spec: { key, value } }
}

export function keyValueRecord(obj: KubeObject): ObjectRecord | undefined {
  const s = obj.spec
  return isObject(s) && typeof s.key === 'string' && typeof s.value === 'string' ? { key: s.key, value: s.value } : undefined
}
