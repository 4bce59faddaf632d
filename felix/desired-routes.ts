// What the reconciler needs of the routes it is to make the kernel hold: a keyed table (a Map of KernelRoute
// by routeKey is one) and, from felix's incremental desired table, the changes since the last write and a
// streaming read's matching. Interfaces only; desired-table.ts is the implementation.

import type { KernelRoute } from './kernel-route.js'
import type { LearnedOps } from './learned-ops.js'
import type { KeyChange, KeyedRoutes } from './route-diff.js'
import type { DumpedRoute } from './rtnl-routes.js'
import type { Family } from '../net/index.js'

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
  /**
   * The keys changed since the last call, each with what it held then (null: nothing), made key by key as
   * the list is walked (a million changed routes are not a million keys at once); resets the list.
   */
  takeChanges?(): ChangeList
  /** The routes as of the last takeChanges(): what the kernel holds once that write succeeded. */
  asWritten?(): OwnRoutes
  /** A streaming read: marks a dumped route seen when it is exactly a desired one (else false). */
  matchDumped?(r: DumpedRoute): boolean
  /**
   * The desired routes no matchDumped() call marked, rendered (the fixed ones among them); with `written`,
   * only those it says are written from the walk, each then counted as written as it is at that moment.
   */
  unmatched?(written?: (key: string) => boolean): Iterable<readonly [string, KernelRoute]>
  /** Forgets every mark matchDumped() made. */
  clearMatched?(): void
  /** A route for each distinct set of next hops the desired routes go through (the nexthop object sweep). */
  hopRoutes?(): Iterable<KernelRoute>
}

/**
 * The changes one take listed: each key with what it held at the take before (null: nothing) and, for a
 * learned route's, what the table wants there now (see KeyChange). Walked once, in order, by the writer; a
 * learned route's entries are rendered as the walk reaches them, in the table's state of that moment, which
 * the next take then counts as written.
 */
export interface ChangeList {
  /** At least the number of learned prefixes and fixed keys listed (a learned prefix may yield two keys). */
  readonly size: number
  /**
   * Walks the list, once; each entry is gone from it once passed, and an unfinished walk drops the rest. An
   * entry's `want` holds until the table next changes.
   */
  entries(): IterableIterator<KeyChange>
  /**
   * Walks the list as entries() does, but the change of a learned route that nothing but felix's own route
   * can be in the way of (no fixed route at its prefix, and `sink.free` says no other protocol's) goes into
   * `sink.ops` as the kernel operations it needs, listing no key; the walk yields undefined once `sink.ops`
   * holds `sink.limit` operations, for the walker to take them. A table arriving then costs no route
   * object, prefix text, key or iteration step per route.
   */
  walk?(sink: LearnedSink): IterableIterator<KeyChange | undefined>
  /** Drops the list unwalked (a full diff covers it). */
  drop(): void
}

/** Where ChangeList.walk() puts the learned routes' changes it need not list by key. */
export interface LearnedSink {
  readonly ops: LearnedOps
  /** How many operations make a batch (see ChangeList.walk). */
  readonly limit: number
  /** Whether no route of another protocol is at the prefix in the kernel (at any tos or metric). */
  free(family: Family, addr4: number, addr6: Uint8Array | undefined, len: number): boolean
}
