// The etcd v3 datastore backend over the `etcd3` client: CAS through transactions on the key's mod revision.
// It owns mapping the Datastore contract onto etcd and etcd's failures onto DatastoreError codes; it must never
// hang: every call is bounded, and an unreachable cluster is reported as 'unavailable' naming the endpoints.

import { isIP } from 'node:net'
import tls from 'node:tls'
import { ConsecutiveBreaker, circuitBreaker, handleWhen, noop } from 'cockatiel'
import { Etcd3, EtcdError, Range, isRecoverableError, type IKeyValue, type Watcher } from 'etcd3'
import { DatastoreError, type Datastore, type KeyValue, type ListResult, type TxnOp, type Watch, type WatchEvent, checkFailure, checkTxnOps } from './datastore.js'
import type { EtcdCredentials } from './etcd-tls.js'
import { tlsFailure } from './etcd-tls-errors.js'

export interface EtcdOptions {
  /** Upper bound for one call, connecting included. Default 3.5 s (the contract promises an answer within 5 s). */
  readonly timeoutMs?: number
  /** TLS (https:// endpoints) with these credentials; absent: plain http. */
  readonly tls?: EtcdCredentials
  /** Bytes a list aims to fetch per page (default 1 MiB); a page never holds more than 5,000 keys (MAX_PAGE_KEYS). */
  readonly listPageBytes?: number
}

const MAX_PAGE_KEYS = 5000
const FIRST_PAGE_KEYS = 16
/**
 * gRPC refuses a received message over 4 MiB by default, and the client's fault handling takes that refusal
 * for a failing server (it retries, then opens its circuit breaker), so a reply must never come near the cap:
 * pages are sized far below it, and the cap is raised for a page of records larger than the ones seen before.
 */
const MAX_RECEIVE_BYTES = 256 << 20

/**
 * How long a failing endpoint is passed over before it is tried again. The client's own default (3 failures,
 * then 5 s) outlives an etcd that was only slow: after a short outage every call would fail for 5 s more.
 * With one endpoint there is nothing to fail over to, so it has no breaker at all: each call's deadline bounds it.
 */
const ENDPOINT_HOLD_OFF_MS = 1000
const hostPolicy = (endpoints: number) => () =>
  endpoints > 1 ? circuitBreaker(handleWhen(isRecoverableError), { halfOpenAfter: ENDPOINT_HOLD_OFF_MS, breaker: new ConsecutiveBreaker(3) }) : noop

/**
 * grpc-js names the endpoint's host as the TLS server name (SNI) even when it is an IP address, and etcd is
 * mostly reached by IP. RFC 6066 has no IP server names: Node 20 warns DEP0123 on the first connection, and
 * the Node that pinto's image ships refuses the connection outright. So an IP server name is left out of
 * every tls.connect of this process (grpc-js calls it through the module object); the certificate is still
 * checked against the address (Node checks `host` when there is no server name).
 */
let ipServernameOmitted = false
function omitIpServername(): void {
  if (ipServernameOmitted) return
  ipServernameOmitted = true
  const connect = tls.connect.bind(tls) as (...args: unknown[]) => tls.TLSSocket
  tls.connect = ((...args: unknown[]) => {
    const i = args.findIndex((a) => typeof a === 'object' && a !== null)
    const opts = args[i] as tls.ConnectionOptions | undefined
    if (opts?.servername !== undefined && isIP(opts.servername) !== 0) {
      const { servername: _, ...rest } = opts
      args[i] = rest
    }
    return connect(...args)
  })
}

const toKv = (kv: IKeyValue): KeyValue => ({ key: kv.key.toString('utf8'), value: kv.value.toString('utf8'), revision: Number(kv.mod_revision) })

function checkKey(key: unknown): asserts key is string {
  if (typeof key !== 'string' || key.length === 0) throw new DatastoreError('invalid', `key must be a non-empty string, got ${JSON.stringify(key)}`)
}

