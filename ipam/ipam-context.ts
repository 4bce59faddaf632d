// What every part of the Ipam works with: the datastore, the config (the options', then each ADD's inputs),
// the validated pools and an ADD's inputs, the reservations, this process's cached blocks per node|family, the
// bounded compare-and-swap retry and block reads. It writes no record itself and reads no resource, file or socket.

import { type Datastore, type KeyValue } from '../config/index.js'
import { type IpamConfig, type IpamOptions, DEFAULT_IPAM_CONFIG, IpamError, requestedPools } from './ipam-types.js'
import { type Cidr, parseCidr } from '../net/index.js'
import { type AllocationBlock, type IsReserved, addressOrdinal } from './block.js'
import { type Pool, type PoolSpec, eligiblePools, poolBlockOf, toPool } from './pools.js'
import { decodeBlock } from './records.js'
import { type AssignInputs, type LastBlocks, type SpareBlocks } from './one-txn.js'
import { conflictBackoff, isConflict } from './conflict.js'

export class IpamContext {
  /** The options' config, overlaid with the IPAMConfig of the latest ADD's inputs. */
  readonly config: IpamConfig
  readonly now: () => Date
  /** The block each node|family last allocated from, and its spare (see one-txn.ts). */
  readonly lastBlock: LastBlocks = new Map()
  readonly spareBlock: SpareBlocks = new Map()
  private readonly maxRetries: number
  private readonly reserved: Cidr[]
  /** Specs already validated (a pools function that hands back the same object for an unchanged pool skips it). */
  private readonly validated = new WeakMap<PoolSpec, Pool>()

  constructor(readonly store: Datastore, private readonly options: IpamOptions) {
    this.config = { ...DEFAULT_IPAM_CONFIG, ...options.config }
    if (this.config.maxBlocksPerHost === 0) this.config = { ...this.config, maxBlocksPerHost: DEFAULT_IPAM_CONFIG.maxBlocksPerHost }
    this.maxRetries = options.maxRetries ?? 10
    this.now = options.now ?? (() => new Date())
    this.reserved = (options.reservations ?? []).map((r, i) =>
      parseCidr(r, `reservations[${i}]`, { bare: true }),
    )
  }

  readonly isReserved: IsReserved = (family, value) =>
    this.reserved.some((c) => c.family === family && addressOrdinal(c, family, value) !== undefined)

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
  async inputsFor(node: string, fresh: boolean): Promise<AssignInputs> {
    const view = await this.options.inputs?.read(node, fresh)
    if (view !== undefined) {
      Object.assign(this.config, { ...DEFAULT_IPAM_CONFIG, ...this.options.config, ...view.config })
      if (this.config.maxBlocksPerHost === 0) Object.assign(this.config, { maxBlocksPerHost: DEFAULT_IPAM_CONFIG.maxBlocksPerHost })
    }
    const pools = this.validate(view?.pools ?? (await this.poolSpecs()))
    const matcher = view?.nodeMatches ?? this.options.nodeMatches
    return {
      fresh: view?.fresh ?? true, pools, matcher,
      eligible: (req, family, cidr) => eligiblePools(pools, family, req.node, req.use ?? 'Workload', requestedPools(req, family), matcher).some((p) => poolBlockOf(p, family, cidr.base) !== undefined),
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

  async readBlock(key: string): Promise<{ kv: KeyValue; block: AllocationBlock } | undefined> {
    const kv = await this.store.get(key)
    return kv === undefined ? undefined : { kv, block: decodeBlock(key, kv.value) }
  }
}
