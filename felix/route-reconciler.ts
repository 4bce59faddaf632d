// The reconciler around the delta tracker: only apply() touches the kernel's routes. It diffs the desired
// routes against the table as felix knows it (read once, then kept by its own writes), writes the diff (a large
// one a batch at a time), resyncs once on failure and reports per-route errors; a periodic resync and the
// monitor it owns (route-monitor-watch.ts) keep the kernel in line. Reads and writes go through the
// KernelRouteIo it owns (route-kernel-io.ts).

import pino, { type Logger } from 'pino'
import { DEFAULT_ROUTE_PROTOCOL, MAIN_TABLE, routeKey, type KernelRoute } from './kernel-route.js'
import { KnownTable } from './known-table.js'
import type { DumpedRoute } from './rtnl-routes.js'
import { RouteDeltaTracker, type DiffResult, type KeyChange, type RouteConflict, type RouteOp } from './route-diff.js'
import type { DesiredRoutes, LearnedSink } from './desired-routes.js'
import { LearnedOps, RouteOpList } from './learned-ops.js'
import type { ProcessRunner } from './runner.js'
import type { RouteSocket } from './route-socket.js'
import { KernelRouteIo } from './route-kernel-io.js'
import { RouteMonitor } from './route-monitor-watch.js'
import type { Family } from '../net/index.js'

export interface RouteReconcilerOptions {
  readonly runner: ProcessRunner
  readonly netns?: string
  readonly table?: number
  readonly protocol?: number
  /** Full resync period; Calico's RouteRefreshInterval is 90 s. */
  readonly resyncIntervalMs?: number
  /** How long an unknown /32 on a pinto veth survives (Calico: 10 s). */
  readonly graceMs?: number
  readonly vethPrefix?: string
  /** Read (and clean) the IPv6 table even when no IPv6 route is desired. */
  readonly ipv6?: boolean
  /** Watch `ip monitor route` for drift (default true). */
  readonly monitor?: boolean
  /** Retry delay after per-route errors. */
  readonly retryMs?: number
  /** Concurrent `ip -batch` writers for large diffs (default 2). */
  readonly writers?: number
  /** Routes through kernel nexthop objects where the kernel has them (default true). */
  readonly nexthopObjects?: boolean
  /**
   * Reads the table (a dump) and writes routes through this rtnetlink socket instead of `ip -json` and
   * `ip -batch` (only for a reconciler of its own process's namespace, so never with `netns`). Routes it
   * cannot express still go through `ip`.
   */
  readonly routeSocket?: RouteSocket
  /** From this many listed changes an apply diffs and writes them a batch at a time (default 2,000). */
  readonly streamMinChanges?: number
  /** Changes per such batch (default 1,000 through the route socket, 25,000 through `ip`). */
  readonly streamBatch?: number
  readonly logger?: Logger
  readonly now?: () => number
}

export interface RouteError {
  readonly op: RouteOp
  readonly message: string
}

export interface ApplyResult {
  /** Operations the first diff found. */
  readonly planned: number
  readonly errors: RouteError[]
  readonly conflicts: RouteConflict[]
  readonly readMs: number
  readonly writeMs: number
}

/**
 * Changes per batch of a large incremental apply through the route socket: a batch's operations and routes
 * are a few MB, and each batch waits for the kernel's acknowledgements before the next is diffed, so a
 * smaller batch leaves the kernel idle more often and lowers no peak. Through `ip` a batch is a process's worth (each batch starts its own `ip -batch` writers).
 */
const STREAM_BATCH = 10_000
const STREAM_BATCH_IP = 25_000

/** From this many operations a write runs with `ip monitor` stopped. */
const QUIET_MIN_OPS = 2_000

const NOTHING: ApplyResult = { planned: 0, errors: [], conflicts: [], readMs: 0, writeMs: 0 }

function* keysOf(changes: readonly KeyChange[]): Generator<string> {
  for (const c of changes) yield c[0]
}