function checkValue(key: string, value: unknown): asserts value is string {
  if (typeof value !== 'string') throw new DatastoreError('invalid', `value for key ${key} must be a string`, key)
}

export class EtcdDatastore implements Datastore {
  readonly transactions = true
  private readonly client: Etcd3
  private readonly timeoutMs: number
  private readonly pageBytes: number
  private readonly tls: EtcdCredentials | undefined
  /** The endpoints as URLs, as errors name them. */
  readonly urls: string
  private readonly watchers = new Set<Watcher>()
  private closed = false

  private constructor(
    readonly endpoints: readonly string[],
    options: EtcdOptions,
  ) {
    this.timeoutMs = options.timeoutMs ?? 3500
    this.pageBytes = Math.max(1, options.listPageBytes ?? 1 << 20)
    this.tls = options.tls
    const hosts = endpoints.map((e) => `${this.tls ? 'https' : 'http'}://${e}`)
    this.urls = hosts.join(',')
    const { rootCertificate, certChain, privateKey } = options.tls ?? {}
    if (options.tls) omitIpServername()
    this.client = new Etcd3({
      hosts,
      ...(rootCertificate ? { credentials: { rootCertificate, ...(certChain ? { certChain } : {}), ...(privateKey ? { privateKey } : {}) } } : {}),
      dialTimeout: this.timeoutMs,
      faultHandling: { host: hostPolicy(hosts.length) },
      grpcOptions: { 'grpc.max_receive_message_length': MAX_RECEIVE_BYTES },
      // A deadline on every unary call; streams (watch) reconnect on their own.
      defaultCallOptions: (ctx) => (ctx.isStream ? {} : { deadline: Date.now() + this.timeoutMs }),
    })
  }

  /** Connects and proves the cluster answers; 'unavailable' naming the endpoints when it does not. */
  static async open(endpoints: readonly string[], options: EtcdOptions = {}): Promise<EtcdDatastore> {
    if (endpoints.length === 0) throw new DatastoreError('invalid', 'etcd datastore needs at least one endpoint')
    const store = new EtcdDatastore(endpoints, options)
    try {
      await store.call('connect', async () => store.client.get('/pinto/.probe').exec())
    } catch (err) {
      await store.close()
      throw err
    }
    return store
  }

