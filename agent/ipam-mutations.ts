// The IPAM service's queue of mutations (assigns and releases), one at a time, pipelined over durability:
// the next mutation starts once the one before it is done or once its transaction is applied and only being
// made durable (the embedded datastore's fdatasync), so a burst of ADDs shares its flushes instead of waiting
// for one each. Mutations of one handle still run strictly one after the other. Where the datastore has no
// transactions (Kubernetes), an assign queues only its block writes: its reads and its handle record go on beside. It owns that queue and the
// view of the datastore the IPAM writes through, which tells the queue when a transaction is applied.

import { AsyncLocalStorage } from 'node:async_hooks'
import type { Datastore, KeyValue, ListResult, TxnApplied, TxnOp, Watch, WatchEvent } from '../config/index.js'

const ignore = (): void => undefined

export class MutationQueue {
  /** Settles when the last mutation queued may let the next one start. */
  private tail: Promise<void> = Promise.resolve()
  /** Within a mutation: lets the next one start. */
  private readonly turn = new AsyncLocalStorage<() => void>()
  private readonly running = new Set<Promise<void>>()
  /** Per handle: settles when its last mutation queued is done. */
  private readonly byHandle = new Map<string, Promise<void>>()

  /**
   * Runs `fn` after the mutations queued before it let it (MutationQueue). The datastore's compare-and-swap
   * keeps two mutations that overlap correct; the queue only keeps them from racing each other's writes.
   */
  run<T>(fn: () => Promise<T>): Promise<T> {
    let next: () => void = ignore
    const applied = new Promise<void>((resolve) => (next = resolve))
    const go = (): Promise<T> => this.turn.run(next, fn)
    const result = this.tail.then(go, go)
    const done = result.then(ignore, ignore)
    this.tail = Promise.race([done, applied])
    this.running.add(done)
    void done.then(() => this.running.delete(done))
    return result
  }

  /** run(), after every mutation of `handle` queued before it is done. */
  runFor<T>(handle: string, fn: () => Promise<T>): Promise<T> {
    return this.afterHandle(handle, () => this.run(fn))
  }

  /**
   * `fn` after every mutation of `handle` queued before it is done, outside the queue: `fn` puts its block writes
   * through run() itself (Ipam.autoAssign's `exclusive`), and does the rest beside the other mutations.
   */
  afterHandle<T>(handle: string, fn: () => Promise<T>): Promise<T> {
    const before = this.byHandle.get(handle)
    const result = before === undefined ? fn() : before.then(fn)
    const done = result.then(ignore, ignore)
    this.byHandle.set(handle, done)
    this.running.add(done)
    void done.then(() => {
      this.running.delete(done)
      if (this.byHandle.get(handle) === done) this.byHandle.delete(handle)
    })
    return result
  }

  /** Settles once every mutation queued, and any queued meanwhile, is done. */
  async drained(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running])
  }

  /** `inner` as the IPAM writes through it: a transaction of a mutation, once applied, lets the next one start. */
  store(inner: Datastore): Datastore {
    const turn = this.turn
    return {
      get transactions() {
        return inner.transactions
      },
      get: (key: string): Promise<KeyValue | undefined> => inner.get(key),
      list: (prefix: string): Promise<ListResult> => inner.list(prefix),
      create: (key: string, value: string): Promise<KeyValue> => inner.create(key, value),
      update: (key: string, value: string, revision: number): Promise<KeyValue> => inner.update(key, value, revision),
      delete: (key: string, revision?: number): Promise<void> => inner.delete(key, revision),
      txn: (ops: readonly TxnOp[], applied?: TxnApplied): Promise<KeyValue[]> => {
        const next = turn.getStore()
        return inner.txn(ops, (written) => {
          applied?.(written)
          next?.()
        })
      },
      watch: (prefix: string, fromRevision: number, onEvent: (event: WatchEvent) => void, onError?: (err: Error) => void): Watch => inner.watch(prefix, fromRevision, onEvent, onError),
      close: (): Promise<void> => inner.close(),
    }
  }
}
