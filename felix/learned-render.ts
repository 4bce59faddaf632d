// A learned route (prefix as numbers or bytes, an interned (next hops, metric) combo) rendered as the
// KernelRoute felix wants for it in the current render context: the pool found from the prefix's numbers,
// each combo's kernel hops worked out once per pool and shared by every route through them, and the next
// hops' problems kept (a bounded few). Pure; it renders, it stores no route.

import { formatIpv4, formatIpv6, type Family } from '../net/index.js'
import type { LearnedNextHop } from './desired-state.js'
import { compareNextHops, defaultMetric, type KernelRoute, type NextHop } from './kernel-route.js'
import type { LearnedRoutes } from './learned-routes.js'
import type { PoolMatch, RenderContext, RenderProblem } from './render-context.js'

/** The next hops learned routes name by id: the address and, when known, the node it belongs to. */
export interface HopSource {
  hop(id: number): LearnedNextHop | undefined
}

const MAX_PROBLEMS = 100

export class LearnedRenderer {
  /**
   * The kernel hops of a (combo, pool), or null when none is usable, with the combo's hop ids they were
   * made from: a combo id nobody holds any more may come back naming other hops.
   */
  private readonly hopCache = new Map<number, { readonly ids: readonly number[]; readonly hops: readonly NextHop[] | null }>()
  private readonly routeProblems = new Map<string, RenderProblem>()

  constructor(
    readonly ctx: RenderContext,
    private readonly hopSource: HopSource,
    private readonly learned: LearnedRoutes,
  ) {}

  /** The learned routes' problems (next hops). */
  problems(): Iterable<RenderProblem> {
    return this.routeProblems.values()
  }

  /** A learned route as the kernel route felix wants for it; undefined: none usable. */
  render(family: Family, addr4: number, addr6: Uint8Array | undefined, len: number, combo: number): KernelRoute | undefined {
    const pool = family === 4 ? this.ctx.poolForIpv4(addr4, len) : this.ctx.poolForIpv6(addr6!, len)
    const dst = family === 4 ? `${formatIpv4(addr4)}/${len}` : `${formatIpv6(addr6!)}/${len}`
    const hops = this.hopsFor(combo, pool, family, () => dst)
    if (hops === null) return undefined
    const metric = this.learned.metric(combo) ?? defaultMetric(family)
    const { table, protocol } = this.ctx
    return family === 4
      ? { family, table, dst, tos: 0, metric, type: 'unicast', protocol, nexthops: hops, dst4: addr4, dstLen: len }
      : { family, table, dst, tos: 0, metric, type: 'unicast', protocol, nexthops: hops, dst6: addr6!.slice(), dstLen: len }
  }

  /** A route for each distinct set of kernel hops rendered so far (what the nexthop object sweep keeps). */
  *hopRoutes(): IterableIterator<KernelRoute> {
    const { table, protocol } = this.ctx
    for (const [key, { ids, hops }] of this.hopCache) {
      // Not a combo's any more (its id was freed, or names other hops now).
      if (hops === null || this.learned.hops(Math.floor(key / 4096)) !== ids) continue
      const family = hops[0]?.gateway?.includes(':') === true ? 6 : 4
      yield { family, table, dst: '', tos: 0, metric: 0, type: 'unicast', protocol, nexthops: hops }
    }
  }

  /** The kernel hops of a combo in a pool, sorted, shared by every route with both; null when none. */
  hopsFor(combo: number, pool: PoolMatch, family: Family, dstOf: () => string): readonly NextHop[] | null {
    const key = combo * 4096 + pool.index + 1
    const ids = this.learned.hops(combo)
    const known = this.hopCache.get(key)
    if (known !== undefined && known.ids === ids) return known.hops
    const dst = dstOf()
    const hops: NextHop[] = []
    for (const id of ids) {
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
    this.hopCache.set(key, { ids, hops: out })
    return out
  }

  private problem(path: string, message: string): void {
    if (this.routeProblems.size < MAX_PROBLEMS) this.routeProblems.set(`${path}\u0000${message}`, { path, message })
  }
}
