// Assignment: autoAssign and assignIP, the pure block allocator (block.ts) inside bounded compare-and-swap
// loops, the common ADD handed to the one-transaction path first. It releases only what a failed request took
// (through ipam-release.ts) and claims blocks only through ipam-affinity.ts.

import { type KeyValue, DatastoreError } from '../config/index.js'
import { type AutoAssignRequest, type AutoAssignResult, type IpamAddress, IpamError, requestedPools, toIpamAddress } from './ipam-types.js'
import { type Cidr, type Family, formatCidr, parseAddr, readCidr } from '../net/index.js'
import { addressOrdinal, blockAssign, blockAutoAssign, blockCidr, hostAffinity } from './block.js'
import { type NodeMatcher, type Pool, describePools, eligiblePools, poolBlockOf } from './pools.js'
import { BLOCKS_PREFIX, blockKey, checkSegment, decodeBlock } from './records.js'
import { HandleClaim } from './handle-claim.js'
import { isConflict } from './conflict.js'
import { type AssignInputs, type OneTxnPaths } from './one-txn.js'
import { type IpamContext } from './ipam-context.js'
import { type HandleRecords } from './ipam-handles.js'
import { type AffinityClaims } from './ipam-affinity.js'
import { type Releases } from './ipam-release.js'
import { type AheadClaims } from './ipam-ahead.js'
import { BlockBatches, type Exclusive } from './block-batch.js'

/** Runs `fn` as it is: no queue around the block writes (the caller queues the whole request). */
const direct: Exclusive = (fn) => fn()

export class Assignments {
  constructor(
    private readonly ctx: IpamContext,
    private readonly oneTxn: OneTxnPaths,
    private readonly handles: HandleRecords,
    private readonly claims: AffinityClaims,
    private readonly releases: Releases,
    private readonly ahead: AheadClaims,
  ) {
    this.batches = new BlockBatches(ctx, oneTxn)
  }

  private readonly batches: BlockBatches

  /**
   * Dual-stack assignment, all or nothing. Idempotent per handle: addresses the handle already holds are
   * returned again and only the shortfall is allocated (a retried CNI ADD gets the same pod addresses).
   * The common ADD (a new handle, each family from the block this node last allocated from) is one
   * transaction writing the handle record and the blocks (OneTxnPaths); otherwise the record is written,
   * and confirmed, before any block write it covers (HandleClaim).
   */
  async autoAssign(req: AutoAssignRequest, exclusive: Exclusive = direct): Promise<AutoAssignResult> {
    checkSegment('handle', req.handle)
    checkSegment('node', req.node)
    const want = { 4: req.num4 ?? 0, 6: req.num6 ?? 0 } as const
    for (const f of [4, 6] as const) {
      if (!Number.isInteger(want[f]) || want[f] < 0 || want[f] > 256) throw new IpamError('invalid', `num${f}: ${want[f]} is not an integer in 0..256`)
    }
    // A block being claimed ahead for a family with no room left is waited for, not claimed a second time inline.
    for (const f of [4, 6] as const) {
      const claiming = want[f] > 0 && (this.ahead.headroom(req.node, f)?.free ?? 0) < want[f] ? this.ahead.claimingAhead(req.node, f) : undefined
      if (claiming !== undefined) await claiming.catch(() => undefined)
    }
    // From a cached view, the common ADD alone; a stale view fails its guards and is read again.
    let ctx = await this.ctx.inputsFor(req.node, false)
    let fast = this.ctx.store.transactions ? await exclusive(() => this.oneTxn.assign(req, want, ctx)) : undefined
    if (fast === 'stale' && !ctx.fresh) {
      ctx = await this.ctx.inputsFor(req.node, true)
      fast = await exclusive(() => this.oneTxn.assign(req, want, ctx))
    }
    if (fast !== undefined && fast !== 'exists' && fast !== 'stale') return fast
    // With transactions the general path's writes carry no guards: it decides from a fresh read (without them no
    // write is guarded; see IpamInputs). The reads, and the handle record of a new handle written for the block
    // this node last allocated from, touch no block: outside `exclusive`.
    if ((!ctx.fresh && this.ctx.store.transactions) || fast === 'stale') ctx = await this.ctx.inputsFor(req.node, true)
    if (exclusive === direct) return this.general(req, want, ctx, exclusive)
    // Where block writes join batches, an ADD finding no block to join for a family waits for the ADD already
    // finding (or claiming) one, then joins that block's batch: a burst on a node with no room left makes one
    // claim and one write, not one claim and then a write per pod in turn. With none under way it is that ADD.
    const missing = ([4, 6] as const).filter((f) => want[f] > 0 && this.likelyBlocks(req, want, ctx).every(([b]) => b.family !== f))
    const ahead = missing.flatMap((f) => this.finding.get(`${req.node}|${f}`) ?? [])
    if (ahead.length > 0) await Promise.all(ahead)
    const done = ahead.length === 0 && missing.length > 0 ? this.find(req.node, missing) : undefined
    try {
      return await this.general(req, want, ctx, exclusive)
    } finally {
      done?.()
    }
  }

