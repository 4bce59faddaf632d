// Opens a real datastore for IPAM tests (the embedded one in a temp dir, or etcd from the harness) and
// closes and removes it at teardown, even when the test fails.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Datastore, WatchEvent } from '../../config/datastore.js'
import { openEmbeddedDatastore } from '../../config/datastore-embedded.js'

export type Backend = 'embedded' | 'etcd'

interface Teardown {
  teardown(fn: () => void | Promise<void>): void
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
  }
}