export class RouteReconciler {
  private readonly table: number
  private readonly protocol: number
  private readonly resyncMs: number
  private readonly retryMs: number
  private readonly streamMin: number
  private readonly streamBatch: number | undefined
  private readonly ipv6: boolean
  private readonly log: Logger
  private readonly now: () => number
  private readonly tracker: RouteDeltaTracker
  private readonly io: KernelRouteIo
  private readonly monitor: RouteMonitor
  private desired: DesiredRoutes = new Map<string, KernelRoute>()
  private workloads: ReadonlySet<string> | undefined
  private started = false
  /**
   * The table as felix last knew it: what it read, changed by what it wrote since. An apply driven by a
   * desired-state change diffs against this instead of reading the kernel again; the periodic resync, the
   * monitor and any write failure go back to the kernel. Undefined when unknown.
   */
  private known: KnownTable | undefined
  private running: Promise<ApplyResult> | undefined
  private queued: Promise<ApplyResult> | undefined
  private timer: NodeJS.Timeout | undefined
  private wantRead = false
  /** Whether the next read reads felix's nexthop objects too (all but a resync after route lines alone). */
  private nexthopsDue = true
  /** The columns a batch's learned operations go into (see applyBatches), kept from one apply to the next. */
  private learnedOps: LearnedOps | undefined
  /** Errors from the latest apply, by route key. */
  readonly errors = new Map<string, RouteError>()

  constructor(opts: RouteReconcilerOptions) {
    this.table = opts.table ?? MAIN_TABLE
    this.protocol = opts.protocol ?? DEFAULT_ROUTE_PROTOCOL
    const vethPrefix = opts.vethPrefix ?? 'pinto'
    this.resyncMs = opts.resyncIntervalMs ?? 90_000
    this.retryMs = opts.retryMs ?? 5_000
    this.streamMin = Math.max(1, opts.streamMinChanges ?? QUIET_MIN_OPS)
    this.streamBatch = opts.streamBatch !== undefined ? Math.max(1, opts.streamBatch) : undefined
    this.ipv6 = opts.ipv6 === true
    this.now = opts.now ?? Date.now
    this.log = (opts.logger ?? pino({ level: 'silent' })).child({ component: 'felix.routes', table: this.table, protocol: this.protocol })
    this.tracker = new RouteDeltaTracker({ protocol: this.protocol, vethPrefix, graceMs: opts.graceMs ?? 10_000 })
    this.io = new KernelRouteIo({
      runner: opts.runner, netns: opts.netns, table: this.table, protocol: this.protocol, writers: opts.writers ?? 2,
      nexthopObjects: opts.nexthopObjects !== false, routeSocket: opts.routeSocket, log: this.log,
    })
    this.monitor = new RouteMonitor({
      io: this.io, table: this.table, protocol: this.protocol, vethPrefix, enabled: opts.monitor !== false, log: this.log,
      owner: {
        wants: (key) => this.desired.has(key),
        knowsPods: () => this.workloads !== undefined,
        known: () => this.known,
        drifted: () => void (this.known = undefined),
        resync: (nexthops) => this.resync(nexthops),
      },
    })
  }

  /**
   * Replaces the desired routes and the known pods; takes effect at the next apply(). A Map (from
   * renderDesired) is taken whole at each apply; a DesiredTable is kept, and an apply that needs no read
   * writes only the keys it lists as changed.
   */
  setDesired(routes: DesiredRoutes, workloads?: ReadonlySet<string>): void {
    const owner = routes instanceof Map ? undefined : (routes as { readonly table?: number; readonly protocol?: number })
    if (owner !== undefined && (owner.table !== this.table || owner.protocol !== this.protocol)) {
      throw new Error(`setDesired: the desired table renders table ${owner.table} proto ${owner.protocol}; this reconciler owns table ${this.table} proto ${this.protocol}`)
    }
    if (owner === undefined) {
      for (const r of routes.values()) {
        if (r.protocol !== this.protocol || r.table !== this.table) {
          throw new Error(`setDesired: route ${r.dst} has table ${r.table} proto ${r.protocol}; this reconciler owns table ${this.table} proto ${this.protocol}`)
        }
      }
    }
    this.desired = routes
    this.workloads = workloads
  }

  /**
   * One reconciliation against the table as felix knows it (read once, then kept by its own writes); calls
   * made while one runs are coalesced into a single follow-up run.
   */
  apply(): Promise<ApplyResult> {
    if (this.running === undefined) {
      this.running = this.applyOnce().finally(() => {
        this.running = undefined
      })
      return this.running
    }
    this.queued ??= this.running.then(
      () => this.next(),
      () => this.next(),
    )
    return this.queued
  }

