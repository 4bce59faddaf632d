// The kernel's routing table as felix last knew it: felix's own routes and every other protocol's, kept
// apart so that after a write that succeeded felix's own are simply the desired routes it wrote (the same
// map, not a copy: a million routes are not set one by one again). Pure: it reads nothing from the kernel.

import { routeKey, type KernelRoute } from './kernel-route.js'
import type { RouteConflict, RouteOp } from './route-diff.js'

export class KnownTable implements Iterable<readonly [string, KernelRoute]> {
  private constructor(
    /** felix's routes by key. */
    private readonly ours: ReadonlyMap<string, KernelRoute>,
    /** Every other protocol's routes by key. */
    private readonly others: ReadonlyMap<string, KernelRoute>,
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

  get(key: string): KernelRoute | undefined {
    return this.held.has(key) ? this.others.get(key) : (this.ours.get(key) ?? this.others.get(key))
  }

  *[Symbol.iterator](): Iterator<readonly [string, KernelRoute]> {
    for (const e of this.ours) if (!this.held.has(e[0])) yield e
    for (const e of this.others) if (this.held.has(e[0]) || !this.ours.has(e[0])) yield e
  }

  *values(): Generator<KernelRoute> {
    for (const [, r] of this) yield r
  }

  /**
   * The table once `ops` (the diff of `desired` against this table) are all written: felix's routes are then
   * exactly `desired` but for the keys another protocol holds (`conflicts`); the others lose what was deleted.
   */
  written(desired: ReadonlyMap<string, KernelRoute>, ops: readonly RouteOp[], conflicts: readonly RouteConflict[]): KnownTable {
    let others = this.others
    for (const o of ops) {
      // Only a route of another protocol that was itself deleted (a gone pod's veth route) leaves `others`.
      if (o.op !== 'delete' || others.get(o.key) !== o.route) continue
      if (others === this.others) others = new Map(others)
      ;(others as Map<string, KernelRoute>).delete(o.key)
    }
    return new KnownTable(desired, others, new Set(conflicts.map((c) => routeKey(c.desired))))
  }
}
