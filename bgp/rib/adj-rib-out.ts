// Adj-RIB-Out for one peer: which destinations wait to be sent and which the peer holds. Nothing is
// stored per prefix but membership: what a prefix is sent as is computed from the Loc-RIB when it
// is taken, so a prefix changed many times goes out once, as it last stood. Pure, no timers.

import type { Prefix } from '../codec/nlri.js'
import type { PathAttributes } from '../codec/attributes.js'
import { routeContextOf, transform, type ExportContext, type OutRoute } from './export.js'
import type { InternedAttributes } from '../codec/intern.js'
import type { AdjRibOut, FamilyKey, OutBatch, Path, PeerSessionInfo, RibPeer } from './types.js'
import { IndexSet } from './index-set.js'
import { BatchBuilder } from './out-batches.js'

/** What an Adj-RIB-Out needs from the RIB that owns it; a destination is the RIB's index for it. */
export interface RibView {
  readonly exportContext: ExportContext
  /** Whether `d` is a destination (not an index freed since it was queued). */
  isLive(d: number): boolean
  /** Computes `d`'s best path if it is not yet. */
  settle(d: number): void
  /** Whether `d`'s settled best may go to `target` at all (family, split horizon, RFC 8212), policy aside. */
  exportable(d: number, target: RibPeer): boolean
  /** The settled best path as an object (made for a compact path: only when the parts below do not do). */
  bestPath(d: number): Path | undefined
  bestPeer(d: number): RibPeer | undefined
  bestSession(d: number): PeerSessionInfo | undefined
  bestAttrs(d: number): InternedAttributes | undefined
  prefix(d: number): Prefix
  afi(d: number): 1 | 2
  indices(afi?: number): Iterable<number>
  interfaceOf(path: Path): string | undefined
  /** Export results shared by every Adj-RIB-Out whose peer transform() treats alike (exportKey). */
  exportCache(target: RibPeer): ExportCache
  /** This Adj-RIB-Out holds `d` (sent, not withdrawn): the RIB keeps its index for it. */
  hold(d: number): void
  unhold(d: number): void
}


/**
 * Export results for attribute sets the export policy left as they were, per family (AFI - 1): by
 * interned set, then by source session. What transform() makes of them depends only on the target's
 * exportKey, so thousands of reflector clients share one cache instead of one each.
 */
export type ExportCache = readonly [WeakMap<object, Map<object | null, OutRoute | null>>, WeakMap<object, Map<object | null, OutRoute | null>>]

/** The target's fields transform() reads: peers with equal keys are sent the same attributes. */
export function exportKey(target: RibPeer): string {
  return `${target.type} ${target.localAsn} ${target.nextHopMode} ${target.localAddress} ${target.localAddress6 ?? ''}`
}

export function newExportCache(): ExportCache {
  return [new WeakMap(), new WeakMap()]
}

/** Told of each prefix a take() sends: its export result (undefined: withdrawn) and whether it was held before. */
export type TakeRecorder = (d: number, prefix: Prefix, out: OutRoute | undefined, wasHeld: boolean) => void

export class PeerRibOut implements AdjRibOut {
  /** Membership of the queue; its order is `order` from `head` on. */
  private readonly queue = new IndexSet()
  /**
   * The queue in order. take() walks an array from a head index: iterating a Set from its start after
   * deleting from its front skips every deleted slot again on each call (V8 compacts lazily), so each
   * take() of a full table would cost more than the last.
   */
  private order: number[] = []
  private head = 0
  /** What the peer holds. The RIB keeps a held destination's index (emptied or not) until it is released. */
  private readonly held = new IndexSet()
  private readonly listeners: (() => void)[] = []
  /** Export results for unchanged (policy-passed) attribute sets, shared with peers of the same exportKey. */
  private readonly cache: ExportCache

  constructor(
    readonly peer: RibPeer,
    private readonly rib: RibView,
  ) {
    this.cache = rib.exportCache(peer)
  }

  get pending(): number {
    return this.queue.size
  }

  get size(): number {
    return this.held.size
  }

  onPending(listener: () => void): void {
    this.listeners.push(listener)
  }

  /** Called by the RIB for a destination whose best path changed. */
  offer(d: number): void {
    // The size checks first: a peer that holds and waits for nothing (a full table's source, say) costs
    // no hash lookups per prefix.
    if (this.queue.size > 0 && this.queue.has(d)) return
    if ((this.held.size === 0 || !this.held.has(d)) && !this.rib.exportable(d, this.peer)) return
    this.enqueue(d)
  }

  private enqueue(d: number): void {
    if (this.queue.has(d)) return
    this.queue.add(d)
    this.order.push(d)
    if (this.queue.size === 1) for (const l of this.listeners) l()
  }

  refresh(family?: FamilyKey): void {
    const afi = family === undefined ? undefined : family >> 8
    for (const d of this.held) if (afi === undefined || this.rib.afi(d) === afi) this.enqueue(d)
    for (const d of this.rib.indices(afi)) {
      this.rib.settle(d)
      this.offer(d)
    }
  }

