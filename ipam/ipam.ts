// The IPAM service: the pure block allocator inside bounded compare-and-swap retry loops over a Datastore.
// It owns every write under /pinto/ipam/; it knows pools only through the narrow PoolSpec view and never
// reads resources, files or sockets itself.

import { type Datastore, type KeyValue, DatastoreError } from '../config/datastore.js'
import {
  type AddressRelease, type AutoAssignRequest, type AutoAssignResult, type IpamAddress, type IpamConfig, type IpamOptions, type ReleaseResult,
  DEFAULT_IPAM_CONFIG, IpamError, toIpamAddress,
} from './ipam-types.js'
import { type Cidr, type Family, formatCidr, parseAddr, parseCidr, readCidr } from '../config/ip/index.js'
import {
  type AllocationBlock, type IsReserved, type ReleaseRequest, type ReleaseSkip,
  addressOrdinal, blockAssign, blockAutoAssign, blockCidr, blockIsEmpty, blockOrdinalsOf, blockRelease, blockReleaseByHandle,
  hostAffinity, newBlock, ordinalAddress,
} from './block.js'
import { type NodeMatcher, type Pool, type PoolSpec, blockCandidates, describePools, eligiblePools, poolBlockOf, toPool } from './pools.js'
import {
  type AffinityRecord, type HandleRecord, BLOCKS_PREFIX, affinityKey, affinityPrefix, affinityRecord, blockKey, checkSegment,
  decodeAffinity, decodeBlock, decodeHandle, handleKey,
} from './records.js'
import { type HandleWriter, HandleClaim } from './handle-claim.js'
import { type AssignInputs, type LastBlocks, OneTxnPaths } from './one-txn.js'
import { conflictBackoff, isConflict } from './conflict.js'

export * from './ipam-types.js'

/** Candidate blocks a claim tries one by one before it lists every block to skip the taken ones. */
const CLAIM_PROBES = 8


export class Ipam {
  readonly config: IpamConfig
  private readonly maxRetries: number
  private readonly now: () => Date
  private readonly reserved: Cidr[]
  private readonly lastBlock: LastBlocks = new Map()
  /** The common ADD and DEL, one transaction each. */
  private readonly oneTxn: OneTxnPaths

  constructor(readonly store: Datastore, private readonly options: IpamOptions) {
    this.config = { ...DEFAULT_IPAM_CONFIG, ...options.config }
    if (this.config.maxBlocksPerHost === 0) this.config = { ...this.config, maxBlocksPerHost: DEFAULT_IPAM_CONFIG.maxBlocksPerHost }
    this.maxRetries = options.maxRetries ?? 10
    this.now = options.now ?? (() => new Date())
    this.reserved = (options.reservations ?? []).map((r, i) =>
      parseCidr(r, `reservations[${i}]`, { bare: true }),
    )
    this.oneTxn = new OneTxnPaths({ store, lastBlock: this.lastBlock, isReserved: this.isReserved })
  }

  private readonly isReserved: IsReserved = (family, value) =>
    this.reserved.some((c) => c.family === family && addressOrdinal(c, family, value) !== undefined)

  /** Specs already validated (a pools function that hands back the same object for an unchanged pool skips it). */
  private readonly validated = new WeakMap<PoolSpec, Pool>()

  async pools(): Promise<Pool[]> {
    return this.validate(await this.poolSpecs())
  }

  private async poolSpecs(): Promise<readonly PoolSpec[]> {
    return typeof this.options.pools === 'function' ? this.options.pools() : this.options.pools
  }

  private validate(specs: readonly PoolSpec[]): Pool[] {
    return specs.map((s, i) => {
      let p = this.validated.get(s)
      if (p === undefined) this.validated.set(s, (p = toPool(s, `pools[${i}]`)))
      return p
    })
  }

