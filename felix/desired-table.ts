// felix's desired kernel routes kept incrementally: the learned routes as numbers (LearnedRoutes), the few
// fixed ones (local blackholes, static routes to peers) as KernelRoutes, and the render context; a
// learned route becomes a KernelRoute only when asked for (a write, a diff, the API). Every change notes
// the key it touches with what that key held, so the reconciler writes only those (takeChanged); a change
// of context re-renders everything and is followed by a full resync against the kernel. Pure.

import { formatIpv4, formatIpv6, parseIpv4, parseIpv6 } from '../bgp/codec/ip.js'
import type { Cidr } from '../config/ip/index.js'
import type { DesiredState, LearnedNextHop } from './desired-state.js'
import { compareNextHops, defaultMetric, routeKey, type Family, type KernelRoute, type NextHop } from './kernel-route.js'
import { LearnedRoutes, type LearnedEntry } from './learned-routes.js'
import { RenderContext, type PoolMatch, type RenderOptions, type RenderProblem } from './render-context.js'
import type { KeyedRoutes } from './route-diff.js'

/** The next hops learned routes name by id: the address and, when known, the node it belongs to. */
export interface HopSource {
  hop(id: number): LearnedNextHop | undefined
}

/** A keyed table of routes that can say whether it holds a key and be walked. */
export interface OwnRoutes extends KeyedRoutes {
  has(key: string): boolean
}

/** What the reconciler needs of its desired routes; a Map of KernelRoute by routeKey is one. */
export interface DesiredRoutes extends OwnRoutes {
  /** At least the number of routes (an iteration may yield fewer). */
  readonly size: number
  values(): Iterable<KernelRoute>
  /** The families the routes are in, when known without a walk. */
  families?(): readonly Family[]
  /** The keys changed since the last call, each with what it held then (null: nothing); resets the list. */
  takeChanged?(): ReadonlyMap<string, KernelRoute | null>
  /** The routes as of the last takeChanged(): what the kernel holds once that write succeeded. */
  asWritten?(): OwnRoutes
}

const MAX_PROBLEMS = 100
const EMPTY_CHANGES: ReadonlyMap<string, KernelRoute | null> = new Map()

/** An IPv4 `addr/len` as address * 64 + length. */
function dst4Key(dst: string): number {
  const slash = dst.indexOf('/')
  return (parseIpv4(dst.slice(0, slash)) ?? 0) * 64 + Number(dst.slice(slash + 1))
}

function bigintOf(addr: Uint8Array): bigint {
  let v = 0n
  for (let i = 0; i < 16; i++) v = (v << 8n) | BigInt(addr[i]!)
  return v
}

export class DesiredTable implements DesiredRoutes {
  private ctx: RenderContext
  private hopSource: HopSource
  private readonly learned = new LearnedRoutes()
  private fixed: ReadonlyMap<string, KernelRoute> = new Map()
  private changed = new Map<string, KernelRoute | null>()
  /** The kernel hops of a (combo, pool), or null when none is usable; cleared with the context. */
  private readonly hopCache = new Map<number, readonly NextHop[] | null>()
  private readonly routeProblems = new Map<string, RenderProblem>()
  private readonly v6Pool = new Map<string, PoolMatch>()

  constructor(
    private readonly opts: RenderOptions = {},
    hops: HopSource = { hop: () => undefined },
  ) {
    this.ctx = new RenderContext({ pools: [], vteps: [], localNode: { name: '', parentInterface: 'eth0' } }, opts)
    this.hopSource = hops
  }

  get table(): number {
    return this.ctx.table
  }

  get protocol(): number {
    return this.ctx.protocol
  }

  /** The render context's problems (pools, node, VTEPs) and the learned routes' (next hops), a bounded few. */
  problems(): RenderProblem[] {
    return [...this.ctx.problems, ...this.routeProblems.values()]
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
    this.ctx = new RenderContext(state, this.opts)
    this.hopSource = hops
    this.hopCache.clear()
    this.routeProblems.clear()
    this.v6Pool.clear()
    this.changed.clear()
  }

