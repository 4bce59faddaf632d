// The kubernetes datastore ("KDD"): the Datastore contract on the Kubernetes API, in Calico's layout (its
// crd.projectcalico.org/v1 objects and the core Node, see kubernetes/layout.ts), so a Calico cluster's objects read
// as they are. It owns mapping the contract's calls and failures onto the apiserver's; the object mappings are pure
// modules beside it. Invariants a reader must know:
// 1. A revision is the object's resourceVersion read as an integer: etcd's revision, store-wide and increasing.
// 2. update is a PUT carrying that resourceVersion and delete carries it as a precondition, so both are a
//    compare-and-swap the apiserver decides; create is a POST (409 AlreadyExists: 'exists').
// 3. There is no multi-object transaction: `transactions` is false and txn takes one write with no check. Callers
//    that need more (IPAM) write in an order that keeps their guarantees without one.
// 4. A list over several kinds is one snapshot: the first kind is read at the latest revision, the others at
//    exactly that revision. A watch over several kinds keeps revision order within each kind.
// 5. An object Calico marked `deleted` reads as absent. The core Node is never created or deleted through pinto,
//    and a change of it that leaves pinto's projection as it was is no event.
// 6. Every IPAMBlock pinto writes carries labels naming its affine node and the other nodes holding its addresses
//    (kubernetes/ipam-objects.ts blockLabels): `nodeBlocks` lists and watches one node's by those labels.

import { DatastoreError, type Datastore, type KeyValue, type ListResult, type NodeBlocks, type TxnOp, type Watch, type WatchEvent, checkTxnOps } from './datastore.js'
import { type KeyFamily, keyFamiliesUnder, keyFamilyOf } from './kubernetes/layout.js'
import { type KubeObject, isObject, parseRevision } from './kubernetes/objects.js'
import { BLOCK_BORROWER_PREFIX, BLOCK_LABELLED_LABEL, HOSTNAME_HASH_LABEL, affinityPrefixNode, blockConcerns, hostnameHash } from './kubernetes/ipam-objects.js'
import { BLOCKS_PREFIX, decodeBlock } from '../ipam/index.js'
import { nodeWithValue } from './kubernetes/node-object.js'
import { KubeHttp, type KubeResponse, type KubeSource, type KubeStream } from './kubernetes/kube-http.js'

export interface KubernetesOptions {
  /** Upper bound for one request. Default 3.5 s (the contract promises an answer within 5 s). */
  readonly timeoutMs?: number
  /** Objects a list page asks for (default 500). */
  readonly listPageSize?: number
}

interface Status {
  readonly code?: number
  readonly reason?: string
  readonly message?: string
  readonly details?: { readonly name?: string; readonly causes?: readonly { readonly reason?: string; readonly message?: string }[] }
}

const statusOf = (r: KubeResponse): Status | undefined => (isObject(r.body) && r.body.kind === 'Status' ? r.body : undefined)

function checkKey(key: unknown): asserts key is string {
  if (typeof key !== 'string' || key.length === 0) throw new DatastoreError('invalid', `key must be a non-empty string, got ${JSON.stringify(key)}`)
}

function checkValue(key: string, value: unknown): asserts value is string {
  if (typeof value !== 'string') throw new DatastoreError('invalid', `value for key ${key} must be a string`, key)
}

/** Reconnects of a broken watch are spaced from this up to WATCH_RETRY_MAX_MS; past WATCH_GIVE_UP_MS of failing, onError. */
const WATCH_RETRY_MS = 100
const WATCH_RETRY_MAX_MS = 3000
const WATCH_GIVE_UP_MS = 120_000
/** The apiserver ends each watch after about this long (a fresh one resumes); bookmarks keep an idle one alive. */
const WATCH_SECONDS = 300
const WATCH_IDLE_MS = 150_000

/** Whether a block record is affine to `node` or holds one of its addresses; a record that does not decode concerns none. */
function concernsNode(kv: KeyValue, node: string): boolean {
  try {
    return blockConcerns(decodeBlock(kv.key, kv.value), node)
  } catch {
    return false
  }
}

export class KubernetesDatastore implements Datastore {
  readonly transactions = false
  private readonly pageSize: number
  private readonly watches = new Set<{ close(): void }>()
  private closed = false

  private constructor(private readonly http: KubeHttp, options: KubernetesOptions) {
    this.pageSize = Math.max(1, options.listPageSize ?? 500)
  }