  /**
   * The pools, node matcher and config an ADD for `node` decides with (the config applied to `config`), which
   * pools may hold a block, and the guards of a one-transaction ADD from blocks at `cidrs`: through
   * options.inputs when given (a cached view unless `fresh`), else the pools option and no guards.
   */
  private async inputsFor(node: string, fresh: boolean): Promise<AssignInputs> {
    const view = await this.options.inputs?.read(node, fresh)
    if (view !== undefined) {
      Object.assign(this.config, { ...DEFAULT_IPAM_CONFIG, ...this.options.config, ...view.config })
      if (this.config.maxBlocksPerHost === 0) Object.assign(this.config, { maxBlocksPerHost: DEFAULT_IPAM_CONFIG.maxBlocksPerHost })
    }
    const pools = this.validate(view?.pools ?? (await this.poolSpecs()))
    const matcher = view?.nodeMatches ?? this.options.nodeMatches
    return {
      fresh: view?.fresh ?? true, pools, matcher,
      eligible: (req, family, cidr) => eligiblePools(pools, family, req.node, req.use ?? 'Workload', req.pools, matcher).some((p) => poolBlockOf(p, family, cidr.base) !== undefined),
      guards: (cidrs) => view?.guards(node, pools.filter((p) => cidrs.some((c) => poolBlockOf(p, c.family, c.base) !== undefined)).map((p) => p.spec)) ?? [],
    }
  }

  /** Runs `attempt` until it stops hitting write conflicts, at most maxRetries times, with a small random backoff. */
  async retry<T>(what: string, attempt: () => Promise<T>): Promise<T> {
    for (let i = 1; ; i++) {
      try {
        return await attempt()
      } catch (err) {
        if (!isConflict(err)) throw err
        if (i >= this.maxRetries) throw new IpamError('retries', `${what}: gave up after ${i} conflicting writes (${(err as Error).message})`)
        await conflictBackoff(i)
      }
    }
  }

  private async readBlock(key: string): Promise<{ kv: KeyValue; block: AllocationBlock } | undefined> {
    const kv = await this.store.get(key)
    return kv === undefined ? undefined : { kv, block: decodeBlock(key, kv.value) }
  }

  /** The addresses a handle holds now, per family (read from the blocks its record names). */
  async handleAddresses(handle: string): Promise<IpamAddress[]> {
    return (await this.heldBy(handle)).addrs
  }

  private async heldBy(handle: string): Promise<{ kv: KeyValue | undefined; addrs: IpamAddress[] }> {
    const kv = await this.store.get(handleKey(handle))
    if (kv === undefined) return { kv, addrs: [] }
    const out: IpamAddress[] = []
    for (const cidrText of Object.keys(decodeHandle(kv.key, kv.value).blocks)) {
      const cidr = readCidr(cidrText, `${kv.key}.blocks`)
      const b = await this.readBlock(blockKey(cidr))
      if (b === undefined) continue
      for (const ord of blockOrdinalsOf(b.block, handle)) {
        out.push({ address: ordinalAddress(cidr, ord), family: cidr.family, block: cidrText, sequenceNumber: b.block.sequenceNumberForAllocation[String(ord)] ?? 0 })
      }
    }
    return { kv, addrs: out }
  }

  /**
   * Dual-stack assignment, all or nothing. Idempotent per handle: addresses the handle already holds are
   * returned again and only the shortfall is allocated (a retried CNI ADD gets the same pod addresses).
   * The common ADD (a new handle, each family from the block this node last allocated from) is one
   * transaction writing the handle record and the blocks (OneTxnPaths); otherwise the record is written,
   * and confirmed, before any block write it covers (HandleClaim).
   */
  async autoAssign(req: AutoAssignRequest): Promise<AutoAssignResult> {
    checkSegment('handle', req.handle)
    checkSegment('node', req.node)
    const want = { 4: req.num4 ?? 0, 6: req.num6 ?? 0 } as const
    for (const f of [4, 6] as const) {
      if (!Number.isInteger(want[f]) || want[f] < 0 || want[f] > 256) throw new IpamError('invalid', `num${f}: ${want[f]} is not an integer in 0..256`)
    }
    // From a cached view, the common ADD alone; a stale view fails its guards and is read again.
    let ctx = await this.inputsFor(req.node, false)
    let fast = await this.oneTxn.assign(req, want, ctx)
    if (fast === 'stale' && !ctx.fresh) {
      ctx = await this.inputsFor(req.node, true)
      fast = await this.oneTxn.assign(req, want, ctx)
    }
    if (fast !== undefined && fast !== 'exists' && fast !== 'stale') return fast
    // The general path's writes carry no guards: it decides from a fresh read.
    if (!ctx.fresh || fast === 'stale') ctx = await this.inputsFor(req.node, true)
    const { pools, matcher } = ctx
    const h = await this.heldBy(req.handle)
    const held = h.addrs
    const claim = new HandleClaim(req.handle, this.writeHandle, h.kv ?? 'absent', held)
    const got: IpamAddress[] = []
    try {
      for (const f of [4, 6] as const) {
        const have = held.filter((a) => a.family === f).length
        if (want[f] > have) await this.assignFamily(f, want[f] - have, req, pools, matcher, got, claim)
      }
      await claim.settle()
    } catch (err) {
      await this.giveBack(req.handle, got, claim)
      throw err
    }
    const all = [...held, ...got]
    return { ipv4: all.filter((a) => a.family === 4), ipv6: all.filter((a) => a.family === 6) }
  }

