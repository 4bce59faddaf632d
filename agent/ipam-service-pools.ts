// What the IPAM service decides an ADD with, from the resource store: the IPPools as the allocator's PoolSpec
// view, the IPAMConfig, and the node's labels for pool nodeSelectors, each with the revision of its record,
// read fresh from the store or taken from the agent's watched ClusterState. Read-only; IPAM writes belong to ipam/.

import type { Datastore, KeyValue, TxnOp } from '../config/index.js'
import { type Resource, type ResourceOfKind, decodeResource, parseSelector, poolBlockSize, resourceKey, resourceKindPrefix, type Selector } from '../config/index.js'
import type { IpamConfig, IpamInputView } from '../ipam/index.js'
import type { PoolSpec } from '../ipam/index.js'
import type { ClusterState } from './cluster-state.js'

/**
 * Per store and key, the record last decoded and what it gave: a record read again at the same revision (the
 * same bytes) is not parsed and validated again on every ADD. Only keys of the last read are kept.
 */
const decoded = new WeakMap<Datastore, Map<string, { readonly revision: number; readonly value: unknown }>>()

function decodeOnce<T>(store: Datastore, kv: KeyValue, decode: (kv: KeyValue) => T): T {
  let byKey = decoded.get(store)
  if (byKey === undefined) {
    byKey = new Map()
    decoded.set(store, byKey)
  }
  const hit = byKey.get(kv.key)
  if (hit !== undefined && hit.revision === kv.revision) return hit.value as T
  const value = decode(kv)
  byKey.set(kv.key, { revision: kv.revision, value })
  return value
}

/** Forgets decoded records under `prefix` that the last read of it did not return. */
function keepOnly(store: Datastore, prefix: string, keys: ReadonlySet<string>): void {
  for (const k of decoded.get(store)?.keys() ?? []) if (k.startsWith(prefix) && !keys.has(k)) decoded.get(store)?.delete(k)
}

function poolSpecOf(p: ResourceOfKind<'IPPool'>): PoolSpec {
  return {
    name: p.metadata.name, cidr: p.spec.cidr, blockSize: poolBlockSize(p),
    ...(p.spec.disabled !== undefined ? { disabled: p.spec.disabled } : {}),
    ...(p.spec.nodeSelector !== undefined ? { nodeSelector: p.spec.nodeSelector } : {}),
    ...(p.spec.allowedUses !== undefined ? { allowedUses: p.spec.allowedUses } : {}),
    ...(p.spec.assignmentMode !== undefined ? { assignmentMode: p.spec.assignmentMode } : {}),
  }
}

function ipamConfigOf(r: ResourceOfKind<'IPAMConfig'>): Partial<IpamConfig> {
  const spec = r.spec
  return {
    ...(spec.strictAffinity !== undefined ? { strictAffinity: spec.strictAffinity } : {}),
    ...(spec.autoAllocateBlocks !== undefined ? { autoAllocateBlocks: spec.autoAllocateBlocks } : {}),
    ...(spec.maxBlocksPerHost !== undefined && spec.maxBlocksPerHost > 0 ? { maxBlocksPerHost: spec.maxBlocksPerHost } : {}),
  }
}

export async function loadPoolSpecs(store: Datastore): Promise<PoolSpec[]> {
  return (await readPools(store)).map((p) => p.spec)
}

async function readPools(store: Datastore): Promise<{ spec: PoolSpec; revision: number }[]> {
  const prefix = resourceKindPrefix('IPPool')
  const { items } = await store.list(prefix)
  keepOnly(store, prefix, new Set(items.map((kv) => kv.key)))
  return items.map((kv) => ({ spec: decodeOnce(store, kv, () => poolSpecOf(decodeResource(kv.value, kv.key, 'IPPool'))), revision: kv.revision }))
}

