// The pure delta tracker: desired routes vs the routes read from the kernel -> the replace/delete operations
// that make the kernel match, touching only routes of felix's protocol (plus unknown /32s on pinto veths
// after a grace period). Time comes in as an argument; it runs nothing and never reads the clock itself.

import { routeKey, sameRoute, type KernelRoute } from './kernel-route.js'

export type RouteOpReason = 'missing' | 'changed' | 'stale' | 'stale-workload'

export interface RouteOp {
  readonly op: 'replace' | 'delete'
  readonly route: KernelRoute
  /** routeKey(route), computed once. */
  readonly key: string
  readonly reason: RouteOpReason
}

/** A desired route whose key is held by another protocol's route: felix leaves it and reports. */
export interface RouteConflict {
  readonly desired: KernelRoute
  readonly holder: KernelRoute
}

export interface DiffResult {
  readonly ops: RouteOp[]
  readonly conflicts: RouteConflict[]
  /** When the earliest waiting veth route's grace period ends (ms, same clock as `now`), if any wait. */
  readonly graceDeadline: number | undefined
}

/**
 * A key whose desired route changed since the table was last written: felix's route the key held then
 * (null: none) and, when the lister has it at hand, the desired route there now (null: none; absent: the
 * diff asks the desired table).
 */
export type KeyChange = readonly [key: string, held: KernelRoute | null, want?: KernelRoute | null]

/** A table keyed the way the kernel keys routes (a Map, or felix's known table). */
export interface KeyedRoutes extends Iterable<readonly [string, KernelRoute]> {
  get(key: string): KernelRoute | undefined
}

/** Desired routes for a full diff: keyed, walkable, and counted (at least as many as a walk yields). */
export interface SizedRoutes extends KeyedRoutes {
  readonly size: number
}

export interface DeltaTrackerOptions {
  readonly protocol: number
  /** Interface-name prefix of pinto's pod veths. */
  readonly vethPrefix: string
  readonly graceMs: number
}

export class RouteDeltaTracker {
  /** Unknown veth routes by key -> when first seen; survives between diffs so the grace period can elapse. */
  private readonly firstSeen = new Map<string, number>()

  constructor(private readonly opts: DeltaTrackerOptions) {}

  /**
   * `workloads` undefined means the agent has not told felix which pods exist: every veth route is then
   * left alone, because deleting a pod's route on a guess would cut it off. `missing` false leaves out the
   * desired routes the table lacks (the caller lists those itself).
   */
  diff(desired: SizedRoutes, actual: readonly KernelRoute[] | KeyedRoutes, now: number, workloads?: ReadonlySet<string>, missing = true): DiffResult {
    const ops: RouteOp[] = []
    const conflicts: RouteConflict[] = []
    // Desired keys the table has. A fresh read may hold a key twice (`ip route append`), so its keys are
    // kept; a keyed table is only counted, and asked again below for the few missing ones, if any.
    const fresh = Array.isArray(actual)
    const present = fresh ? new Set<string>() : undefined
    let matched = 0
    const waiting = new Set<string>()
    let graceDeadline: number | undefined
    const protocol = this.opts.protocol

    // Keyed entries are the table as felix knows it; an array is a fresh read.
    const entries: Iterable<readonly [string, KernelRoute]> = fresh ? keyed(actual as readonly KernelRoute[]) : (actual as KeyedRoutes)
    for (const [key, a] of entries) {
      const want = desired.get(key)
      if (want !== undefined) {
        if (present !== undefined) present.add(key)
        else matched++
      }
      if (a.protocol === protocol) {
        // The same object: felix wrote this very route (the known table holds what it wrote).
        if (want === a) continue
        if (want === undefined) ops.push({ op: 'delete', route: a, key, reason: 'stale' })
        else if (!sameRoute(want, a)) ops.push({ op: 'replace', route: want, key, reason: 'changed' })
        continue
      }
      if (want !== undefined) {
        conflicts.push({ desired: want, holder: a })
        continue
      }
      const deadline = this.vethOp(key, a, now, workloads, waiting, ops)
      if (deadline !== undefined) graceDeadline = Math.min(graceDeadline ?? Infinity, deadline)
    }
    for (const k of this.firstSeen.keys()) if (!waiting.has(k)) this.firstSeen.delete(k)
    if (!missing) return { ops, conflicts, graceDeadline }
    if (present !== undefined) {
      for (const [key, want] of desired) if (!present.has(key)) ops.push({ op: 'replace', route: want, key, reason: 'missing' })
    } else if (matched < desired.size) {
      const table = actual as KeyedRoutes
      for (const [key, want] of desired) if (table.get(key) === undefined) ops.push({ op: 'replace', route: want, key, reason: 'missing' })
    }
    return { ops, conflicts, graceDeadline }
  }

