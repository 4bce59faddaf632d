// The fan-out's view (Typha's place): the keys under a few roots of one datastore, listed once and kept by one
// watch each, and the events since, numbered in the order they arrived, for the agents that follow it. Many
// agents then cost the datastore one list and one watch per root instead of one each. It owns the numbering and
// what an agent is told; the HTTP that carries it is server.ts.
// Invariants a reader must know:
// 1. Every event the view tells carries the store's own revision, so an agent can write what it read; the view's
//    own number (`seq`) only orders the events it tells, and is meaningful only within one `epoch` (one process).
// 2. On a store without transactions (the kubernetes datastore) a put of the bytes the view holds is no event: a
//    kubelet's Node status report changes nothing pinto reads of a Node, and reaches no agent. The held revision
//    is then older than the store's; nothing holds a write to it there (no txn checks), and writers read first.
//    With transactions every put is told, so a check against a revision read from the view stays true.
// 3. A failed watch is followed by a new list; the view tells the difference between what it held and what it
//    listed as ordinary events, so an agent's stream goes on.
// 4. The log keeps the last `logSize` events. An agent asking to go on from an event no longer kept, or from
//    another epoch, is told to list again ('compacted').

import { randomBytes } from 'node:crypto'
import type { Logger } from 'pino'
import { type Datastore, DatastoreError, type Watch, type WatchEvent } from '../../config/index.js'

/** One event as the view tells it: the store's event and its number in this view. */
export type FanoutEvent = WatchEvent & { readonly seq: number }

export interface FanoutListing {
  readonly items: readonly { readonly key: string; readonly value: string; readonly revision: number }[]
  /** The highest revision the view has seen under the listing's root. */
  readonly revision: number
  readonly epoch: string
  /** The number of the last event the listing includes: go on with the events after it. */
  readonly seq: number
}

interface Held {
  readonly value: string
  readonly revision: number
}

interface Root {
  readonly prefix: string
  readonly held: Map<string, Held>
  /** The highest revision seen under this root (listings and events). */
  revision: number
  watch: Watch | undefined
}

export interface FanoutViewOptions {
  /** The roots served; a prefix asked for must lie under one of them. */
  readonly roots: readonly string[]
  /** Events kept for agents that reconnect (default 20,000). */
  readonly logSize?: number
  /** Delay before listing again after a watch failed (default 1 s). */
  readonly retryMs?: number
}

export type FanoutSubscriber = (event: FanoutEvent) => void

export class FanoutView {
  readonly epoch = randomBytes(8).toString('hex')
  private readonly roots: Root[]
  private readonly log: FanoutEvent[] = []
  private readonly logSize: number
  /** The number of the last event told (0: none yet). */
  private seq = 0
  private readonly subscribers = new Set<{ prefix: string; fn: FanoutSubscriber }>()
  private listed = false
  private closed = false
  private retry: NodeJS.Timeout | undefined
  /** Puts of bytes already held, dropped (invariant 2). */
  unchanged = 0
  /** Events received from the store's watches, and told to agents (once per agent). */
  received = 0
  told = 0

  constructor(
    private readonly store: Datastore,
    private readonly logger: Logger,
    private readonly options: FanoutViewOptions,
  ) {
    this.roots = options.roots.map((prefix) => ({ prefix, held: new Map<string, Held>(), revision: 0, watch: undefined }))
    this.logSize = Math.max(1, options.logSize ?? 20_000)
  }

  /** Lists every root and follows it; resolves once the first listing is held. */
  async start(): Promise<void> {
    await Promise.all(this.roots.map((r) => this.resync(r)))
    this.listed = true
  }

  /** Whether the view holds its first listing (it serves nothing before). */
  get ready(): boolean {
    return this.listed && !this.closed
  }

  /** The root `prefix` lies under, if the view serves it. */
  private rootOf(prefix: string): Root | undefined {
    return this.roots.find((r) => prefix.startsWith(r.prefix))
  }

  serves(prefix: string): boolean {
    return this.rootOf(prefix) !== undefined
  }

