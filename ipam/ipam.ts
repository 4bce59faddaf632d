// The IPAM service's face: one Ipam per process over a Datastore, composed of the parts that own every write
// under /pinto/ipam/ (ipam-assign.ts assigns, ipam-release.ts releases, ipam-affinity.ts claims and gives up
// blocks, ipam-ahead.ts claims ahead, ipam-handles.ts edits handle records, one-txn.ts the common ADD and DEL,
// over ipam-context.ts). It decides nothing itself, and never reads resources, files or sockets.

import { type Datastore, type KeyValue } from '../config/index.js'
import type { AddressRelease, AutoAssignRequest, AutoAssignResult, IpamAddress, IpamConfig, IpamOptions, ReleaseResult } from './ipam-types.js'
import type { Cidr, Family } from '../net/index.js'
import type { Pool } from './pools.js'
import type { AffinityRecord } from './records.js'
import { OneTxnPaths } from './one-txn.js'
import { IpamContext } from './ipam-context.js'
import { HandleRecords } from './ipam-handles.js'
import { AffinityClaims } from './ipam-affinity.js'
import { Releases } from './ipam-release.js'
import { type AheadOutcome, AheadClaims } from './ipam-ahead.js'
import { Assignments } from './ipam-assign.js'
import { type Exclusive } from './block-batch.js'

export * from './ipam-types.js'
export type { AheadOutcome } from './ipam-ahead.js'
export type { Exclusive } from './block-batch.js'

export class Ipam {
  private readonly ctx: IpamContext
  private readonly handles: HandleRecords
  private readonly claims: AffinityClaims
  private readonly releases: Releases
  private readonly ahead: AheadClaims
  private readonly assignments: Assignments

  constructor(readonly store: Datastore, options: IpamOptions) {
    this.ctx = new IpamContext(store, options)
    const oneTxn = new OneTxnPaths(this.ctx)
    this.handles = new HandleRecords(this.ctx, oneTxn)
    this.claims = new AffinityClaims(this.ctx)
    this.releases = new Releases(this.ctx, oneTxn, this.handles)
    this.ahead = new AheadClaims(this.ctx, this.claims)
    this.assignments = new Assignments(this.ctx, oneTxn, this.handles, this.claims, this.releases, this.ahead)
  }

  /** The config in force: the options', overlaid with the IPAMConfig the latest ADD read. */
  get config(): IpamConfig {
    return this.ctx.config
  }

  pools(): Promise<Pool[]> {
    return this.ctx.pools()
  }

  /** Runs `attempt` until it stops hitting write conflicts, at most maxRetries times. */
  retry<T>(what: string, attempt: () => Promise<T>): Promise<T> {
    return this.ctx.retry(what, attempt)
  }

  // Assignment (ipam-assign.ts).

  /**
   * Dual-stack assignment, all or nothing, idempotent per handle. With `exclusive`, only the block writes run in
   * it; the caller keeps the handle's requests one at a time (IpamService), and the reads and the handle's record
   * go on meanwhile.
   */
  autoAssign(req: AutoAssignRequest, exclusive?: Exclusive): Promise<AutoAssignResult> {
    return this.assignments.autoAssign(req, exclusive)
  }

  /** Assigns one given address (claiming its block for `node` if nobody has). Idempotent for the same handle. */
  assignIP(req: { address: string; handle: string; node: string; attrs?: Readonly<Record<string, string>> }): Promise<IpamAddress> {
    return this.assignments.assignIP(req)
  }

  // Release (ipam-release.ts).

  /** Releases addresses; a request naming a stale handle or sequence number is skipped, never applied. */
  releaseIPs(requests: readonly AddressRelease[], adjustHandles = true): Promise<ReleaseResult> {
    return this.releases.releaseIPs(requests, adjustHandles)
  }

  /** Releases every address of a handle, then its record. */
  releaseByHandle(handle: string): Promise<ReleaseResult> {
    return this.releases.releaseByHandle(handle)
  }

  /** The block holding an address: through the pools first, else by scanning blocks. */
  locateBlock(family: Family, value: bigint): Promise<Cidr | undefined> {
    return this.releases.locateBlock(family, value)
  }

  // Handle records (ipam-handles.ts).

  /** The addresses a handle holds now (read from the blocks its record names). */
  handleAddresses(handle: string): Promise<IpamAddress[]> {
    return this.handles.addresses(handle)
  }

  /** CAS-edits a handle record; it is deleted when no block count is left. Returns the record written, if any. */
  adjustHandle(handle: string, edit: (blocks: Record<string, number>) => void, known?: KeyValue | 'absent'): Promise<KeyValue | undefined> {
    return this.handles.adjust(handle, edit, known)
  }

  // Block affinities (ipam-affinity.ts).

  affinities(node: string): Promise<AffinityRecord[]> {
    return this.claims.affinities(node)
  }

  /** The two-phase claim of a block for `node`; false when another node has it. */
  claimBlock(node: string, cidr: Cidr): Promise<boolean> {
    return this.claims.claimBlock(node, cidr)
  }

  /** Gives up a node's claim on a block; with mustBeEmpty a block in use stays the node's and this answers false. */
  releaseAffinity(node: string, cidr: Cidr, mustBeEmpty: boolean): Promise<boolean> {
    return this.claims.releaseAffinity(node, cidr, mustBeEmpty)
  }

  /** Deletes the node's block if empty, else (unless mustBeEmpty) makes it unaffine. */
  disownBlock(node: string, cidr: Cidr, mustBeEmpty: boolean): Promise<boolean> {
    return this.claims.disownBlock(node, cidr, mustBeEmpty)
  }

  /** Releases all of a (deleted) node's block affinities; blocks still in use stay, unaffine. */
  releaseHostAffinities(node: string): Promise<number> {
    return this.claims.releaseHostAffinities(node)
  }

  // Blocks ahead of the ADDs (ipam-ahead.ts).

  /** Reads the node's affine blocks so its first ADD is one transaction; the blocks read. */
  warm(node: string): Promise<number> {
    return this.ahead.warm(node)
  }

  /** Free addresses in the node's cached blocks of `family`, without a read; undefined when it holds none. */
  headroom(node: string, family: Family): { readonly free: number; readonly blockSize: number } | undefined {
    return this.ahead.headroom(node, family)
  }

  /** The claim ahead of node|family running now, if any. */
  claimingAhead(node: string, family: Family): Promise<AheadOutcome> | undefined {
    return this.ahead.claimingAhead(node, family)
  }

  /** Claims the node's next block of `family` while its blocks still have room (see AheadClaims.claimAhead). */
  claimAhead(node: string, family: Family, below?: number): Promise<AheadOutcome> {
    return this.ahead.claimAhead(node, family, below)
  }
}
