// The agent's view of the cluster: every resource, and the IPAM blocks, kept current by a list and a watch
// (never of handles, which change with every pod in the cluster and which no reader here needs). Where the
// store selects one node's blocks itself (Datastore.nodeBlocks, the kubernetes datastore) the view holds only
// the blocks of its node (affine to it or holding one of its addresses) and learns who owns every other block
// from the affinities, which change once per block claim, not once per pod; elsewhere it follows every block.
// Listeners hear about changes (debounced by the caller). Each resource is kept with the revision it was read
// at, so a reader can hold a write to what it read (a txn check). It owns no decisions; the peer computation,
// origination, dataplane and the IPAM service's inputs read from it.

import { type Datastore, type Watch, type WatchEvent, DatastoreError, RESOURCE_KEY_PREFIX, decodeResource, parseResourceKey, type Resource, type ResourceKind, type ResourceOfKind } from '../config/index.js'
import { AFFINITIES_PREFIX, BLOCKS_PREFIX, decodeAffinity, decodeBlock, type AffinityRecord, type AllocationBlock } from '../ipam/index.js'
import type { Logger } from 'pino'

/** 'owners': a block's owner changed (a node's view only: an affinity claimed or released elsewhere). */
export type ChangeTopic = 'resources' | 'blocks' | 'owners'

/** A resource as the view holds it: decoded, and the store revision of the record it was decoded from. */
export interface ResourceEntry<R extends Resource = Resource> {
  readonly resource: R
  readonly revision: number
}

export interface ClusterStateOptions {
  /** Follow the IPAM blocks too (default true); without them the view holds resources only. */
  readonly blocks?: boolean
  /** The node whose blocks the view follows, where the store selects them (Datastore.nodeBlocks); else every block. */
  readonly node?: string
}

/** The first relist after a watch failed, and the longest wait between relists that fail. */
const RELIST_MS = 1000
const RELIST_MAX_MS = 10_000

export class ClusterState {
  /** kind -> name -> entry: a lookup by name does not walk every resource of the cluster. */
  private readonly resources = new Map<ResourceKind, Map<string, ResourceEntry>>()
  /**
   * Each resource's record as last read: a put of the same bytes (a Kubernetes Node whose kubelet reported its
   * status, which pinto's projection of it does not carry, after the list) takes the new revision and is no change.
   */
  private readonly values = new Map<string, string>()
  private readonly blockRecords = new Map<string, AllocationBlock>()
  /** A node's view: every affinity by key, for the owners of the blocks it does not hold. */
  private readonly affinities = new Map<string, AffinityRecord>()
  private watches: Watch[] = []
  /** Listed, and watching since with no failure: false before the first list and from a failure to the relist. */
  private watching = false
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

  /** Whether the view holds only its node's blocks (the store selects them), not every block of the cluster. */
  get nodeScoped(): boolean {
    return this.withBlocks && this.options.node !== undefined && this.store.nodeBlocks !== undefined
  }

  async start(): Promise<void> {
    await this.resync()
  }

  /** Lists resources and blocks (and a node's view, the affinities) and (re)starts their watches from just after the listings. */
  private async resync(): Promise<void> {
    this.closeWatches()
    const node = this.nodeScoped ? (this.options.node as string) : undefined
    const nodeBlocks = this.store.nodeBlocks
    const [res, blocks, affinities] = await Promise.all([
      this.store.list(RESOURCE_KEY_PREFIX),
      !this.withBlocks ? undefined : node !== undefined && nodeBlocks !== undefined ? nodeBlocks.list(node) : this.store.list(BLOCKS_PREFIX),
      node !== undefined ? this.store.list(AFFINITIES_PREFIX) : undefined,
    ])
    this.resources.clear()
    this.values.clear()
    this.blockRecords.clear()
    this.affinities.clear()
    for (const kv of res.items) this.put(kv.key, kv.value, kv.revision)
    for (const kv of blocks?.items ?? []) this.put(kv.key, kv.value, kv.revision)
    for (const kv of affinities?.items ?? []) this.put(kv.key, kv.value, kv.revision)
    this.emit('resources')
    this.emit('blocks')
    if (affinities !== undefined) this.emit('owners')
    if (this.closed) return
    let failed = false
    const onError = (err: Error): void => {
      if (this.closed || failed) return
      failed = true
      this.watching = false
      this.log.warn({ err: err.message }, err instanceof DatastoreError && err.code === 'compacted' ? 'watch fell behind a compaction: listing again' : 'datastore watch failed: listing again')
      this.relistLater(RELIST_MS)
    }
    const onEvent = (e: WatchEvent): void => this.onEvent(e)
    this.watches = [this.store.watch(RESOURCE_KEY_PREFIX, res.revision + 1, onEvent, onError)]
    if (blocks !== undefined) {
      this.watches.push(node !== undefined && nodeBlocks !== undefined ? nodeBlocks.watch(node, blocks.revision + 1, onEvent, onError) : this.store.watch(BLOCKS_PREFIX, blocks.revision + 1, onEvent, onError))
    }
    if (affinities !== undefined) this.watches.push(this.store.watch(AFFINITIES_PREFIX, affinities.revision + 1, onEvent, onError))
    this.watching = !failed
  }

