// A node's blocks ahead of its ADDs: warm() decodes the node's affine blocks before its first ADD, and
// claimAhead() claims the node's next block while its blocks still have room, so the ADD that would have found
// them full takes the one-transaction path instead of claiming inline. A claim ahead is an inline claim made
// early: the same two-phase claim, limits and config; it allocates no address.

import type { KeyValue } from '../config/index.js'
import { type Cidr, type Family, cidrSize, formatCidr, readCidr } from '../net/index.js'
import { type AllocationBlock, blockFree, hostAffinity } from './block.js'
import { eligiblePools, poolBlockOf } from './pools.js'
import { blockKey, decodeBlock, handleKey } from './records.js'
import { isConflict } from './conflict.js'
import { type AffinityClaims } from './ipam-affinity.js'
import { type IpamContext } from './ipam-context.js'

/** What a claim ahead did, with the free addresses the node's blocks of that family had before it. */
export type AheadOutcome =
  | { readonly outcome: 'claimed'; readonly block: string; readonly free: number; readonly below: number }
  /** enough: the node's blocks have room; limit: at maxBlocksPerHost; exhausted: no block left in the pools;
   * not-allowed: the IPAMConfig forbids it; no-block: the node holds no block of the family (its first pod claims one). */
  | { readonly outcome: 'enough' | 'limit' | 'exhausted' | 'not-allowed' | 'no-block'; readonly free: number; readonly below?: number; readonly reason?: string }

interface OwnBlock {
  readonly cidr: Cidr
  readonly kv: KeyValue
  readonly block: AllocationBlock
}

export class AheadClaims {
  /** Claims ahead running now, per node|family: at most one each. */
  private readonly ahead = new Map<string, Promise<AheadOutcome>>()

  constructor(private readonly ctx: IpamContext, private readonly claims: AffinityClaims) {}

  /** The node's confirmed affine blocks of `family` that still name it, read now (in parallel). */
  private async ownBlocks(node: string, family: Family | undefined): Promise<OwnBlock[]> {
    const cidrs = (await this.claims.affinities(node)).filter((a) => a.state === 'confirmed').map((a) => readCidr(a.cidr, 'affinity.cidr')).filter((c) => family === undefined || c.family === family)
    const read = await Promise.all(cidrs.map(async (cidr) => ({ cidr, b: await this.ctx.readBlock(blockKey(cidr)) })))
    return read.flatMap(({ cidr, b }) => (b !== undefined && b.block.affinity === hostAffinity(node) ? [{ cidr, ...b }] : []))
  }

  /**
   * Reads and decodes the node's affine blocks, so its first ADD is one transaction: per family the block with
   * the most room becomes the one allocated from, the next one the spare. Keeps what an ADD already set.
   * Returns the blocks read.
   */
  async warm(node: string): Promise<number> {
    const own = await this.ownBlocks(node, undefined)
    for (const family of [4, 6] as const) {
      const hint = `${node}|${family}`
      const roomy = own.filter((b) => b.cidr.family === family && b.block.unallocated.length > 0).sort((a, b) => b.block.unallocated.length - a.block.unallocated.length)
      const [first, second] = roomy
      if (first !== undefined && !this.ctx.lastBlock.has(hint)) this.ctx.lastBlock.set(hint, first)
      const spare = this.ctx.lastBlock.get(hint)?.kv.key === first?.kv.key ? second : first
      if (spare !== undefined && !this.ctx.spareBlock.has(hint)) this.ctx.spareBlock.set(hint, { cidr: spare.cidr, kv: spare.kv, free: spare.block.unallocated.length })
    }
    const sample = own[0]
    if (sample !== undefined && this.ctx.store.transactions) {
      // A transaction of an ADD's shape that cannot commit (the block compared at revision 0): the code of the
      // ADD's path and the client's path for it are made ready now rather than in the first pod's ADD.
      const hkey = handleKey(`warm-up.${node}`)
      await this.ctx.store.txn([{ op: 'create', key: hkey, value: '{}' }, { op: 'update', key: sample.kv.key, value: sample.kv.value, revision: 0 }]).then(
        () => this.ctx.store.delete(hkey),
        (err: unknown) => { if (!isConflict(err)) throw err },
      )
    }
    return own.length
  }

