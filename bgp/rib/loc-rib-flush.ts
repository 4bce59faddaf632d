// The Loc-RIB's outputs at each flush: the changed destinations' best paths as LocRibChange objects for
// change listeners, as typed deltas for delta listeners, and offered to the Adj-RIB-Outs; and the
// streaming walk of the whole Loc-RIB as deltas. It reads the destination table and changes no path.

import type { InternedAttributes } from '../codec/intern.js'
import type { BestChangeSink, Destinations, PathSource, PreviousBest } from './destinations.js'
import { DELTA_LOCAL, DELTA_NEW, LocRibDeltas, type NextHopTable } from './loc-rib-delta.js'
import type { RibOuts } from './rib-outs.js'
import type { LocRibChange } from './types.js'

export class LocRibFlush implements BestChangeSink {
  private readonly listeners = new Set<(changes: readonly LocRibChange[]) => void>()
  private readonly deltaListeners = new Set<(deltas: LocRibDeltas) => void>()
  private readonly deltas: LocRibDeltas
  /** This flush's changes, while there are change listeners. */
  private changes: LocRibChange[] | undefined = undefined
  /** This flush's deltas, while there are delta listeners. */
  private pending: LocRibDeltas | undefined = undefined
  /** An IPv6 destination's address on its way into a delta (which copies it). */
  private readonly addr6 = new Uint8Array(16)

  constructor(
    private readonly table: Destinations,
    private readonly outs: RibOuts,
    private readonly nextHops: NextHopTable,
  ) {
    this.deltas = new LocRibDeltas(nextHops)
  }

  subscribe(listener: (changes: readonly LocRibChange[]) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  subscribeDeltas(listener: (deltas: LocRibDeltas) => void): () => void {
    this.deltaListeners.add(listener)
    return () => this.deltaListeners.delete(listener)
  }

  /** Settles what changed since the last flush, queues it on the Adj-RIB-Outs and hands it to the listeners. */
  flush(): void {
    if (!this.table.changed) return
    const changes = (this.changes = this.listeners.size > 0 ? [] : undefined)
    const deltas = (this.pending = this.deltaListeners.size > 0 ? this.deltas : undefined)
    this.outs.beginFlush()
    this.table.settleChanged(this)
    this.changes = undefined
    this.pending = undefined
    // Listeners may change destinations again: those go to the next flush.
    if (changes !== undefined && changes.length > 0) for (const l of this.listeners) l(changes)
    if (deltas !== undefined && deltas.count > 0) {
      try {
        for (const l of this.deltaListeners) l(deltas)
      } finally {
        deltas.reset()
      }
    }
  }

  added(d: number, afi: 1 | 2, addr4: number, len: number, source: PathSource, attrs: InternedAttributes, held: boolean): void {
    const changes = this.changes
    if (changes !== undefined) {
      const prefix = this.table.prefix(d)
      changes.push({ prefix, best: this.table.best(d, prefix), previous: undefined })
    }
    const deltas = this.pending
    if (deltas !== undefined) {
      const flags = DELTA_NEW | (source.peer === undefined ? DELTA_LOCAL : 0)
      deltas.addOne(afi === 1 ? 4 : 6, addr4, afi === 1 ? undefined : this.table.ipv6Into(d, this.addr6), len, flags, attrs)
    }
    if (held) this.outs.offerFrom(d, source.peer, afi)
    else this.outs.offerNew(d, source.peer, afi)
  }

  addedRun(from: number, to: number, source: PathSource, attrs: InternedAttributes): void {
    const t = this.table
    const changes = this.changes
    if (changes !== undefined) {
      for (let d = from; d < to; d++) {
        const prefix = t.prefix(d)
        changes.push({ prefix, best: t.best(d, prefix), previous: undefined })
      }
    }
    // A stretch is of one family (see Settler.settleRuns).
    const afi = t.afi(from)
    const deltas = this.pending
    if (deltas !== undefined) {
      const flags = DELTA_NEW | (source.peer === undefined ? DELTA_LOCAL : 0)
      if (afi === 1) for (let d = from; d < to; d++) deltas.addOne(4, t.ipv4(d), undefined, t.len(d), flags, attrs)
      else for (let d = from; d < to; d++) deltas.addOne(6, 0, t.ipv6Into(d, this.addr6), t.len(d), flags, attrs)
    }
    this.outs.offerNewRun(from, to, source.peer, afi)
  }

  bestChanged(d: number, previous: PreviousBest): void {
    const changes = this.changes
    if (changes !== undefined) {
      const prefix = this.table.prefix(d)
      changes.push({ prefix, best: this.table.best(d, prefix), previous: previous.path(prefix) })
    }
    if (this.pending !== undefined) this.noteDelta(this.pending, d, previous.none ? DELTA_NEW : 0)
    this.outs.offer(d)
  }

  /**
   * Every destination with a best path, as deltas in batches of up to `batch` entries (one buffer, reused
   * from batch to batch), making no Path object for a destination that has none.
   */
  walk(visit: (deltas: LocRibDeltas) => void, batch: number): void {
    const out = new LocRibDeltas(this.nextHops)
    const t = this.table
    for (const d of t.indices()) {
      t.settle(d)
      if (t.bestSource(d) === undefined) continue
      this.noteDelta(out, d, 0)
      if (out.count >= batch) {
        visit(out)
        out.reset()
      }
    }
    if (out.count > 0) visit(out)
  }

  /** The settled best of `d` as one delta entry (see loc-rib-delta.ts); `flags` adds DELTA_NEW. */
  private noteDelta(out: LocRibDeltas, d: number, flags: number): void {
    const t = this.table
    const v4 = t.afi(d) === 1
    const family = v4 ? 4 : 6
    const addr4 = v4 ? t.ipv4(d) : 0
    const addr6 = v4 ? undefined : t.ipv6Into(d, this.addr6)
    const len = t.len(d)
    const src = t.bestSource(d)
    if (src === undefined) return out.addOne(family, addr4, addr6, len, flags, undefined)
    const f = flags | (src.peer === undefined ? DELTA_LOCAL : 0)
    const multipath = t.multipathOf(d)
    if (multipath === undefined) out.addOne(family, addr4, addr6, len, f, t.bestAttrs(d))
    else out.addMany(family, addr4, addr6, len, f, t.bestAttrs(d)!, multipath)
  }
}
