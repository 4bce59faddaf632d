// Handle records as the Ipam reads and edits them: the addresses a handle holds (read from the blocks its
// record names) and the compare-and-swap edit of a record, which keeps the one-transaction paths' copy in
// step. It writes no block and decides no allocation.

import { DatastoreError, type KeyValue } from '../config/index.js'
import { type IpamAddress } from './ipam-types.js'
import { readCidr } from '../net/index.js'
import { blockOrdinalsOf, ordinalAddress } from './block.js'
import { type HandleRecord, blockKey, decodeHandle, handleKey } from './records.js'
import { HandleClaim, type HandleWriter } from './handle-claim.js'
import { type OneTxnPaths } from './one-txn.js'
import { type IpamContext } from './ipam-context.js'

export class HandleRecords {
  constructor(private readonly ctx: IpamContext, private readonly oneTxn: OneTxnPaths) {}

  /** The addresses a handle holds now, per family (read from the blocks its record names). */
  async addresses(handle: string): Promise<IpamAddress[]> {
    return (await this.heldBy(handle)).addrs
  }

  /** The handle's record as read (undefined: none) and the addresses it holds. */
  async heldBy(handle: string): Promise<{ kv: KeyValue | undefined; addrs: IpamAddress[] }> {
    const kv = await this.ctx.store.get(handleKey(handle))
    if (kv === undefined) return { kv, addrs: [] }
    const out: IpamAddress[] = []
    for (const cidrText of Object.keys(decodeHandle(kv.key, kv.value).blocks)) {
      const cidr = readCidr(cidrText, `${kv.key}.blocks`)
      const b = await this.ctx.readBlock(blockKey(cidr))
      if (b === undefined) continue
      for (const ord of blockOrdinalsOf(b.block, handle)) {
        out.push({ address: ordinalAddress(cidr, ord), family: cidr.family, block: cidrText, sequenceNumber: b.block.sequenceNumberForAllocation[String(ord)] ?? 0 })
      }
    }
    return { kv, addrs: out }
  }

  /**
   * Creates the record of a handle that has none, counting `blocks`, unread; undefined when it has one already
   * (the caller reads it). Any other failure is thrown, the record's state then unknown.
   */
  async createNew(handle: string, blocks: readonly (readonly [string, number])[]): Promise<KeyValue | undefined> {
    try {
      const kv = await this.ctx.store.create(handleKey(handle), HandleClaim.createValue(handle, Object.fromEntries(blocks)))
      this.oneTxn.handleWritten(handle, kv)
      return kv
    } catch (err) {
      if (err instanceof DatastoreError && err.code === 'exists') return undefined
      throw err
    }
  }

  /** adjust(), as the writer a HandleClaim edits its record through. */
  readonly write: HandleWriter = (handle, edit, known) => this.adjust(handle, edit, known)

  /** CAS-edits a handle record; it is deleted when no block count is left. Returns the record written, if any. */
  async adjust(handle: string, edit: (blocks: Record<string, number>) => void, known?: KeyValue | 'absent'): Promise<KeyValue | undefined> {
    const key = handleKey(handle)
    let hint = known
    return this.ctx.retry(`update handle ${handle}`, async () => {
      // The first attempt may trust a record just read (saving a round trip); a conflict makes the next one read.
      const kv = hint === undefined ? await this.ctx.store.get(key) : hint === 'absent' ? undefined : hint
      hint = undefined
      const blocks: Record<string, number> = kv === undefined ? {} : { ...decodeHandle(key, kv.value).blocks }
      edit(blocks)
      for (const [b, n] of Object.entries(blocks)) if (n <= 0) delete blocks[b]
      const value = JSON.stringify({ handleId: handle, blocks } satisfies HandleRecord)
      const written = kv === undefined
        ? (Object.keys(blocks).length > 0 ? await this.ctx.store.create(key, value) : undefined)
        : Object.keys(blocks).length === 0 ? void (await this.ctx.store.delete(key, kv.revision)) : await this.ctx.store.update(key, value, kv.revision)
      this.oneTxn.handleWritten(handle, written)
      return written
    })
  }
}