  /** Reads the credentials and proves the apiserver answers with pinto's KeyValue kind installed. */
  static async open(source: KubeSource, options: KubernetesOptions = {}): Promise<KubernetesDatastore> {
    const http = await KubeHttp.connect(source, options.timeoutMs ?? 3500)
    const store = new KubernetesDatastore(http, options)
    try {
      const probe = keyFamilyOf('/pinto/.probe')
      store.expect(await http.request('GET', probe.path, { limit: 1 }), `list ${probe.what}`, probe, [200])
    } catch (err) {
      await store.close()
      throw err
    }
    return store
  }

  get server(): string {
    return this.http.server
  }

  /** The connection pool to the apiserver, for readers of core objects (Pods, Services) beside the store. */
  get api(): KubeHttp {
    return this.http
  }

  /**
   * Fails unless the answer's status is one of `ok`: 'not-found' for a missing object (404 with a Status),
   * 'unavailable' for a missing kind (its CRD not installed), refused credentials or a failing apiserver,
   * 'invalid' for an object the apiserver would not take (its message names the field).
   */
  private expect(r: KubeResponse, what: string, family: KeyFamily, ok: readonly number[], key?: string): KubeResponse {
    if (ok.includes(r.status)) return r
    const s = statusOf(r)
    const msg = s?.message ?? r.text.trim().slice(0, 300)
    const at = `kubernetes apiserver ${this.http.server}: ${what}`
    if (r.status === 404 && s?.reason === 'NotFound' && s.details?.name !== undefined) throw new DatastoreError('not-found', `key ${key ?? '?'} does not exist`, key)
    if (r.status === 404) {
      throw new DatastoreError('unavailable', `${at}: the apiserver has no ${family.what}; install pinto's CRDs (deploy/kubernetes/crds/)`, key)
    }
    if (r.status === 409 && s?.reason === 'AlreadyExists') throw new DatastoreError('exists', `key ${key ?? '?'} already exists`, key)
    if (r.status === 409) throw new DatastoreError('conflict', `key ${key ?? '?'}: ${msg}`, key)
    if (r.status === 422 || r.status === 400) throw new DatastoreError('invalid', `${at}: ${msg}`, key)
    if (r.status === 401 || r.status === 403) throw new DatastoreError('unavailable', `${at}: refused (${r.status}): ${msg}; check the credentials and RBAC (KUBECONFIG or the ServiceAccount)`, key)
    throw new DatastoreError('unavailable', `${at}: ${r.status} ${msg}`, key)
  }

  private objectOf(r: KubeResponse, what: string): KubeObject {
    const o = r.body
    if (!isObject(o) || !isObject(o.metadata) || typeof o.metadata.name !== 'string') {
      throw new DatastoreError('unavailable', `kubernetes apiserver ${this.http.server}: ${what}: the answer is not an object`)
    }
    return o as KubeObject
  }

  private kv(family: KeyFamily, obj: KubeObject, what: string): KeyValue | undefined {
    const rec = family.toRecord(obj)
    if (rec?.value === undefined) return undefined
    return { key: rec.key, value: rec.value, revision: parseRevision(obj.metadata.resourceVersion, `${what}: ${family.what} ${obj.metadata.name}`) }
  }

  /** The object holding `key` as it is now, or undefined. */
  private async read(key: string, family: KeyFamily): Promise<KubeObject | undefined> {
    const name = family.objectName(key)
    const r = await this.http.request('GET', `${family.path}/${name}`)
    const s = statusOf(r)
    if (r.status === 404 && s?.reason === 'NotFound' && s.details?.name !== undefined) return undefined
    return this.objectOf(this.expect(r, `get ${key}`, family, [200], key), `get ${key}`)
  }

  async get(key: string): Promise<KeyValue | undefined> {
    checkKey(key)
    const family = keyFamilyOf(key)
    const obj = await this.read(key, family)
    const kv = obj && this.kv(family, obj, `get ${key}`)
    // Another key whose object name is the same (a handle id differing only in case) is not this one.
    return kv?.key === key ? kv : undefined
  }

