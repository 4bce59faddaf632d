// The kernel's routing table as felix last knew it: felix's own routes and every other protocol's, kept
// apart so that after a write that succeeded felix's own are simply the desired routes it wrote (the same
// map, not a copy: a million routes are not set one by one again). Pure: it reads nothing from the kernel.

import { parseIpv4, parseIpv6, V4PrefixMap, V6PrefixMap, type Family } from '../net/index.js'
import { routeKey, type KernelRoute } from './kernel-route.js'
import type { RouteConflict, RouteOp } from './route-diff.js'
import type { OwnRoutes } from './desired-routes.js'

export class KnownTable implements Iterable<readonly [string, KernelRoute]> {
  private constructor(
    /** felix's routes by key. */
    private readonly ours: OwnRoutes,
    /** Every other protocol's routes by key. */
    private readonly otherRoutes: ReadonlyMap<string, KernelRoute>,
    /** Keys where `ours` has a route the kernel does not: another protocol's route holds the key. */
    private readonly held: ReadonlySet<string>,
  ) {}

  /** The table as read; where two routes share a key (only `ip route append` does that) felix's is the one seen. */
  static read(routes: Iterable<KernelRoute>, protocol: number): KnownTable {
    const ours = new Map<string, KernelRoute>()
    const others = new Map<string, KernelRoute>()
    for (const r of routes) (r.protocol === protocol ? ours : others).set(routeKey(r), r)
    return new KnownTable(ours, others, new Set())
  }

  /** The other protocols' prefixes, made when first asked. */
  private otherPrefixes: { readonly v4: V4PrefixMap; readonly v6: V6PrefixMap; readonly unreadable: boolean } | undefined

  /** Whether no other protocol's route is at the prefix (at any tos or metric). */
  noOther(family: Family, addr4: number, addr6: Uint8Array | undefined, len: number): boolean {
    if (this.otherRoutes.size === 0) return true
    const o = (this.otherPrefixes ??= KnownTable.prefixes(this.otherRoutes.values()))
    if (o.unreadable) return false
    return family === 4 ? !o.v4.has(addr4, len) : !o.v6.has(addr6!, len)
  }

  /** The routes' prefixes; `unreadable` when some destination is not a prefix (then none counts as free). */
  private static prefixes(routes: Iterable<KernelRoute>): { v4: V4PrefixMap; v6: V6PrefixMap; unreadable: boolean } {
    const v4 = new V4PrefixMap()
    const v6 = new V6PrefixMap()
    let unreadable = false
    for (const r of routes) {
      const slash = r.dst.indexOf('/')
      const len = Number(r.dst.slice(slash + 1))
      const addr = slash < 0 || !Number.isInteger(len) ? undefined : r.family === 4 ? parseIpv4(r.dst.slice(0, slash)) : parseIpv6(r.dst.slice(0, slash))
      if (addr === undefined) unreadable = true
      else if (typeof addr === 'number') v4.set(addr, len, 1)
      else v6.set(addr, len, 1)
    }
    return { v4, v6, unreadable }
  }

  get(key: string): KernelRoute | undefined {
    return this.at(key, this.held.has(key) ? undefined : this.ours.get(key))
  }

  /** What the kernel holds at `key` when felix's route there is `ours` (another protocol's may hold the key). */
  at(key: string, ours: KernelRoute | undefined): KernelRoute | undefined {
    return this.held.has(key) ? this.otherRoutes.get(key) : (ours ?? this.otherRoutes.get(key))
  }

  *[Symbol.iterator](): Iterator<readonly [string, KernelRoute]> {
    for (const e of this.ours) if (!this.held.has(e[0])) yield e
    for (const e of this.otherRoutes) if (this.held.has(e[0]) || !this.ours.has(e[0])) yield e
  }

  *values(): Generator<KernelRoute> {
    for (const [, r] of this) yield r
  }

  /** Every other protocol's route (those of pods' veths among them). */
  others(): Iterable<readonly [string, KernelRoute]> {
    return this.otherRoutes
  }

  /**
   * The table once `ops` (the diff of `desired` against this table) are all written: felix's routes are then
   * exactly `desired` but for the keys another protocol holds (`conflicts`); the others lose what was deleted.
   */
  written(desired: OwnRoutes, ops: readonly RouteOp[], conflicts: readonly RouteConflict[]): KnownTable {
    return new KnownTable(desired, this.othersAfter(ops), new Set(conflicts.map((c) => routeKey(c.desired))))
  }

  /**
   * The same after a diff of only `keys` (RouteDeltaTracker.diffKeys): the keys another protocol held stay
   * held unless among `keys`, where `conflicts` says anew.
   */
  writtenKeys(desired: OwnRoutes, ops: readonly RouteOp[], conflicts: readonly RouteConflict[], keys: Iterable<string>): KnownTable {
    let held = this.held
    if (held.size > 0 || conflicts.length > 0) {
      const next = new Set(held)
      for (const k of keys) next.delete(k)
      for (const c of conflicts) next.add(routeKey(c.desired))
      held = next
    }
    return new KnownTable(desired, this.othersAfter(ops), held)
  }

  private othersAfter(ops: readonly RouteOp[]): ReadonlyMap<string, KernelRoute> {
    let others = this.otherRoutes
    for (const o of ops) {
      // Only a route of another protocol that was itself deleted (a gone pod's veth route) leaves `others`.
      if (o.op !== 'delete' || others.get(o.key) !== o.route) continue
      if (others === this.otherRoutes) others = new Map(others)
      ;(others as Map<string, KernelRoute>).delete(o.key)
    }
    return others
  }
}
