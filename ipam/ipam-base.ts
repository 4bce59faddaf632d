// The Ipam's shared ground: its options and config, the validated pools and an ADD's inputs, the bounded
// compare-and-swap retry, and reads and CAS edits of block and handle records. It allocates and releases
// nothing itself (ipam-affinity.ts, ipam-release.ts and ipam.ts do) and never reads resources, files or sockets.

import { type Datastore, type KeyValue } from '../config/index.js'
import { type IpamAddress, type IpamConfig, type IpamOptions, DEFAULT_IPAM_CONFIG, IpamError } from './ipam-types.js'
import { type Cidr, parseCidr, readCidr } from '../config/ip/index.js'
import { type AllocationBlock, type IsReserved, addressOrdinal, blockOrdinalsOf, ordinalAddress } from './block.js'
import { type Pool, type PoolSpec, eligiblePools, poolBlockOf, toPool } from './pools.js'
import { type HandleRecord, blockKey, decodeBlock, decodeHandle, handleKey } from './records.js'
import { type HandleWriter } from './handle-claim.js'
import { type AssignInputs, type LastBlocks, type SpareBlocks, OneTxnPaths } from './one-txn.js'
import { conflictBackoff, isConflict } from './conflict.js'

export class IpamBase {
  readonly config: IpamConfig
  private readonly maxRetries: number
  protected readonly now: () => Date
  private readonly reserved: Cidr[]
  protected readonly lastBlock: LastBlocks = new Map()
  protected readonly spareBlock: SpareBlocks = new Map()
  /** The common ADD and DEL, one transaction each. */
  protected readonly oneTxn: OneTxnPaths

  constructor(readonly store: Datastore, private readonly options: IpamOptions) {
    this.config = { ...DEFAULT_IPAM_CONFIG, ...options.config }
    if (this.config.maxBlocksPerHost === 0) this.config = { ...this.config, maxBlocksPerHost: DEFAULT_IPAM_CONFIG.maxBlocksPerHost }
    this.maxRetries = options.maxRetries ?? 10
    this.now = options.now ?? (() => new Date())
    this.reserved = (options.reservations ?? []).map((r, i) =>
      parseCidr(r, `reservations[${i}]`, { bare: true }),
    )
    this.oneTxn = new OneTxnPaths({ store, lastBlock: this.lastBlock, spareBlock: this.spareBlock, isReserved: this.isReserved })
  }

  protected readonly isReserved: IsReserved = (family, value) =>
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
  protected async inputsFor(node: string, fresh: boolean): Promise<AssignInputs> {
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

  protected async readBlock(key: string): Promise<{ kv: KeyValue; block: AllocationBlock } | undefined> {
    const kv = await this.store.get(key)
    return kv === undefined ? undefined : { kv, block: decodeBlock(key, kv.value) }
  }

  /** The addresses a handle holds now, per family (read from the blocks its record names). */
  async handleAddresses(handle: string): Promise<IpamAddress[]> {
    return (await this.heldBy(handle)).addrs
  }

  protected async heldBy(handle: string): Promise<{ kv: KeyValue | undefined; addrs: IpamAddress[] }> {
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

  protected readonly writeHandle: HandleWriter = (handle, edit, known) => this.adjustHandle(handle, edit, known)

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
}