  /** Every object of a family, read at `revision` exactly when given, else at the latest; and the list's revision. */
  private async listFamily(family: KeyFamily, revision: number | undefined, labelSelector?: string): Promise<{ objects: KubeObject[]; revision: number }> {
    const objects: KubeObject[] = []
    let cont: string | undefined
    let listRevision: number | undefined
    const selector = labelSelector !== undefined ? { labelSelector } : {}
    for (;;) {
      const query = cont !== undefined ? { limit: this.pageSize, continue: cont, ...selector } : { limit: this.pageSize, ...selector, ...(revision !== undefined ? { resourceVersion: revision, resourceVersionMatch: 'Exact' } : {}) }
      const r = this.expect(await this.http.request('GET', family.path, query), `list ${family.what}`, family, [200])
      const body = r.body as { metadata?: { resourceVersion?: string; continue?: string }; items?: unknown[] }
      listRevision ??= parseRevision(body.metadata?.resourceVersion, `list ${family.what}`)
      for (const item of body.items ?? []) if (isObject(item) && isObject(item.metadata)) objects.push(item as KubeObject)
      cont = body.metadata?.continue || undefined
      if (cont === undefined) break
    }
    return { objects, revision: listRevision }
  }

  async list(prefix: string): Promise<ListResult> {
    if (typeof prefix !== 'string') throw new DatastoreError('invalid', 'list prefix must be a string')
    const node = affinityPrefixNode(prefix)
    if (node !== undefined) return this.listNodeAffinities(prefix, node)
    const [first, ...rest] = keyFamiliesUnder(prefix)
    const head = await this.listFamily(first as KeyFamily, undefined)
    const others = await Promise.all(rest.map((f) => this.listFamily(f, head.revision)))
    return this.listed(prefix, [first as KeyFamily, ...rest], [head, ...others])
  }

  /**
   * One node's affinities by Calico's hostname-hash label, as Calico lists them, so a node's lookup does not read
   * every node's; with those that carry no label yet (written before it was set), which a cluster has few of.
   * Two consistent reads, the unlabelled first: an object only ever gains the label (every writer sets it), so one
   * labelled between the two reads is in the second, and none is missed. The result is at the second's revision.
   */
  private async listNodeAffinities(prefix: string, node: string): Promise<ListResult> {
    const family = keyFamiliesUnder(prefix)[0] as KeyFamily
    const unlabelled = await this.listFamily(family, undefined, `!${HOSTNAME_HASH_LABEL}`)
    const labelled = await this.listFamily(family, undefined, `${HOSTNAME_HASH_LABEL}=${hostnameHash(node)}`)
    return this.listed(prefix, [family, family], [labelled, unlabelled])
  }

  /** The records of `lists` (each of its family) under `prefix`, sorted by key, at the first list's revision; a key in two lists is the first's. */
  private listed(prefix: string, families: readonly KeyFamily[], lists: readonly { objects: KubeObject[]; revision: number }[]): ListResult {
    const items: KeyValue[] = []
    const seen = new Set<string>()
    lists.forEach((l, i) => {
      const family = families[i] as KeyFamily
      for (const obj of l.objects) {
        const kv = this.kv(family, obj, `list ${prefix}`)
        if (kv === undefined || !kv.key.startsWith(prefix) || seen.has(kv.key)) continue
        seen.add(kv.key)
        items.push(kv)
      }
    })
    items.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    return { items, revision: (lists[0] as { revision: number }).revision }
  }

  async create(key: string, value: string): Promise<KeyValue> {
    checkKey(key)
    checkValue(key, value)
    const family = keyFamilyOf(key)
    if (family.node) {
      const current = await this.read(key, family)
      if (current === undefined) throw new DatastoreError('not-found', `${key}: there is no Kubernetes Node ${family.objectName(key)}; the kubelet registers Nodes, pinto only annotates them`, key)
      throw new DatastoreError('exists', `key ${key} already exists (the Kubernetes Node is registered)`, key)
    }
    const obj = family.toObject(key, value)
    for (let attempt = 0; ; attempt++) {
      const r = await this.http.request('POST', family.path, undefined, obj)
      if (r.status === 409 && attempt === 0 && (await this.removeSoftDeleted(key, family))) continue
      const written = this.objectOf(this.expect(r, `create ${key}`, family, [200, 201], key), `create ${key}`)
      return { key, value, revision: parseRevision(written.metadata.resourceVersion, `create ${key}`) }
    }
  }

  /** An object Calico marked deleted but did not remove yet holds the name: removed (compare-and-delete) so a create can go on. */
  private async removeSoftDeleted(key: string, family: KeyFamily): Promise<boolean> {
    const obj = await this.read(key, family)
    if (obj === undefined) return true
    if (family.toRecord(obj)?.value !== undefined) return false
    const r = await this.http.request('DELETE', `${family.path}/${obj.metadata.name}`, undefined, { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { resourceVersion: obj.metadata.resourceVersion } })
    return r.status === 200 || r.status === 202 || r.status === 404
  }

