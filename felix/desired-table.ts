// felix's desired kernel routes kept incrementally: the learned routes as numbers (LearnedRoutes), the few
// fixed ones (local blackholes, static routes to peers) as KernelRoutes, and the render context; a
// learned route becomes a KernelRoute only when asked for (a write, a diff, the API). Every change is
// noted, a learned one as its prefix and the combo it held (numbers, no key), so the reconciler writes
// only those (takeChanges); a change of context re-renders everything and is followed by a full resync. Pure.

import { formatIpv4, formatIpv6, parseIpv4, parseIpv6, V4PrefixMap, V6PrefixMap, type Family } from '../net/index.js'
import type { DesiredState } from './desired-state.js'
import { defaultMetric, routeKey, sameHops, type KernelRoute } from './kernel-route.js'
import { LearnedRenderer, type HopSource } from './learned-render.js'
import { LearnedRoutes, type LearnedEntry } from './learned-routes.js'
import { NOT_PENDING, parseKey, PendingLearned, type KeyPrefix } from './pending-learned.js'
import { RenderContext, type RenderOptions, type RenderProblem } from './render-context.js'
import type { ChangeList, DesiredRoutes, LearnedSink, OwnRoutes } from './desired-routes.js'
import type { LearnedOps } from './learned-ops.js'
import type { KeyChange } from './route-diff.js'
import type { DumpedRoute } from './rtnl-routes.js'

export type { ChangeList, DesiredRoutes, LearnedSink, OwnRoutes } from './desired-routes.js'
export type { HopSource } from './learned-render.js'

export class DesiredTable implements DesiredRoutes {
  private readonly learned = new LearnedRoutes()
  private renderer: LearnedRenderer
  private fixed: ReadonlyMap<string, KernelRoute> = new Map()
  /** The fixed IPv4 routes' destinations. */
  private fixed4 = new V4PrefixMap()
  /** The fixed IPv6 routes' destinations. */
  private fixed6 = new V6PrefixMap()
  /** Fixed routes' keys changed since the last take, each with what it held then (null: nothing). */
  private changed = new Map<string, KernelRoute | null>()
  private pending: PendingLearned
  private readonly scratch: KeyPrefix = { family: 4, addr4: 0, addr6: undefined, len: 0 }
  private readonly addr6 = new Uint8Array(16)
  /** The prefix learnedOps() works on, and its text for a problem's path (made only for one). */
  private opPrefix: KeyPrefix = this.scratch
  private readonly opDst = (): string => {
    const p = this.opPrefix
    return p.family === 4 ? `${formatIpv4(p.addr4)}/${p.len}` : `${formatIpv6(p.addr6!)}/${p.len}`
  }

  constructor(
    private readonly opts: RenderOptions = {},
    hops: HopSource = { hop: () => undefined },
  ) {
    const ctx = new RenderContext({ pools: [], vteps: [], localNode: { name: '', parentInterface: 'eth0' } }, opts)
    this.renderer = new LearnedRenderer(ctx, hops, this.learned)
    this.pending = new PendingLearned(this.learned)
  }

  private get ctx(): RenderContext {
    return this.renderer.ctx
  }

  get table(): number {
    return this.ctx.table
  }

  get protocol(): number {
    return this.ctx.protocol
  }

  /** The render context's problems (pools, node, VTEPs) and the learned routes' (next hops), a bounded few. */
  problems(): RenderProblem[] {
    return [...this.ctx.problems, ...this.renderer.problems()]
  }

  /** The VTEP neighbours and FDB entries of the current context. */
  get context(): RenderContext {
    return this.ctx
  }

  /**
   * A new pool/encapsulation/node context: every learned route renders anew. What changed is not listed
   * (the old renderings are gone), so the caller resyncs against the kernel.
   */
  setContext(state: Pick<DesiredState, 'pools' | 'vteps' | 'localNode'>, hops: HopSource): void {
    this.renderer = new LearnedRenderer(new RenderContext(state, this.opts), hops, this.learned)
    this.changed.clear()
    this.pending.clear()
  }