  /** Per node and family, the ADD finding a block to allocate from (none joined a batch): settles when it is done. */
  private readonly finding = new Map<string, Promise<void>>()

  /** Marks `node`'s `families` as being found a block; the function returned ends it. */
  private find(node: string, families: readonly Family[]): () => void {
    let end = (): void => undefined
    const p = new Promise<void>((resolve) => (end = resolve))
    for (const f of families) this.finding.set(`${node}|${f}`, p)
    return () => {
      for (const f of families) if (this.finding.get(`${node}|${f}`) === p) this.finding.delete(`${node}|${f}`)
      end()
    }
  }

  /** autoAssign past the one-transaction path: the handle record, then the batches or the general allocation. */
  private async general(req: AutoAssignRequest, want: Readonly<Record<Family, number>>, ctx: AssignInputs, exclusive: Exclusive): Promise<AutoAssignResult> {
    const { pools, matcher } = ctx
    const likely = this.likelyBlocks(req, want, ctx)
    const counts = likely.map(([b, n]): [string, number] => [formatCidr(b), n])
    // Where the block writes join batches, a new handle's record is created for those blocks unread: a record
    // already there ('exists', a retried ADD) is read, and what it holds served, as on every other path.
    const created = exclusive !== direct && likely.length > 0 ? await this.handles.createNew(req.handle, counts) : undefined
    const h = created !== undefined ? { kv: created, addrs: [] } : await this.handles.heldBy(req.handle)
    const held = h.addrs
    const claim = new HandleClaim(req.handle, this.handles.write, h.kv ?? 'absent', held)
    const got: IpamAddress[] = []
    const have = (f: Family): number => held.filter((a) => a.family === f).length + got.filter((a) => a.family === f).length
    try {
      if (h.kv === undefined || created !== undefined) {
        // A new handle: its record counts the blocks this node last allocated from, and (queued with their
        // turn, where the caller queues) each family joins the next write to that block with the other ADDs.
        await claim.coverEach(counts)
        if (exclusive !== direct) {
          const joined = await Promise.all(likely.map(([b, n]) => this.batches.assign(b, req, n, claim, exclusive)))
          got.push(...joined.flat())
        }
      }
      if (([4, 6] as const).some((f) => want[f] > have(f))) {
        await exclusive(async () => {
          for (const f of [4, 6] as const) if (want[f] > have(f)) await this.assignFamily(f, want[f] - have(f), req, pools, matcher, got, claim)
        })
      }
      await claim.settle()
    } catch (err) {
      await exclusive(() => this.giveBack(req.handle, got, claim))
      throw err
    }
    const all = [...held, ...got]
    return { ipv4: all.filter((a) => a.family === 4), ipv6: all.filter((a) => a.family === 6) }
  }

  /** Per family wanted, the block this node last allocated from, when it may serve: where a new handle's addresses likely go. */
  private likelyBlocks(req: AutoAssignRequest, want: Readonly<Record<Family, number>>, inputs: AssignInputs): [Cidr, number][] {
    const out: [Cidr, number][] = []
    for (const f of [4, 6] as const) {
      const last = want[f] > 0 ? this.ctx.lastBlock.get(`${req.node}|${f}`) : undefined
      if (last !== undefined && inputs.eligible(req, f, last.cidr)) out.push([last.cidr, want[f]])
    }
    return out
  }

