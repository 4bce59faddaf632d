// Per-ADD accounting for bench/ipam-scale-worker.ts: a Datastore wrapper that charges each call to the ADD whose
// async context made it (AsyncLocalStorage), so a slow ADD can be told apart: a block claim, extra round trips,
// time waiting in etcd, or time before its first call (the service's queue, the CPU). Bench-only; no decisions.

import { AsyncLocalStorage } from 'node:async_hooks'
import type { Datastore, KeyValue, ListResult, NodeBlocks, TxnOp, Watch, WatchEvent } from '../config/datastore.js'
import { AFFINITIES_PREFIX } from '../ipam/records.js'

export interface AddTrace {
  readonly ms: number
  readonly roundTrips: number
  /** Calls that write (each waits for an etcd commit and its WAL fsync). */
  readonly commits: number
  /** Creates of an affinity record: a block claimed by this ADD. */
  readonly claims: number
  /** Wall time with at least one datastore call of this ADD outstanding. */
  readonly storeMs: number
  /** From the ADD's start to its first datastore call. */
  readonly waitMs: number
}

interface Open {
  readonly start: number
  first: number | undefined
  roundTrips: number
  commits: number
  claims: number
  outstanding: number
  busySince: number
  storeMs: number
}

export class TracingDatastore implements Datastore {
  private readonly als = new AsyncLocalStorage<Open>()

  constructor(private readonly inner: Datastore) {}

  get transactions(): boolean {
    return this.inner.transactions
  }

  /** Not traced: only a node's cluster view reads through it, at start. */
  get nodeBlocks(): NodeBlocks | undefined {
    return this.inner.nodeBlocks
  }

  /** Runs `fn` as one ADD and returns what its calls cost. */
  async trace<T>(fn: () => Promise<T>): Promise<{ value: T; trace: AddTrace }> {
    const o: Open = { start: performance.now(), first: undefined, roundTrips: 0, commits: 0, claims: 0, outstanding: 0, busySince: 0, storeMs: 0 }
    const value = await this.als.run(o, fn)
    const end = performance.now()
    return { value, trace: { ms: end - o.start, roundTrips: o.roundTrips, commits: o.commits, claims: o.claims, storeMs: o.storeMs, waitMs: (o.first ?? end) - o.start } }
  }

  private async call<T>(writes: boolean, claim: boolean, run: () => Promise<T>): Promise<T> {
    const o = this.als.getStore()
    if (o === undefined) return run()
    const s = performance.now()
    o.first ??= s
    o.roundTrips++
    if (writes) o.commits++
    if (claim) o.claims++
    if (o.outstanding++ === 0) o.busySince = s
    try {
      return await run()
    } finally {
      if (--o.outstanding === 0) o.storeMs += performance.now() - o.busySince
    }
  }

  get(key: string): Promise<KeyValue | undefined> {
    return this.call(false, false, () => this.inner.get(key))
  }

  list(prefix: string): Promise<ListResult> {
    return this.call(false, false, () => this.inner.list(prefix))
  }

  create(key: string, value: string): Promise<KeyValue> {
    return this.call(true, key.startsWith(AFFINITIES_PREFIX), () => this.inner.create(key, value))
  }

  update(key: string, value: string, revision: number): Promise<KeyValue> {
    return this.call(true, false, () => this.inner.update(key, value, revision))
  }

  delete(key: string, revision?: number): Promise<void> {
    return this.call(true, false, () => this.inner.delete(key, revision))
  }

  txn(ops: readonly TxnOp[]): Promise<KeyValue[]> {
    const writes = ops.some((o) => o.op !== 'check')
    return this.call(writes, ops.some((o) => o.op === 'create' && o.key.startsWith(AFFINITIES_PREFIX)), () => this.inner.txn(ops))
  }

  watch(prefix: string, fromRevision: number, onEvent: (event: WatchEvent) => void, onError?: (err: Error) => void): Watch {
    return this.inner.watch(prefix, fromRevision, onEvent, onError)
  }

  close(): Promise<void> {
    return this.inner.close()
  }
}
