// A cache of one kind of Kubernetes object (Pods on a node, Services, EndpointSlices, one Node...) kept current as
// client-go's informers keep theirs: a paged list, then a watch from the list's resourceVersion with bookmarks,
// resumed from the last version seen when the stream breaks or the apiserver ends it, and a fresh list when the
// apiserver says 410 Gone. Subscribers see each change once, in order, as (type, object, the object before); a
// relist reports what changed while the watch was away, deletes included. It never gives up: a failing apiserver is
// retried with backoff, and reported to onError once per failing stretch.

import type { KubeObject } from './objects.js'
import { isObject } from './objects.js'
import type { KubeHttp, KubeStream, Query } from './kube-http.js'

export interface InformerOptions {
  /** The collection's path, e.g. /api/v1/pods or /apis/discovery.k8s.io/v1/endpointslices. */
  readonly path: string
  /** What the errors call it, e.g. "pods on node-1". */
  readonly what: string
  readonly fieldSelector?: string
  readonly labelSelector?: string
  /** Objects a list page asks for (default 500). */
  readonly pageSize?: number
}

export type InformerEventType = 'added' | 'modified' | 'deleted'

export interface InformerEvent<T extends KubeObject> {
  readonly type: InformerEventType
  readonly object: T
  /** The object as the cache held it before a modification or deletion. */
  readonly old?: T
}

/** The cache's key of an object: namespace/name, or the name of a cluster-scoped one. */
export function objectKey(o: KubeObject): string {
  const ns = o.metadata['namespace']
  return typeof ns === 'string' && ns !== '' ? `${ns}/${o.metadata.name}` : o.metadata.name
}

const RETRY_MS = 200
const RETRY_MAX_MS = 5000
/** The apiserver ends each watch after about this long (a fresh one resumes); bookmarks keep an idle one alive. */
const WATCH_SECONDS = 300
const WATCH_IDLE_MS = 150_000

interface Status {
  readonly code?: number
  readonly message?: string
}

export class Informer<T extends KubeObject = KubeObject> {
  private readonly cache = new Map<string, T>()
  private readonly listeners = new Set<(e: InformerEvent<T>) => void>()
  private resourceVersion = ''
  private stream: KubeStream | undefined
  private timer: NodeJS.Timeout | undefined
  private retryMs = RETRY_MS
  private failing = false
  private closed = false
  private synced: Promise<void> | undefined
  private markSynced: (() => void) | undefined
  /** Lists and watch streams opened, for the request-rate figures. */
  readonly counts = { lists: 0, watches: 0, relists: 0 }

  constructor(
    private readonly http: KubeHttp,
    private readonly options: InformerOptions,
    private readonly onError: (err: Error) => void = () => undefined,
  ) {}

  /** Starts listing and watching; resolves once the first list is in the cache (and keeps retrying until it is). */
  start(): Promise<void> {
    this.synced ??= new Promise<void>((resolve) => {
      this.markSynced = resolve
      void this.relist()
    })
    return this.synced
  }

  onEvent(fn: (e: InformerEvent<T>) => void): () => void {
    this.listeners.add(fn)
    return () => this.listeners.delete(fn)
  }

  get(key: string): T | undefined {
    return this.cache.get(key)
  }

  list(): T[] {
    return [...this.cache.values()]
  }

  get size(): number {
    return this.cache.size
  }

  close(): void {
    this.closed = true
    clearTimeout(this.timer)
    this.stream?.close()
    this.stream = undefined
  }

  private selectors(): Query {
    return { fieldSelector: this.options.fieldSelector, labelSelector: this.options.labelSelector }
  }

  private emit(e: InformerEvent<T>): void {
    for (const fn of this.listeners) fn(e)
  }