  /** The fixed routes (local blackholes, static routes to peers), by routeKey; they win over learned ones. */
  setFixed(routes: ReadonlyMap<string, KernelRoute>): void {
    // Noted with what the key held at the last take, before this.fixed changes.
    for (const [k, r] of this.fixed) if (routes.get(k) !== r) this.noteFixed(k)
    for (const [k, r] of routes) if (this.fixed.get(k) !== r) this.noteFixed(k)
    this.fixed = routes
    this.fixed4 = new V4PrefixMap()
    this.fixed6 = new V6PrefixMap()
    for (const r of routes.values()) {
      if (r.family === 4) {
        if (r.dst4 !== undefined) this.fixed4.set(r.dst4, r.dstLen ?? 32, 1)
        else {
          const slash = r.dst.indexOf('/')
          this.fixed4.set(parseIpv4(r.dst.slice(0, slash)) ?? 0, Number(r.dst.slice(slash + 1)), 1)
        }
      }
      else {
        const slash = r.dst.indexOf('/')
        const addr = parseIpv6(r.dst.slice(0, slash))
        if (addr !== undefined) this.fixed6.set(addr, Number(r.dst.slice(slash + 1)), 1)
      }
    }
  }

  matchDumped(r: DumpedRoute): boolean {
    const { table, protocol } = this.ctx
    if (r.protocol !== protocol || r.table !== table || r.tos !== 0 || r.type !== 'unicast') return false
    if (r.family === 6) return this.matchDumped6(r)
    if (this.fixed4.size > 0 && this.fixed4.has(r.dst4, r.len)) return false
    const combo = this.learned.get(4, r.dst4, undefined, r.len)
    if (combo < 0 || (this.learned.metric(combo) ?? 0) !== r.metric) return false
    const hops = this.renderer.hopsFor(combo, this.ctx.poolForIpv4(r.dst4, r.len), 4, () => `${formatIpv4(r.dst4)}/${r.len}`)
    if (hops === null || !sameHops(hops, r.nexthops)) return false
    this.learned.markSeen(r.dst4, r.len)
    return true
  }

  /** matchDumped() for an IPv6 route, by its address bytes where the dump has them. */
  private matchDumped6(r: DumpedRoute): boolean {
    const { dst6, dst6At, len } = r
    if (this.fixed6.size > 0 && this.fixed6.has(dst6, len, dst6At)) return false
    const combo = this.learned.get6At(dst6, dst6At, len)
    if (combo < 0 || (this.learned.metric(combo) ?? defaultMetric(6)) !== r.metric) return false
    const addr = dst6.subarray(dst6At, dst6At + 16)
    const hops = this.renderer.hopsFor(combo, this.ctx.poolForIpv6(addr, len), 6, () => `${formatIpv6(addr)}/${len}`)
    if (hops === null || !sameHops(hops, r.nexthops)) return false
    this.learned.markSeen6At(dst6, dst6At, len)
    return true
  }

  *unmatched(written?: (key: string) => boolean): IterableIterator<readonly [string, KernelRoute]> {
    for (const e of this.fixed) if (written === undefined || written(e[0])) yield e
    for (const e of this.learned.entries()) {
      if (e.seen) continue
      const r = this.renderEntry(e)
      if (r === undefined) continue
      const key = routeKey(r)
      if (this.fixed.has(key) || (written !== undefined && !written(key))) continue
      // Written as it is now: a change listed since counts from here.
      if (written !== undefined) this.pending.written(e.family, e.addr4, e.addr6, e.len)
      yield [key, r]
    }
  }

  clearMatched(): void {
    this.learned.clearSeen()
  }

  *hopRoutes(): IterableIterator<KernelRoute> {
    yield* this.fixed.values()
    yield* this.renderer.hopRoutes()
  }

  private noteFixed(key: string): void {
    if (!this.changed.has(key)) this.changed.set(key, this.writtenGet(key) ?? null)
  }

  /** The learned route of a prefix: next-hop ids (see HopSource) and the metric (undefined: the kernel's). */
  set(family: Family, addr4: number, addr6: Uint8Array | undefined, len: number, hops: readonly number[], metric: number | undefined): void {
    addr6 = this.own6(addr6)
    const combo = this.learned.intern(hops, metric)
    // One probe: the combo it held comes back from the write, with the prefix's reference on it, which the
    // pending list takes (the same combo again changes nothing).
    const before = this.learned.set(family, addr4, addr6, len, combo, true)
    if (before === combo) this.learned.release(before)
    else this.pending.note(family, addr4, addr6, len, before, true)
  }

