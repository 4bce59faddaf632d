// The IPAM service's request, result, option and error types, and small helpers over results.
// Pure declarations: no datastore access here.

import { type Cidr, type Family, formatCidr } from '../net/index.js'
import type { AssignedAddress, ReleaseSkip } from './block.js'
import type { NodeMatcher, PoolSpec, PoolUse } from './pools.js'
import type { TxnOp } from '../config/index.js'

export interface IpamConfig {
  readonly strictAffinity: boolean
  /** Affine blocks a node may hold per address family (Calico: 0 means the default of 20). */
  readonly maxBlocksPerHost: number
  readonly autoAllocateBlocks: boolean
}

export const DEFAULT_IPAM_CONFIG: IpamConfig = { strictAffinity: false, maxBlocksPerHost: 20, autoAllocateBlocks: true }

/** What an ADD decides with: the pools, the node's labels (through nodeMatches) and the IPAMConfig. */
export interface IpamInputView {
  /** Read from the store for this ADD (not from a cache). */
  readonly fresh: boolean
  readonly pools: readonly PoolSpec[]
  readonly config: Partial<IpamConfig>
  readonly nodeMatches: NodeMatcher
  /**
   * Checks (txn ops 'check') holding a write to the records this view was read from: the IPAMConfig, the
   * node's labels and the pools given. A one-transaction ADD carries them, so it commits only while they hold.
   */
  guards(node: string, pools: readonly PoolSpec[]): readonly TxnOp[]
}

/**
 * Where autoAssign's inputs come from: `fresh` false may answer from a cached view (the agent's watched
 * cluster state, while it follows the store); true reads the store now. With transactions a cached view serves
 * only the one-transaction ADD, whose guards catch it being stale; a stale guard, and the general path, read
 * fresh. Without transactions no write can be guarded, so a read is only a snapshot as a watched view is, a
 * watch's delay older: the general path decides from the cached view too.
 */
export interface IpamInputs {
  read(node: string, fresh: boolean): Promise<IpamInputView>
}

export interface IpamOptions {
  readonly pools: readonly PoolSpec[] | (() => readonly PoolSpec[] | Promise<readonly PoolSpec[]>)
  /** autoAssign's pools, node labels and config, read per ADD; without it, `pools`, `nodeMatches` and `config`. */
  readonly inputs?: IpamInputs
  readonly config?: Partial<IpamConfig>
  readonly nodeMatches?: NodeMatcher
  /** Addresses and CIDRs never handed out automatically (Calico's IPReservation). */
  readonly reservations?: readonly string[]
  /** Attempts of one compare-and-swap before giving up (default 10). */
  readonly maxRetries?: number
  readonly now?: () => Date
}

export type IpamErrorCode = 'invalid' | 'exhausted' | 'no-pool' | 'in-use' | 'retries'

export class IpamError extends Error {
  constructor(readonly code: IpamErrorCode, message: string) {
    super(message)
    this.name = 'IpamError'
  }
}

export interface IpamAddress {
  readonly address: string
  readonly family: Family
  /** The block the address came from, e.g. 198.18.0.0/26. */
  readonly block: string
  readonly sequenceNumber: number
  /** Set when the block belongs to another node (or none): the address must be advertised as a /32. */
  readonly borrowed?: true
}

export interface AutoAssignRequest {
  readonly handle: string
  readonly node: string
  readonly num4?: number
  readonly num6?: number
  readonly attrs?: Readonly<Record<string, string>>
  /** Restrict to these pools (names or CIDRs). */
  readonly pools?: readonly string[]
  /**
   * Per family, in place of `pools` (Calico's IPv4Pools and IPv6Pools): a family given no list here may take
   * from any pool that serves the node.
   */
  readonly familyPools?: { readonly 4?: readonly string[]; readonly 6?: readonly string[] }
  readonly use?: PoolUse
}

/** The pools (names or CIDRs) a request restricts `family` to; undefined: none. */
export function requestedPools(req: Pick<AutoAssignRequest, 'pools' | 'familyPools'>, family: Family): readonly string[] | undefined {
  return req.familyPools !== undefined ? req.familyPools[family] : req.pools
}

export interface AutoAssignResult {
  readonly ipv4: readonly IpamAddress[]
  readonly ipv6: readonly IpamAddress[]
}

export interface ReleaseResult {
  readonly released: readonly { readonly address: string; readonly handle: string | null }[]
  readonly skipped: readonly { readonly address: string; readonly reason: ReleaseSkip | 'no-block' }[]
}

export interface AddressRelease {
  readonly address: string
  readonly handle?: string
  readonly sequenceNumber?: number
}

export function countByBlock(addrs: readonly IpamAddress[]): Record<string, number> {
  const out: Record<string, number> = {}
  for (const a of addrs) out[a.block] = (out[a.block] ?? 0) + 1
  return out
}

export function sameCounts(a: Readonly<Record<string, number>>, b: Readonly<Record<string, number>>): boolean {
  const ka = Object.keys(a)
  return ka.length === Object.keys(b).length && ka.every((k) => a[k] === b[k])
}

export function toIpamAddress(cidr: Cidr, a: AssignedAddress): IpamAddress {
  return { address: a.address, family: cidr.family, block: formatCidr(cidr), sequenceNumber: a.sequenceNumber }
}
