// The common ADD and DEL of a node's pod as one datastore transaction each: the handle record and the block
// written together, all or nothing, from the node's cached copies (a stale copy fails its compare and is read
// again). It decides no allocation itself (block.ts does) and leaves every uncommon case to the Ipam's general path,
// and every case to it on a datastore without transactions (Kubernetes).

import { type Datastore, type KeyValue, type TxnOp, DatastoreError } from '../config/index.js'
import { type Cidr, type Family, formatCidr, readCidr } from '../net/index.js'
import { type AllocationBlock, type IsReserved, blockAutoAssign, blockIsEmpty, blockReleaseByHandle, hostAffinity, ordinalAddress } from './block.js'
import { HandleClaim } from './handle-claim.js'
import { conflictBackoff, isLostRace } from './conflict.js'
import type { NodeMatcher, Pool } from './pools.js'
import { type AutoAssignRequest, type AutoAssignResult, type IpamAddress, type ReleaseResult, toIpamAddress } from './ipam-types.js'
import { blockKey, decodeBlock, decodeHandle, handleKey } from './records.js'

/** Handle records this process wrote and may delete without reading them first; beyond it they are read. */
const RECENT_HANDLES = 1024
/** Ops a transaction may hold on every backend (etcd's default --max-txn-ops). */
const MAX_TXN_OPS = 128
/**
 * Transactions tried before the general path takes over. One over several blocks loses to a write to any of
 * them, so under contention (processes of one node, borrowed addresses) the general path's loop per block,
 * which makes progress a block at a time, finishes the work.
 */
const TXN_ATTEMPTS = 3

/**
 * Per `node|family`: the affine block last allocated from, as last written, while it has free ordinals; with
 * it, when this process wrote it, the decoded block of exactly that value (so the next ADD or DEL does not parse
 * it again). A path that edits the decoded block takes it out first: only a written block goes back.
 */
export type LastBlocks = Map<string, { readonly cidr: Cidr; readonly kv: KeyValue; readonly block?: AllocationBlock }>

/**
 * Per `node|family`: another affine block with room (claimed ahead, or found with room), which takes the last
 * block's place when that one fills, so the next ADD is still one transaction. A hint like the last block: a
 * stale copy fails its compare.
 */
export type SpareBlocks = Map<string, { readonly cidr: Cidr; readonly kv: KeyValue; /** Its free addresses when it became the spare. */ readonly free: number }>

/** What an ADD decides with, as the Ipam read it for this request. */
export interface AssignInputs {
  /** Read from the store for this ADD, not taken from a cache. */
  readonly fresh: boolean
  readonly pools: readonly Pool[]
  readonly matcher: NodeMatcher | undefined
  /** Whether a block at `cidr` lies in a pool that may serve `req` for `family`. */
  readonly eligible: (req: AutoAssignRequest, family: Family, cidr: Cidr) => boolean
  /** The checks holding a one-transaction ADD from blocks at `cidrs` to the records its decision read. */
  readonly guards: (cidrs: readonly Cidr[]) => readonly TxnOp[]
}

export interface OneTxnContext {
  readonly store: Datastore
  readonly lastBlock: LastBlocks
  readonly spareBlock: SpareBlocks
  readonly isReserved: IsReserved
}

/** Runs `attempt` until it answers, at most TXN_ATTEMPTS times while it loses races; undefined after the last. */
async function attempts<T>(attempt: (i: number) => Promise<T | 'lost'>): Promise<T | undefined> {
  for (let i = 0; i < TXN_ATTEMPTS; i++) {
    const r = await attempt(i)
    if (r !== 'lost') return r
    await conflictBackoff(i + 1)
  }
  return undefined
}

export class OneTxnPaths {
  /** handle -> its record as this process last wrote it (insertion order: oldest first). */
  private readonly handles = new Map<string, KeyValue>()

  constructor(private readonly ctx: OneTxnContext) {}

  private remember(handle: string, kv: KeyValue | undefined): void {
    this.handles.delete(handle)
    if (kv === undefined) return
    this.handles.set(handle, kv)
    if (this.handles.size > RECENT_HANDLES) this.handles.delete(this.handles.keys().next().value as string)
  }

  /** Moves the spare block of `hint` into the last block's place (the last one is full); the entry now there. */
  promote(hint: string): { readonly cidr: Cidr; readonly kv: KeyValue } | undefined {
    const spare = this.ctx.spareBlock.get(hint)
    if (spare === undefined) return this.ctx.lastBlock.get(hint)
    this.ctx.spareBlock.delete(hint)
    const last = { cidr: spare.cidr, kv: spare.kv }
    this.ctx.lastBlock.set(hint, last)
    return last
  }