  /** Lists again after `ms`, and again (backing off) for as long as listing fails: the view never stays unwatched. */
  private relistLater(ms: number): void {
    setTimeout(() => {
      if (this.closed) return
      this.resync().catch((e: Error) => {
        this.log.error({ err: e.message, retryMs: Math.min(RELIST_MAX_MS, ms * 2) }, 'listing again failed: trying again')
        this.relistLater(Math.min(RELIST_MAX_MS, ms * 2))
      })
    }, ms).unref()
  }

  /**
   * Whether the view follows the store now: listed, and every watch connected since (or not known to be
   * reconnecting). A reader that may not act on a view left behind by an outage reads the store instead.
   */
  get current(): boolean {
    return this.watching && !this.closed && !this.watches.some((w) => w.behind?.() === true)
  }

  private closeWatches(): void {
    this.watching = false
    for (const w of this.watches) w.close()
    this.watches = []
  }

  private put(key: string, value: string, revision: number): ChangeTopic | undefined {
    if (key.startsWith(AFFINITIES_PREFIX)) {
      try {
        this.affinities.set(key, decodeAffinity(key, value))
      } catch (err) {
        this.affinities.delete(key)
        this.log.warn({ key, err: (err as Error).message }, 'ignoring a record that does not decode')
      }
      return 'owners'
    }
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
    const held = byName.get(id.name)
    if (held !== undefined && this.values.get(key) === value) {
      byName.set(id.name, { resource: held.resource, revision })
      return undefined
    }
    try {
      byName.set(id.name, { resource: decodeResource(value, key), revision })
      this.values.set(key, value)
    } catch (err) {
      // Not held at all rather than held as it was: a reader never takes the previous record for the current one.
      byName.delete(id.name)
      this.values.delete(key)
      this.log.warn({ key, err: (err as Error).message }, 'ignoring a record that does not decode')
    }
    return 'resources'
  }

  private onEvent(e: WatchEvent): void {
    let topic: ChangeTopic | undefined
    const before = this.blockRecords.get(e.key)
    if (e.type === 'put') topic = this.put(e.key, e.value, e.revision)
    else if (this.blockRecords.delete(e.key)) topic = 'blocks'
    else if (this.affinities.delete(e.key)) topic = 'owners'
    else {
      const id = parseResourceKey(e.key)
      this.values.delete(e.key)
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

  /** The blocks the view follows: every block, or in a node's view (nodeScoped) those of its node. */
  blocks(): Iterable<AllocationBlock> {
    return this.blockRecords.values()
  }

  /** Every block of the cluster: the view's own, or in a node's view a list of the store. */
  async allBlocks(): Promise<Iterable<AllocationBlock>> {
    if (!this.nodeScoped) return this.blockRecords.values()
    const out: AllocationBlock[] = []
    for (const kv of (await this.store.list(BLOCKS_PREFIX)).items) {
      try {
        out.push(decodeBlock(kv.key, kv.value))
      } catch (err) {
        this.log.warn({ key: kv.key, err: (err as Error).message }, 'ignoring a record that does not decode')
      }
    }
    return out
  }

  /**
   * Block CIDR as its record holds it -> the node holding its affinity. From the blocks, or in a node's view from the
   * affinities: a confirmed one, else a pending one (a claim in progress), never one being deleted.
   */
  blockOwners(): Map<string, string> {
    const owners = new Map<string, string>()
    if (!this.nodeScoped) {
      for (const b of this.blockRecords.values()) if (b.affinity?.startsWith('host:') === true) owners.set(b.cidr, b.affinity.slice(5))
      return owners
    }
    const confirmed = new Set<string>()
    for (const a of this.affinities.values()) {
      if (a.state === 'pendingDeletion') continue
      const prefix = a.cidr
      if (confirmed.has(prefix)) continue
      if (a.state === 'confirmed') confirmed.add(prefix)
      else if (owners.has(prefix)) continue
      owners.set(prefix, a.node)
    }
    return owners
  }

  close(): void {
    this.closed = true
    this.closeWatches()
  }
}
