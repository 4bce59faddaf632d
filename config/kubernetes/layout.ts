// Where each datastore key lives in the Kubernetes API: the key families of pinto's layout (resources, the core
// Node, IPAM blocks, affinities, handles), each one collection of objects with its own names and mapping, and
// pinto's KeyValue kind for every other key. A list or watch of a prefix reads each family the prefix reaches.
// Pure: no I/O.

import { AFFINITIES_PREFIX, BLOCKS_PREFIX, HANDLES_PREFIX } from '../../ipam/index.js'
import { RESOURCE_KEY_PREFIX } from '../resources/store-keys.js'
import { DatastoreError } from '../datastore.js'
import { type KubeObject, invalid, isObjectName } from './objects.js'
import { type ObjectRecord, affinityKeyParts, affinityObject, affinityObjectName, affinityRecord, blockObject, blockRecord, handleObject, handleObjectName, handleRecord } from './ipam-objects.js'
import { CALICO_RESOURCE_PLURALS, type CalicoResourceKind, KEYVALUE_API_VERSION, keyValueName, keyValueObject, keyValueRecord, resourceObject, resourceValue } from './resource-objects.js'
import { nodeValue } from './node-object.js'

/** One collection of the layout: the datastore keys under one prefix and how they map to Kubernetes objects. */
export interface KeyFamily {
  /** The kind and its CRD (or the core resource), as messages name it. */
  readonly what: string
  /** The keys it holds start with this; '' for the KeyValue family, which holds every key no other family does. */
  readonly prefix: string
  /** The collection's path on the apiserver. */
  readonly path: string
  /** The core Node: read as a projection, written through nodes/status, never created or deleted through pinto. */
  readonly node: boolean
  /** The object name of a key of this family; 'invalid' naming the key when it has none. */
  objectName(key: string): string
  /** The object a create or update of `key` with `value` sends (name set, no resourceVersion). */
  toObject(key: string, value: string): KubeObject
  /** The key and value an object reads as (value undefined: Calico marked it deleted); undefined when it holds no key. */
  toRecord(obj: KubeObject): ObjectRecord | undefined
}

const CALICO = '/apis/crd.projectcalico.org/v1'

/** The last key segment as the object name: a Kubernetes object name, nothing after it. */
function segmentName(prefix: string, what: string): (key: string) => string {
  return (key) => {
    const name = key.slice(prefix.length)
    if (!isObjectName(name)) throw invalid(key, `${JSON.stringify(name)} is not a ${what} name (a Kubernetes object name: lowercase letters, digits, '-' and '.')`)
    return name
  }
}

const resourceFamily = (kind: CalicoResourceKind): KeyFamily => {
  const plural = CALICO_RESOURCE_PLURALS[kind]
  const prefix = `${RESOURCE_KEY_PREFIX}${plural}/`
  const objectName = segmentName(prefix, kind)
  return {
    what: `${kind} (${plural}.crd.projectcalico.org)`,
    prefix,
    path: `${CALICO}/${plural}`,
    node: false,
    objectName,
    toObject: (key, value) => resourceObject(key, kind, objectName(key), value),
    toRecord: (obj) => ({ key: `${prefix}${obj.metadata.name}`, value: resourceValue(obj, kind) }),
  }
}

const NODE_PREFIX = `${RESOURCE_KEY_PREFIX}nodes/`

export const KEY_FAMILIES: readonly KeyFamily[] = [
  ...(Object.keys(CALICO_RESOURCE_PLURALS) as CalicoResourceKind[]).map(resourceFamily),
  {
    what: 'Node (core v1 nodes)',
    prefix: NODE_PREFIX,
    path: '/api/v1/nodes',
    node: true,
    objectName: segmentName(NODE_PREFIX, 'Node'),
    toObject: (key) => {
      throw new DatastoreError('invalid', `${key}: a Node is written through its Kubernetes Node`, key)
    },
    toRecord: (obj) => ({ key: `${NODE_PREFIX}${obj.metadata.name}`, value: nodeValue(obj) }),
  },
  {
    what: 'IPAMBlock (ipamblocks.crd.projectcalico.org)',
    prefix: BLOCKS_PREFIX,
    path: `${CALICO}/ipamblocks`,
    node: false,
    objectName: segmentName(BLOCKS_PREFIX, 'block'),
    toObject: blockObject,
    toRecord: blockRecord,
  },
  {
    what: 'BlockAffinity (blockaffinities.crd.projectcalico.org)',
    prefix: AFFINITIES_PREFIX,
    path: `${CALICO}/blockaffinities`,
    node: false,
    objectName: (key) => {
      const parts = affinityKeyParts(key)
      const name = parts && affinityObjectName(parts.node, parts.cidrName)
      if (name === undefined || !isObjectName(name)) throw invalid(key, `an affinity key is ${AFFINITIES_PREFIX}<node>/<cidr name>, making a Kubernetes object name`)
      return name
    },
    toObject: affinityObject,
    toRecord: affinityRecord,
  },
  {
    what: 'IPAMHandle (ipamhandles.crd.projectcalico.org)',
    prefix: HANDLES_PREFIX,
    path: `${CALICO}/ipamhandles`,
    node: false,
    objectName: (key) => handleObjectName(key, key.slice(HANDLES_PREFIX.length)),
    toObject: handleObject,
    toRecord: handleRecord,
  },
]

export const KEYVALUE_FAMILY: KeyFamily = {
  what: 'KeyValue (keyvalues.datastore.pinto.dev)',
  prefix: '',
  path: `/apis/${KEYVALUE_API_VERSION}/keyvalues`,
  node: false,
  objectName: keyValueName,
  toObject: keyValueObject,
  toRecord: keyValueRecord,
}

/** The family that holds `key`. */
export function keyFamilyOf(key: string): KeyFamily {
  return KEY_FAMILIES.find((f) => key.startsWith(f.prefix)) ?? KEYVALUE_FAMILY
}

/** The families holding keys under `prefix`: those whose prefix it reaches, and KeyValue unless it lies inside another. */
export function keyFamiliesUnder(prefix: string): KeyFamily[] {
  const inside = KEY_FAMILIES.find((f) => prefix.startsWith(f.prefix))
  if (inside !== undefined) return [inside]
  return [...KEY_FAMILIES.filter((f) => f.prefix.startsWith(prefix)), KEYVALUE_FAMILY]
}