  async update(key: string, value: string, revision: number): Promise<KeyValue> {
    checkKey(key)
    checkValue(key, value)
    const family = keyFamilyOf(key)
    let obj: KubeObject
    let path: string
    if (family.node) {
      const current = await this.read(key, family)
      if (current === undefined) throw new DatastoreError('not-found', `key ${key} does not exist`, key)
      // The annotations are written as calico-node writes them: through the status subresource, which takes metadata.
      obj = nodeWithValue(key, value, current)
      path = `${family.path}/${current.metadata.name}/status`
    } else {
      obj = family.toObject(key, value)
      path = `${family.path}/${obj.metadata.name}`
    }
    obj = { ...obj, metadata: { ...obj.metadata, resourceVersion: String(revision) } }
    const r = await this.http.request('PUT', path, undefined, obj)
    if (r.status === 409) {
      const now = await this.get(key)
      if (now === undefined) throw new DatastoreError('not-found', `key ${key} does not exist`, key)
      throw new DatastoreError('conflict', `key ${key} is at revision ${now.revision}, not ${revision}`, key)
    }
    const written = this.objectOf(this.expect(r, `update ${key}`, family, [200, 201], key), `update ${key}`)
    return { key, value: family.node ? (this.kv(family, written, `update ${key}`)?.value ?? value) : value, revision: parseRevision(written.metadata.resourceVersion, `update ${key}`) }
  }

  async delete(key: string, revision?: number): Promise<void> {
    await this.remove(key, revision)
  }

  /** DELETE with the revision as a precondition (Kubernetes' compare-and-delete); the answer's revision. */
  private async remove(key: string, revision: number | undefined): Promise<number> {
    checkKey(key)
    const family = keyFamilyOf(key)
    if (family.node) throw new DatastoreError('invalid', `${key}: a Node goes with its Kubernetes Node (kubectl delete node); pinto does not delete it`, key)
    const name = family.objectName(key)
    const body = revision === undefined ? undefined : { apiVersion: 'v1', kind: 'DeleteOptions', preconditions: { resourceVersion: String(revision) } }
    const r = await this.http.request('DELETE', `${family.path}/${name}`, undefined, body)
    if (r.status === 409) {
      const now = await this.get(key)
      if (now === undefined) throw new DatastoreError('not-found', `key ${key} does not exist`, key)
      throw new DatastoreError('conflict', `key ${key} is at revision ${now.revision}, not ${revision}`, key)
    }
    const done = this.expect(r, `delete ${key}`, family, [200, 202], key)
    const rv = isObject(done.body) && isObject(done.body.metadata) ? done.body.metadata.resourceVersion : undefined
    return typeof rv === 'string' ? parseRevision(rv, `delete ${key}`) : 0
  }

  /** One write and no check: all Kubernetes can make atomic. Anything more is 'invalid' (see `transactions`). */
  async txn(ops: readonly TxnOp[]): Promise<KeyValue[]> {
    checkTxnOps(ops)
    const [op] = ops
    if (ops.length !== 1 || op === undefined || op.op === 'check') {
      throw new DatastoreError('invalid', `txn on ${ops.map((o) => o.key).join(', ')}: the kubernetes datastore has no multi-object transactions (one write, no check); callers check Datastore.transactions`, ops[0]?.key)
    }
    if (op.op === 'create') return [await this.create(op.key, op.value)]
    if (op.op === 'update') return [await this.update(op.key, op.value, op.revision)]
    return [{ key: op.key, value: '', revision: await this.remove(op.key, op.revision) }]
  }

  watch(prefix: string, fromRevision: number, onEvent: (event: WatchEvent) => void, onError?: (err: Error) => void): Watch {
    return this.watchStreams(keyFamiliesUnder(prefix).map((family) => ({ family })), prefix, fromRevision, onEvent, onError)
  }

  /** One stream per spec, failing together: the first to fail closes the others and is reported. */
  private watchStreams(specs: readonly { family: KeyFamily; labelSelector?: string }[], prefix: string, fromRevision: number, onEvent: (event: WatchEvent, stream: number) => void, onError?: (err: Error) => void): Watch {
    const streams: FamilyWatch[] = []
    let failed = false
    const handle = {
      close: () => {
        failed = true
        this.watches.delete(handle)
        for (const s of streams) s.close()
      },
      behind: () => streams.some((s) => s.behind),
    }
    const fail = (err: Error): void => {
      if (failed) return
      handle.close()
      onError?.(err)
    }
    this.watches.add(handle)
    specs.forEach(({ family, labelSelector }, i) => {
      streams.push(new FamilyWatch(this.http, family, prefix, fromRevision, (e) => !failed && onEvent(e, i), fail, labelSelector))
    })
    return handle
  }

