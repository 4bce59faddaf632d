// A demo cluster's datastore as its tests and the demo change it: resources written or deleted and keys
// listed, straight in the embedded store (a directory), or through pintoctl and etcd's own client on
// etcd's fabric host, since the machine's own namespace cannot reach etcd.

import { encodeResource, openDatastore, resourceKey, type Datastore, type Resource } from '../../config/index.js'
import type { DemoEtcd } from './etcd.js'

/** What of the cluster the store is reached through. */
export interface StoreAccess {
  /** The agents' PINTO_DATASTORE. */
  readonly store: string
  readonly etcd: DemoEtcd | undefined
  pintoctl(args: readonly string[], input?: string): Promise<string>
}

/** Creates each resource, or overwrites what is there. */
export async function writeResources(c: StoreAccess, resources: readonly Resource[]): Promise<void> {
  if (c.etcd !== undefined) {
    await c.pintoctl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: resources }))
    return
  }
  const store = await openDatastore(c.store)
  try {
    await putResources(store, resources)
  } finally {
    await store.close()
  }
}

/** Creates each resource in an open datastore, or overwrites what is there. */
export async function putResources(store: Datastore, resources: readonly Resource[]): Promise<void> {
  for (const r of resources) {
    const key = resourceKey(r.kind, r.metadata.name)
    const old = await store.get(key)
    if (old) await store.update(key, encodeResource(r), old.revision)
    else await store.create(key, encodeResource(r))
  }
}

/** False when there was no such resource. */
export async function deleteResource(c: StoreAccess, kind: Resource['kind'], name: string): Promise<boolean> {
  if (c.etcd !== undefined) return c.pintoctl(['delete', kind, name]).then(() => true, () => false)
  const store = await openDatastore(c.store)
  try {
    const key = resourceKey(kind, name)
    const old = await store.get(key)
    if (!old) return false
    await store.delete(key, old.revision)
    return true
  } finally {
    await store.close()
  }
}

export async function listKeys(c: StoreAccess, prefix: string): Promise<{ key: string; value: string }[]> {
  if (c.etcd !== undefined) return c.etcd.list(prefix)
  const store = await openDatastore(c.store)
  try {
    return (await store.list(prefix)).items.map((kv) => ({ key: kv.key, value: kv.value }))
  } finally {
    await store.close()
  }
}
