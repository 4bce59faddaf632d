// The agent's view of the cluster: every resource and IPAM block, kept current by a list and a watch of
// each prefix (not of handles and affinities, which change with every pod in the cluster and which no
// reader here needs). Listeners hear about changes (debounced by the caller). Each resource is kept with the
// revision it was read at, so a reader can hold a write to what it read (a txn check). It owns no decisions;
// the peer computation, origination, dataplane and the IPAM service's inputs read from it.

import { type Datastore, type Watch, type WatchEvent, DatastoreError, RESOURCE_KEY_PREFIX, decodeResource, parseResourceKey, type Resource, type ResourceKind, type ResourceOfKind } from '../config/index.js'
import { BLOCKS_PREFIX, decodeBlock, type AllocationBlock } from '../ipam/index.js'
import type { Logger } from 'pino'

export type ChangeTopic = 'resources' | 'blocks'

/** A resource as the view holds it: decoded, and the store revision of the record it was decoded from. */
export interface ResourceEntry<R extends Resource = Resource> {
  readonly resource: R
  readonly revision: number
}

export interface ClusterStateOptions {
  /** Follow the IPAM blocks too (default true); without them the view holds resources only. */
  readonly blocks?: boolean
}

export class ClusterState {
  /** kind -> name -> entry: a lookup by name does not walk every resource of the cluster. */
  private readonly resources = new Map<ResourceKind, Map<string, ResourceEntry>>()
  private readonly blockRecords = new Map<string, AllocationBlock>()
  private watches: Watch[] = []
  private readonly listeners = new Set<(topic: ChangeTopic, blocks: readonly (AllocationBlock | undefined)[]) => void>()
  private closed = false

  constructor(
    private readonly store: Datastore,
    private readonly log: Logger,
    private readonly options: ClusterStateOptions = {},
  ) {}

  private get withBlocks(): boolean {
    return this.options.blocks !== false
  }

  async start(): Promise<void> {
    await this.resync()
  }

  /** Lists both prefixes and (re)starts their watches from just after the listings. */
  private async resync(): Promise<void> {
    this.closeWatches()
    const [res, blocks] = await Promise.all([this.store.list(RESOURCE_KEY_PREFIX), this.withBlocks ? this.store.list(BLOCKS_PREFIX) : undefined])
    this.resources.clear()
    this.blockRecords.clear()
    for (const kv of res.items) this.put(kv.key, kv.value, kv.revision)
    for (const kv of blocks?.items ?? []) this.put(kv.key, kv.value, kv.revision)
    this.emit('resources')
    this.emit('blocks')
    if (this.closed) return
    let failed = false
    const onError = (err: Error): void => {
      if (this.closed || failed) return
      failed = true
      this.log.warn({ err: err.message }, err instanceof DatastoreError && err.code === 'compacted' ? 'watch fell behind a compaction: listing again' : 'datastore watch failed: listing again')
      setTimeout(() => void this.resync().catch((e: Error) => this.log.error({ err: e.message }, 'resync failed')), 1000).unref()
    }
    this.watches = [
      this.store.watch(RESOURCE_KEY_PREFIX, res.revision + 1, (e) => this.onEvent(e), onError),
      ...(blocks !== undefined ? [this.store.watch(BLOCKS_PREFIX, blocks.revision + 1, (e) => this.onEvent(e), onError)] : []),
    ]
  }

  private closeWatches(): void {
    for (const w of this.watches) w.close()
    this.watches = []
  }

  private put(key: string, value: string, revision: number): ChangeTopic | undefined {
    if (key.startsWith(BLOCKS_PREFIX)) {
      try {
        this.blockRecords.set(key, decodeBlock(key, value))
        return 'blocks'
      } catch (err) {
        this.log.warn({ key, err: (err as Error).message }, 'ignoring a record that does not decode')
        return undefined
      }
    }
    const id = parseResourceKey(key)
    if (id === undefined) return undefined
    let byName = this.resources.get(id.kind)
    if (byName === undefined) this.resources.set(id.kind, (byName = new Map<string, ResourceEntry>()))
    try {
      byName.set(id.name, { resource: decodeResource(value, key), revision })
    } catch (err) {
      // Not held at all rather than held as it was: a reader never takes the previous record for the current one.
      byName.delete(id.name)
      this.log.warn({ key, err: (err as Error).message }, 'ignoring a record that does not decode')
    }
    return 'resources'
  }

  private onEvent(e: WatchEvent): void {
    let topic: ChangeTopic | undefined
    const before = this.blockRecords.get(e.key)
    if (e.type === 'put') topic = this.put(e.key, e.value, e.revision)
    else if (this.blockRecords.delete(e.key)) topic = 'blocks'
    else {
      const id = parseResourceKey(e.key)
      if (id !== undefined && this.resources.get(id.kind)?.delete(id.name) === true) topic = 'resources'
    }
    if (topic) this.emit(topic, topic === 'blocks' ? [before, this.blockRecords.get(e.key)] : [])
  }

  private emit(topic: ChangeTopic, blocks: readonly (AllocationBlock | undefined)[] = []): void {
    for (const l of this.listeners) l(topic, blocks)
  }

  /** `blocks` holds the changed block before and after, for 'blocks' events from the watch. */
  onChange(listener: (topic: ChangeTopic, blocks: readonly (AllocationBlock | undefined)[]) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  list<K extends ResourceKind>(kind: K): ResourceOfKind<K>[] {
    return this.entries(kind).map((e) => e.resource)
  }

  get<K extends ResourceKind>(kind: K, name: string): ResourceOfKind<K> | undefined {
    return this.entry(kind, name)?.resource
  }

  /** Every resource of `kind` with the revision it was read at. */
  entries<K extends ResourceKind>(kind: K): ResourceEntry<ResourceOfKind<K>>[] {
    return [...(this.resources.get(kind)?.values() ?? [])] as ResourceEntry<ResourceOfKind<K>>[]
  }

  /** One resource with the revision it was read at; undefined when the view holds none of that name. */
  entry<K extends ResourceKind>(kind: K, name: string): ResourceEntry<ResourceOfKind<K>> | undefined {
    return this.resources.get(kind)?.get(name) as ResourceEntry<ResourceOfKind<K>> | undefined
  }

  blocks(): Iterable<AllocationBlock> {
    return this.blockRecords.values()
  }

  close(): void {
    this.closed = true
    this.closeWatches()
  }
}