  /** The blocks that concern one node, selected by the labels pinto puts on each IPAMBlock it writes (blockLabels). */
  readonly nodeBlocks: NodeBlocks = {
    list: (node) => this.listNodeBlocks(node),
    watch: (node, fromRevision, onEvent, onError) => this.watchNodeBlocks(node, fromRevision, onEvent, onError),
  }

  /**
   * The node's own blocks (its hostname hash) and those it borrowed from (its borrower label), the second read at the
   * first's revision. Blocks no pinto labelled (written by Calico, or by pinto before it labelled blocks) are read
   * first, and those that concern the node are written again as they are, which labels them, so the watch follows
   * them; one that stays unlabelled (its writer keeps rewriting it) is in the answer as it was read.
   */
  private async listNodeBlocks(node: string): Promise<ListResult> {
    const family = keyFamilyOf(BLOCKS_PREFIX)
    const hash = hostnameHash(node)
    let unlabelled: KubeObject[] = []
    for (let attempt = 0; attempt < 3; attempt++) {
      unlabelled = []
      const { objects } = await this.listFamily(family, undefined, `!${BLOCK_LABELLED_LABEL}`)
      for (const obj of objects) {
        const kv = this.kv(family, obj, `list ${BLOCKS_PREFIX}`)
        if (kv === undefined || !concernsNode(kv, node)) continue
        try {
          await this.update(kv.key, kv.value, kv.revision)
        } catch (err) {
          if (!(err instanceof DatastoreError) || (err.code !== 'conflict' && err.code !== 'not-found')) throw err
          unlabelled.push(obj)
        }
      }
      if (unlabelled.length === 0) break
    }
    const own = await this.listFamily(family, undefined, `${HOSTNAME_HASH_LABEL}=${hash}`)
    const borrowed = await this.listFamily(family, own.revision, `${BLOCK_BORROWER_PREFIX}${hash}`)
    return this.listed(BLOCKS_PREFIX, [family, family, family], [own, borrowed, { objects: unlabelled, revision: own.revision }])
  }

  /**
   * Two streams, the node's own blocks and those it borrowed from. A block matches at most one of them (its affine node
   * is no borrower of it); one moving from one to the other is a delete in the first and a put in the second, in
   * either order, and leaves the view only when the stream that last put it deletes it.
   */
  private watchNodeBlocks(node: string, fromRevision: number, onEvent: (event: WatchEvent) => void, onError?: (err: Error) => void): Watch {
    const family = keyFamilyOf(BLOCKS_PREFIX)
    const hash = hostnameHash(node)
    const holder = new Map<string, number>()
    const selectors = [`${HOSTNAME_HASH_LABEL}=${hash}`, `${BLOCK_BORROWER_PREFIX}${hash}`]
    return this.watchStreams(selectors.map((labelSelector) => ({ family, labelSelector })), BLOCKS_PREFIX, fromRevision, (e, stream) => {
      if (e.type === 'put') holder.set(e.key, stream)
      else if (holder.has(e.key) && holder.get(e.key) !== stream) return
      else holder.delete(e.key)
      onEvent(e)
    }, onError)
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    for (const w of [...this.watches]) w.close()
    this.http.close()
  }
}

/**
 * One kind's watch: from `fromRevision` (resourceVersion one below it), with bookmarks; a broken or ended stream
 * resumes from the last revision it carried. 410 Gone is 'compacted'; failing to reconnect for WATCH_GIVE_UP_MS
 * is 'unavailable'. For the core Node, only changes of pinto's projection are events.
 */
class FamilyWatch {
  private stream: KubeStream | undefined
  private timer: NodeJS.Timeout | undefined
  private closed = false
  /** The resourceVersion to resume from: events after it are still to come. */
  private resume: number
  private failingSince: number | undefined
  /** The apiserver answered the current stream (200): it sends what happened since `resume` at once. */
  private open = false
  private retryMs = WATCH_RETRY_MS
  /** Core Nodes: the projection last delivered, per key. */
  private readonly projected = new Map<string, string>()

  constructor(
    private readonly http: KubeHttp,
    private readonly family: KeyFamily,
    private readonly prefix: string,
    private readonly fromRevision: number,
    private readonly emit: (e: WatchEvent) => void,
    private readonly fail: (err: Error) => void,
    private readonly labelSelector?: string,
  ) {
    this.resume = Math.max(0, fromRevision - 1)
    this.connect()
  }

