// The narrow view of IP pools the allocator needs (not the IPPool resource itself), which pools may serve
// a node, and the order in which a node walks a pool's block CIDRs. Pure.

import { type Cidr, type Family, AddrError, cidrContains, cidrSize, familyBits, formatCidr, maskCidr, parseCidr } from '../net/index.js'

export type PoolUse = 'Workload' | 'Tunnel' | 'LoadBalancer'

export interface PoolSpec {
  readonly name: string
  readonly cidr: string
  readonly blockSize: number
  readonly disabled?: boolean
  /** A predicate on the node name, or a selector string that `nodeMatches` understands; absent or `all()` means every node. */
  readonly nodeSelector?: string | ((node: string) => boolean)
  /** Default [Workload, Tunnel], like Calico. */
  readonly allowedUses?: readonly PoolUse[]
  /** Manual: only a request naming the pool (by name or CIDR) gets its addresses. Default Automatic. */
  readonly assignmentMode?: 'Automatic' | 'Manual'
}

/** Decides whether a pool's string nodeSelector selects a node; supplied by whoever owns the selector language. */
export type NodeMatcher = (pool: PoolSpec, node: string) => boolean

export interface Pool {
  readonly spec: PoolSpec
  readonly cidr: Cidr
  readonly blockSize: number
}

/** Validates a pool spec; errors name `pools[i].field`. */
export function toPool(spec: PoolSpec, field = 'pool'): Pool {
  const cidr = parseCidr(spec.cidr, `${field}.cidr`)
  const bits = familyBits(cidr.family)
  const [lo, hi] = cidr.family === 4 ? [20, 32] : [116, 128]
  if (!Number.isInteger(spec.blockSize) || spec.blockSize < lo || spec.blockSize > hi) {
    throw new AddrError(`${field}.blockSize`, `${spec.blockSize} is outside ${lo}..${hi} for IPv${cidr.family}`)
  }
  if (spec.blockSize < cidr.prefix || spec.blockSize > bits) {
    throw new AddrError(`${field}.blockSize`, `a /${spec.blockSize} block does not fit in pool ${spec.cidr}`)
  }
  return { spec, cidr, blockSize: spec.blockSize }
}

export function poolSelectsNode(pool: Pool, node: string, matcher?: NodeMatcher): boolean {
  const s = pool.spec.nodeSelector
  if (typeof s === 'function') return s(node)
  if (s === undefined || s.trim() === '' || s.trim() === 'all()') return true
  if (matcher !== undefined) return matcher(pool.spec, node)
  throw new AddrError(`pool ${pool.spec.name}.nodeSelector`, `${JSON.stringify(s)} needs a node matcher; none was given to the IPAM`)
}

/**
 * Pools of `family` that may hand addresses to `node` for `use`, optionally narrowed to the names or CIDRs
 * asked for. A Manual pool (Calico's assignmentMode) serves only requests that name it.
 */
export function eligiblePools(
  pools: readonly Pool[],
  family: Family,
  node: string,
  use: PoolUse,
  requested: readonly string[] | undefined,
  matcher?: NodeMatcher,
): Pool[] {
  return pools.filter(
    (p) =>
      p.cidr.family === family &&
      p.spec.disabled !== true &&
      (p.spec.allowedUses ?? ['Workload', 'Tunnel']).includes(use) &&
      (requested === undefined ? p.spec.assignmentMode !== 'Manual' : requested.includes(p.spec.name) || requested.includes(p.spec.cidr)) &&
      poolSelectsNode(p, node, matcher),
  )
}

export function poolBlockCount(pool: Pool): bigint {
  return cidrSize(pool.cidr) >> BigInt(familyBits(pool.cidr.family) - pool.blockSize)
}

export function poolBlockAt(pool: Pool, index: bigint): Cidr {
  const step = 1n << BigInt(familyBits(pool.cidr.family) - pool.blockSize)
  return { family: pool.cidr.family, base: pool.cidr.base + index * step, prefix: pool.blockSize }
}

/** FNV-1a over the node name: a stable start so each node retries in the same order and nodes spread apart. */
function nodeHash(node: string): bigint {
  let h = 0xcbf29ce484222325n
  for (const b of Buffer.from(node, 'utf8')) h = ((h ^ BigInt(b)) * 0x100000001b3n) & 0xffffffffffffffffn
  return h
}

/** Every block CIDR of the pool once, starting at a node-dependent place and wrapping (Calico's randomBlockGenerator). */
export function* blockCandidates(pool: Pool, node: string): Generator<Cidr> {
  const n = poolBlockCount(pool)
  const start = nodeHash(node) % n
  for (let i = 0n; i < n; i++) yield poolBlockAt(pool, (start + i) % n)
}

/** The block CIDR of `pool` holding an address, or undefined when the pool does not contain it. */
export function poolBlockOf(pool: Pool, family: Family, value: bigint): Cidr | undefined {
  return cidrContains(pool.cidr, family, value) ? maskCidr(family, value, pool.blockSize) : undefined
}

export function describePools(pools: readonly Pool[]): string {
  return `[${pools.map((p) => formatCidr(p.cidr)).join(', ')}]`
}