  /** Rolls back addresses this request took (by sequence number, so an address reused meanwhile is never freed), then the record. */
  private async giveBack(handle: string, got: readonly IpamAddress[], claim: HandleClaim): Promise<void> {
    if (got.length > 0) {
      const r = await this.releases.releaseIPs(got.map((a) => ({ address: a.address, handle, sequenceNumber: a.sequenceNumber })), false).catch(() => undefined)
      if (r === undefined) claim.markUncertain()
      else claim.returned(got.filter((a) => r.released.some((x) => x.address === a.address)))
    }
    await claim.abandon()
  }

  /** Allocates `num` addresses of one family, pushing onto `sink` as blocks are written so a failure can roll back. */
  private async assignFamily(family: Family, num: number, req: AutoAssignRequest, pools: readonly Pool[], matcher: NodeMatcher | undefined, sink: IpamAddress[], claim: HandleClaim): Promise<void> {
    const requested = requestedPools(req, family)
    const eligible = eligiblePools(pools, family, req.node, req.use ?? 'Workload', requested, matcher)
    if (eligible.length === 0) {
      const manual = requested === undefined ? pools.filter((p) => p.cidr.family === family && p.spec.assignmentMode === 'Manual').map((p) => p.spec.name) : []
      const hint = manual.length > 0 ? ` (pools with assignmentMode Manual serve only requests that name them: ${manual.join(', ')})` : ''
      throw new IpamError('no-pool', `no enabled IPv${family} pool${requested ? ` among ${requested.join(',')}` : ''} serves node ${req.node}${hint}`)
    }
    const got: IpamAddress[] = []
    const take = async (cidr: Cidr, owner: string | undefined, cached?: KeyValue): Promise<void> => {
      const a = await this.assignFromBlock(cidr, num - got.length, req, owner, claim, cached)
      got.push(...a)
      sink.push(...a)
    }
    // 0. The block this node last allocated from, if it had room: the common case costs one write.
    const last = this.ctx.lastBlock.get(`${req.node}|${family}`) ?? this.oneTxn.promote(`${req.node}|${family}`)
    if (last !== undefined) {
      if (eligible.some((p) => poolBlockOf(p, family, last.cidr.base) !== undefined)) await take(last.cidr, req.node, last.kv)
      if (got.length >= num) return
    }
    // 1. Blocks this node owns (confirmed affinities only: pending is a claim in flight).
    const affine = (await this.claims.affinities(req.node)).filter((a) => a.state === 'confirmed')
    for (const a of affine) {
      const cidr = readCidr(a.cidr, 'affinity.cidr')
      if (got.length >= num) break
      if (eligible.some((p) => poolBlockOf(p, family, cidr.base) !== undefined)) await take(cidr, req.node)
    }
    // 2. Claim new blocks while under the per-host limit.
    let limited = false
    while (got.length < num && this.ctx.config.autoAllocateBlocks) {
      const claimed = await this.claims.claimNewBlock(req.node, family, eligible)
      if (claimed === 'limit') limited = true
      if (typeof claimed === 'string') break
      await take(claimed, req.node)
    }
    // 3. Borrow from other nodes' blocks (or ones nobody owns) unless strict affinity forbids it.
    if (got.length < num && !this.ctx.config.strictAffinity) {
      const { items } = await this.ctx.store.list(BLOCKS_PREFIX)
      for (const kv of items) {
        if (got.length >= num) break
        const b = decodeBlock(kv.key, kv.value)
        const cidr = blockCidr(b)
        if (b.affinity !== hostAffinity(req.node) && b.unallocated.length > 0 && eligible.some((p) => poolBlockOf(p, family, cidr.base))) await take(cidr, undefined)
      }
    }
    if (got.length < num) {
      const why = this.ctx.config.strictAffinity ? 'no more free affine blocks and strict affinity enabled'
        : limited ? `node ${req.node} holds maxBlocksPerHost=${this.ctx.config.maxBlocksPerHost} blocks and no block has room` : 'no free address left'
      throw new IpamError('exhausted', `IPv${family}: assigned ${got.length} of ${num} for ${req.handle}: ${why} in pools ${describePools(eligible)}`)
    }
  }

