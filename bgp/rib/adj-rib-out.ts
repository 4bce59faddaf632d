// Adj-RIB-Out for one peer: which destinations wait to be sent and which the peer holds. Nothing is
// stored per prefix but membership: what a prefix is sent as is computed from the Loc-RIB when it
// is taken, so a prefix changed many times goes out once, as it last stood. Pure, no timers.

import type { Prefix } from '../codec/nlri.js'
import type { PathAttributes } from '../codec/attributes.js'
import { mayExport, routeContext, transform, type ExportContext, type OutRoute } from './export.js'
import type { Destination } from './table.js'
import type { AdjRibOut, FamilyKey, OutBatch, Path, RibPeer } from './types.js'

/** What an Adj-RIB-Out needs from the RIB that owns it. */
export interface RibView {
  readonly exportContext: ExportContext
  /** The table's current destination for this one's prefix (another object once it was replaced). */
  live(dest: Destination): Destination | undefined
  /** The destination with its best path computed. */
  settle(dest: Destination): Destination
  destinations(afi?: number): Iterable<Destination>
  interfaceOf(path: Path): string | undefined
}

const UNICAST = 1

export class PeerRibOut implements AdjRibOut {
  /** Membership of the queue; its order is `order` from `head` on. */
  private readonly queue = new Set<Destination>()
  /**
   * The queue in order. take() walks an array from a head index: iterating a Set from its start after
   * deleting from its front skips every deleted slot again on each call (V8 compacts lazily), which cost
   * a full-table Adj-RIB-Out most of its time.
   */
  private order: Destination[] = []
  private head = 0
  private readonly held = new Set<Destination>()
  private readonly listeners: (() => void)[] = []
  /** Export results for unchanged (policy-passed) attribute sets, per source session and family. */
  private readonly cache = [new WeakMap<object, Map<object | null, OutRoute | null>>(), new WeakMap<object, Map<object | null, OutRoute | null>>()]

  constructor(
    readonly peer: RibPeer,
    private readonly rib: RibView,
  ) {}

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
  offer(dest: Destination): void {
    // The size checks first: a peer that holds and waits for nothing (a full table's source, say) costs
    // no hash lookups per prefix.
    if (this.queue.size > 0 && this.queue.has(dest)) return
    if (this.held.size === 0 || !this.held.has(dest)) {
      const best = dest.best
      if (best === undefined || !mayExport(best, this.peer, this.rib.exportContext)) return
    }
    this.enqueue(dest)
  }

  private enqueue(dest: Destination): void {
    if (this.queue.has(dest)) return
    this.queue.add(dest)
    this.order.push(dest)
    if (this.queue.size === 1) for (const l of this.listeners) l()
  }

  refresh(family?: FamilyKey): void {
    const afi = family === undefined ? undefined : family >> 8
    for (const d of this.held) if (afi === undefined || d.prefix.afi === afi) this.enqueue(d)
    for (const d of this.rib.destinations(afi)) this.offer(d)
  }

  /** What `dest` is sent as now, or undefined when it is not sent. */
  private route(dest: Destination): OutRoute | undefined {
    const best = this.rib.settle(dest).best
    if (best === undefined || !mayExport(best, this.peer, this.rib.exportContext)) return undefined
    const ctx = this.rib.exportContext
    const route = routeContext(best, best.peer === undefined ? this.rib.interfaceOf(best) : undefined)
    const policy = this.peer.exportPolicy
    const attrs = best.attrs.attrs
    if (policy !== undefined) {
      const r = policy.apply(dest.prefix, attrs, this.peer, route)
      if (r === undefined) return undefined
      if (r !== attrs) return transform(best, r, this.peer, ctx)
    }
    // The policy left the set as it was: the result depends only on the set, the source session and the family.
    const byAttrs = this.cache[dest.prefix.afi - 1]!
    let bySession = byAttrs.get(best.attrs)
    if (bySession === undefined) byAttrs.set(best.attrs, (bySession = new Map()))
    const key = best.session ?? null
    let out = bySession.get(key)
    if (out === undefined) {
      out = transform(best, attrs, this.peer, ctx) ?? null
      bySession.set(key, out)
    }
    return out ?? undefined
  }

  take(maxPrefixes: number): OutBatch[] {
    const withdraw: [Prefix[], Prefix[]] = [[], []]
    const groups = new Map<string, { route: OutRoute; afi: number; announce: Prefix[] }>()
    let taken = 0
    const order = this.order
    while (taken < maxPrefixes && this.head < order.length) {
      const dest = order[this.head++]!
      this.queue.delete(dest)
      taken++
      const live = this.rib.live(dest)
      if (live !== dest) {
        // The destination was emptied and dropped; a new one may hold the prefix again. Whatever the
        // peer holds is now the new one's business (it is queued, or will be at the next flush).
        if (this.held.delete(dest)) {
          if (live !== undefined) {
            this.held.add(live)
            continue
          }
          withdraw[dest.prefix.afi - 1]!.push(dest.prefix)
        }
        continue
      }
      const out = this.route(dest)
      if (out === undefined) {
        if (this.held.delete(dest)) withdraw[dest.prefix.afi - 1]!.push(dest.prefix)
        continue
      }
      this.held.add(dest)
      const gk = `${dest.prefix.afi}${out.key}`
      let g = groups.get(gk)
      if (g === undefined) groups.set(gk, (g = { route: out, afi: dest.prefix.afi, announce: [] }))
      g.announce.push(dest.prefix)
    }
    if (this.head === order.length) {
      this.order = []
      this.head = 0
    } else if (this.head > 4096 && this.head * 2 > order.length) {
      this.order = order.slice(this.head)
      this.head = 0
    }
    const batches: OutBatch[] = []
    for (let i = 0; i < 2; i++) {
      if (withdraw[i]!.length > 0) batches.push({ afi: i + 1, safi: UNICAST, announce: [], withdraw: withdraw[i]! })
    }
    for (const g of groups.values()) {
      batches.push({
        afi: g.afi,
        safi: UNICAST,
        attributes: g.route.attributes,
        ...(g.route.nextHop.length > 0 ? { nextHop: g.route.nextHop } : {}),
        announce: g.announce,
        withdraw: [],
      })
    }
    return batches
  }

  *entries(): Iterable<{ prefix: Prefix; attributes: PathAttributes; nextHop: readonly string[] }> {
    const seen = new Set<Destination>()
    for (const set of [this.held, this.queue]) {
      for (const d of set) {
        const dest = this.rib.live(d)
        if (dest === undefined || seen.has(dest)) continue
        seen.add(dest)
        const out = this.route(dest)
        if (out === undefined) continue
        const nextHop = out.nextHop.length > 0 ? out.nextHop : out.attributes.nextHop !== undefined ? [out.attributes.nextHop] : []
        yield { prefix: dest.prefix, attributes: out.attributes, nextHop }
      }
    }
  }

  /** Forgets everything (the session went down); a new attach starts from the Loc-RIB again. */
  clear(): void {
    this.queue.clear()
    this.order = []
    this.head = 0
    this.held.clear()
  }
}
