// Releasing addresses: by address (a stale handle or sequence number is skipped, never applied) and by handle,
// each block edited in its own CAS loop and the handle counts fixed after. It assigns nothing and gives up
// no node's claim on a block (an emptied block nobody owns is the only one it deletes).

import { DatastoreError } from '../config/index.js'
import { type AddressRelease, type ReleaseResult } from './ipam-types.js'
import { type Cidr, type Family, formatCidr, parseAddr, readCidr } from '../net/index.js'
import {
  type AllocationBlock, type ReleaseRequest, type ReleaseSkip,
  addressOrdinal, blockCidr, blockIsEmpty, blockRelease, blockReleaseByHandle, ordinalAddress,
} from './block.js'
import { poolBlockOf } from './pools.js'
import { BLOCKS_PREFIX, blockKey, checkSegment, decodeBlock, decodeHandle, handleKey } from './records.js'
import { type OneTxnPaths } from './one-txn.js'
import { type HandleRecords } from './ipam-handles.js'
import { type IpamContext } from './ipam-context.js'

export class Releases {
  constructor(
    private readonly ctx: IpamContext,
    private readonly oneTxn: OneTxnPaths,
    private readonly handles: HandleRecords,
  ) {}

  /** The block key holding an address: through the pools first, else by scanning blocks (its pool may be gone). */
  async locateBlock(family: Family, value: bigint): Promise<Cidr | undefined> {
    for (const p of await this.ctx.pools()) {
      const c = poolBlockOf(p, family, value)
      if (c !== undefined && (await this.ctx.store.get(blockKey(c))) !== undefined) return c
    }
    for (const kv of (await this.ctx.store.list(BLOCKS_PREFIX)).items) {
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
    let kv = await this.ctx.store.get(key)
    if (kv === undefined) return { released: [], skipped: [] }
    const released: { address: string; handle: string | null }[] = []
    for (const cidrText of Object.keys(decodeHandle(kv.key, kv.value).blocks)) {
      released.push(...(await this.releaseInBlock(readCidr(cidrText, 'handle.blocks'), (b) => blockReleaseByHandle(b, handle), false)).released)
    }
    await this.ctx.retry(`delete handle ${handle}`, async () => {
      const cur = kv ?? (await this.ctx.store.get(key))
      kv = undefined
      if (cur !== undefined) await this.ctx.store.delete(key, cur.revision)
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
    let first = [...this.ctx.lastBlock.values()].find((l) => l.kv.key === key)?.kv
    const out = await this.ctx.retry(`release in block ${formatCidr(cidr)}`, async () => {
      let b = first === undefined ? await this.ctx.readBlock(key) : { kv: first, block: decodeBlock(key, first.value) }
      let r = b === undefined ? undefined : release(b.block)
      if (first !== undefined && (r === undefined || r.released.length === 0 || r.skipped.length > 0)) {
        b = await this.ctx.readBlock(key)
        r = b === undefined ? undefined : release(b.block)
      }
      first = undefined
      if (b === undefined || r === undefined) return { released: [], skipped: [] }
      if (r.released.length > 0) {
        if (b.block.affinity === null && blockIsEmpty(b.block)) {
          await this.ctx.store.delete(key, b.kv.revision)
          this.oneTxn.refresh(key, undefined)
        } else {
          const value = JSON.stringify(b.block)
          const written = await this.ctx.store.update(key, value, b.kv.revision)
          this.oneTxn.refresh(key, { key, value, revision: written.revision })
        }
      }
      return r
    })
    const perHandle = new Map<string, number>()
    for (const r of out.released) if (r.handleId !== null) perHandle.set(r.handleId, (perHandle.get(r.handleId) ?? 0) + 1)
    const blockText = formatCidr(cidr)
    if (adjustHandles) for (const [h, n] of perHandle) await this.handles.adjust(h, (blocks) => void (blocks[blockText] = (blocks[blockText] ?? 0) - n))
    return {
      released: out.released.map((r) => ({ address: ordinalAddress(cidr, r.ordinal), handle: r.handleId })),
      skipped: out.skipped.map((s) => ({ address: ordinalAddress(cidr, s.ordinal), reason: s.reason })),
    }
  }
}
