// A node's claims on blocks: the two-phase claim of a new block (pending affinity, block, confirmed affinity)
// and giving a claim up (pendingDeletion, the block deleted or left unaffine, the affinity gone). It assigns
// and releases no address (ipam-assign.ts and ipam-release.ts do).

import { type KeyValue, DatastoreError } from '../config/index.js'
import { type Cidr, type Family, formatCidr, readCidr } from '../net/index.js'
import { blockIsEmpty, hostAffinity, newBlock } from './block.js'
import { type Pool, blockCandidates } from './pools.js'
import { type AffinityRecord, BLOCKS_PREFIX, affinityKey, affinityPrefix, affinityRecord, blockKey, checkSegment, decodeAffinity } from './records.js'
import { type IpamContext } from './ipam-context.js'

/** Candidate blocks a claim tries one by one before it lists every block to skip the taken ones. */
const CLAIM_PROBES = 8

export class AffinityClaims {
  constructor(private readonly ctx: IpamContext) {}

  /** The node's affinity records, in every state. */
  async affinities(node: string): Promise<AffinityRecord[]> {
    const { items } = await this.ctx.store.list(affinityPrefix(node))
    return items.map((kv) => decodeAffinity(kv.key, kv.value))
  }

  /**
   * Finds a block CIDR nobody has created and claims it; 'limit' at maxBlocksPerHost, 'none' when the pools are
   * full. A pool's first CLAIM_PROBES candidates are tried by key (in a pool with room one of them is free), and
   * only past them is every block listed: a claim must not read the whole cluster's blocks in the common case.
   */
  async claimNewBlock(node: string, family: Family, eligible: readonly Pool[]): Promise<Cidr | 'limit' | 'none'> {
    const mine = (await this.affinities(node)).filter((a) => a.state !== 'pendingDeletion' && readCidr(a.cidr, 'affinity.cidr').family === family)
    if (mine.length >= this.ctx.config.maxBlocksPerHost) return 'limit'
    let existing: Set<string> | undefined
    for (const pool of eligible) {
      let probes = 0
      for (const cidr of blockCandidates(pool, node)) {
        const key = blockKey(cidr)
        if (probes < CLAIM_PROBES) {
          probes++
          if ((await this.ctx.store.get(key)) !== undefined) continue
        } else {
          existing ??= new Set((await this.ctx.store.list(BLOCKS_PREFIX)).items.map((kv) => kv.key))
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
      aff = await this.ctx.store.create(akey, JSON.stringify(affinityRecord(node, cidr, 'pending')))
    } catch (err) {
      if (!(err instanceof DatastoreError && err.code === 'exists')) throw err
      const cur = await this.ctx.store.get(akey)
      // Ours from an interrupted or concurrent claim (go on), or being deleted right now (leave it alone).
      if (cur === undefined || decodeAffinity(akey, cur.value).state === 'pendingDeletion') return false
      aff = cur
    }
    try {
      await this.ctx.store.create(blockKey(cidr), JSON.stringify(newBlock(cidr, hostAffinity(node), this.ctx.now().toISOString(), this.ctx.now().getTime() * 1000)))
    } catch (err) {
      if (!(err instanceof DatastoreError && err.code === 'exists')) throw err
      const b = await this.ctx.readBlock(blockKey(cidr))
      if (b?.block.affinity !== hostAffinity(node)) {
        await this.ctx.store.delete(akey, aff.revision).catch(() => undefined)
        return false
      }
    }
    // Another process of this node may be confirming the same claim: re-read on conflict.
    return this.ctx.retry(`confirm affinity ${akey}`, async () => {
      const cur = await this.ctx.store.get(akey)
      const state = cur === undefined ? undefined : decodeAffinity(akey, cur.value).state
      if (cur === undefined || state === 'pendingDeletion') return false
      if (state === 'pending') await this.ctx.store.update(akey, JSON.stringify(affinityRecord(node, cidr, 'confirmed')), cur.revision)
      return true
    })
  }

  /**
   * Gives up a node's claim on a block: affinity to pendingDeletion, then the block is deleted when empty or
   * left unaffine (its addresses stay valid, as borrowed ones), then the affinity goes. With mustBeEmpty a
   * block in use keeps its affinity (restored to confirmed) and the call returns false.
   */
  async releaseAffinity(node: string, cidr: Cidr, mustBeEmpty: boolean): Promise<boolean> {
    const akey = affinityKey(node, cidr)
    const marked = await this.ctx.retry(`mark affinity ${akey}`, async () => {
      const kv = await this.ctx.store.get(akey)
      if (kv === undefined) return undefined
      return this.ctx.store.update(akey, JSON.stringify(affinityRecord(node, cidr, 'pendingDeletion')), kv.revision)
    })
    if (marked === undefined) return true
    const done = await this.disownBlock(node, cidr, mustBeEmpty)
    if (done) await this.ctx.store.delete(akey).catch((err: unknown) => { if (!(err instanceof DatastoreError && err.code === 'not-found')) throw err })
    else await this.ctx.store.update(akey, JSON.stringify(affinityRecord(node, cidr, 'confirmed')), marked.revision)
    return done
  }

  /** Deletes the block if empty, else (unless mustBeEmpty) makes it unaffine; false when it stays in use and owned. */
  async disownBlock(node: string, cidr: Cidr, mustBeEmpty: boolean): Promise<boolean> {
    const key = blockKey(cidr)
    return this.ctx.retry(`release block ${formatCidr(cidr)}`, async () => {
      const b = await this.ctx.readBlock(key)
      if (b === undefined || b.block.affinity !== hostAffinity(node)) return true
      if (blockIsEmpty(b.block)) await this.ctx.store.delete(key, b.kv.revision)
      else if (mustBeEmpty) return false
      else await this.ctx.store.update(key, JSON.stringify({ ...b.block, affinity: null, affinityClaimTime: null }), b.kv.revision)
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