  private next(): Promise<ApplyResult> {
    this.queued = undefined
    return this.apply()
  }

  /** Like apply(), but reads the kernel's table first; with `nexthops` false, not felix's nexthop objects. */
  resync(nexthops = true): Promise<ApplyResult> {
    this.wantRead = true
    if (nexthops) this.nexthopsDue = true
    return this.apply()
  }


  /** Starts the monitor and periodic resync, then applies once. */
  async start(): Promise<ApplyResult> {
    this.started = true
    await this.io.probeNexthops()
    this.monitor.start()
    this.schedule(this.resyncMs)
    return this.resync()
  }

  /** Stops watching and resyncing. Routes stay in the kernel: a restarting agent must not cut traffic. */
  async stop(): Promise<void> {
    this.started = false
    clearTimeout(this.timer)
    await this.monitor.stop()
    await this.running?.catch(() => undefined)
    await this.queued?.catch(() => undefined)
    this.log.info('stopped; routes left in place')
  }

  /** The families the table is read for: IPv6 too when asked to, or when a desired route is IPv6. */
  private families(): readonly Family[] {
    if (this.ipv6) return [4, 6]
    const known = this.desired.families?.()
    if (known !== undefined) return known
    for (const r of this.desired.values()) if (r.family === 6) return [4, 6]
    return [4]
  }

  private schedule(ms: number): void {
    if (!this.started) return
    clearTimeout(this.timer)
    this.timer = setTimeout(() => {
      this.resync().then(
        () => undefined,
        (err: unknown) => this.log.error({ err }, 'resync failed'),
      )
    }, ms)
    this.timer.unref()
  }

  private async applyOnce(): Promise<ApplyResult> {
    const t0 = performance.now()
    const read = this.wantRead || this.known === undefined
    this.wantRead = false
    const nexthops = read && this.nexthopsDue
    if (read) this.nexthopsDue = false
    // A read over the route socket streams: each dumped route of felix's that is exactly as desired is
    // marked in the desired table and made no object; only the rest is kept and diffed.
    const d = this.desired
    const streamed = read && this.io.viaSocket && d.matchDumped !== undefined && d.unmatched !== undefined && d.clearMatched !== undefined
    let matched = 0
    if (read) {
      // Unknown while the read is out: a monitor line meanwhile cannot be taken for felix's own echo.
      this.known = undefined
      // What changed before the read, its diff covers; what changes while it runs stays listed for the next
      // apply (a route marked as seen and changed after is diffed as it now is, unmarked).
      if (streamed) d.takeChanges?.().drop()
      const filter = (r: DumpedRoute): boolean => {
        if (!d.matchDumped!(r)) return true
        matched++
        return false
      }
      try {
        this.known = KnownTable.read(await this.io.read(this.families(), streamed ? filter : undefined, nexthops), this.protocol)
      } catch (err) {
        if (nexthops) this.nexthopsDue = true
        if (streamed) d.clearMatched!()
        throw err
      }
    }
    const known = this.known as KnownTable
    // Taken at every apply: a full diff covers what changed as well.
    const list = streamed ? undefined : d.takeChanges?.()
    if (!read && list !== undefined && list.size >= this.streamMin) return this.applyBatches((sink) => (sink !== undefined && list.walk !== undefined ? list.walk(sink) : list.entries()), list.size, known, t0)
    if (read) list?.drop()
    const changed = read || list === undefined ? undefined : [...list.entries()]
    const incremental = changed !== undefined
    let first: DiffResult
    if (incremental) first = this.tracker.diffKeys(d, known, changed, known.others(), this.now(), this.workloads)
    else if (!streamed) first = this.tracker.diff(d, known, this.now(), this.workloads)
    else {
      // The kept routes against the desired ones; then the desired routes no dumped route matched and the
      // table lacks, written a batch at a time as the walk finds them (all of them, for a table not yet in).
      try {
        const kept = this.tracker.diff(d, known, this.now(), this.workloads, false)
        function* missing(): Generator<KeyChange> {
          for (const [key, r] of d.unmatched!((k) => known.get(k) === undefined)) yield [key, null, r]
        }
        return await this.applyBatches(missing, Math.max(kept.ops.length, d.size - matched), known, t0, kept)
      } finally {
        d.clearMatched!()
      }
    }
    const readMs = performance.now() - t0
    const written = this.desired.asWritten?.() ?? this.desired
    const after = (ops: readonly RouteOp[]): KnownTable => (incremental ? known.writtenKeys(written, ops, first.conflicts, keysOf(changed)) : known.written(written, ops, first.conflicts))
    this.reportConflicts(first.conflicts)
    if (first.graceDeadline !== undefined) this.schedule(Math.max(0, first.graceDeadline - this.now()) + 10)
    else this.schedule(this.resyncMs)
    if (first.ops.length === 0) {
      this.errors.clear()
      // What was read goes: the kernel holds what is desired, which the table says without a copy.
      if (read || incremental) this.known = after(first.ops)
      if (read) await this.io.sweepNexthops(this.desired, this.known as KnownTable)
      return { ...NOTHING, conflicts: first.conflicts, readMs }
    }
    const t1 = performance.now()
    // Set before any of the write's echo can be read from the monitor; a failure sends felix back to the kernel.
    this.known = after(first.ops)
    // A large write runs with the monitor stopped: `ip monitor` printing every route felix writes, and
    // felix reading each line, would take the CPU its writers need. What others changed meanwhile waits
    // for the periodic resync.
    const quiet = first.ops.length >= QUIET_MIN_OPS && (await this.monitor.pause())
    if (!quiet) this.monitor.expect(first.ops)
    const failures = await this.io.write(new RouteOpList(first.ops), true)
      .catch((err: unknown) => {
        this.known = undefined
        throw err
      })
      .finally(() => {
        if (quiet) this.monitor.resume()
      })
    const errors = failures.size > 0 ? await this.retryAfterFailures(failures.size, first.ops.length) : []
    const writeMs = performance.now() - t1
    this.reportErrors(errors)
    if (errors.length === 0 && read && failures.size === 0) await this.io.sweepNexthops(this.desired, this.known ?? known)
    // What the monitor missed during a quiet write waits for the periodic resync: a read of the whole table
    // after each large write would make the changes that follow wait behind a full read and diff.
    const counts = { replace: 0, delete: 0 }
    for (const o of first.ops) counts[o.op]++
    this.log.info({ ...counts, errors: errors.length, readMs: Math.round(readMs), writeMs: Math.round(writeMs) }, 'routes reconciled')
    return { planned: first.ops.length, errors, conflicts: first.conflicts, readMs, writeMs }
  }

