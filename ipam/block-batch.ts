// Assigns of new handles from one block, batched into one compare-and-swap of the block: where the datastore has
// no transactions (Kubernetes) every block write is a round trip, and a burst of ADDs on a node would queue one
// write each. The requests that arrive while the node's block writes are queued join the next write to their
// block; each gets its own addresses in the block (the allocator runs once per request on the one copy), and the
// write lands for all or for none. Every request's handle record already counts the block (HandleClaim), so an
// address is never in a block without a record a DEL can find. A request the block has too little room for gets
// what it has (maybe nothing) and goes on to the general path for the rest.

import { type KeyValue } from '../config/index.js'
import { type Cidr, formatCidr } from '../net/index.js'
import { blockAutoAssign, hostAffinity } from './block.js'
import { isConflict } from './conflict.js'
import { type HandleClaim } from './handle-claim.js'
import { type IpamContext } from './ipam-context.js'
import { type AutoAssignRequest, type IpamAddress, toIpamAddress } from './ipam-types.js'
import { type OneTxnPaths } from './one-txn.js'
import { blockKey, decodeBlock } from './records.js'

/** Runs `fn` alone among the agent's block writes (the IPAM service's queue). */
export type Exclusive = <T>(fn: () => Promise<T>) => Promise<T>

interface Entry {
  readonly req: AutoAssignRequest
  readonly num: number
  readonly claim: HandleClaim
  resolve(addrs: IpamAddress[]): void
  reject(err: unknown): void
}

interface Batch {
  readonly node: string
  readonly cidr: Cidr
  readonly entries: Entry[]
}

export class BlockBatches {
  /** The batch of each node|block not yet started: whoever comes joins it. */
  private readonly open = new Map<string, Batch>()

  constructor(private readonly ctx: IpamContext, private readonly oneTxn: OneTxnPaths) {}

  /**
   * Up to `num` addresses for `req`'s handle from the node's block `cidr`, written with the other requests that
   * join before the batch's turn in `exclusive` comes. `claim`'s record must already count them in that block.
   */
  assign(cidr: Cidr, req: AutoAssignRequest, num: number, claim: HandleClaim, exclusive: Exclusive): Promise<IpamAddress[]> {
    const key = `${req.node}|${blockKey(cidr)}`
    return new Promise<IpamAddress[]>((resolve, reject) => {
      let batch = this.open.get(key)
      if (batch === undefined) {
        const b: Batch = { node: req.node, cidr, entries: [] }
        this.open.set(key, (batch = b))
        // Its turn closes it: requests from then on make the next batch.
        void exclusive(async () => {
          if (this.open.get(key) === b) this.open.delete(key)
          await this.write(b)
        })
      }
      batch.entries.push({ req, num, claim, resolve, reject })
    })
  }

  /** One CAS loop over the block for every request of the batch; each entry is settled, nothing thrown. */
  private async write(b: Batch): Promise<void> {
    const key = blockKey(b.cidr)
    const hintKey = `${b.node}|${b.cidr.family}`
    const last = this.ctx.lastBlock.get(hintKey)
    let first: KeyValue | undefined = last?.kv.key === key ? last.kv : undefined
    try {
      const out = await this.ctx.retry(`assign from block ${formatCidr(b.cidr)}`, async () => {
        const cur = first === undefined ? await this.ctx.readBlock(key) : { kv: first, block: decodeBlock(key, first.value) }
        first = undefined
        if (cur === undefined || cur.block.affinity !== hostAffinity(b.node)) return b.entries.map((): IpamAddress[] => [])
        const assigned = b.entries.map((e) => blockAutoAssign(cur.block, e.num, e.req.handle, e.req.attrs ?? {}, this.ctx.isReserved))
        if (assigned.every((a) => a.length === 0)) return assigned.map((): IpamAddress[] => [])
        for (const [i, e] of b.entries.entries()) if (assigned[i]!.length > 0) await e.claim.cover(formatCidr(b.cidr), assigned[i]!.length)
        const value = JSON.stringify(cur.block)
        const written = await this.ctx.store.update(key, value, cur.kv.revision).catch((err: unknown) => {
          if (!isConflict(err)) for (const [i, e] of b.entries.entries()) if (assigned[i]!.length > 0) e.claim.markUncertain()
          throw err
        })
        this.oneTxn.blockWritten(hintKey, b.cidr, { key, value, revision: written.revision }, cur.block.unallocated.length > 0)
        return assigned.map((a) => a.map((x) => toIpamAddress(b.cidr, x)))
      })
      for (const [i, e] of b.entries.entries()) {
        e.claim.confirmed(out[i]!)
        e.resolve(out[i]!)
      }
    } catch (err) {
      for (const e of b.entries) e.reject(err)
    }
  }
}
