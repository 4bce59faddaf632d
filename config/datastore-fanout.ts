// An agent's datastore behind a fan-out (pinto-fanout, Typha's place): the lists and watches of the keys the
// fan-out serves (`roots`: the agent's are the resources, with the Kubernetes Nodes, and the block affinities,
// agent/fanout/roots.ts) go to it, and
// everything else (reads, writes, one node's blocks) to the datastore itself. So the datastore serves one list and
// one watch per fan-out replica for what every agent follows, instead of one per agent.
// Invariants a reader must know:
// 1. A watch goes on from where a listing of this client left off: the listing's (epoch, seq), remembered by
//    the listing's prefix and revision. A watch from any other revision, or one whose fan-out can no longer go
//    on (another replica, a restart, events no longer kept), fails with 'compacted': the caller lists again.
// 2. Revisions are the store's own, so what was read can be written. On a store without transactions the fan-out
//    tells no put that leaves a value's bytes as they were (agent/fanout/view.ts), so a held revision can be older
//    than the store's; a writer there reads before it writes.
// 3. A broken stream reconnects (to the next address after a failure) and goes on after its last event; it is
//    `behind` meanwhile. Past WATCH_GIVE_UP_MS of failing it fails with 'unavailable'.

import { Agent, request, type IncomingMessage } from 'node:http'
import { DatastoreError, type Datastore, type KeyValue, type ListResult, type TxnApplied, type TxnOp, type Watch, type WatchEvent } from './datastore.js'

export const FANOUT_PORT = 5474
const REQUEST_MS = 3500
/** A stream with no line (events or the fan-out's ticks every 15 s) for this long is taken as dead. */
const STREAM_IDLE_MS = 45_000
const RETRY_MS = 100
const RETRY_MAX_MS = 3000
const WATCH_GIVE_UP_MS = 120_000

export interface FanoutOptions {
  /** The key roots the fan-out serves; lists and watches under them go to it, all else to the datastore. */
  readonly roots: readonly string[]
  /** `host:port` of each fan-out replica; the client starts at `start` (mod their number) and moves on after a failure. */
  readonly addresses: readonly string[]
  readonly start?: number
  /** Finds the replicas again once every one known has failed in a row (a Service's endpoints). */
  readonly resolve?: (() => Promise<readonly string[]>) | undefined
  /** The bearer token the fan-out wants, if it wants one. */
  readonly token?: string | undefined
}

interface Position {
  readonly epoch: string
  readonly seq: number
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/** The fan-out's answer to a failed request, as the datastore error its code names. */
function answerError(status: number, body: string, what: string): DatastoreError {
  let code = 'unavailable'
  let message = body.slice(0, 300)
  try {
    const parsed: unknown = JSON.parse(body)
    const e = isRecord(parsed) && isRecord(parsed.error) ? parsed.error : undefined
    if (typeof e?.code === 'string') code = e.code
    if (typeof e?.message === 'string') message = e.message
  } catch {
    // Not the fan-out's JSON: keep the text.
  }
  const known = code === 'compacted' || code === 'invalid' ? code : 'unavailable'
  return new DatastoreError(known, `fan-out ${what}: ${status} ${message}`)
}

function parseEvent(line: string): (WatchEvent & { seq: number }) | { type: 'tick'; seq: number } {
  const e: unknown = JSON.parse(line)
  if (!isRecord(e) || typeof e.seq !== 'number') throw new Error(`not a fan-out event: ${line.slice(0, 200)}`)
  if (e.type === 'tick') return { type: 'tick', seq: e.seq }
  if (typeof e.key !== 'string' || typeof e.revision !== 'number') throw new Error(`not a fan-out event: ${line.slice(0, 200)}`)
  if (e.type === 'delete') return { type: 'delete', key: e.key, revision: e.revision, seq: e.seq }
  if (e.type === 'put' && typeof e.value === 'string') return { type: 'put', key: e.key, value: e.value, revision: e.revision, seq: e.seq }
  throw new Error(`not a fan-out event: ${line.slice(0, 200)}`)
}

export class FanoutDatastore implements Datastore {
  readonly transactions: boolean
  readonly nodeBlocks: Datastore['nodeBlocks']
  /** The datastore's own apiserver connection where it has one (the kubernetes datastore's), for the agent's other readers. */
  readonly api: unknown
  private addresses: readonly string[]
  private current: number
  /** Failures in a row, over every replica; at their number the replicas are found again (options.resolve). */
  private failures = 0
  private resolving: Promise<void> | undefined
  private readonly requests = new Agent({ keepAlive: true, maxSockets: 4 })
  private readonly streams = new Agent({ keepAlive: false })
  /** Where each recent listing left off, by `${prefix}\0${revision}`. */
  private readonly positions = new Map<string, Position>()
  private readonly watches = new Set<FanoutWatch>()