  /** The fixed routes (local blackholes, static routes to peers), by routeKey; they win over learned ones. */
  setFixed(routes: ReadonlyMap<string, KernelRoute>): void {
    for (const [k, r] of this.fixed) if (routes.get(k) !== r) this.note(k, r)
    for (const [k, r] of routes) if (this.fixed.get(k) !== r && !this.changed.has(k)) this.note(k, this.get(k))
    this.fixed = routes
  }

  /** The learned route of a prefix: next-hop ids (see HopSource) and the metric (undefined: the kernel's). */
  set(family: 4 | 6, addr4: number, addr6: Uint8Array | undefined, len: number, hops: readonly number[], metric: number | undefined): void {
    const combo = this.learned.intern(hops, metric)
    const before = this.learned.get(family, addr4, addr6, len)
    if (before === combo) return
    const old = before < 0 ? undefined : this.render(family, addr4, addr6, len, before)
    this.learned.set(family, addr4, addr6, len, combo)
    this.noteChange(old, this.render(family, addr4, addr6, len, combo))
  }

  delete(family: 4 | 6, addr4: number, addr6: Uint8Array | undefined, len: number): void {
    const before = this.learned.get(family, addr4, addr6, len)
    if (before < 0) return
    const old = this.render(family, addr4, addr6, len, before)
    this.learned.delete(family, addr4, addr6, len)
    this.noteChange(old, undefined)
  }

  /** How many learned routes are held (rendered or not). */
  get learnedCount(): number {
    return this.learned.size
  }

  private noteChange(old: KernelRoute | undefined, now: KernelRoute | undefined): void {
    const oldKey = old === undefined ? undefined : routeKey(old)
    if (oldKey !== undefined && !this.changed.has(oldKey)) this.note(oldKey, this.fixed.get(oldKey) ?? old)
    if (now === undefined) return
    const key = routeKey(now)
    if (key !== oldKey && !this.changed.has(key)) this.note(key, this.fixed.get(key))
  }

  private note(key: string, held: KernelRoute | undefined): void {
    if (!this.changed.has(key)) this.changed.set(key, held ?? null)
  }

  takeChanged(): ReadonlyMap<string, KernelRoute | null> {
    if (this.changed.size === 0) return EMPTY_CHANGES
    const out = this.changed
    this.changed = new Map()
    return out
  }