  /**
   * The diff of only the keys in `changed` (each once), against `known`, which says what the kernel
   * holds at a key given felix's route there (another protocol's route may hold it); the veth routes of
   * other protocols in `others` are judged as diff() judges them (undefined: not judged this time, as for
   * the second and later batches of one write). The rest is taken to be as it was.
   */
  diffKeys(desired: KeyedRoutes, known: { at(key: string, ours: KernelRoute | undefined): KernelRoute | undefined }, changed: Iterable<KeyChange>, others: Iterable<readonly [string, KernelRoute]> | undefined, now: number, workloads?: ReadonlySet<string>): DiffResult {
    const ops: RouteOp[] = []
    const conflicts: RouteConflict[] = []
    const protocol = this.opts.protocol
    for (const [key, held, given] of changed) {
      const want = given === undefined ? desired.get(key) : (given ?? undefined)
      const a = known.at(key, held ?? undefined)
      if (a === undefined) {
        if (want !== undefined) ops.push({ op: 'replace', route: want, key, reason: 'missing' })
      } else if (a.protocol === protocol) {
        if (want === undefined) ops.push({ op: 'delete', route: a, key, reason: 'stale' })
        else if (want !== a && !sameRoute(want, a)) ops.push({ op: 'replace', route: want, key, reason: 'changed' })
      } else if (want !== undefined) conflicts.push({ desired: want, holder: a })
    }
    if (others === undefined) return { ops, conflicts, graceDeadline: undefined }
    const waiting = new Set<string>()
    let graceDeadline: number | undefined
    for (const [key, a] of others) {
      if (a.protocol === protocol || desired.get(key) !== undefined) continue
      const deadline = this.vethOp(key, a, now, workloads, waiting, ops)
      if (deadline !== undefined) graceDeadline = Math.min(graceDeadline ?? Infinity, deadline)
    }
    for (const k of this.firstSeen.keys()) if (!waiting.has(k)) this.firstSeen.delete(k)
    return { ops, conflicts, graceDeadline }
  }

  /**
   * Another protocol's route no desired route wants: a /32 on a pinto veth for no known pod is deleted once
   * its grace period is over. Returns when that period ends while it lasts.
   */
  private vethOp(key: string, a: KernelRoute, now: number, workloads: ReadonlySet<string> | undefined, waiting: Set<string>, ops: RouteOp[]): number | undefined {
    if (workloads === undefined || !isVethHostRoute(a, this.opts.vethPrefix)) return undefined
    const addr = a.dst.slice(0, a.dst.indexOf('/'))
    if (workloads.has(addr)) return undefined
    const first = this.firstSeen.get(key) ?? now
    this.firstSeen.set(key, first)
    waiting.add(key)
    if (now - first >= this.opts.graceMs) {
      ops.push({ op: 'delete', route: a, key, reason: 'stale-workload' })
      return undefined
    }
    return first + this.opts.graceMs
  }
}

function* keyed(routes: readonly KernelRoute[]): Generator<readonly [string, KernelRoute]> {
  for (const r of routes) yield [routeKey(r), r]
}

function isVethHostRoute(r: KernelRoute, vethPrefix: string): boolean {
  const len = r.dst.slice(r.dst.indexOf('/') + 1)
  if (len !== (r.family === 4 ? '32' : '128') || r.type !== 'unicast' || r.nexthops.length !== 1) return false
  const [hop] = r.nexthops
  return hop?.gateway === undefined && hop?.dev?.startsWith(vethPrefix) === true
}

/**
 * Per-line failures from `ip -force -batch -` stderr: ip prints the error text, then
 * `Command failed -:N`. Returns 0-based op index -> message.
 */
export function parseBatchErrors(stderr: string): Map<number, string> {
  const out = new Map<number, string>()
  let pending: string[] = []
  for (const line of stderr.split('\n')) {
    const m = /^Command failed -:(\d+)$/.exec(line.trim())
    if (m !== null) {
      out.set(Number(m[1]) - 1, pending.join('; ') || 'failed')
      pending = []
    } else if (line.trim() !== '') {
      pending.push(line.trim())
    }
  }
  return out
}
