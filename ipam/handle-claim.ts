// One request's hold on its handle record while it allocates (Calico's order): the record names a block,
// with at least the count about to be written there, before that block write goes out, so every address
// has a handle a DEL can find even when a write's outcome is unknown. It decides no allocation itself.

import { type KeyValue, DatastoreError } from '../config/index.js'
import { type IpamAddress, sameCounts } from './ipam-types.js'
import { type HandleRecord, decodeHandle, handleKey } from './records.js'

/** The CAS edit of a handle record (HandleRecords.adjust in ipam-handles.ts), returning what it wrote (undefined when it deleted or left none). */
export type HandleWriter = (handle: string, edit: (blocks: Record<string, number>) => void, known?: KeyValue | 'absent') => Promise<KeyValue | undefined>

export class HandleClaim {
  /** The record as last read or written; undefined when unknown (read before the next write). */
  private known: KeyValue | 'absent' | undefined
  private recorded: Record<string, number>
  /** Per block, the addresses the handle is known to hold there. */
  private readonly exact: Record<string, number> = {}
  /** A block or handle write whose outcome is unknown: the record must not shrink below what it may hold. */
  private uncertain = false

  constructor(private readonly handle: string, private readonly write: HandleWriter, known: KeyValue | 'absent', held: readonly IpamAddress[]) {
    this.known = known
    this.recorded = known === 'absent' ? {} : { ...decodeHandle(known.key, known.value).blocks }
    for (const a of held) this.exact[a.block] = (this.exact[a.block] ?? 0) + 1
  }

  /** A claim on a record just created with `blocks` (the common ADD: created before any block write). */
  static created(handle: string, write: HandleWriter, kv: KeyValue): HandleClaim {
    return new HandleClaim(handle, write, kv, [])
  }

  static createValue(handle: string, blocks: Readonly<Record<string, number>>): string {
    return JSON.stringify({ handleId: handle, blocks } satisfies HandleRecord)
  }

  /** Before writing `n` more of the handle's addresses into `block`: the record counts them, confirmed. */
  async cover(block: string, n: number): Promise<void> {
    const need = (this.exact[block] ?? 0) + n
    if ((this.recorded[block] ?? 0) >= need) return
    await this.put((blocks) => void (blocks[block] = Math.max(blocks[block] ?? 0, need)))
  }

  /** cover() of several blocks in one write: before any of them is written, the record counts `n` more in each. */
  async coverEach(blocks: readonly (readonly [string, number])[]): Promise<void> {
    const need = blocks.map(([b, n]): [string, number] => [b, (this.exact[b] ?? 0) + n]).filter(([b, n]) => (this.recorded[b] ?? 0) < n)
    if (need.length === 0) return
    await this.put((rec) => {
      for (const [b, n] of need) rec[b] = Math.max(rec[b] ?? 0, n)
    })
  }

  /** Addresses a block write confirmed. */
  confirmed(addrs: readonly IpamAddress[]): void {
    for (const a of addrs) this.exact[a.block] = (this.exact[a.block] ?? 0) + 1
  }

  /** Addresses given back (confirmed released). */
  returned(addrs: readonly IpamAddress[]): void {
    for (const a of addrs) this.exact[a.block] = (this.exact[a.block] ?? 0) - 1
  }

  /** A write of unknown outcome (a timeout, the datastore gone): from now on the record only grows. */
  markUncertain(): void {
    this.uncertain = true
  }

  get isUncertain(): boolean {
    return this.uncertain
  }

  /** After success: the record says exactly what the blocks hold (a no-op when the prediction was right). */
  async settle(): Promise<void> {
    const exact = this.exactCounts()
    if (this.known !== undefined && sameCounts(this.recorded, exact)) return
    await this.put((blocks) => {
      for (const k of Object.keys(blocks)) delete blocks[k]
      Object.assign(blocks, exact)
    })
  }

  /**
   * After a failure: shrink the record to what is certainly held (deleting it when nothing is), unless a
   * write's outcome is unknown; then it stays a superset, which a DEL or the node's repair cleans.
   */
  async abandon(): Promise<void> {
    if (this.uncertain) return
    await this.settle().catch(() => undefined)
  }

  private exactCounts(): Record<string, number> {
    const out: Record<string, number> = {}
    for (const [b, n] of Object.entries(this.exact)) if (n > 0) out[b] = n
    return out
  }

  private async put(edit: (blocks: Record<string, number>) => void): Promise<void> {
    const known = this.known
    this.known = undefined
    try {
      const kv = await this.write(this.handle, edit, known)
      this.known = kv ?? 'absent'
      this.recorded = kv === undefined ? {} : { ...decodeHandle(handleKey(this.handle), kv.value).blocks }
    } catch (err) {
      if (!(err instanceof DatastoreError && err.code === 'conflict')) this.uncertain = true
      throw err
    }
  }
}