  delete(family: Family, addr4: number, addr6: Uint8Array | undefined, len: number): void {
    addr6 = this.own6(addr6)
    const before = this.learned.get(family, addr4, addr6, len)
    if (before < 0) return
    this.pending.note(family, addr4, addr6, len, before)
    this.learned.delete(family, addr4, addr6, len)
  }

  /**
   * The caller's IPv6 address copied into the table's own bytes: the storage then reads one kind of array
   * (a peer's addresses may be Buffers), and nothing keeps the caller's.
   */
  private own6(addr6: Uint8Array | undefined): Uint8Array | undefined {
    if (addr6 === undefined) return undefined
    const a = this.addr6
    if (addr6.length < 16) a.fill(0)
    a.set(addr6.length > 16 ? addr6.subarray(0, 16) : addr6)
    return a
  }

  /** How many learned routes are held (rendered or not). */
  get learnedCount(): number {
    return this.learned.size
  }

  takeChanged(): ReadonlyMap<string, KernelRoute | null> {
    const out = new Map<string, KernelRoute | null>()
    for (const [key, held] of this.takeChanges().entries()) out.set(key, held)
    return out
  }

  takeChanges(): ChangeList {
    const fixed = this.changed
    const taken = this.pending
    this.changed = new Map()
    this.pending = new PendingLearned(this.learned)
    return {
      size: fixed.size + taken.size,
      // Without a sink every change is listed by key: nothing yields undefined.
      entries: () => this.walkChanges(fixed, taken, undefined) as Generator<KeyChange>,
      walk: (sink) => this.walkChanges(fixed, taken, sink),
      drop: () => taken.clear(),
    }
  }

  private *walkChanges(fixed: ReadonlyMap<string, KernelRoute | null>, taken: PendingLearned, sink: LearnedSink | undefined): Generator<KeyChange | undefined> {
    try {
      yield* fixed
      const e: KeyPrefix = { family: 4, addr4: 0, addr6: undefined, len: 0 }
      const plain = sink !== undefined ? this.plainPrefixes(fixed, sink) : undefined
      // Nothing inserts into a taken list, so its slots stay where they are.
      const v4 = taken.v4
      for (let s = v4.next(-1); s >= 0; s = v4.next(s)) {
        e.addr4 = v4.addrAt(s)
        e.len = v4.lenAt(s)
        const before = v4.valueAt(s)
        if (plain?.(e) === true) {
          this.learnedOps(e, before, sink!.ops)
          // A batch's worth: the walker takes them before the walk goes on.
          if (sink!.ops.length >= sink!.limit) yield undefined
        } else yield* this.learnedChange(e, before, fixed)
        v4.deleteAt(s)
        taken.walked(before)
      }
      e.family = 6
      e.addr4 = 0
      const addr6 = (e.addr6 = new Uint8Array(16))
      const v6 = taken.v6
      for (let s = v6.next(-1); s >= 0; s = v6.next(s)) {
        v6.addrAt(s, addr6)
        e.len = v6.lenAt(s)
        const before = v6.valueAt(s)
        if (plain?.(e) === true) {
          this.learnedOps(e, before, sink!.ops)
          // A batch's worth: the walker takes them before the walk goes on.
          if (sink!.ops.length >= sink!.limit) yield undefined
        } else yield* this.learnedChange(e, before, fixed)
        v6.deleteAt(s)
        taken.walked(before)
      }
    } finally {
      taken.clear()
    }
  }

  /**
   * Which learned prefixes' changes can go to a sink as operations: those no fixed route is at, nor was at
   * the take before (a fixed route's change in `fixedChanged`), and that the sink says only felix's own
   * route can be at in the kernel.
   */
  private plainPrefixes(fixedChanged: ReadonlyMap<string, KernelRoute | null>, sink: LearnedSink): (p: KeyPrefix) => boolean {
    const was4 = new V4PrefixMap()
    const was6 = new V6PrefixMap()
    const k: KeyPrefix = { family: 4, addr4: 0, addr6: undefined, len: 0 }
    for (const key of fixedChanged.keys()) {
      if (!parseKey(key, this.ctx.table, k)) continue
      if (k.family === 4) was4.set(k.addr4, k.len, 1)
      else was6.set(k.addr6!, k.len, 1)
    }
    const fixed4 = this.fixed4
    const fixed6 = this.fixed6
    return (p) => {
      if (p.family === 4) {
        if ((fixed4.size > 0 && fixed4.has(p.addr4, p.len)) || (was4.size > 0 && was4.has(p.addr4, p.len))) return false
      } else if ((fixed6.size > 0 && fixed6.has(p.addr6!, p.len)) || (was6.size > 0 && was6.has(p.addr6!, p.len))) return false
      return sink.free(p.family, p.addr4, p.addr6, p.len)
    }
  }