  /**
   * The failure may come from a stale view (a route changed under us): look again, and retry only what
   * still differs; the second pass is per route, each line independent of the others.
   */
  private async retryAfterFailures(failed: number, of: number): Promise<RouteError[]> {
    this.known = undefined
    this.log.info({ failed, of }, 'batch had failures; resyncing once')
    const second = this.tracker.diff(this.desired, await this.io.read(this.families()), this.now(), this.workloads)
    this.monitor.expect(second.ops)
    const retry = await this.io.write(new RouteOpList(second.ops), false)
    return [...retry].map(([i, message]) => ({ op: second.ops[i] as RouteOp, message }))
  }

  private reportErrors(errors: readonly RouteError[]): void {
    this.errors.clear()
    for (const e of errors) this.errors.set(routeKey(e.op.route), e)
    errors.slice(0, 20).forEach((e) => this.log.warn({ dst: e.op.route.dst, op: e.op.op, err: e.message }, 'route not programmed'))
    if (errors.length > 20) this.log.warn({ more: errors.length - 20 }, 'more routes not programmed')
    if (errors.length > 0) this.schedule(this.retryMs)
  }

  /**
   * An apply of many changes (a table arriving), each key with what felix's route there was (null: none):
   * walked, diffed and written a batch at a time, so no more than a batch of operations and rendered routes
   * exists at once, and each batch diffs against the known table the ones before it left. `first`, when
   * given, is a full diff of a fresh read (the routes it kept), written first; the entries are then the
   * desired routes that read lacked. A large one runs with `ip monitor` stopped, as in applyOnce. With no
   * monitor reading (no echo to note), `open` is given a sink: the learned routes' changes nothing else can
   * be in the way of come as operations in columns (an undefined entry once a batch's worth is in), not
   * keys to diff. A failed
   * route sends the whole table through retryAfterFailures.
   */
  private async applyBatches(open: (sink: LearnedSink | undefined) => Iterator<KeyChange | undefined>, size: number, start: KnownTable, t0: number, first?: DiffResult): Promise<ApplyResult> {
    const written = this.desired.asWritten?.() ?? this.desired
    const per = this.streamBatch ?? (this.io.viaSocket ? STREAM_BATCH : STREAM_BATCH_IP)
    // The monitor stops before anything is written (and is no longer reading once this returns).
    const pausing = size >= QUIET_MIN_OPS ? this.monitor.pause() : Promise.resolve(false)
    const learned = !this.monitor.reading ? (this.learnedOps ??= new LearnedOps(this.table, this.protocol, per)) : undefined
    learned?.reset()
    const entries = open(learned !== undefined ? { ops: learned, limit: per, free: (f, a4, a6, len) => start.noOther(f, a4, a6, len) } : undefined)
    // A batch is diffed as soon as it is taken: each entry's desired route holds until the table changes.
    const take = (): KeyChange[] => {
      const m: KeyChange[] = []
      learned?.reset()
      while (m.length + (learned?.length ?? 0) < per) {
        const r = entries.next()
        if (r.done === true) break
        if (r.value !== undefined) m.push(r.value)
      }
      return m
    }
    let readMs: number
    let writeMs = 0
    const conflicts: RouteConflict[] = []
    const counts = { replace: 0, delete: 0 }
    let failed = 0
    let known = start
    let full = first !== undefined
    let quiet: boolean
    try {
      // The first batch is diffed at once, with the fixed routes' changes as of the take.
      let batch: KeyChange[] = first !== undefined ? [] : take()
      let d: DiffResult = first ?? this.tracker.diffKeys(this.desired, start, batch, start.others(), this.now(), this.workloads)
      if (d.graceDeadline !== undefined) this.schedule(Math.max(0, d.graceDeadline - this.now()) + 10)
      else this.schedule(this.resyncMs)
      readMs = performance.now() - t0
      quiet = await pausing
      for (;;) {
        for (const c of d.conflicts) conflicts.push(c)
        const before = known
        known = full ? known.written(written, d.ops, d.conflicts) : known.writtenKeys(written, d.ops, d.conflicts, keysOf(batch))
        full = false
        // Unless the monitor saw drift meanwhile (the known table is then gone until the next read).
        if (this.known === before) this.known = known
        const t1 = performance.now()
        if (d.ops.length > 0) {
          for (const o of d.ops) counts[o.op]++
          if (!quiet) this.monitor.expect(d.ops)
          failed += (await this.io.write(new RouteOpList(d.ops), true)).size
        }
        if (learned !== undefined && learned.length > 0) {
          counts.delete += learned.deletes
          counts.replace += learned.length - learned.deletes
          failed += (await this.io.write(learned, true)).size
        }
        writeMs += performance.now() - t1
        batch = take()
        if (batch.length === 0 && (learned === undefined || learned.length === 0)) break
        const t2 = performance.now()
        d = this.tracker.diffKeys(this.desired, known, batch, undefined, this.now(), this.workloads)
        readMs += performance.now() - t2
      }
    } catch (err) {
      this.known = undefined
      throw err
    } finally {
      entries.return?.(undefined)
      learned?.reset()
      if (await pausing.catch(() => false)) this.monitor.resume()
    }
    this.reportConflicts(conflicts)
    const planned = counts.replace + counts.delete
    const t3 = performance.now()
    const errors = failed > 0 ? await this.retryAfterFailures(failed, planned) : []
    writeMs += performance.now() - t3
    this.reportErrors(errors)
    if (first !== undefined && failed === 0 && errors.length === 0) await this.io.sweepNexthops(this.desired, this.known ?? known)
    this.log.info({ ...counts, errors: errors.length, readMs: Math.round(readMs), writeMs: Math.round(writeMs), batched: true }, 'routes reconciled')
    return { planned, errors, conflicts, readMs, writeMs }
  }

  private reportConflicts(conflicts: readonly RouteConflict[]): void {
    for (const c of conflicts.slice(0, 20)) {
      this.log.warn({ dst: c.desired.dst, holderProtocol: c.holder.protocol }, 'route key held by another protocol; left alone')
    }
  }
}