  /** What `d` (whose prefix is `prefix`) is sent as now, or undefined when it is not sent. */
  private route(d: number, prefix: Prefix): OutRoute | undefined {
    const rib = this.rib
    rib.settle(d)
    if (!rib.exportable(d, this.peer)) return undefined
    const ctx = rib.exportContext
    const interned = rib.bestAttrs(d)!
    const src = rib.bestPeer(d)
    // Only our own routes name an interface, and they are path objects already.
    const own = src === undefined ? rib.bestPath(d) : undefined
    const route = routeContextOf(src, own === undefined ? undefined : rib.interfaceOf(own))
    const policy = this.peer.exportPolicy
    const attrs = interned.attrs
    if (policy !== undefined) {
      const r = policy.apply(prefix, attrs, this.peer, route)
      if (r === undefined) return undefined
      if (r !== attrs) return transform(rib.bestPath(d)!, r, this.peer, ctx)
    }
    // The policy left the set as it was: the result depends only on the set, the source session and the family.
    const byAttrs = this.cache[prefix.afi - 1]!
    let bySession = byAttrs.get(interned)
    if (bySession === undefined) byAttrs.set(interned, (bySession = new Map<object | null, OutRoute | null>()))
    const key = rib.bestSession(d) ?? null
    let out = bySession.get(key)
    if (out === undefined) {
      out = transform(rib.bestPath(d)!, attrs, this.peer, ctx) ?? null
      bySession.set(key, out)
    }
    return out ?? undefined
  }

  /**
   * Takes up to `maxPrefixes` pending changes as batches. `record` is told of each prefix sent; `shared`:
   * the batches go to every member of an update group (see BatchBuilder.batches).
   */
  take(maxPrefixes: number, record?: TakeRecorder, shared = false): OutBatch[] {
    const batches = new BatchBuilder()
    let taken = 0
    const order = this.order
    while (taken < maxPrefixes && this.head < order.length) {
      const d = order[this.head++]!
      this.queue.delete(d)
      taken++
      // Freed since it was queued (emptied, and held by no one): nothing to send or withdraw.
      if (!this.rib.isLive(d)) continue
      const prefix = this.rib.prefix(d)
      const out = this.route(d, prefix)
      if (out === undefined) {
        if (this.held.delete(d)) {
          batches.withdraw(prefix)
          this.rib.unhold(d)
          record?.(d, prefix, undefined, true)
        }
        continue
      }
      const wasHeld = this.held.has(d)
      if (!wasHeld) {
        this.held.add(d)
        this.rib.hold(d)
      }
      record?.(d, prefix, out, wasHeld)
      batches.announce(prefix, out)
    }
    if (this.head === order.length) {
      this.order = []
      this.head = 0
    } else if (this.head > 4096 && this.head * 2 > order.length) {
      this.order = order.slice(this.head)
      this.head = 0
    }
    return batches.batches(shared)
  }

  /**
   * Starts from where `from` (an update group's table) stands: what it holds but `skip` rejects (the
   * member's own routes, which it was never sent), and what it has still to send, in its order.
   */
  startFrom(from: PeerRibOut, skip: (d: number) => boolean): void {
    for (const d of from.held) {
      if (skip(d)) continue
      this.held.add(d)
      this.rib.hold(d)
    }
    for (let i = from.head; i < from.order.length; i++) this.enqueue(from.order[i]!)
  }

  /** What is advertised and queued, as sent now; `skipSource`: leave out the best paths from this peer id. */
  *entries(skipSource?: number): Iterable<{ prefix: Prefix; attributes: PathAttributes; nextHop: readonly string[] }> {
    for (const set of [this.held, this.queue]) {
      for (const d of set) {
        if ((set === this.queue && this.held.has(d)) || !this.rib.isLive(d)) continue
        if (skipSource !== undefined && this.rib.bestPeer(d)?.id === skipSource) continue
        const prefix = this.rib.prefix(d)
        const out = this.route(d, prefix)
        if (out === undefined) continue
        const nextHop = out.nextHop.length > 0 ? out.nextHop : out.attributes.nextHop !== undefined ? [out.attributes.nextHop] : []
        yield { prefix, attributes: out.attributes, nextHop }
      }
    }
  }

  /** The queued destinations it holds: what its members hold of them is what they were sent before. */
  *queuedHeld(): Iterable<number> {
    for (let i = this.head; i < this.order.length; i++) if (this.held.has(this.order[i]!)) yield this.order[i]!
  }

  /** Each held destination with what it is sent as now (what it was sent as, when nothing is pending). */
  *heldRoutes(): Iterable<[number, Prefix, OutRoute]> {
    for (const d of this.held) {
      if (!this.rib.isLive(d)) continue
      const prefix = this.rib.prefix(d)
      const out = this.route(d, prefix)
      if (out !== undefined) yield [d, prefix, out]
    }
  }

  /** Forgets everything (the session went down); a new attach starts from the Loc-RIB again. */
  clear(): void {
    const held = [...this.held]
    this.queue.clear()
    this.order = []
    this.head = 0
    this.held.clear()
    for (const d of held) this.rib.unhold(d)
  }
}