  /** A list in pages; the cache becomes it, and what differs from before is reported. */
  private async relist(): Promise<void> {
    if (this.closed) return
    this.counts.lists++
    try {
      const seen = new Map<string, T>()
      let next: string | undefined
      let version = ''
      do {
        const r = await this.http.request('GET', this.options.path, { ...this.selectors(), limit: this.options.pageSize ?? 500, continue: next })
        if (r.status !== 200 || !isObject(r.body)) throw this.failure(`list ${this.options.what}`, r.status, r.body, r.text)
        const meta = isObject(r.body.metadata) ? r.body.metadata : {}
        const items = Array.isArray(r.body.items) ? (r.body.items as T[]) : []
        for (const o of items) if (isObject(o) && isObject(o.metadata)) seen.set(objectKey(o), o)
        version = typeof meta.resourceVersion === 'string' ? meta.resourceVersion : version
        next = typeof meta.continue === 'string' && meta.continue !== '' ? meta.continue : undefined
      } while (next !== undefined)
      if (this.closed) return
      for (const [key, old] of this.cache) {
        if (!seen.has(key)) {
          this.cache.delete(key)
          this.emit({ type: 'deleted', object: old, old })
        }
      }
      for (const [key, o] of seen) {
        const old = this.cache.get(key)
        this.cache.set(key, o)
        if (old === undefined) this.emit({ type: 'added', object: o })
        else if (old.metadata.resourceVersion !== o.metadata.resourceVersion) this.emit({ type: 'modified', object: o, old })
      }
      this.resourceVersion = version
      this.recovered()
      this.markSynced?.()
      this.markSynced = undefined
      this.watch()
    } catch (err) {
      this.retry(err as Error, () => void this.relist())
    }
  }

  private watch(): void {
    if (this.closed) return
    this.counts.watches++
    const query = { ...this.selectors(), watch: 1, allowWatchBookmarks: true, resourceVersion: this.resourceVersion, timeoutSeconds: WATCH_SECONDS }
    this.stream = this.http.stream(this.options.path, query, WATCH_IDLE_MS, (line) => this.onLine(line), (end) => this.onEnd(end))
  }

  private onLine(line: string): void {
    let e: { type?: string; object?: unknown }
    try {
      e = JSON.parse(line) as typeof e
    } catch {
      return this.restartWith(new Error(`watch of ${this.options.what}: a line that is not JSON: ${line.slice(0, 200)}`))
    }
    const o = e.object
    if (e.type === 'ERROR') {
      const s = (isObject(o) ? o : {}) as Status
      if (s.code === 410) return this.gone()
      return this.restartWith(new Error(`watch of ${this.options.what}: ${s.message ?? 'error'}`))
    }
    if (!isObject(o) || !isObject(o.metadata)) return
    const obj = o as T
    const rv = obj.metadata.resourceVersion
    if (typeof rv === 'string' && rv !== '') this.resourceVersion = rv
    this.recovered()
    if (e.type === 'BOOKMARK') return
    const key = objectKey(obj)
    const old = this.cache.get(key)
    if (e.type === 'DELETED') {
      this.cache.delete(key)
      this.emit({ type: 'deleted', object: obj, ...(old ? { old } : {}) })
    } else if (e.type === 'ADDED' || e.type === 'MODIFIED') {
      this.cache.set(key, obj)
      this.emit(old === undefined ? { type: 'added', object: obj } : { type: 'modified', object: obj, old })
    }
  }

  private onEnd(end: { status?: number; body?: unknown; error?: Error }): void {
    this.stream = undefined
    if (this.closed) return
    if (end.status === 410) return this.gone()
    if (end.status === undefined && end.error === undefined) return this.watch() // the apiserver ended it: resume
    const err = end.error
      ? new Error(`kubernetes apiserver ${this.http.server}: watch ${this.options.what}: ${end.error.message}`)
      : this.failure(`watch ${this.options.what}`, end.status ?? 0, end.body, '')
    this.retry(err, () => this.watch())
  }

  /** 410 Gone: the version is compacted away; what changed meanwhile comes from a fresh list. */
  private gone(): void {
    this.stream?.close()
    this.stream = undefined
    this.counts.relists++
    void this.relist()
  }

  private restartWith(err: Error): void {
    this.stream?.close()
    this.stream = undefined
    this.retry(err, () => this.watch())
  }

  private retry(err: Error, again: () => void): void {
    if (this.closed) return
    if (!this.failing) {
      this.failing = true
      this.onError(err)
    }
    this.timer = setTimeout(again, this.retryMs)
    this.retryMs = Math.min(RETRY_MAX_MS, this.retryMs * 2)
  }

  private recovered(): void {
    this.failing = false
    this.retryMs = RETRY_MS
  }

  private failure(what: string, status: number, body: unknown, text: string): Error {
    const message = isObject(body) && typeof body.message === 'string' ? body.message : text.trim().slice(0, 200) || `status ${status}`
    const hint = status === 401 || status === 403 ? '; check the credentials and RBAC (KUBECONFIG or the ServiceAccount)' : ''
    return new Error(`kubernetes apiserver ${this.http.server}: ${what}: ${status} ${message}${hint}`)
  }
}
