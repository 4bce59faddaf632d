// What the IPAM service reads from the resource store: the IPPools as the allocator's PoolSpec view, the
// IPAMConfig, and node labels for pool nodeSelectors. Read-only; all IPAM writes belong to ipam/.

import type { Datastore, KeyValue } from '../config/datastore.js'
import { decodeResource, parseSelector, poolBlockSize, resourceKey, resourceKindPrefix, type Selector } from '../config/resources/index.js'
import type { IpamConfig } from '../ipam/ipam.js'
import type { NodeMatcher, PoolSpec } from '../ipam/pools.js'

/**
 * Per store and key, the record last decoded and what it gave: a record read again at the same revision (the
 * same bytes) is not parsed and validated again on every ADD. Only keys of the last read are kept.
 */
const decoded = new WeakMap<Datastore, Map<string, { readonly revision: number; readonly value: unknown }>>()

function decodeOnce<T>(store: Datastore, kv: KeyValue, decode: (kv: KeyValue) => T): T {
  let byKey = decoded.get(store)
  if (byKey === undefined) decoded.set(store, (byKey = new Map()))
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

export async function loadPoolSpecs(store: Datastore): Promise<PoolSpec[]> {
  const prefix = resourceKindPrefix('IPPool')
  const { items } = await store.list(prefix)
  keepOnly(store, prefix, new Set(items.map((kv) => kv.key)))
  return items.map((kv) => decodeOnce(store, kv, (): PoolSpec => {
    const p = decodeResource(kv.value, kv.key, 'IPPool')
    return {
      name: p.metadata.name, cidr: p.spec.cidr, blockSize: poolBlockSize(p),
      ...(p.spec.disabled !== undefined ? { disabled: p.spec.disabled } : {}),
      ...(p.spec.nodeSelector !== undefined ? { nodeSelector: p.spec.nodeSelector } : {}),
      ...(p.spec.allowedUses !== undefined ? { allowedUses: p.spec.allowedUses } : {}),
      ...(p.spec.assignmentMode !== undefined ? { assignmentMode: p.spec.assignmentMode } : {}),
    }
  }))
}

export async function loadIpamConfig(store: Datastore): Promise<Partial<IpamConfig>> {
  const kv = await store.get(resourceKey('IPAMConfig', 'default'))
  if (kv === undefined) return {}
  return decodeOnce(store, kv, () => ipamConfigOf(kv))
}

function ipamConfigOf(kv: KeyValue): Partial<IpamConfig> {
  const spec = decodeResource(kv.value, kv.key, 'IPAMConfig').spec
  return {
    ...(spec.strictAffinity !== undefined ? { strictAffinity: spec.strictAffinity } : {}),
    ...(spec.autoAllocateBlocks !== undefined ? { autoAllocateBlocks: spec.autoAllocateBlocks } : {}),
    ...(spec.maxBlocksPerHost !== undefined && spec.maxBlocksPerHost > 0 ? { maxBlocksPerHost: spec.maxBlocksPerHost } : {}),
  }
}

/**
 * A NodeMatcher over the Node resources' labels. The allocator calls it synchronously, so the labels of the
 * node an assignment is for are read by `refresh(node)` (called before each assignment) and matched from
 * memory. One get of that node, never a list of every Node: the cost of an ADD must not grow with the cluster.
 */
export class NodeLabels {
  private labels = new Map<string, Readonly<Record<string, string>>>()
  private readonly selectors = new Map<string, Selector>()

  constructor(private readonly store: Datastore) {}

  async refresh(node: string): Promise<void> {
    // A name no Node can have (the allocator refuses it with a clear error) has no labels.
    const kv = node === '' || node.includes('/') ? undefined : await this.store.get(resourceKey('Node', node))
    const next = new Map<string, Readonly<Record<string, string>>>()
    if (kv !== undefined) next.set(node, decodeOnce(this.store, kv, () => decodeResource(kv.value, kv.key, 'Node').metadata.labels ?? {}))
    this.labels = next
  }

  readonly matches: NodeMatcher = (pool, node) => {
    const text = pool.nodeSelector
    if (typeof text !== 'string') return true
    let sel = this.selectors.get(text)
    if (sel === undefined) {
      sel = parseSelector(text)
      this.selectors.set(text, sel)
    }
    return sel.matches(this.labels.get(node) ?? {})
  }
}