  /** Runs one etcd call under a hard deadline and maps failures onto DatastoreError. */
  private async call<T>(what: string, fn: () => Promise<T>): Promise<T> {
    if (this.closed) throw new DatastoreError('unavailable', `etcd datastore (${this.urls}) is closed`)
    let timer: NodeJS.Timeout | undefined
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new DatastoreError('unavailable', `etcd at ${this.urls} did not answer ${what} within ${this.timeoutMs} ms`)),
        this.timeoutMs + 500,
      )
    })
    try {
      return await Promise.race([fn(), deadline])
    } catch (err) {
      if (err instanceof DatastoreError) throw err
      const tls = this.tls && tlsFailure(this.urls, this.tls, err)
      if (tls) throw tls
      throw new DatastoreError('unavailable', `etcd at ${this.urls} failed ${what}: ${(err as Error).message.replace(/\s*\n\s*/g, ' ')}`)
    } finally {
      clearTimeout(timer)
    }
  }

  async get(key: string): Promise<KeyValue | undefined> {
    checkKey(key)
    const res = await this.call(`get ${key}`, () => this.client.get(key).exec())
    const kv = res.kvs[0]
    return kv && toKv(kv)
  }

  /**
   * A prefix read in pages, all at the revision of the first, so the result is one consistent snapshot however
   * large. A page holds about `listPageBytes`, sized from the largest record seen so far.
   */
  async list(prefix: string): Promise<ListResult> {
    if (typeof prefix !== 'string') throw new DatastoreError('invalid', 'list prefix must be a string')
    const { start: first, end } = Range.prefix(prefix)
    const items: KeyValue[] = []
    let start = first
    let revision: string | undefined
    let limit = FIRST_PAGE_KEYS
    let largest = 1
    for (;;) {
      const range = new Range(start, end)
      const page = await this.call(`list ${prefix}`, () => {
        const req = this.client.getAll().inRange(range).limit(limit)
        return (revision === undefined ? req : req.revision(revision)).exec()
      })
      revision ??= page.header.revision
      for (const kv of page.kvs) {
        items.push(toKv(kv))
        largest = Math.max(largest, kv.key.length + kv.value.length)
      }
      const last = page.kvs[page.kvs.length - 1]
      if (!page.more || last === undefined) break
      start = Buffer.concat([last.key, Buffer.from([0])])
      limit = Math.min(MAX_PAGE_KEYS, Math.max(1, Math.floor(this.pageBytes / largest)))
    }
    return { items, revision: Number(revision ?? 0) }
  }

  async create(key: string, value: string): Promise<KeyValue> {
    checkKey(key)
    checkValue(key, value)
    const res = await this.call(`create ${key}`, () => this.client.if(key, 'Create', '==', 0).then(this.client.put(key).value(value)).commit())
    if (!res.succeeded) throw new DatastoreError('exists', `key ${key} already exists`, key)
    return { key, value, revision: Number(res.header.revision) }
  }

  async update(key: string, value: string, revision: number): Promise<KeyValue> {
    checkKey(key)
    checkValue(key, value)
    const res = await this.call(`update ${key}`, () =>
      this.client.if(key, 'Mod', '==', revision).then(this.client.put(key).value(value)).else(this.client.get(key)).commit(),
    )
    if (!res.succeeded) throw this.casFailure(key, revision, res.responses[0]?.response_range?.kvs[0])
    return { key, value, revision: Number(res.header.revision) }
  }

  async delete(key: string, revision?: number): Promise<void> {
    checkKey(key)
    const res = await this.call(`delete ${key}`, () =>
      revision === undefined
        ? this.client.if(key, 'Create', '>', 0).then(this.client.delete().key(key)).else(this.client.get(key)).commit()
        : this.client.if(key, 'Mod', '==', revision).then(this.client.delete().key(key)).else(this.client.get(key)).commit(),
    )
    if (!res.succeeded) throw this.casFailure(key, revision, res.responses[0]?.response_range?.kvs[0])
  }

  /**
   * One etcd Txn: each op's precondition is a compare (create: CreateRevision 0; update, check and a delete
   * with a revision: ModRevision; a bare delete: CreateRevision > 0), a check writing nothing; when one fails the else branch reads every key,
   * from which the first failing op is named.
   */
  async txn(ops: readonly TxnOp[]): Promise<KeyValue[]> {
    checkTxnOps(ops)
    const res = await this.call(`txn on ${ops.map((o) => o.key).join(', ')}`, () => {
      let cmp: ReturnType<Etcd3['if']> | undefined
      for (const o of ops) {
        // An absent key compares as mod revision 0, so a check of absence is the same compare.
        const [column, op, value] = o.op === 'create' ? (['Create', '==', 0] as const) : o.revision === undefined ? (['Create', '>', 0] as const) : (['Mod', '==', o.revision] as const)
        cmp = cmp === undefined ? this.client.if(o.key, column, op, value) : cmp.and(o.key, column, op, value)
      }
      const writes = ops.flatMap((o) => (o.op === 'check' ? [] : [o.op === 'delete' ? this.client.delete().key(o.key) : this.client.put(o.key).value(o.value)]))
      return (cmp as ReturnType<Etcd3['if']>)
        .then(...writes)
        .else(...ops.map((o) => this.client.get(o.key)))
        .commit()
    })
    const revision = Number(res.header.revision)
    if (res.succeeded) return ops.map((o) => ({ key: o.key, value: o.op === 'delete' || o.op === 'check' ? '' : o.value, revision: o.op === 'check' ? o.revision : revision }))
    for (const [i, o] of ops.entries()) {
      const current = res.responses[i]?.response_range?.kvs[0]
      if (o.op === 'check') {
        const failure = checkFailure(o.key, o.revision, current === undefined ? undefined : Number(current.mod_revision))
        if (failure) throw failure
      } else if (o.op === 'create') {
        if (current) throw new DatastoreError('exists', `key ${o.key} already exists`, o.key)
      } else if (!current || (o.revision !== undefined && Number(current.mod_revision) !== o.revision)) {
        throw this.casFailure(o.key, o.revision, current)
      }
    }
    // The reads ran in the same transaction as the compare, so one of the checks above fails; never reached.
    throw new DatastoreError('conflict', `txn on ${ops.map((o) => o.key).join(', ')}: a precondition failed`, ops[0]?.key)
  }

  private casFailure(key: string, wanted: number | undefined, current: IKeyValue | undefined): DatastoreError {
    if (!current) return new DatastoreError('not-found', `key ${key} does not exist`, key)
    return new DatastoreError('conflict', `key ${key} is at revision ${current.mod_revision}, not ${wanted}`, key)
  }

  watch(prefix: string, fromRevision: number, onEvent: (event: WatchEvent) => void, onError?: (err: Error) => void): Watch {
    let watcher: Watcher | undefined
    let closed = false
    const fail = (err: Error): void => {
      if (closed) return
      closed = true
      if (watcher) void this.cancel(watcher)
      onError?.(err)
    }
    this.client
      .watch()
      .prefix(prefix)
      // etcd reads 0 as "from now"; our contract says "from this revision", so 0 means the oldest kept.
      .startRevision(String(Math.max(1, fromRevision)))
      .create()
      .then((w) => {
        watcher = w
        this.watchers.add(w)
        if (closed) return void this.cancel(w)
        w.on('put', (kv) => !closed && onEvent({ type: 'put', key: kv.key.toString('utf8'), value: kv.value.toString('utf8'), revision: Number(kv.mod_revision) }))
        w.on('delete', (kv) => !closed && onEvent({ type: 'delete', key: kv.key.toString('utf8'), revision: Number(kv.mod_revision) }))
        w.on('error', (err: EtcdError) => {
          void this.isCompacted(fromRevision, err).then((compacted) =>
            fail(
              compacted
                ? new DatastoreError('compacted', `etcd watch on ${prefix} from revision ${fromRevision}: revision is compacted; relist and watch again`)
                : new DatastoreError('unavailable', `etcd watch on ${prefix} from revision ${fromRevision}: ${err.message}`),
            ),
          )
        })
      })
      .catch((err: Error) => fail(new DatastoreError('unavailable', `etcd at ${this.urls}: cannot watch ${prefix}: ${err.message}`)))
    return {
      close: () => {
        closed = true
        if (watcher) void this.cancel(watcher)
      },
    }
  }

  /**
   * etcd cancels a watch whose start revision is compacted, but the client drops the compact_revision field and
   * passes an empty cancel reason; a read at that revision tells us for sure.
   */
  private async isCompacted(revision: number, err: Error): Promise<boolean> {
    if (/compacted/i.test(err.message)) return true
    try {
      await this.call('compaction probe', () => this.client.get('/pinto/.probe').revision(Math.max(1, revision)).exec())
      return false
    } catch (probe) {
      return /compacted/i.test((probe as Error).message)
    }
  }

  private async cancel(w: Watcher): Promise<void> {
    this.watchers.delete(w)
    await w.cancel().catch(() => undefined)
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    await Promise.all([...this.watchers].map((w) => this.cancel(w)))
    this.client.close()
  }
}

export function openEtcdDatastore(endpoints: readonly string[], options?: EtcdOptions): Promise<EtcdDatastore> {
  return EtcdDatastore.open(endpoints, options)
}