  /**
   * A learned prefix's change as the kernel operations it needs, given that only felix's own route can be
   * at its keys: the route rendered from the combo it held at the take is what the kernel holds, the one
   * rendered now is what it should. A new metric is a new key, so the old route goes and the new one comes;
   * the same metric and other hops replace it. The prefix then counts as written as it is now.
   */
  private learnedOps(p: KeyPrefix, before: number, ops: LearnedOps): void {
    const { family, addr4, addr6, len } = p
    const now = this.learned.get(family, addr4, addr6, len)
    this.pending.written(family, addr4, addr6, len)
    const pool = family === 4 ? this.ctx.poolForIpv4(addr4, len) : this.ctx.poolForIpv6(addr6!, len)
    this.opPrefix = p
    const dst = this.opDst
    const old = before < 0 ? null : this.renderer.hopsFor(before, pool, family, dst)
    const hops = now < 0 ? null : now === before ? old : this.renderer.hopsFor(now, pool, family, dst)
    const oldMetric = old === null ? 0 : (this.learned.metric(before) ?? defaultMetric(family))
    const metric = hops === null ? 0 : (this.learned.metric(now) ?? defaultMetric(family))
    if (old !== null && (hops === null || metric !== oldMetric)) ops.push(true, family, addr4, addr6, len, oldMetric, old)
    if (hops !== null && (old === null || metric !== oldMetric || !sameHops(old, hops))) ops.push(false, family, addr4, addr6, len, metric, hops)
  }

  /**
   * The keys a learned prefix's change touches: the key of what it held (with what the key held: the fixed
   * route there, or that rendering) and the key of what it holds now, unless a fixed route's change lists
   * the key; each with what get() would answer for it now, worked out here, where the prefix is known, so the
   * diff neither parses the key back nor renders the route again. The prefix then counts as written as it
   * is now: a later change is listed against that.
   */
  private *learnedChange(p: KeyPrefix, before: number, fixedChanged: ReadonlyMap<string, KernelRoute | null>): Generator<KeyChange> {
    const now = this.learned.get(p.family, p.addr4, p.addr6, p.len)
    this.pending.written(p.family, p.addr4, p.addr6, p.len)
    const old = before < 0 ? undefined : this.render(p.family, p.addr4, p.addr6, p.len, before)
    const oldKey = old === undefined ? undefined : routeKey(old)
    const r = now < 0 ? undefined : now === before ? old : this.render(p.family, p.addr4, p.addr6, p.len, now)
    const key = r === undefined ? undefined : r === old ? oldKey : routeKey(r)
    if (oldKey !== undefined && !fixedChanged.has(oldKey)) {
      const fixed = this.fixed.get(oldKey)
      yield [oldKey, fixed ?? old!, fixed ?? (key === oldKey ? r! : null)]
    }
    if (key === undefined || key === oldKey || fixedChanged.has(key)) return
    const fixed = this.fixed.get(key)
    yield [key, fixed ?? null, fixed ?? r!]
  }

  /** What `key` held at the last take: what the kernel holds once that take's write succeeded. */
  private writtenGet(key: string): KernelRoute | undefined {
    const c = this.changed
    if (c.has(key)) return c.get(key) ?? undefined
    const fixed = this.fixed.get(key)
    if (fixed !== undefined) return fixed
    const p = this.scratch
    if (!parseKey(key, this.ctx.table, p)) return undefined
    let combo = this.pending.before(p.family, p.addr4, p.addr6, p.len)
    if (combo === NOT_PENDING) combo = this.learned.get(p.family, p.addr4, p.addr6, p.len)
    if (combo < 0) return undefined
    const r = this.render(p.family, p.addr4, p.addr6, p.len, combo)
    return r !== undefined && routeKey(r) === key ? r : undefined
  }

