// A Datastore that counts what passes through it: round trips per operation, records a list returned,
// writes, and compare-and-swap failures. It owns the counting only: every call goes to the inner store
// unchanged, and it makes no decision about retries or errors.

import { type Datastore, type KeyValue, type ListResult, type NodeBlocks, type TxnApplied, type TxnOp, type Watch, type WatchEvent, DatastoreError } from './datastore.js'

export interface DatastoreCounts {
  get: number
  list: number
  /** Records all lists returned together. */
  listed: number
  create: number
  update: number
  delete: number
  /** Transactions: one round trip (one etcd commit) each, their ops counted as writes under create/update/delete. */
  txn: number
  /** Write ops inside those transactions (also counted under create/update/delete). */
  txnOps: number
  /** Check ops inside those transactions: compares that write nothing. */
  txnChecks: number
  watch: number
  /** create answered 'exists', update or delete answered 'conflict' or 'not-found': a lost race. */
  casFailures: number
}

export const zeroCounts = (): DatastoreCounts => ({ get: 0, list: 0, listed: 0, create: 0, update: 0, delete: 0, txn: 0, txnOps: 0, txnChecks: 0, watch: 0, casFailures: 0 })

/** Calls that went to the store (a watch is a stream, not counted; a transaction is one). */
export const roundTrips = (c: DatastoreCounts): number => c.get + c.list + c.create + c.update + c.delete - c.txnOps + c.txn

/** Keys written (a transaction's ops each). */
export const writes = (c: DatastoreCounts): number => c.create + c.update + c.delete

/** Write calls that each wait for their own commit (a transaction is one, however many keys). */
export const commits = (c: DatastoreCounts): number => c.create + c.update + c.delete - c.txnOps + c.txn

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

  get transactions(): boolean {
    return this.inner.transactions
  }

  /** A copy of the counts so far. */
  counts(): DatastoreCounts {
    return { ...this.c }
  }

  private async counted<T>(op: 'get' | 'list' | 'create' | 'update' | 'delete' | 'txn', call: () => Promise<T>, casCounts: boolean): Promise<T> {
    this.c[op]++
    try {
      return await call()
    } catch (err) {
      if (casCounts && lostRace(err)) this.c.casFailures++
      throw err
    }
  }

  get nodeBlocks(): NodeBlocks | undefined {
    const inner = this.inner.nodeBlocks
    if (inner === undefined) return undefined
    return {
      list: async (node) => {
        const r = await this.counted('list', () => inner.list(node), false)
        this.c.listed += r.items.length
        return r
      },
      watch: (node, fromRevision, onEvent, onError) => {
        this.c.watch++
        return inner.watch(node, fromRevision, onEvent, onError)
      },
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

  txn(ops: readonly TxnOp[], applied?: TxnApplied): Promise<KeyValue[]> {
    const list: readonly TxnOp[] = Array.isArray(ops) ? ops : []
    for (const o of list) {
      if (o.op === 'create' || o.op === 'update' || o.op === 'delete') {
        this.c[o.op]++
        this.c.txnOps++
      } else if (o.op === 'check') this.c.txnChecks++
    }
    return this.counted('txn', () => this.inner.txn(ops, applied), true)
  }

  watch(prefix: string, fromRevision: number, onEvent: (event: WatchEvent) => void, onError?: (err: Error) => void): Watch {
    this.c.watch++
    return this.inner.watch(prefix, fromRevision, onEvent, onError)
  }

  close(): Promise<void> {
    return this.inner.close()
  }
}