  asWritten(): OwnRoutes {
    const changed = (): ReadonlyMap<string, KernelRoute | null> => this.changed
    const get = (key: string): KernelRoute | undefined => {
      const c = changed()
      return c.has(key) ? (c.get(key) ?? undefined) : this.get(key)
    }
    const self = this
    return {
      get,
      has: (key) => get(key) !== undefined,
      *[Symbol.iterator]() {
        const c = changed()
        for (const e of self) if (!c.has(e[0])) yield e
        for (const [k, r] of c) if (r !== null) yield [k, r] as const
      },
    }
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
    const a = key.indexOf(' ')
    const b = key.indexOf(' ', a + 1)
    const c = key.indexOf(' ', b + 1)
    if (a < 0 || b < 0 || c < 0 || Number(key.slice(0, a)) !== this.ctx.table || key.slice(b + 1, c) !== '0') return undefined
    const slash = key.indexOf('/', a)
    if (slash < 0 || slash > b) return undefined
    const len = Number(key.slice(slash + 1, b))
    let r: KernelRoute | undefined
    if (key.lastIndexOf(':', b) > a) {
      const addr6 = parseIpv6(key.slice(a + 1, slash))
      if (addr6 === undefined) return undefined
      const combo = this.learned.get(6, 0, addr6, len)
      if (combo >= 0) r = this.render(6, 0, addr6, len, combo)
    } else {
      const addr4 = parseIpv4(key.slice(a + 1, slash))
      if (addr4 === undefined) return undefined
      const combo = this.learned.get(4, addr4, undefined, len)
      if (combo >= 0) r = this.render(4, addr4, undefined, len, combo)
    }
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
    const fixed4 = new Set<number>()
    for (const r of this.fixed.values()) if (r.family === 4) fixed4.add(r.dst4 !== undefined ? r.dst4 * 64 + (r.dstLen ?? 32) : dst4Key(r.dst))
    for (const e of this.learned.entries()) {
      if (e.family === 6 || fixed4.has(e.addr4 * 64 + e.len)) {
        const r = this.renderEntry(e)
        if (r !== undefined && !this.fixed.has(routeKey(r))) n++
        continue
      }
      const pool = this.ctx.poolForIpv4(e.addr4, e.len)
      if (this.hopsFor(e.combo, pool, 4, () => `${formatIpv4(e.addr4)}/${e.len}`) !== null) n++
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
  private render(family: 4 | 6, addr4: number, addr6: Uint8Array | undefined, len: number, combo: number): KernelRoute | undefined {
    const pool = family === 4 ? this.ctx.poolForIpv4(addr4, len) : this.poolFor6(addr6!, len)
    const dst = family === 4 ? `${formatIpv4(addr4)}/${len}` : `${formatIpv6(addr6!)}/${len}`
    const hops = this.hopsFor(combo, pool, family, () => dst)
    if (hops === null) return undefined
    const metric = this.learned.metric(combo) ?? defaultMetric(family)
    const { table, protocol } = this.ctx
    return family === 4
      ? { family, table, dst, tos: 0, metric, type: 'unicast', protocol, nexthops: hops, dst4: addr4, dstLen: len }
      : { family, table, dst, tos: 0, metric, type: 'unicast', protocol, nexthops: hops }
  }

  private poolFor6(addr6: Uint8Array, len: number): PoolMatch {
    const key = `${formatIpv6(addr6)}/${len}`
    let m = this.v6Pool.get(key)
    if (m === undefined) {
      const v = bigintOf(addr6)
      const c: Cidr = { family: 6, base: v, prefix: len }
      this.v6Pool.set(key, (m = this.ctx.poolFor(c)))
    }
    return m
  }

  /** The kernel hops of a combo in a pool, sorted, shared by every route with both; null when none. */
  private hopsFor(combo: number, pool: PoolMatch, family: Family, dstOf: () => string): readonly NextHop[] | null {
    const key = combo * 4096 + pool.index + 1
    const known = this.hopCache.get(key)
    if (known !== undefined) return known
    const dst = dstOf()
    const hops: NextHop[] = []
    for (const id of this.learned.hops(combo)) {
      const nh = this.hopSource.hop(id)
      const path = (): string => `learned ${dst}: next hop ${nh?.address ?? `#${id}`}`
      if (nh === undefined) {
        this.problem(path(), `next hop #${id} is not known`)
        continue
      }
      // A missing VTEP is reported by the context, once per (next hop, pool).
      const res = this.ctx.resolveHop(nh, pool, path)
      if (res.problem !== undefined) {
        this.problem(path(), res.problem)
        continue
      }
      if (res.ip !== undefined && res.ip.family !== family) {
        this.problem(path(), `IPv${res.ip.family} next hop for IPv${family} prefix ${dst}`)
        continue
      }
      const hop = res.hop
      if (hop === undefined) continue
      if (!hops.some((h) => h.gateway === hop.gateway && h.dev === hop.dev)) hops.push(hop)
    }
    if (hops.length > 1) hops.sort(compareNextHops)
    const out = hops.length === 0 ? null : hops
    this.hopCache.set(key, out)
    return out
  }

  private problem(path: string, message: string): void {
    if (this.routeProblems.size < MAX_PROBLEMS) this.routeProblems.set(`${path}\u0000${message}`, { path, message })
  }
}