/** A name no Node can have (the allocator refuses it with a clear error) has no Node key and no labels. */
const nodeKeyOf = (node: string): string | undefined => (node === '' || node.includes('/') ? undefined : resourceKey('Node', node))
const CONFIG_KEY = resourceKey('IPAMConfig', 'default')
const selectors = new Map<string, Selector>()

interface Inputs {
  readonly node: string
  readonly pools: readonly { readonly spec: PoolSpec; readonly revision: number }[]
  /** The node's labels and its record's revision (0: no Node resource). */
  readonly labels: Readonly<Record<string, string>>
  readonly nodeRevision: number
  readonly config: Partial<IpamConfig>
  readonly configRevision: number
}

function view(i: Inputs, fresh: boolean): IpamInputView {
  const revisionOf = new Map(i.pools.map((p) => [p.spec, p.revision]))
  return {
    fresh,
    pools: i.pools.map((p) => p.spec),
    config: i.config,
    nodeMatches: (pool, node) => {
      const text = pool.nodeSelector
      if (typeof text !== 'string') return true
      let sel = selectors.get(text)
      if (sel === undefined) selectors.set(text, (sel = parseSelector(text)))
      return sel.matches(node === i.node ? i.labels : {})
    },
    guards: (node, pools) => {
      if (node !== i.node) throw new Error(`IPAM inputs read for node ${i.node} asked to guard an ADD for ${node}`)
      const nodeKey = nodeKeyOf(node)
      const out: TxnOp[] = [{ op: 'check', key: CONFIG_KEY, revision: i.configRevision }]
      if (nodeKey !== undefined) out.push({ op: 'check', key: nodeKey, revision: i.nodeRevision })
      for (const p of pools) {
        const revision = revisionOf.get(p)
        if (revision === undefined) throw new Error(`IPAM inputs for node ${node} hold no pool ${p.name}`)
        out.push({ op: 'check', key: resourceKey('IPPool', p.name), revision })
      }
      return out
    },
  }
}

/** The inputs of an ADD for `node`, read from the store now: its Node, the IPAMConfig and the pools, together. */
export async function readInputs(store: Datastore, node: string): Promise<IpamInputView> {
  const nodeKey = nodeKeyOf(node)
  const [nodeKv, configKv, pools] = await Promise.all([nodeKey === undefined ? undefined : store.get(nodeKey), store.get(CONFIG_KEY), readPools(store)])
  return view({
    node, pools,
    labels: nodeKv === undefined ? {} : decodeOnce(store, nodeKv, () => decodeResource(nodeKv.value, nodeKv.key, 'Node').metadata.labels ?? {}),
    nodeRevision: nodeKv?.revision ?? 0,
    config: configKv === undefined ? {} : decodeOnce(store, configKv, () => ipamConfigOf(decodeResource(configKv.value, configKv.key, 'IPAMConfig'))),
    configRevision: configKv?.revision ?? 0,
  }, true)
}

/** Per decoded resource of a ClusterState, what it gives the allocator: built once per record the view holds. */
const derived = new WeakMap<Resource, unknown>()

function derive<R extends Resource, T>(r: R, make: (r: R) => T): T {
  if (derived.has(r)) return derived.get(r) as T
  const v = make(r)
  derived.set(r, v)
  return v
}

/** The inputs of an ADD for `node` as the cluster view holds them now (no round trip; guards catch it being stale). */
export function cachedInputs(cluster: ClusterState, node: string): IpamInputView {
  const me = nodeKeyOf(node) === undefined ? undefined : cluster.entry('Node', node)
  const config = cluster.entry('IPAMConfig', 'default')
  return view({
    node,
    pools: cluster.entries('IPPool').map((e) => ({ spec: derive(e.resource, poolSpecOf), revision: e.revision })),
    labels: me?.resource.metadata.labels ?? {},
    nodeRevision: me?.revision ?? 0,
    config: config === undefined ? {} : derive(config.resource, ipamConfigOf),
    configRevision: config?.revision ?? 0,
  }, false)
}