  /**
   * Free addresses in the node's last and spare blocks of `family` as this process last wrote or read them (no
   * read; a DEL elsewhere may have freed more), and the addresses of one such block; undefined when it holds neither.
   */
  headroom(node: string, family: Family): { readonly free: number; readonly blockSize: number } | undefined {
    const hint = `${node}|${family}`
    const last = this.ctx.lastBlock.get(hint)
    const spare = this.ctx.spareBlock.get(hint)
    const cidr = last?.cidr ?? spare?.cidr
    if (cidr === undefined) return undefined
    const lastFree = last === undefined ? 0 : (last.block ?? decodeBlock(last.kv.key, last.kv.value)).unallocated.length
    return { free: lastFree + (spare?.free ?? 0), blockSize: Number(cidrSize(cidr)) }
  }

  /** The claim ahead of node|family running now, if any (an ADD that finds no room waits for it rather than claim too). */
  claimingAhead(node: string, family: Family): Promise<AheadOutcome> | undefined {
    return this.ahead.get(`${node}|${family}`)
  }

  /**
   * Claims a new block for `node` when its affine blocks of `family` have fewer than `below` free addresses
   * (default: a quarter of a block), and keeps it as the spare the next ADD moves to when its block fills.
   * Decides from a fresh read of the node's blocks and IPAMConfig, as an inline claim: never past
   * maxBlocksPerHost, never with autoAllocateBlocks off or strictAffinity on (a block held ahead could lend no
   * address to another node), never for a node that holds no block of the family yet. One per node|family at once.
   */
  claimAhead(node: string, family: Family, below?: number): Promise<AheadOutcome> {
    const hint = `${node}|${family}`
    const running = this.ahead.get(hint)
    if (running !== undefined) return running
    const p = this.claimAheadNow(node, family, hint, below).finally(() => this.ahead.delete(hint))
    this.ahead.set(hint, p)
    return p
  }

  private async claimAheadNow(node: string, family: Family, hint: string, below: number | undefined): Promise<AheadOutcome> {
    const { pools, matcher } = await this.ctx.inputsFor(node, true)
    const eligible = eligiblePools(pools, family, node, 'Workload', undefined, matcher)
    const own = (await this.ownBlocks(node, family)).filter((b) => eligible.some((p) => poolBlockOf(p, family, b.cidr.base) !== undefined))
    const free = own.reduce((n, b) => n + blockFree(b.block, this.ctx.isReserved), 0)
    if (!this.ctx.config.autoAllocateBlocks) return { outcome: 'not-allowed', free, reason: 'IPAMConfig autoAllocateBlocks is false' }
    if (this.ctx.config.strictAffinity) return { outcome: 'not-allowed', free, reason: 'IPAMConfig strictAffinity is true: a block held ahead could lend no address to another node' }
    const first = own[0]
    if (first === undefined) return { outcome: 'no-block', free }
    // The spare: the roomiest block the node is not allocating from now.
    const last = this.ctx.lastBlock.get(hint)
    const roomy = own.filter((b) => b.kv.key !== last?.kv.key && b.block.unallocated.length > 0).sort((a, b) => b.block.unallocated.length - a.block.unallocated.length)[0]
    const keepSpare = (b: OwnBlock | undefined): void => {
      if (b !== undefined && this.ctx.spareBlock.get(hint)?.kv.key !== b.kv.key) this.ctx.spareBlock.set(hint, { cidr: b.cidr, kv: b.kv, free: b.block.unallocated.length })
    }
    const threshold = below ?? Number(cidrSize(first.cidr)) / 4
    if (free >= threshold) {
      keepSpare(roomy)
      return { outcome: 'enough', free, below: threshold }
    }
    // The pool the node already allocates from first, as an ADD would walk them.
    const ordered = [...eligible].sort((a, b) => Number(poolBlockOf(b, family, first.cidr.base) !== undefined) - Number(poolBlockOf(a, family, first.cidr.base) !== undefined))
    const claimed = await this.claims.claimNewBlock(node, family, ordered)
    if (claimed === 'limit' || claimed === 'none') {
      keepSpare(roomy)
      return claimed === 'limit'
        ? { outcome: 'limit', free, below: threshold, reason: `node ${node} holds maxBlocksPerHost=${this.ctx.config.maxBlocksPerHost} blocks` }
        : { outcome: 'exhausted', free, below: threshold, reason: 'no free block left in the pools' }
    }
    const b = await this.ctx.readBlock(blockKey(claimed))
    if (b !== undefined) keepSpare({ cidr: claimed, ...b })
    return { outcome: 'claimed', block: formatCidr(claimed), free, below: threshold }
  }
}