  /**
   * After a general-path write of the block `kv` for `hint` (node|family): it stays the last block while `keep`
   * (the node's, with room), else the spare takes its place if it was the last; a spare just written is spent.
   */
  blockWritten(hint: string, cidr: Cidr, kv: KeyValue, keep: boolean): void {
    if (keep) this.ctx.lastBlock.set(hint, { cidr, kv })
    else if (this.ctx.lastBlock.get(hint)?.kv.key === kv.key) {
      this.ctx.lastBlock.delete(hint)
      this.promote(hint)
    }
    if (this.ctx.spareBlock.get(hint)?.kv.key === kv.key) this.ctx.spareBlock.delete(hint)
  }

  /** The record a handle op of the general path wrote (or deleted), so the cache never outlives it. */
  handleWritten(handle: string, kv: KeyValue | undefined): void {
    if (this.handles.has(handle) || kv !== undefined) this.remember(handle, kv)
  }

  /**
   * A new handle's addresses, each family from the block this node last allocated from, in one transaction:
   * create the handle record (with exactly those counts) and compare-and-swap each block. 'exists' when the
   * handle has a record (a retried ADD: the general path returns what it holds); 'stale' when a guard of the
   * inputs failed (the inputs are to be read again); undefined when a family has no cached block, its block
   * is no longer this node's, lacks room, or is outside an eligible pool, or the transaction kept losing
   * races, or the datastore has no transactions. Nothing is written unless it answers addresses.
   */
  async assign(req: AutoAssignRequest, want: Readonly<Record<Family, number>>, inputs: AssignInputs): Promise<AutoAssignResult | 'exists' | 'stale' | undefined> {
    if (!this.ctx.store.transactions) return undefined
    const families = ([4, 6] as const).filter((f) => want[f] > 0)
    const picks: { family: Family; hint: string; cidr: Cidr; kv: KeyValue; block: AllocationBlock | undefined }[] = []
    for (const family of families) {
      const hint = `${req.node}|${family}`
      let last = this.ctx.lastBlock.get(hint)
      if (last === undefined || (last.block !== undefined && last.block.unallocated.length < want[family])) last = this.promote(hint)
      if (last === undefined || !inputs.eligible(req, family, last.cidr)) return undefined
      picks.push({ family, hint, cidr: last.cidr, kv: last.kv, block: last.block })
    }
    for (const p of picks) this.ctx.lastBlock.set(p.hint, { cidr: p.cidr, kv: p.kv })
    if (picks.length === 0) return undefined
    const guards = inputs.guards(picks.map((p) => p.cidr))
    const hkey = handleKey(req.handle)
    return attempts(async () => {
      const counts: Record<string, number> = {}
      const ops: TxnOp[] = []
      const planned: { pick: (typeof picks)[number]; block: AllocationBlock; value: string; addrs: IpamAddress[] }[] = []
      for (const pick of picks) {
        const block = pick.block ?? decodeBlock(pick.kv.key, pick.kv.value)
        pick.block = undefined
        const assigned = block.affinity === hostAffinity(req.node) ? blockAutoAssign(block, want[pick.family], req.handle, req.attrs ?? {}, this.ctx.isReserved) : []
        if (assigned.length < want[pick.family]) {
          this.ctx.lastBlock.delete(pick.hint)
          this.promote(pick.hint)
          return undefined
        }
        const value = JSON.stringify(block)
        counts[formatCidr(pick.cidr)] = assigned.length
        ops.push({ op: 'update', key: pick.kv.key, value, revision: pick.kv.revision })
        planned.push({ pick, block, value, addrs: assigned.map((a) => toIpamAddress(pick.cidr, a)) })
      }
      // The copies follow the write as soon as it is applied, so a write queued behind this one (the IPAM
      // service's next ADD) compares against it while it is still being made durable.
      let followed = false
      const follow = (written: KeyValue[]): void => {
        if (followed) return
        followed = true
        this.remember(req.handle, written[0])
        planned.forEach(({ pick, block, value }, i) => {
          const kv = { key: pick.kv.key, value, revision: (written[i + 1] as KeyValue).revision }
          if (block.unallocated.length > 0) this.ctx.lastBlock.set(pick.hint, { cidr: pick.cidr, kv, block })
          else {
            this.ctx.lastBlock.delete(pick.hint)
            this.promote(pick.hint)
          }
        })
      }
      try {
        follow(await this.ctx.store.txn([{ op: 'create', key: hkey, value: HandleClaim.createValue(req.handle, counts) }, ...ops, ...guards], follow))
      } catch (err) {
        if (err instanceof DatastoreError && err.code === 'exists' && err.key === hkey) return 'exists'
        if (isLostRace(err) && guards.some((g) => g.key === err.key)) return 'stale'
        // A stale copy: read that block again and retry. Any other failure may or may not have landed as a
        // whole; the copies are dropped either way (a DEL of the handle finds what did).
        const stale = isLostRace(err) ? picks.find((p) => p.kv.key === err.key) : undefined
        if (stale === undefined) {
          for (const p of picks) this.ctx.lastBlock.delete(p.hint)
          throw err
        }
        const fresh = await this.ctx.store.get(stale.kv.key)
        if (fresh === undefined) {
          this.ctx.lastBlock.delete(stale.hint)
          return undefined
        }
        stale.kv = fresh
        return 'lost'
      }
      const all = planned.flatMap((p) => p.addrs)
      return { ipv4: all.filter((a) => a.family === 4), ipv6: all.filter((a) => a.family === 6) }
    })
  }

