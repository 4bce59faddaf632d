// Whether the datastore answers, as the agent sees it: a Datastore wrapper that reads every call's outcome (and a
// probe while calls are rare) into one up/down state, logs each change once (down with its cause, back with how long
// it was down) and counts them for /metrics and /v1/status. It changes no call's result; the pure step is apart.

import type { Logger } from 'pino'
import { DatastoreError, type Datastore, type KeyValue, type ListResult, type NodeBlocks, type TxnApplied, type TxnOp, type Watch, type WatchEvent } from '../config/index.js'

export type DatastoreState = 'up' | 'down'

export interface DatastoreHealth {
  readonly state: DatastoreState
  /** ms since the epoch of the last change (of opening, before any); down since the first unanswered call was made. */
  readonly since: number
  /** Why it is down (the failing call's error), while down. */
  readonly cause?: string
  /** Changes into each state since start. */
  readonly transitions: { readonly up: number; readonly down: number }
}

/** One call's outcome: when it started, and whether it answered or failed for want of the datastore. */
export type Outcome = { readonly startedAt: number; readonly at: number } & ({ readonly ok: true } | { readonly ok: false; readonly cause: string })

export interface Step {
  readonly next: DatastoreHealth
  /** What changed, for the log; undefined when nothing did. */
  readonly change?: { readonly to: 'down'; readonly cause: string } | { readonly to: 'up'; readonly downMs: number }
}

/**
 * The pure transition. Any answer means up. A failure means down unless its call started before the last answer:
 * calls that hung through an outage still time out after the datastore came back, and must not flap it.
 */
export function step(h: DatastoreHealth, o: Outcome, lastAnswerStartedAt: number): Step {
  if (o.ok) {
    if (h.state === 'up') return { next: h }
    return {
      next: { state: 'up', since: o.at, transitions: { ...h.transitions, up: h.transitions.up + 1 } },
      change: { to: 'up', downMs: o.at - h.since },
    }
  }
  if (h.state === 'down' || o.startedAt < lastAnswerStartedAt) return { next: h }
  return {
    next: { state: 'down', since: o.startedAt, cause: o.cause, transitions: { ...h.transitions, down: h.transitions.down + 1 } },
    change: { to: 'down', cause: o.cause },
  }
}

export interface MonitorOptions {
  readonly log: Logger
  /** A probe read when no call has answered for this long (default 5 s), so an idle agent notices too. */
  readonly probeIntervalMs?: number
  readonly now?: () => number
}

const PROBE_KEY = '/pinto/.probe'

/** Only 'unavailable' says the datastore is away; the other codes are answers (conflict, not-found...). */
const unavailable = (err: unknown): err is DatastoreError => err instanceof DatastoreError && err.code === 'unavailable'

export class MonitoredDatastore implements Datastore {
  private h: DatastoreHealth
  private lastAnswerStartedAt = 0
  private lastOutcomeAt: number
  private readonly probe: NodeJS.Timeout
  private probing = false
  private readonly now: () => number

  constructor(
    /** The datastore monitored (the kubernetes datastore also carries its apiserver connection). */
    readonly inner: Datastore,
    private readonly opts: MonitorOptions,
  ) {
    this.now = opts.now ?? Date.now
    this.h = { state: 'up', since: this.now(), transitions: { up: 0, down: 0 } }
    this.lastOutcomeAt = this.now()
    const interval = opts.probeIntervalMs ?? 5000
    this.probe = setInterval(() => void this.probeIfQuiet(interval), Math.max(100, Math.floor(interval / 2)))
    this.probe.unref()
  }

  get transactions(): boolean {
    return this.inner.transactions
  }

  get nodeBlocks(): NodeBlocks | undefined {
    const inner = this.inner.nodeBlocks
    if (inner === undefined) return undefined
    return {
      list: (node) => this.observe(() => inner.list(node)),
      watch: (node, fromRevision, onEvent, onError) => inner.watch(node, fromRevision, onEvent, (err) => this.watchFailed(err, onError)),
    }
  }

  private watchFailed(err: Error, onError: ((err: Error) => void) | undefined): void {
    const at = this.now()
    if (unavailable(err)) this.record({ startedAt: at, at, ok: false, cause: err.message })
    onError?.(err)
  }

  health(): DatastoreHealth {
    return this.h
  }

  private record(o: Outcome): void {
    this.lastOutcomeAt = Math.max(this.lastOutcomeAt, o.at)
    if (o.ok) this.lastAnswerStartedAt = Math.max(this.lastAnswerStartedAt, o.startedAt)
    const { next, change } = step(this.h, o, this.lastAnswerStartedAt)
    this.h = next
    if (change?.to === 'down') this.opts.log.warn({ cause: change.cause }, `datastore down: ${change.cause}`)
    else if (change?.to === 'up') this.opts.log.info({ downSeconds: change.downMs / 1000 }, `datastore back after ${(change.downMs / 1000).toFixed(1)} s down`)
  }

  private async observe<T>(fn: () => Promise<T>): Promise<T> {
    const startedAt = this.now()
    try {
      const v = await fn()
      this.record({ startedAt, at: this.now(), ok: true })
      return v
    } catch (err) {
      // Only 'unavailable' means no answer; 'conflict', 'exists', 'not-found' are answers.
      this.record(unavailable(err) ? { startedAt, at: this.now(), ok: false, cause: err.message } : { startedAt, at: this.now(), ok: true })
      throw err
    }
  }

  private async probeIfQuiet(interval: number): Promise<void> {
    if (this.probing || (this.h.state === 'up' && this.now() - this.lastOutcomeAt < interval)) return
    this.probing = true
    try {
      await this.observe(() => this.inner.get(PROBE_KEY))
    } catch {
      // recorded by observe
    } finally {
      this.probing = false
    }
  }

  get(key: string): Promise<KeyValue | undefined> {
    return this.observe(() => this.inner.get(key))
  }

  list(prefix: string): Promise<ListResult> {
    return this.observe(() => this.inner.list(prefix))
  }

  create(key: string, value: string): Promise<KeyValue> {
    return this.observe(() => this.inner.create(key, value))
  }

  update(key: string, value: string, revision: number): Promise<KeyValue> {
    return this.observe(() => this.inner.update(key, value, revision))
  }

  delete(key: string, revision?: number): Promise<void> {
    return this.observe(() => this.inner.delete(key, revision))
  }

  txn(ops: readonly TxnOp[], applied?: TxnApplied): Promise<KeyValue[]> {
    return this.observe(() => this.inner.txn(ops, applied))
  }

  watch(prefix: string, fromRevision: number, onEvent: (event: WatchEvent) => void, onError?: (err: Error) => void): Watch {
    return this.inner.watch(prefix, fromRevision, onEvent, (err) => this.watchFailed(err, onError))
  }

  async close(): Promise<void> {
    clearInterval(this.probe)
    await this.inner.close()
  }
}