  constructor(
    private readonly inner: Datastore,
    private readonly options: FanoutOptions,
  ) {
    if (options.addresses.length === 0) throw new DatastoreError('invalid', 'a fan-out needs at least one address')
    this.addresses = options.addresses
    this.current = Math.abs(options.start ?? 0) % options.addresses.length
    this.transactions = inner.transactions
    this.nodeBlocks = inner.nodeBlocks
    this.api = (inner as { readonly api?: unknown }).api
  }

  /** Whether the fan-out serves `prefix`. */
  serves(prefix: string): boolean {
    return this.options.roots.some((r) => prefix.startsWith(r))
  }

  /** The replica in use now, as `host:port`. */
  get address(): string {
    return this.addresses[this.current] as string
  }

  /** Moves on to the next replica after `failed` failed (unless another caller has already). */
  moveOn(failed: string): void {
    if (this.address !== failed) return
    this.current = (this.current + 1) % this.addresses.length
    if (++this.failures >= this.addresses.length) void this.refresh()
  }

  /** A replica answered. */
  answered(): void {
    this.failures = 0
  }

  /** Finds the replicas again (once at a time); keeps those known when that fails or finds none. */
  refresh(): Promise<void> {
    const resolve = this.options.resolve
    if (resolve === undefined) return Promise.resolve()
    this.resolving ??= resolve()
      .then((found) => {
        if (found.length === 0) return
        const now = this.address
        this.addresses = [...found]
        this.current = Math.max(0, found.indexOf(now))
        this.failures = 0
      })
      .catch(() => undefined)
      .finally(() => {
        this.resolving = undefined
      })
    return this.resolving
  }

  headers(): Record<string, string> {
    return this.options.token !== undefined && this.options.token !== '' ? { authorization: `Bearer ${this.options.token}` } : {}
  }

  /** GET `path` from one replica: the response, or its failure as a DatastoreError. */
  open(address: string, path: string, stream: boolean): Promise<IncomingMessage> {
    const at = address.lastIndexOf(':')
    const host = address.slice(0, at).replace(/^\[|\]$/g, '')
    return new Promise((resolve, reject) => {
      const req = request({ host, port: Number(address.slice(at + 1)), path, headers: this.headers(), agent: stream ? this.streams : this.requests, timeout: REQUEST_MS }, resolve)
      req.on('timeout', () => req.destroy(new Error(`no answer within ${REQUEST_MS} ms`)))
      req.on('error', (err) => reject(new DatastoreError('unavailable', `fan-out ${address}: ${err.message}`)))
      req.end()
    })
  }

  async get(key: string): Promise<KeyValue | undefined> {
    return this.inner.get(key)
  }

  async list(prefix: string): Promise<ListResult> {
    if (!this.serves(prefix)) return this.inner.list(prefix)
    let last: Error | undefined
    for (let tries = 0; tries < this.addresses.length; tries++) {
      const address = this.address
      try {
        const listing = await this.listFrom(address, prefix)
        this.answered()
        this.remember(prefix, listing.revision, { epoch: listing.epoch, seq: listing.seq })
        return { items: listing.items, revision: listing.revision }
      } catch (err) {
        if (!(err instanceof DatastoreError) || err.code !== 'unavailable') throw err
        last = err
        this.moveOn(address)
      }
    }
    await this.resolving
    throw last as Error
  }

  private async listFrom(address: string, prefix: string): Promise<{ items: KeyValue[]; revision: number; epoch: string; seq: number }> {
    const res = await this.open(address, `/v1/list?prefix=${encodeURIComponent(prefix)}`, false)
    const chunks: Buffer[] = []
    for await (const c of res) chunks.push(c as Buffer)
    const body = Buffer.concat(chunks).toString('utf8')
    if (res.statusCode !== 200) throw answerError(res.statusCode ?? 0, body, `list of ${prefix} at ${address}`)
    const l: unknown = JSON.parse(body)
    if (!isRecord(l) || !Array.isArray(l.items) || typeof l.revision !== 'number' || typeof l.epoch !== 'string' || typeof l.seq !== 'number') {
      throw new DatastoreError('unavailable', `fan-out ${address}: a listing of ${prefix} that is not one`)
    }
    return { items: l.items as KeyValue[], revision: l.revision, epoch: l.epoch, seq: l.seq }
  }

  private remember(prefix: string, revision: number, at: Position): void {
    this.positions.set(`${prefix}\0${revision}`, at)
    if (this.positions.size > 64) this.positions.delete(this.positions.keys().next().value as string)
  }

  async create(key: string, value: string): Promise<KeyValue> {
    return this.inner.create(key, value)
  }

  async update(key: string, value: string, revision: number): Promise<KeyValue> {
    return this.inner.update(key, value, revision)
  }

  async delete(key: string, revision?: number): Promise<void> {
    return this.inner.delete(key, revision)
  }