  /**
   * Releases every address of a handle in the blocks its record names and deletes the record, in one
   * transaction (each block and the record compared on their revisions). The record and the blocks may come
   * from this process's copies; a copy that finds nothing to release is read again (no compare would catch it
   * being stale), and any failed compare makes the next attempt read everything. undefined, with nothing
   * written, when the record names more blocks than one transaction takes or the transaction kept losing
   * races, or the datastore has no transactions (the caller releases block by block).
   */
  async releaseByHandle(handle: string): Promise<ReleaseResult | undefined> {
    if (!this.ctx.store.transactions) return undefined
    const hkey = handleKey(handle)
    return attempts(async (i) => {
      const useCache = i === 0
      const record = (useCache ? this.handles.get(handle) : undefined) ?? (await this.ctx.store.get(hkey))
      if (record === undefined) {
        this.remember(handle, undefined)
        return { released: [], skipped: [] }
      }
      const named = Object.keys(decodeHandle(record.key, record.value).blocks)
      if (named.length >= MAX_TXN_OPS) return undefined
      const ops: TxnOp[] = []
      const released: { address: string; handle: string | null }[] = []
      const writes: { key: string; value: string | undefined; block: AllocationBlock }[] = []
      for (const cidrText of named) {
        const cidr = readCidr(cidrText, `${hkey}.blocks`)
        const key = blockKey(cidr)
        const last = useCache ? [...this.ctx.lastBlock.values()].find((l) => l.kv.key === key) : undefined
        const copy = last?.kv
        // The decoded block is edited below: until the write lands the cache keeps only the record's text.
        if (copy !== undefined) this.refresh(key, copy)
        let kv = copy ?? (await this.ctx.store.get(key))
        let block = kv === undefined ? undefined : (last?.block ?? decodeBlock(key, kv.value))
        let r = block === undefined ? undefined : blockReleaseByHandle(block, handle)
        if (copy !== undefined && (r === undefined || r.released.length === 0 || r.skipped.length > 0)) {
          kv = await this.ctx.store.get(key)
          block = kv === undefined ? undefined : decodeBlock(key, kv.value)
          r = block === undefined ? undefined : blockReleaseByHandle(block, handle)
        }
        if (kv === undefined || block === undefined || r === undefined || r.released.length === 0) continue
        if (block.affinity === null && blockIsEmpty(block)) {
          ops.push({ op: 'delete', key, revision: kv.revision })
          writes.push({ key, value: undefined, block })
        } else {
          const value = JSON.stringify(block)
          ops.push({ op: 'update', key, value, revision: kv.revision })
          writes.push({ key, value, block })
        }
        for (const x of r.released) released.push({ address: ordinalAddress(cidr, x.ordinal), handle: x.handleId })
      }
      ops.push({ op: 'delete', key: hkey, revision: record.revision })
      // As in assign(): the copies follow the write once it is applied.
      let followed = false
      const follow = (written: KeyValue[]): void => {
        if (followed) return
        followed = true
        this.remember(handle, undefined)
        writes.forEach((w, i) => this.refresh(w.key, w.value === undefined ? undefined : { key: w.key, value: w.value, revision: (written[i] as KeyValue).revision }, w.block))
      }
      try {
        follow(await this.ctx.store.txn(ops, follow))
      } catch (err) {
        this.remember(handle, undefined)
        if (isLostRace(err)) return 'lost'
        throw err
      }
      return { released, skipped: [] }
    })
  }

  /**
   * After a write of a block: the cached copy of it follows (or goes, when the block was deleted), with `block`
   * the decoded value of `kv` when the writer has it.
   */
  refresh(key: string, kv: KeyValue | undefined, block?: AllocationBlock): void {
    for (const [hint, last] of this.ctx.lastBlock) {
      if (last.kv.key !== key) continue
      if (kv === undefined) this.ctx.lastBlock.delete(hint)
      else this.ctx.lastBlock.set(hint, { cidr: last.cidr, kv, ...(block !== undefined ? { block } : {}) })
    }
    for (const [hint, spare] of this.ctx.spareBlock) {
      if (spare.kv.key !== key) continue
      if (kv === undefined) this.ctx.spareBlock.delete(hint)
      else this.ctx.spareBlock.set(hint, { ...spare, kv })
    }
  }
}