  asWritten(): OwnRoutes {
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the iterator below is a generator method, with a this of its own
    const self = this
    const get = (key: string): KernelRoute | undefined => self.writtenGet(key)
    return {
      get,
      has: (key) => get(key) !== undefined,
      *[Symbol.iterator]() {
        const c = self.changed
        for (const e of self.fixed) if (!c.has(e[0])) yield e
        for (const e of self.learned.entries()) {
          const before = self.pending.before(e.family, e.addr4, e.addr6, e.len)
          if (before === -1) continue
          const r = self.render(e.family, e.addr4, e.addr6, e.len, before === NOT_PENDING ? e.combo : before)
          if (r === undefined) continue
          const key = routeKey(r)
          if (!self.fixed.has(key) && !c.has(key)) yield [key, r] as const
        }
        for (const [k, r] of c) if (r !== null) yield [k, r] as const
        // Prefixes withdrawn since the take: the kernel holds them until the next write.
        const v4 = self.pending.v4
        for (let s = v4.next(-1); s >= 0; s = v4.next(s)) yield* self.withdrawnSince(4, v4.addrAt(s), undefined, v4.lenAt(s), v4.valueAt(s))
        const v6 = self.pending.v6
        const addr6 = new Uint8Array(16)
        for (let s = v6.next(-1); s >= 0; s = v6.next(s)) yield* self.withdrawnSince(6, 0, v6.addrAt(s, addr6), v6.lenAt(s), v6.valueAt(s))
      },
    }
  }

  /** A pending prefix's rendering at the take, when the table no longer holds the prefix. */
  private *withdrawnSince(family: Family, addr4: number, addr6: Uint8Array | undefined, len: number, before: number): Generator<readonly [string, KernelRoute]> {
    if (before < 0 || this.learned.get(family, addr4, addr6, len) >= 0) return
    const r = this.render(family, addr4, addr6, len, before)
    if (r === undefined) return
    const key = routeKey(r)
    if (!this.fixed.has(key) && !this.changed.has(key)) yield [key, r]
  }

  get size(): number {
    return this.fixed.size + this.learned.size
  }

  families(): readonly Family[] {
    if (this.learned.hasIpv6) return [4, 6]
    for (const r of this.fixed.values()) if (r.family === 6) return [4, 6]
    return [4]
  }

  has(key: string): boolean {
    return this.get(key) !== undefined
  }

  /** The route of a routeKey ("table dst tos metric"), rendered now. */
  get(key: string): KernelRoute | undefined {
    const fixed = this.fixed.get(key)
    if (fixed !== undefined) return fixed
    const p = this.scratch
    if (!parseKey(key, this.ctx.table, p)) return undefined
    const combo = this.learned.get(p.family, p.addr4, p.addr6, p.len)
    const r = combo >= 0 ? this.render(p.family, p.addr4, p.addr6, p.len, combo) : undefined
    return r !== undefined && routeKey(r) === key ? r : undefined
  }

  *[Symbol.iterator](): IterableIterator<readonly [string, KernelRoute]> {
    for (const e of this.fixed) yield e
    for (const e of this.learned.entries()) {
      const r = this.renderEntry(e)
      if (r === undefined) continue
      const key = routeKey(r)
      if (!this.fixed.has(key)) yield [key, r]
    }
  }

  /** How many routes a walk yields, worked out from numbers (no route is made but where a fixed one may shadow it). */
  count(): number {
    let n = this.fixed.size
    const fixed4 = this.fixed4
    for (const e of this.learned.entries()) {
      if (e.family === 6 || (fixed4.size > 0 && fixed4.has(e.addr4, e.len))) {
        const r = this.renderEntry(e)
        if (r !== undefined && !this.fixed.has(routeKey(r))) n++
        continue
      }
      const pool = this.ctx.poolForIpv4(e.addr4, e.len)
      if (this.renderer.hopsFor(e.combo, pool, 4, () => `${formatIpv4(e.addr4)}/${e.len}`) !== null) n++
    }
    return n
  }

  *values(): IterableIterator<KernelRoute> {
    for (const [, r] of this) yield r
  }

  private renderEntry(e: LearnedEntry): KernelRoute | undefined {
    return this.render(e.family, e.addr4, e.addr6, e.len, e.combo)
  }

  /** A learned route as the kernel route felix wants for it in the current context; undefined: none usable. */
  private render(family: Family, addr4: number, addr6: Uint8Array | undefined, len: number, combo: number): KernelRoute | undefined {
    return this.renderer.render(family, addr4, addr6, len, combo)
  }
}