  async txn(ops: readonly TxnOp[], applied?: TxnApplied): Promise<KeyValue[]> {
    return this.inner.txn(ops, applied)
  }

  watch(prefix: string, fromRevision: number, onEvent: (event: WatchEvent) => void, onError?: (err: Error) => void): Watch {
    if (!this.serves(prefix)) return this.inner.watch(prefix, fromRevision, onEvent, onError)
    const at = this.positions.get(`${prefix}\0${fromRevision - 1}`)
    const w = new FanoutWatch(this, prefix, at, onEvent, (err) => {
      this.watches.delete(w)
      onError?.(err)
    })
    this.watches.add(w)
    w.start(fromRevision)
    return { close: () => { this.watches.delete(w); w.close() }, behind: () => w.behind }
  }

  async close(): Promise<void> {
    for (const w of this.watches) w.close()
    this.watches.clear()
    this.requests.destroy()
    this.streams.destroy()
    await this.inner.close()
  }
}

/** One prefix's event stream from the fan-out, reconnecting and going on after its last event. */
class FanoutWatch {
  private res: IncomingMessage | undefined
  private closed = false
  private failingSince: number | undefined
  private delay = RETRY_MS
  private timer: NodeJS.Timeout | undefined
  private idle: NodeJS.Timeout | undefined
  behind = false

  constructor(
    private readonly client: FanoutDatastore,
    private readonly prefix: string,
    private at: Position | undefined,
    private readonly onEvent: (event: WatchEvent) => void,
    private readonly onError: (err: Error) => void,
  ) {}

  start(fromRevision: number): void {
    if (this.at === undefined) {
      const err = new DatastoreError('compacted', `fan-out watch of ${this.prefix} from revision ${fromRevision}: a watch goes on from a listing of this client; list again`)
      queueMicrotask(() => this.stop(err))
      return
    }
    void this.connect()
  }

  private async connect(): Promise<void> {
    if (this.closed || this.at === undefined) return
    const address = this.client.address
    const path = `/v1/watch?prefix=${encodeURIComponent(this.prefix)}&epoch=${encodeURIComponent(this.at.epoch)}&after=${this.at.seq}`
    let res: IncomingMessage
    try {
      res = await this.client.open(address, path, true)
    } catch (err) {
      return this.retry(address, err as Error)
    }
    if (this.closed) return void res.destroy()
    if (res.statusCode !== 200) {
      const chunks: Buffer[] = []
      for await (const c of res) chunks.push(c as Buffer)
      const err = answerError(res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8'), `watch of ${this.prefix} at ${address}`)
      return err.code === 'unavailable' ? this.retry(address, err) : this.stop(err)
    }
    this.res = res
    res.setEncoding('utf8')
    let partial = ''
    this.touch(res)
    res.on('data', (chunk: string) => {
      this.touch(res)
      const lines = (partial + chunk).split('\n')
      partial = lines.pop() ?? ''
      for (const line of lines) if (line !== '' && !this.line(line)) return void res.destroy()
    })
    res.on('close', () => {
      clearTimeout(this.idle)
      if (this.res === res) this.retry(address, new Error('the stream ended'))
    })
  }

  /** One line of the stream; false when it is not an event (the stream is dropped and reconnected). */
  private line(line: string): boolean {
    let e
    try {
      e = parseEvent(line)
    } catch {
      return false
    }
    // A line is proof the stream works again.
    this.client.answered()
    this.failingSince = undefined
    this.delay = RETRY_MS
    this.behind = false
    this.at = { epoch: (this.at as Position).epoch, seq: e.seq }
    if (e.type === 'tick' || this.closed) return true
    const { seq: _seq, ...event } = e
    this.onEvent(event)
    return true
  }

  private touch(res: IncomingMessage): void {
    clearTimeout(this.idle)
    this.idle = setTimeout(() => res.destroy(), STREAM_IDLE_MS)
    this.idle.unref()
  }

  private retry(address: string, err: Error): void {
    this.res = undefined
    if (this.closed) return
    this.behind = true
    this.client.moveOn(address)
    const now = Date.now()
    this.failingSince ??= now
    if (now - this.failingSince > WATCH_GIVE_UP_MS) {
      return this.stop(new DatastoreError('unavailable', `fan-out watch of ${this.prefix}: failing for ${WATCH_GIVE_UP_MS / 1000} s: ${err.message}`))
    }
    this.timer = setTimeout(() => void this.connect(), this.delay)
    this.delay = Math.min(RETRY_MAX_MS, this.delay * 2)
  }

  private stop(err: Error): void {
    if (this.closed) return
    this.close()
    this.onError(err)
  }

  close(): void {
    this.closed = true
    clearTimeout(this.timer)
    clearTimeout(this.idle)
    const res = this.res
    this.res = undefined
    res?.destroy()
  }
}
