// A Datastore that counts what passes through it: round trips per operation, records a list returned,
// writes, and compare-and-swap failures. It owns the counting only: every call goes to the inner store
// unchanged, and it makes no decision about retries or errors.

import { type Datastore, type KeyValue, type ListResult, type Watch, type WatchEvent, DatastoreError } from './datastore.js'

export interface DatastoreCounts {
  get: number
  list: number
  /** Records all lists returned together. */
  listed: number
  create: number
  update: number
  delete: number
  watch: number
  /** create answered 'exists', update or delete answered 'conflict' or 'not-found': a lost race. */
  casFailures: number
}

export const zeroCounts = (): DatastoreCounts => ({ get: 0, list: 0, listed: 0, create: 0, update: 0, delete: 0, watch: 0, casFailures: 0 })

/** Calls that went to the store (a watch is a stream, not counted). */
export const roundTrips = (c: DatastoreCounts): number => c.get + c.list + c.create + c.update + c.delete

export const writes = (c: DatastoreCounts): number => c.create + c.update + c.delete

export function diffCounts(after: DatastoreCounts, before: DatastoreCounts): DatastoreCounts {
  const out = zeroCounts()
  for (const k of Object.keys(out) as (keyof DatastoreCounts)[]) out[k] = after[k] - before[k]
  return out
}

const lostRace = (err: unknown): boolean =>
  err instanceof DatastoreError && (err.code === 'exists' || err.code === 'conflict' || err.code === 'not-found')

export class CountingDatastore implements Datastore {
  private readonly c = zeroCounts()

  constructor(private readonly inner: Datastore) {}

  /** A copy of the counts so far. */
  counts(): DatastoreCounts {
    return { ...this.c }
  }

  private async counted<T>(op: 'get' | 'list' | 'create' | 'update' | 'delete', call: () => Promise<T>, casCounts: boolean): Promise<T> {
    this.c[op]++
    try {
      return await call()
    } catch (err) {
      if (casCounts && lostRace(err)) this.c.casFailures++
      throw err
    }
  }

  get(key: string): Promise<KeyValue | undefined> {
    return this.counted('get', () => this.inner.get(key), false)
  }

  async list(prefix: string): Promise<ListResult> {
    const r = await this.counted('list', () => this.inner.list(prefix), false)
    this.c.listed += r.items.length
    return r
  }

  create(key: string, value: string): Promise<KeyValue> {
    return this.counted('create', () => this.inner.create(key, value), true)
  }

  update(key: string, value: string, revision: number): Promise<KeyValue> {
    return this.counted('update', () => this.inner.update(key, value, revision), true)
  }

  delete(key: string, revision?: number): Promise<void> {
    return this.counted('delete', () => this.inner.delete(key, revision), true)
  }

  watch(prefix: string, fromRevision: number, onEvent: (event: WatchEvent) => void, onError?: (err: Error) => void): Watch {
    this.c.watch++
    return this.inner.watch(prefix, fromRevision, onEvent, onError)
  }

  close(): Promise<void> {
    return this.inner.close()
  }
}