  private async resync(root: Root): Promise<void> {
    root.watch?.close()
    root.watch = undefined
    const listing = await this.store.list(root.prefix)
    if (this.closed) return
    const seen = new Set<string>()
    for (const kv of listing.items) {
      seen.add(kv.key)
      this.apply(root, { type: 'put', key: kv.key, value: kv.value, revision: kv.revision })
    }
    for (const key of [...root.held.keys()]) if (!seen.has(key)) this.apply(root, { type: 'delete', key, revision: listing.revision })
    root.revision = Math.max(root.revision, listing.revision)
    let failed = false
    const onEvent = (e: WatchEvent): void => {
      this.received++
      this.apply(root, e)
    }
    root.watch = this.store.watch(root.prefix, listing.revision + 1, onEvent, (err) => {
      if (failed || this.closed) return
      failed = true
      const compacted = err instanceof DatastoreError && err.code === 'compacted'
      this.logger.warn({ root: root.prefix, err: err.message }, compacted ? 'watch fell behind a compaction: listing again' : 'datastore watch failed: listing again')
      this.retry = setTimeout(() => void this.resync(root).catch((e: Error) => this.retryLater(root, e)), this.options.retryMs ?? 1000)
    })
  }

  private retryLater(root: Root, err: Error): void {
    if (this.closed) return
    this.logger.warn({ root: root.prefix, err: err.message }, 'listing failed: trying again')
    this.retry = setTimeout(() => void this.resync(root).catch((e: Error) => this.retryLater(root, e)), this.options.retryMs ?? 1000)
  }

  /** Takes one event from the store (or a listing's difference) into the view, and tells it if it changes what the view holds. */
  private apply(root: Root, e: WatchEvent): void {
    if (e.revision > root.revision) root.revision = e.revision
    const held = root.held.get(e.key)
    if (e.type === 'delete') {
      if (held === undefined) return
      root.held.delete(e.key)
    } else {
      if (held !== undefined && held.value === e.value && (held.revision === e.revision || !this.store.transactions)) {
        if (held.revision !== e.revision) this.unchanged++
        return
      }
      root.held.set(e.key, { value: e.value, revision: e.revision })
    }
    const event: FanoutEvent = { ...e, seq: ++this.seq }
    this.log.push(event)
    if (this.log.length > this.logSize) this.log.splice(0, this.log.length - this.logSize)
    for (const s of this.subscribers) {
      if (!e.key.startsWith(s.prefix)) continue
      this.told++
      s.fn(event)
    }
  }

  /** The keys under `prefix` now, with the number of the last event they include. */
  list(prefix: string): FanoutListing {
    const root = this.rootOf(prefix)
    if (root === undefined) throw new DatastoreError('invalid', `prefix ${JSON.stringify(prefix)} is not served here; served: ${this.roots.map((r) => r.prefix).join(', ')}`)
    if (!this.ready) throw new DatastoreError('unavailable', 'the fan-out has not listed the datastore yet')
    const items = [...root.held].filter(([key]) => key.startsWith(prefix)).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([key, h]) => ({ key, value: h.value, revision: h.revision }))
    return { items, revision: root.revision, epoch: this.epoch, seq: this.seq }
  }

  /**
   * Tells `fn` every event under `prefix` after event `after` of `epoch` (those still kept, at once, then each as it
   * comes); 'compacted' when they are not all kept or the epoch is another. Answers the unsubscribe.
   */
  follow(prefix: string, epoch: string, after: number, fn: FanoutSubscriber): () => void {
    if (this.rootOf(prefix) === undefined) throw new DatastoreError('invalid', `prefix ${JSON.stringify(prefix)} is not served here`)
    if (!this.ready) throw new DatastoreError('unavailable', 'the fan-out has not listed the datastore yet')
    if (epoch !== this.epoch) throw new DatastoreError('compacted', `epoch ${epoch} is not this fan-out's (${this.epoch}): list again`)
    const oldest = this.log[0]?.seq ?? this.seq + 1
    if (after > this.seq || after < oldest - 1) throw new DatastoreError('compacted', `events after ${after} are no longer kept (the oldest kept is ${oldest}): list again`)
    for (const e of this.log) {
      if (e.seq <= after || !e.key.startsWith(prefix)) continue
      this.told++
      fn(e)
    }
    const sub = { prefix, fn }
    this.subscribers.add(sub)
    return () => this.subscribers.delete(sub)
  }

  /** The number of the last event told: a listing made since is the same while it stays. */
  get lastSeq(): number {
    return this.seq
  }

  /** Agents following now. */
  get followers(): number {
    return this.subscribers.size
  }

  close(): void {
    this.closed = true
    if (this.retry !== undefined) clearTimeout(this.retry)
    for (const r of this.roots) r.watch?.close()
    this.subscribers.clear()
  }
}