  /**
   * One CAS loop on one block; `owner` set means only while the block is still affine to that node. The first
   * attempt may use the cached copy of the block this node last allocated from; a stale copy just conflicts.
   */
  private async assignFromBlock(cidr: Cidr, num: number, req: AutoAssignRequest, owner: string | undefined, claim: HandleClaim, cached?: KeyValue): Promise<IpamAddress[]> {
    const key = blockKey(cidr)
    const hintKey = `${req.node}|${cidr.family}`
    let first = cached
    return this.ctx.retry(`assign from block ${formatCidr(cidr)}`, async () => {
      const b = first === undefined ? await this.ctx.readBlock(key) : { kv: first, block: decodeBlock(key, first.value) }
      first = undefined
      if (b === undefined || (owner !== undefined && b.block.affinity !== hostAffinity(owner))) return []
      const assigned = blockAutoAssign(b.block, num, req.handle, req.attrs ?? {}, this.ctx.isReserved)
      if (assigned.length === 0) return []
      await claim.cover(formatCidr(cidr), assigned.length)
      const value = JSON.stringify(b.block)
      const written = await this.ctx.store.update(key, value, b.kv.revision).catch((err: unknown) => {
        if (!isConflict(err)) claim.markUncertain()
        throw err
      })
      this.oneTxn.blockWritten(hintKey, cidr, { key, value, revision: written.revision }, owner !== undefined && b.block.unallocated.length > 0)
      const out = assigned.map((a) => ({ ...toIpamAddress(cidr, a), ...(owner === undefined && b.block.affinity !== hostAffinity(req.node) ? { borrowed: true as const } : {}) }))
      claim.confirmed(out)
      return out
    })
  }

  /** Assigns one given address (claiming its block for `node` if nobody has). Idempotent for the same handle. */
  async assignIP(req: { address: string; handle: string; node: string; attrs?: Readonly<Record<string, string>> }): Promise<IpamAddress> {
    checkSegment('handle', req.handle)
    checkSegment('node', req.node)
    const { family, value } = parseAddr(req.address, 'address')
    const pool = (await this.ctx.pools()).find((p) => poolBlockOf(p, family, value) !== undefined)
    if (pool === undefined) throw new IpamError('no-pool', `address ${req.address} is in no IP pool`)
    const cidr = poolBlockOf(pool, family, value) as Cidr
    const ord = addressOrdinal(cidr, family, value) as number
    const key = blockKey(cidr)
    const h = await this.handles.heldBy(req.handle)
    const claim = new HandleClaim(req.handle, this.handles.write, h.kv ?? 'absent', h.addrs)
    const got = await this.ctx.retry(`assign ${req.address}`, async () => {
      const b = await this.ctx.readBlock(key)
      if (b === undefined) {
        await this.claims.claimBlock(req.node, cidr)
        throw new DatastoreError('conflict', 'block was just created; read it again', key)
      }
      const cur = b.block.allocations[ord]
      if (cur !== null && cur !== undefined) {
        if (b.block.attributes[cur]?.handleId === req.handle) return { addr: toIpamAddress(cidr, { address: req.address, ordinal: ord, sequenceNumber: b.block.sequenceNumberForAllocation[String(ord)] ?? 0 }), fresh: false }
        throw new IpamError('in-use', `address ${req.address} is already assigned to handle ${b.block.attributes[cur]?.handleId ?? '(none)'}`)
      }
      const a = blockAssign(b.block, ord, req.handle, req.attrs ?? {})
      await claim.cover(formatCidr(cidr), 1)
      await this.ctx.store.update(key, JSON.stringify(b.block), b.kv.revision).catch((err: unknown) => {
        if (!isConflict(err)) claim.markUncertain()
        throw err
      })
      return { addr: toIpamAddress(cidr, a), fresh: true }
    }).catch(async (err: unknown) => {
      await claim.abandon()
      throw err
    })
    if (got.fresh) claim.confirmed([got.addr])
    await claim.settle()
    return got.addr
  }
}