  private connect(): void {
    if (this.closed) return
    // resourceVersion 0 would mean "any state, then changes": the current objects come first as ADDED events.
    const query = { watch: 1, allowWatchBookmarks: true, resourceVersion: String(this.resume), timeoutSeconds: WATCH_SECONDS, ...(this.labelSelector !== undefined ? { labelSelector: this.labelSelector } : {}) }
    this.stream = this.http.stream(this.family.path, query, WATCH_IDLE_MS, (line) => this.onLine(line), (end) => this.onEnd(end), () => (this.open = true))
  }

  private onLine(line: string): void {
    let e: { type?: string; object?: KubeObject & Status }
    try {
      e = JSON.parse(line) as typeof e
    } catch {
      return this.stop(new DatastoreError('unavailable', `kubernetes watch of ${this.family.what}: a line that is not JSON: ${line.slice(0, 200)}`))
    }
    const obj = e.object
    if (e.type === 'ERROR') return this.onStatus(obj)
    if (obj === undefined || !isObject(obj.metadata)) return
    let revision: number
    try {
      revision = parseRevision(obj.metadata.resourceVersion, `watch of ${this.family.what}`)
    } catch (err) {
      return this.stop(err as Error)
    }
    this.failingSince = undefined
    this.retryMs = WATCH_RETRY_MS
    if (revision > this.resume) this.resume = revision
    if (e.type === 'BOOKMARK' || revision < this.fromRevision) return
    const rec = this.family.toRecord(obj)
    if (rec === undefined || !rec.key.startsWith(this.prefix)) return
    if (e.type === 'DELETED' || rec.value === undefined) {
      this.projected.delete(rec.key)
      return this.emit({ type: 'delete', key: rec.key, revision })
    }
    if (this.family.node) {
      if (this.projected.get(rec.key) === rec.value) return
      this.projected.set(rec.key, rec.value)
    }
    this.emit({ type: 'put', key: rec.key, value: rec.value, revision })
  }

  private onStatus(s: Status | undefined): void {
    if (s?.code === 410) {
      return this.stop(new DatastoreError('compacted', `kubernetes watch of ${this.family.what} from revision ${this.resume + 1}: ${s.message ?? 'gone'}; relist and watch again`))
    }
    // A revision the apiserver has not reached yet (a watch from the future) or a passing failure: resume.
    this.retry(new Error(s?.message ?? 'watch error'))
  }

  private onEnd(end: { status?: number; body?: unknown; error?: Error }): void {
    this.stream = undefined
    if (this.closed) return
    if (end.status === 410) return this.onStatus({ code: 410, ...(isObject(end.body) ? end.body : {}) })
    if (end.status === 401 || end.status === 403 || end.status === 404) {
      const msg = isObject(end.body) && typeof end.body.message === 'string' ? end.body.message : `status ${end.status}`
      return this.stop(new DatastoreError('unavailable', `kubernetes watch of ${this.family.what} at ${this.http.server}: ${msg}`))
    }
    if (end.status === undefined && end.error === undefined) {
      // The apiserver ended the watch (timeoutSeconds): resume at once.
      this.connect()
      return
    }
    this.retry(end.error ?? new Error(`status ${end.status}`))
  }

  private retry(err: Error): void {
    this.open = false
    this.stream?.close()
    this.stream = undefined
    const now = Date.now()
    this.failingSince ??= now
    if (now - this.failingSince > WATCH_GIVE_UP_MS) {
      return this.stop(new DatastoreError('unavailable', `kubernetes watch of ${this.family.what} at ${this.http.server}: failing for ${WATCH_GIVE_UP_MS / 1000} s: ${err.message}`))
    }
    this.timer = setTimeout(() => this.connect(), this.retryMs)
    this.retryMs = Math.min(WATCH_RETRY_MAX_MS, this.retryMs * 2)
  }

  private stop(err: Error): void {
    this.close()
    this.fail(err)
  }

  /** Reconnecting since a failure: events missed meanwhile are still to come. */
  get behind(): boolean {
    return !this.open && !this.closed
  }

  close(): void {
    this.closed = true
    clearTimeout(this.timer)
    this.stream?.close()
    this.stream = undefined
  }
}

export function openKubernetesDatastore(source: KubeSource, options?: KubernetesOptions): Promise<KubernetesDatastore> {
  return KubernetesDatastore.open(source, options)
}
