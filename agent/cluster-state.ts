// The agent's view of the cluster: every resource and IPAM block, kept current by a list and a watch of
// each prefix (not of handles and affinities, which change with every pod in the cluster and which no
// reader here needs). Listeners hear about changes (debounced by the caller). It owns
// no decisions; the peer computation, origination and dataplane read from it.

import type { Datastore, Watch, WatchEvent } from '../config/datastore.js'
import { DatastoreError } from '../config/datastore.js'
import { RESOURCE_KEY_PREFIX, decodeResource, parseResourceKey, type Resource, type ResourceKind, type ResourceOfKind } from '../config/resources/index.js'
import { BLOCKS_PREFIX, decodeBlock } from '../ipam/records.js'
import type { AllocationBlock } from '../ipam/block.js'
import type { Logger } from 'pino'

export type ChangeTopic = 'resources' | 'blocks'

export class ClusterState {
  private readonly resources = new Map<string, Resource>()
  private readonly blockRecords = new Map<string, AllocationBlock>()
  private watches: Watch[] = []
  private readonly listeners = new Set<(topic: ChangeTopic, blocks: readonly (AllocationBlock | undefined)[]) => void>()
  private closed = false

  constructor(
    private readonly store: Datastore,
    private readonly log: Logger,
  ) {}

  async start(): Promise<void> {
    await this.resync()
  }

  /** Lists both prefixes and (re)starts their watches from just after the listings. */
  private async resync(): Promise<void> {
    this.closeWatches()
    const [res, blocks] = await Promise.all([this.store.list(RESOURCE_KEY_PREFIX), this.store.list(BLOCKS_PREFIX)])
    this.resources.clear()
    this.blockRecords.clear()
    for (const kv of res.items) this.put(kv.key, kv.value)
    for (const kv of blocks.items) this.put(kv.key, kv.value)
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
      this.store.watch(BLOCKS_PREFIX, blocks.revision + 1, (e) => this.onEvent(e), onError),
    ]
  }

  private closeWatches(): void {
    for (const w of this.watches) w.close()
    this.watches = []
  }

  private put(key: string, value: string): ChangeTopic | undefined {
    try {
      if (key.startsWith(BLOCKS_PREFIX)) {
        this.blockRecords.set(key, decodeBlock(key, value))
        return 'blocks'
      }
      if (parseResourceKey(key) !== undefined) {
        this.resources.set(key, decodeResource(value, key))
        return 'resources'
      }
    } catch (err) {
      this.log.warn({ key, err: (err as Error).message }, 'ignoring a record that does not decode')
    }
    return undefined
  }

  private onEvent(e: WatchEvent): void {
    let topic: ChangeTopic | undefined
    const before = this.blockRecords.get(e.key)
    if (e.type === 'put') topic = this.put(e.key, e.value)
    else if (this.blockRecords.delete(e.key)) topic = 'blocks'
    else if (this.resources.delete(e.key)) topic = 'resources'
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
    const out: ResourceOfKind<K>[] = []
    for (const r of this.resources.values()) if (r.kind === kind) out.push(r as ResourceOfKind<K>)
    return out
  }

  get<K extends ResourceKind>(kind: K, name: string): ResourceOfKind<K> | undefined {
    return this.list(kind).find((r) => r.metadata.name === name)
  }

  blocks(): Iterable<AllocationBlock> {
    return this.blockRecords.values()
  }

  close(): void {
    this.closed = true
    this.closeWatches()
  }
}