  private readonly writeHandle: HandleWriter = (handle, edit, known) => this.adjustHandle(handle, edit, known)

  /** Rolls back addresses this request took (by sequence number, so an address reused meanwhile is never freed), then the record. */
  private async giveBack(handle: string, got: readonly IpamAddress[], claim: HandleClaim): Promise<void> {
    if (got.length > 0) {
      const r = await this.releaseIPs(got.map((a) => ({ address: a.address, handle, sequenceNumber: a.sequenceNumber })), false).catch(() => undefined)
      if (r === undefined) claim.markUncertain()
      else claim.returned(got.filter((a) => r.released.some((x) => x.address === a.address)))
    }
    await claim.abandon()
  }

  /** Allocates `num` addresses of one family, pushing onto `sink` as blocks are written so a failure can roll back. */
  private async assignFamily(family: Family, num: number, req: AutoAssignRequest, pools: readonly Pool[], matcher: NodeMatcher | undefined, sink: IpamAddress[], claim: HandleClaim): Promise<void> {
    const eligible = eligiblePools(pools, family, req.node, req.use ?? 'Workload', req.pools, matcher)
    if (eligible.length === 0) {
      const manual = req.pools === undefined ? pools.filter((p) => p.cidr.family === family && p.spec.assignmentMode === 'Manual').map((p) => p.spec.name) : []
      const hint = manual.length > 0 ? ` (pools with assignmentMode Manual serve only requests that name them: ${manual.join(', ')})` : ''
      throw new IpamError('no-pool', `no enabled IPv${family} pool${req.pools ? ` among ${req.pools.join(',')}` : ''} serves node ${req.node}${hint}`)
    }
    const got: IpamAddress[] = []
    const take = async (cidr: Cidr, owner: string | undefined, cached?: KeyValue): Promise<void> => {
      const a = await this.assignFromBlock(cidr, num - got.length, req, owner, claim, cached)
      got.push(...a)
      sink.push(...a)
    }
    // 0. The block this node last allocated from, if it had room: the common case costs one write.
    const last = this.lastBlock.get(`${req.node}|${family}`)
    if (last !== undefined) {
      if (eligible.some((p) => poolBlockOf(p, family, last.cidr.base) !== undefined)) await take(last.cidr, req.node, last.kv)
      if (got.length >= num) return
    }
    // 1. Blocks this node owns (confirmed affinities only: pending is a claim in flight).
    const affine = (await this.affinities(req.node)).filter((a) => a.state === 'confirmed')
    for (const a of affine) {
      const cidr = readCidr(a.cidr, 'affinity.cidr')
      if (got.length >= num) break
      if (eligible.some((p) => poolBlockOf(p, family, cidr.base) !== undefined)) await take(cidr, req.node)
    }
    // 2. Claim new blocks while under the per-host limit.
    let limited = false
    while (got.length < num && this.config.autoAllocateBlocks) {
      const claimed = await this.claimNewBlock(req.node, family, eligible)
      if (claimed === 'limit') limited = true
      if (typeof claimed === 'string') break
      await take(claimed, req.node)
    }
    // 3. Borrow from other nodes' blocks (or ones nobody owns) unless strict affinity forbids it.
    if (got.length < num && !this.config.strictAffinity) {
      const { items } = await this.store.list(BLOCKS_PREFIX)
      for (const kv of items) {
        if (got.length >= num) break
        const b = decodeBlock(kv.key, kv.value)
        const cidr = blockCidr(b)
        if (b.affinity !== hostAffinity(req.node) && b.unallocated.length > 0 && eligible.some((p) => poolBlockOf(p, family, cidr.base))) await take(cidr, undefined)
      }
    }
    if (got.length < num) {
      const why = this.config.strictAffinity ? 'no more free affine blocks and strict affinity enabled'
        : limited ? `node ${req.node} holds maxBlocksPerHost=${this.config.maxBlocksPerHost} blocks and no block has room` : 'no free address left'
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
    return this.retry(`assign from block ${formatCidr(cidr)}`, async () => {
      const b = first === undefined ? await this.readBlock(key) : { kv: first, block: decodeBlock(key, first.value) }
      first = undefined
      if (b === undefined || (owner !== undefined && b.block.affinity !== hostAffinity(owner))) return []
      const assigned = blockAutoAssign(b.block, num, req.handle, req.attrs ?? {}, this.isReserved)
      if (assigned.length === 0) return []
      await claim.cover(formatCidr(cidr), assigned.length)
      const value = JSON.stringify(b.block)
      const written = await this.store.update(key, value, b.kv.revision).catch((err: unknown) => {
        if (!isConflict(err)) claim.markUncertain()
        throw err
      })
      if (owner !== undefined && b.block.unallocated.length > 0) this.lastBlock.set(hintKey, { cidr, kv: { key, value, revision: written.revision } })
      else if (this.lastBlock.get(hintKey)?.kv.key === key) this.lastBlock.delete(hintKey)
      const out = assigned.map((a) => ({ ...toIpamAddress(cidr, a), ...(owner === undefined && b.block.affinity !== hostAffinity(req.node) ? { borrowed: true as const } : {}) }))
      claim.confirmed(out)
      return out
    })
  }

  async affinities(node: string): Promise<AffinityRecord[]> {
    const { items } = await this.store.list(affinityPrefix(node))
    return items.map((kv) => decodeAffinity(kv.key, kv.value))
  }

  /**
   * Finds a block CIDR nobody has created and claims it; 'limit' at maxBlocksPerHost, 'none' when the pools are
   * full. A pool's first CLAIM_PROBES candidates are tried by key (in a pool with room one of them is free), and
   * only past them is every block listed: a claim must not read the whole cluster's blocks in the common case.
   */
  private async claimNewBlock(node: string, family: Family, eligible: readonly Pool[]): Promise<Cidr | 'limit' | 'none'> {
    const mine = (await this.affinities(node)).filter((a) => a.state !== 'pendingDeletion' && readCidr(a.cidr, 'affinity.cidr').family === family)
    if (mine.length >= this.config.maxBlocksPerHost) return 'limit'
    let existing: Set<string> | undefined
    for (const pool of eligible) {
      let probes = 0
      for (const cidr of blockCandidates(pool, node)) {
        const key = blockKey(cidr)
        if (probes < CLAIM_PROBES) {
          probes++
          if ((await this.store.get(key)) !== undefined) continue
        } else {
          existing ??= new Set((await this.store.list(BLOCKS_PREFIX)).items.map((kv) => kv.key))
          if (existing.has(key)) continue
        }
        if (await this.claimBlock(node, cidr)) return cidr
        existing?.add(key)
      }
    }
    return 'none'
  }

  /**
   * The two-phase claim: a pending affinity, then the block created with this node's affinity, then the
   * affinity confirmed. Losing the create to another node undoes the pending affinity. Returns false on loss.
   */
  async claimBlock(node: string, cidr: Cidr): Promise<boolean> {
    const akey = affinityKey(node, cidr)
    let aff: KeyValue
    try {
      aff = await this.store.create(akey, JSON.stringify(affinityRecord(node, cidr, 'pending')))
    } catch (err) {
      if (!(err instanceof DatastoreError && err.code === 'exists')) throw err
      const cur = await this.store.get(akey)
      // Ours from an interrupted or concurrent claim (go on), or being deleted right now (leave it alone).
      if (cur === undefined || decodeAffinity(akey, cur.value).state === 'pendingDeletion') return false
      aff = cur
    }
    try {
      await this.store.create(blockKey(cidr), JSON.stringify(newBlock(cidr, hostAffinity(node), this.now().toISOString(), this.now().getTime() * 1000)))
    } catch (err) {
      if (!(err instanceof DatastoreError && err.code === 'exists')) throw err
      const b = await this.readBlock(blockKey(cidr))
      if (b?.block.affinity !== hostAffinity(node)) {
        await this.store.delete(akey, aff.revision).catch(() => undefined)
        return false
      }
    }
    // Another process of this node may be confirming the same claim: re-read on conflict.
    return this.retry(`confirm affinity ${akey}`, async () => {
      const cur = await this.store.get(akey)
      const state = cur === undefined ? undefined : decodeAffinity(akey, cur.value).state
      if (cur === undefined || state === 'pendingDeletion') return false
      if (state === 'pending') await this.store.update(akey, JSON.stringify(affinityRecord(node, cidr, 'confirmed')), cur.revision)
      return true
    })
  }

  /** CAS-edits a handle record; it is deleted when no block count is left. Returns the record written, if any. */
  async adjustHandle(handle: string, edit: (blocks: Record<string, number>) => void, known?: KeyValue | 'absent'): Promise<KeyValue | undefined> {
    const key = handleKey(handle)
    let hint = known
    return this.retry(`update handle ${handle}`, async () => {
      // The first attempt may trust a record just read (saving a round trip); a conflict makes the next one read.
      const kv = hint === undefined ? await this.store.get(key) : hint === 'absent' ? undefined : hint
      hint = undefined
      const blocks: Record<string, number> = kv === undefined ? {} : { ...decodeHandle(key, kv.value).blocks }
      edit(blocks)
      for (const [b, n] of Object.entries(blocks)) if (n <= 0) delete blocks[b]
      const value = JSON.stringify({ handleId: handle, blocks } satisfies HandleRecord)
      const written = kv === undefined
        ? (Object.keys(blocks).length > 0 ? await this.store.create(key, value) : undefined)
        : Object.keys(blocks).length === 0 ? void (await this.store.delete(key, kv.revision)) : await this.store.update(key, value, kv.revision)
      this.oneTxn.handleWritten(handle, written)
      return written
    })
  }

  /** Assigns one given address (claiming its block for `node` if nobody has). Idempotent for the same handle. */
  async assignIP(req: { address: string; handle: string; node: string; attrs?: Readonly<Record<string, string>> }): Promise<IpamAddress> {
    checkSegment('handle', req.handle)
    checkSegment('node', req.node)
    const { family, value } = parseAddr(req.address, 'address')
    const pool = (await this.pools()).find((p) => poolBlockOf(p, family, value) !== undefined)
    if (pool === undefined) throw new IpamError('no-pool', `address ${req.address} is in no IP pool`)
    const cidr = poolBlockOf(pool, family, value) as Cidr
    const ord = addressOrdinal(cidr, family, value) as number
    const key = blockKey(cidr)
    const h = await this.heldBy(req.handle)
    const claim = new HandleClaim(req.handle, this.writeHandle, h.kv ?? 'absent', h.addrs)
    const got = await this.retry(`assign ${req.address}`, async () => {
      const b = await this.readBlock(key)
      if (b === undefined) {
        await this.claimBlock(req.node, cidr)
        throw new DatastoreError('conflict', 'block was just created; read it again', key)
      }
      const cur = b.block.allocations[ord]
      if (cur !== null && cur !== undefined) {
        if (b.block.attributes[cur]?.handleId === req.handle) return { addr: toIpamAddress(cidr, { address: req.address, ordinal: ord, sequenceNumber: b.block.sequenceNumberForAllocation[String(ord)] ?? 0 }), fresh: false }
        throw new IpamError('in-use', `address ${req.address} is already assigned to handle ${b.block.attributes[cur]?.handleId ?? '(none)'}`)
      }
      const a = blockAssign(b.block, ord, req.handle, req.attrs ?? {})
      await claim.cover(formatCidr(cidr), 1)
      await this.store.update(key, JSON.stringify(b.block), b.kv.revision).catch((err: unknown) => {
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

  /** The block key holding an address: through the pools first, else by scanning blocks (its pool may be gone). */
  async locateBlock(family: Family, value: bigint): Promise<Cidr | undefined> {
    for (const p of await this.pools()) {
      const c = poolBlockOf(p, family, value)
      if (c !== undefined && (await this.store.get(blockKey(c))) !== undefined) return c
    }
    for (const kv of (await this.store.list(BLOCKS_PREFIX)).items) {
      const c = blockCidr(decodeBlock(kv.key, kv.value))
      if (addressOrdinal(c, family, value) !== undefined) return c
    }
    return undefined
  }

  /** Releases addresses; a request naming a stale handle or sequence number is skipped, never applied. */
  async releaseIPs(requests: readonly AddressRelease[], adjustHandles = true): Promise<ReleaseResult> {
    const byBlock = new Map<string, { cidr: Cidr; reqs: ReleaseRequest[] }>()
    const skipped: { address: string; reason: ReleaseSkip | 'no-block' }[] = []
    for (const [i, r] of requests.entries()) {
      const { family, value } = parseAddr(r.address, `releases[${i}].address`)
      const cidr = await this.locateBlock(family, value)
      if (cidr === undefined) {
        skipped.push({ address: r.address, reason: 'no-block' })
        continue
      }
      const e = byBlock.get(blockKey(cidr)) ?? { cidr, reqs: [] }
      e.reqs.push({ ordinal: addressOrdinal(cidr, family, value) as number, handleId: r.handle, sequenceNumber: r.sequenceNumber })
      byBlock.set(blockKey(cidr), e)
    }
    const released: { address: string; handle: string | null }[] = []
    for (const { cidr, reqs } of byBlock.values()) {
      const out = await this.releaseInBlock(cidr, (b) => blockRelease(b, reqs), adjustHandles)
      released.push(...out.released)
      skipped.push(...out.skipped)
    }
    return { released, skipped }
  }

  /**
   * Releases every address of a handle in the blocks its record names (every block it may hold addresses
   * in: the record is written first), then removes the record, even one that names more than the blocks hold.
   */
  async releaseByHandle(handle: string): Promise<ReleaseResult> {
    checkSegment('handle', handle)
    const inOne = await this.oneTxn.releaseByHandle(handle)
    if (inOne !== undefined) return inOne
    const key = handleKey(handle)
    let kv = await this.store.get(key)
    if (kv === undefined) return { released: [], skipped: [] }
    const released: { address: string; handle: string | null }[] = []
    for (const cidrText of Object.keys(decodeHandle(kv.key, kv.value).blocks)) {
      released.push(...(await this.releaseInBlock(readCidr(cidrText, 'handle.blocks'), (b) => blockReleaseByHandle(b, handle), false)).released)
    }
    await this.retry(`delete handle ${handle}`, async () => {
      const cur = kv ?? (await this.store.get(key))
      kv = undefined
      if (cur !== undefined) await this.store.delete(key, cur.revision)
      this.oneTxn.handleWritten(handle, undefined)
    }).catch((err: unknown) => {
      if (!(err instanceof DatastoreError && err.code === 'not-found')) throw err
    })
    return { released, skipped: [] }
  }

  /** CAS-applies a release to one block, then fixes handle counts; an emptied block nobody owns is deleted. */
  private async releaseInBlock(cidr: Cidr, release: (b: AllocationBlock) => ReturnType<typeof blockRelease>, adjustHandles = true): Promise<ReleaseResult> {
    const key = blockKey(cidr)
    // The first attempt may use this node's cached copy of the block (a pod's DEL mostly hits the block its
    // ADD wrote): the CAS write refuses a stale copy, and a copy that finds anything not to release (a stale
    // one may miss a write whose answer was lost) is read again, since no write would catch it.
    let first = [...this.lastBlock.values()].find((l) => l.kv.key === key)?.kv
    const out = await this.retry(`release in block ${formatCidr(cidr)}`, async () => {
      let b = first === undefined ? await this.readBlock(key) : { kv: first, block: decodeBlock(key, first.value) }
      let r = b === undefined ? undefined : release(b.block)
      if (first !== undefined && (r === undefined || r.released.length === 0 || r.skipped.length > 0)) {
        b = await this.readBlock(key)
        r = b === undefined ? undefined : release(b.block)
      }
      first = undefined
      if (b === undefined || r === undefined) return { released: [], skipped: [] }
      if (r.released.length > 0) {
        if (b.block.affinity === null && blockIsEmpty(b.block)) {
          await this.store.delete(key, b.kv.revision)
          this.oneTxn.refresh(key, undefined)
        } else {
          const value = JSON.stringify(b.block)
          const written = await this.store.update(key, value, b.kv.revision)
          this.oneTxn.refresh(key, { key, value, revision: written.revision })
        }
      }
      return r
    })
    const perHandle = new Map<string, number>()
    for (const r of out.released) if (r.handleId !== null) perHandle.set(r.handleId, (perHandle.get(r.handleId) ?? 0) + 1)
    const blockText = formatCidr(cidr)
    if (adjustHandles) for (const [h, n] of perHandle) await this.adjustHandle(h, (blocks) => void (blocks[blockText] = (blocks[blockText] ?? 0) - n))
    return {
      released: out.released.map((r) => ({ address: ordinalAddress(cidr, r.ordinal), handle: r.handleId })),
      skipped: out.skipped.map((s) => ({ address: ordinalAddress(cidr, s.ordinal), reason: s.reason })),
    }
  }

  /**
   * Gives up a node's claim on a block: affinity to pendingDeletion, then the block is deleted when empty or
   * left unaffine (its addresses stay valid, as borrowed ones), then the affinity goes. With mustBeEmpty a
   * block in use keeps its affinity (restored to confirmed) and the call returns false.
   */
  async releaseAffinity(node: string, cidr: Cidr, mustBeEmpty: boolean): Promise<boolean> {
    const akey = affinityKey(node, cidr)
    const marked = await this.retry(`mark affinity ${akey}`, async () => {
      const kv = await this.store.get(akey)
      if (kv === undefined) return undefined
      return this.store.update(akey, JSON.stringify(affinityRecord(node, cidr, 'pendingDeletion')), kv.revision)
    })
    if (marked === undefined) return true
    const done = await this.disownBlock(node, cidr, mustBeEmpty)
    if (done) await this.store.delete(akey).catch((err: unknown) => { if (!(err instanceof DatastoreError && err.code === 'not-found')) throw err })
    else await this.store.update(akey, JSON.stringify(affinityRecord(node, cidr, 'confirmed')), marked.revision)
    return done
  }

  /** Deletes the block if empty, else (unless mustBeEmpty) makes it unaffine; false when it stays in use and owned. */
  async disownBlock(node: string, cidr: Cidr, mustBeEmpty: boolean): Promise<boolean> {
    const key = blockKey(cidr)
    return this.retry(`release block ${formatCidr(cidr)}`, async () => {
      const b = await this.readBlock(key)
      if (b === undefined || b.block.affinity !== hostAffinity(node)) return true
      if (blockIsEmpty(b.block)) await this.store.delete(key, b.kv.revision)
      else if (mustBeEmpty) return false
      else await this.store.update(key, JSON.stringify({ ...b.block, affinity: null, affinityClaimTime: null }), b.kv.revision)
      return true
    })
  }

  /** Releases all of a (deleted) node's block affinities; blocks still in use stay, unaffine. */
  async releaseHostAffinities(node: string): Promise<number> {
    checkSegment('node', node)
    const affs = await this.affinities(node)
    for (const a of affs) await this.releaseAffinity(node, readCidr(a.cidr, 'affinity.cidr'), false)
    return affs.length
  }
}
