// The I/O shell around the delta tracker: only apply() touches the kernel's routes. It reads each family's
// table with an rtnetlink dump over the route socket, or one `ip -N -json route show` without one (and
// felix's nexthop objects beside it), then keeps that table as its own writes change it; it writes a diff
// through the socket or `ip -force -batch -` (two processes for large ones, the nexthop objects first),
// resyncs once on failure and reports per-route errors. A periodic resync and
// `ip monitor` (routes, links, addresses, nexthops; its own echo recognised) keep the kernel in line.

import pino, { type Logger } from 'pino'
import { defaultMetric, DEFAULT_ROUTE_PROTOCOL, hopText, MAIN_TABLE, routeKey, type Family, type KernelRoute, type NextHop } from './kernel-route.js'
import { KnownTable } from './known-table.js'
import { PendingEchoes } from './pending-echoes.js'
import { BatchDealer, type BatchPlan, type BatchWriter } from './batch-dealer.js'
import type { RouteSocket } from './route-socket.js'
import type { DumpedRoute, DumpFilter } from './rtnl-routes.js'
import { parseBatchErrors, RouteDeltaTracker, type DiffResult, type KeyChange, type RouteConflict, type RouteOp } from './route-diff.js'
import { isDeviceLine, monitorDeviceEvent, parseMonitorHopLine, parseMonitorLine, parseRouteJson, type MonitorEvent } from './route-parse.js'
import { CommandError, type ProcessRunner, type RunResult, type WatchHandle } from './runner.js'
import { NexthopRegistry, parseNexthopJson, parseNexthopMonitorLine } from './nexthops.js'
import type { DesiredRoutes } from './desired-routes.js'

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

/** The objects a write's routes go through, made by the first script of each writer. */
function nexthopPlan(reg: NexthopRegistry, ops: readonly RouteOp[]): BatchPlan {
  const head: string[] = []
  const ids = new Array<number | undefined>(ops.length)
  // Runs of routes through the same hop (rendering shares hop objects) are asked about once.
  let last: NextHop | undefined
  let lastId: number | undefined
  for (let i = 0; i < ops.length; i++) {
    const o = ops[i] as RouteOp
    if (o.op !== 'replace') continue
    const hops = o.route.nexthops
    if (hops.length === 1 && hops[0] === last && o.route.type === 'unicast') {
      ids[i] = lastId
      continue
    }
    ids[i] = reg.idFor(o.route, head)
    ;[last, lastId] = hops.length === 1 && o.route.type === 'unicast' ? [hops[0], ids[i]] : [undefined, undefined]
  }
  return { head, nhid: (i) => ids[i] }
}

/** Below this many operations a second `ip -batch` process costs more to start than it saves. */
const PARALLEL_MIN_OPS = 2_000
/**
 * Lines one `ip -batch` process runs before a fresh one takes over. ip 6.1 keeps ~4 KB per route line until
 * it exits, and past ~200k lines each line gets slower (1M routes: one process 15.2 s, ten in turn 6.9 s).
 */
const LINES_PER_PROCESS = 50_000
/** From this many operations a write runs with `ip monitor` stopped. */
const QUIET_MIN_OPS = 2_000
/**
 * Changes per batch of a large incremental apply through the route socket: a batch's operations and routes
 * are a few MB, and each batch waits for the kernel's acknowledgements before the next is diffed, so a
 * smaller batch leaves the kernel idle more often (1,000 took 1.2x the time of 10,000 at 100k for the same
 * peak at 1M). Through `ip` a batch is a process's worth (each batch starts its own `ip -batch` writers).
 */
const STREAM_BATCH = 10_000
const STREAM_BATCH_IP = 25_000

const NOTHING: ApplyResult = { planned: 0, errors: [], conflicts: [], readMs: 0, writeMs: 0 }

function* keysOf(changes: readonly KeyChange[]): Generator<string> {
  for (const c of changes) yield c[0]
}

/**
 * Whether monitor event `ev` (with a multipath route's `hops`, as hopText) shows exactly route `k` under
 * its key, or its absence when `k` is undefined.
 */
function showsRoute(ev: MonitorEvent, hops: readonly string[] | undefined, k: KernelRoute | undefined): boolean {
  if (ev.deleted) return k === undefined
  if (k === undefined || k.protocol !== ev.protocol || k.type !== ev.type) return false
  if (hops !== undefined) {
    const want = k.nexthops.map(hopText).sort()
    return want.length > 1 && want.join(',') === [...hops].sort().join(',')
  }
  if (k.nexthops.length > 1) return false
  const [hop] = k.nexthops
  return hop?.gateway === ev.gateway && (ev.dev === undefined || hop?.dev === ev.dev)
}

export class RouteReconciler {
  private readonly runner: ProcessRunner
  private readonly netns: string | undefined
  private readonly table: number
  private readonly protocol: number
  private readonly vethPrefix: string
  private readonly resyncMs: number
  private readonly retryMs: number
  private readonly writers: number
  private readonly streamMin: number
  private readonly streamBatch: number | undefined
  private readonly log: Logger
  private readonly now: () => number
  private readonly tracker: RouteDeltaTracker
  private desired: DesiredRoutes = new Map<string, KernelRoute>()
  private workloads: ReadonlySet<string> | undefined
  private running: Promise<ApplyResult> | undefined
  private queued: Promise<ApplyResult> | undefined
  private timer: NodeJS.Timeout | undefined
  private monitor: WatchHandle | undefined
  private monitorTimer: NodeJS.Timeout | undefined
  private started = false
  /**
   * The table as felix last knew it: what it read, changed by what it wrote since. An apply driven by a
   * desired-state change diffs against this instead of reading the kernel again; the periodic resync, the
   * monitor and any write failure go back to the kernel. Undefined when unknown.
   */
  private known: KnownTable | undefined
  /** Felix's own writes whose monitor lines have not come yet. */
  private readonly echoes = new PendingEchoes()
  private wantRead = false
  /** felix's nexthop objects; undefined when the kernel has none (before 5.3) or they are turned off. */
  private nexthops: NexthopRegistry | undefined
  private probed = false
  /** The probe's answer, for the first read. */
  private probedObjects: RunResult | undefined
  /** A multipath route's head line from the monitor, waiting for its hop lines. */
  private multipath: { line: string; ev: MonitorEvent; key: string; hops: string[] } | undefined
  /** Errors from the latest apply, by route key. */
  readonly errors = new Map<string, RouteError>()
  /** The rtnetlink socket reads and writes go through, until it fails. */
  private socket: RouteSocket | undefined

  constructor(private readonly opts: RouteReconcilerOptions) {
    this.runner = opts.runner
    this.netns = opts.netns
    this.table = opts.table ?? MAIN_TABLE
    this.protocol = opts.protocol ?? DEFAULT_ROUTE_PROTOCOL
    this.vethPrefix = opts.vethPrefix ?? 'pinto'
    this.resyncMs = opts.resyncIntervalMs ?? 90_000
    this.retryMs = opts.retryMs ?? 5_000
    this.writers = Math.max(1, opts.writers ?? 2)
    this.streamMin = Math.max(1, opts.streamMinChanges ?? QUIET_MIN_OPS)
    this.streamBatch = opts.streamBatch !== undefined ? Math.max(1, opts.streamBatch) : undefined
    this.now = opts.now ?? Date.now
    this.log = (opts.logger ?? pino({ level: 'silent' })).child({ component: 'felix.routes', table: this.table, protocol: this.protocol })
    this.tracker = new RouteDeltaTracker({ protocol: this.protocol, vethPrefix: this.vethPrefix, graceMs: opts.graceMs ?? 10_000 })
    if (opts.routeSocket !== undefined && opts.netns !== undefined) throw new Error('routeSocket: a route socket writes to its own namespace only; it cannot be used with netns')
    this.socket = opts.routeSocket
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

  /** Like apply(), but reads the kernel's table first. */
  resync(): Promise<ApplyResult> {
    this.wantRead = true
    return this.apply()
  }

  /** Starts the monitor and periodic resync, then applies once. */
  async start(): Promise<ApplyResult> {
    this.started = true
    await this.probeNexthops()
    this.startMonitor()
    this.schedule(this.resyncMs)
    return this.resync()
  }

  private startMonitor(): void {
    if (!this.started || this.opts.monitor === false) return
    // Links and addresses too: the kernel drops routes through a device that goes down, or whose address
    // goes, without a route notification.
    const objects = ['route', 'link', 'address', ...(this.nexthops !== undefined ? ['nexthop'] : [])]
    const handle = this.runner.watch('ip', ['monitor', ...objects], { ...(this.netns !== undefined ? { netns: this.netns } : {}), onLine: (l) => this.onMonitorLine(l) })
    this.monitor = handle
    void handle.exited.then((code) => {
      if (this.started && this.monitor === handle) this.log.warn({ code }, 'ip monitor exited; drift is now caught by the periodic resync only')
    })
  }

  /** Stops the monitor for a large write (see applyOnce); true if it was running. */
  private async pauseMonitor(): Promise<boolean> {
    const m = this.monitor
    if (m === undefined) return false
    this.monitor = undefined
    await m.stop()
    return true
  }

  /** Stops watching and resyncing. Routes stay in the kernel: a restarting agent must not cut traffic. */
  async stop(): Promise<void> {
    this.started = false
    clearTimeout(this.timer)
    clearTimeout(this.monitorTimer)
    await this.monitor?.stop()
    await this.running?.catch(() => undefined)
    await this.queued?.catch(() => undefined)
    this.log.info('stopped; routes left in place')
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

  private onMonitorLine(line: string): void {
    if (line.startsWith('\t') || line.startsWith(' ')) {
      // A multipath route's hops follow its head line, one per line.
      const hop = parseMonitorHopLine(line)
      if (hop !== undefined) this.multipath?.hops.push(hopText(hop))
      return
    }
    this.endMultipath()
    const nh = this.nexthops !== undefined ? parseNexthopMonitorLine(line) : undefined
    if (nh !== undefined) {
      const reg = this.nexthops as NexthopRegistry
      if (reg.isEcho(nh) || (!reg.has(nh.id) && !line.includes(` proto ${this.protocol}`))) return
      this.resyncSoon(line)
      return
    }
    if (isDeviceLine(line)) {
      const dev = monitorDeviceEvent(line)
      // A pod's veth coming or going is followed by its own route lines; any other device may have taken routes with it.
      if (dev !== undefined && !dev.startsWith(this.vethPrefix)) this.resyncSoon(line)
      return
    }
    const ev = parseMonitorLine(line)
    if (ev === undefined || ev.table !== this.table) return
    const ours = ev.protocol === this.protocol || (ev.dev?.startsWith(this.vethPrefix) === true && this.workloads !== undefined)
    // A route of another protocol appearing on a key we want is a conflict worth re-checking too.
    const metric = ev.metric ?? defaultMetric(ev.dst.includes(':') ? 6 : 4)
    const key = routeKey({ table: ev.table, dst: ev.dst, tos: 0, metric })
    const wanted = this.desired.has(key)
    if (!ours && !wanted) return
    if (!ev.deleted && ev.type === 'unicast' && ev.gateway === undefined && ev.dev === undefined) {
      // A multipath head: judge it once its hop lines are in (they come in the same read).
      this.multipath = { line, ev, key, hops: [] }
      setImmediate(() => this.endMultipath())
      return
    }
    if (!this.isEcho(ev, key, undefined)) this.resyncSoon(line)
  }

  private endMultipath(): void {
    const m = this.multipath
    if (m === undefined) return
    this.multipath = undefined
    if (!this.isEcho(m.ev, m.key, m.hops)) this.resyncSoon(m.line)
  }

  private resyncSoon(line: string): void {
    // Debounced: a burst (a flush, a device going down) costs one resync, not one per line.
    this.known = undefined
    if (this.monitorTimer !== undefined || !this.started) return
    this.monitorTimer = setTimeout(() => {
      this.monitorTimer = undefined
      this.log.debug({ line }, 'kernel route change seen; resyncing')
      this.resync().catch((err: unknown) => this.log.error({ err }, 'resync after monitor event failed'))
    }, 50)
  }

  /**
   * Whether a monitor event only shows what felix itself wrote (its known table already says exactly so).
   * `hops` are a multipath route's hops (as hopText) from its continuation lines.
   */
  private isEcho(ev: MonitorEvent, key: string, hops: readonly string[] | undefined): boolean {
    // The oldest pending write of the key first: a route written twice in quick succession echoes its
    // first write after the known table already holds the second.
    if (this.echoes.take(key, (r) => showsRoute(ev, hops, r))) return true
    return this.known !== undefined && showsRoute(ev, hops, this.known.get(key))
  }

  private families(): readonly Family[] {
    if (this.opts.ipv6 === true) return [4, 6]
    const known = this.desired.families?.()
    if (known !== undefined) return known
    for (const r of this.desired.values()) if (r.family === 6) return [4, 6]
    return [4]
  }

  /** Whether the kernel has nexthop objects (Linux 5.3+), asked once. */
  private async probeNexthops(): Promise<void> {
    if (this.probed || this.opts.nexthopObjects === false) return
    const probe = await this.runner.run('ip', ['-N', '-json', 'nexthop', 'show'], this.nsOpt())
    this.learnNexthopSupport(probe)
    // The first read takes the objects from here rather than asking again.
    if (probe.exitCode === 0) this.probedObjects = probe
  }

  private learnNexthopSupport(probe: RunResult): void {
    this.probed = true
    if (probe.exitCode === 0) this.nexthops = new NexthopRegistry(this.protocol)
    else this.log.info({ err: probe.stderr.trim() }, 'the kernel has no nexthop objects; routes name their gateways')
  }

  private async read(filter?: DumpFilter): Promise<KernelRoute[]> {
    // The nexthop objects are read beside the routes; the first read also learns whether there are any.
    const nexthops = this.opts.nexthopObjects !== false && (!this.probed || this.nexthops !== undefined)
    const probed = this.probedObjects
    this.probedObjects = undefined
    const [objects, tables] = await Promise.all([probed ?? (nexthops ? this.runner.run('ip', ['-N', '-json', 'nexthop', 'show'], this.nsOpt()) : undefined), this.readTable(this.families(), filter)])
    if (objects !== undefined) {
      if (!this.probed) this.learnNexthopSupport(objects)
      if (this.nexthops !== undefined) {
        if (objects.exitCode !== 0) throw new CommandError('ip', ['-N', '-json', 'nexthop', 'show'], objects)
        this.nexthops.load(parseNexthopJson(objects.stdout))
      }
    }
    return tables
  }

  /**
   * The table's routes: dumped over the route socket while there is one (100k routes: no process, no JSON
   * text), else one `ip -N -json route show` per family. A dump that fails falls back to `ip` for this read;
   * a socket that failed is given up for reads and writes alike. `filter` leaves out the dumped routes it
   * accounts for (only over the socket: `ip` gives every route).
   */
  private async readTable(families: readonly Family[], filter?: DumpFilter): Promise<KernelRoute[]> {
    const socket = this.socket
    if (socket !== undefined) {
      try {
        return await socket.readTable(families, this.table, filter)
      } catch (err) {
        if (socket.error !== undefined) this.socket = undefined
        this.log.warn({ err: (err as Error).message }, 'route dump over the route socket failed; this read goes through ip -json')
      }
    }
    const tables = await Promise.all(
      families.map(async (f) => {
        const args = ['-N', '-json', `-${f}`, 'route', 'show', 'table', String(this.table)]
        const r = await this.runner.run('ip', args, this.nsOpt())
        // A table other than main exists only once a route is in it: until then it is empty, not an error.
        if (r.exitCode !== 0 && this.table !== MAIN_TABLE && /FIB table does not exist/.test(r.stderr)) return []
        if (r.exitCode !== 0) throw new CommandError('ip', args, r)
        return parseRouteJson(r.stdout, f, this.table)
      }),
    )
    return tables.flat()
  }

  private nsOpt(): { netns?: string } {
    return this.netns !== undefined ? { netns: this.netns } : {}
  }

  /**
   * Writes the ops; returns failures by op index, each a route's own, so one bad route never stops the
   * rest. Routes go through nexthop objects unless `nexthops` is false (the per-route retry pass). Through
   * the route socket while there is one, else `ip -batch`.
   */
  private async write(ops: readonly RouteOp[], nexthops: boolean): Promise<Map<number, string>> {
    const failures = await this.writeVia(ops, nexthops)
    // A delete that finds no such route leaves the kernel as wanted: it went meanwhile (a device taking its
    // routes along, or a change made while a streaming read ran that the next apply lists again).
    for (const [i, m] of failures) if ((ops[i] as RouteOp).op === 'delete' && /ESRCH|No such process/.test(m)) failures.delete(i)
    return failures
  }

  private async writeVia(ops: readonly RouteOp[], nexthops: boolean): Promise<Map<number, string>> {
    const socket = this.socket
    if (socket === undefined) return this.writeIp(ops, nexthops)
    try {
      return await this.writeNetlink(socket, ops, nexthops)
    } catch (err) {
      // What took effect is unknown: every op counts as failed, so the caller reads the kernel and retries.
      this.log.warn({ err: (err as Error).message }, 'route socket failed; routes go through ip -batch from now on')
      this.socket = undefined
      return new Map(ops.map((_, i) => [i, `route socket failed: ${(err as Error).message}`]))
    }
  }

  /**
   * The write through the route socket: nexthop objects the write needs are made first by one `ip` (the
   * few `nexthop replace` lines), then every route it can express goes to the kernel in chunks of
   * messages, with no process and no text per route (100k routes: ~0.18 s, where two `ip -batch` writers
   * need ~0.35 s). The rest (several hops without an object, a device the kernel does not know) goes
   * through `ip` naming its hops.
   */
  private async writeNetlink(socket: RouteSocket, ops: readonly RouteOp[], nexthops: boolean): Promise<Map<number, string>> {
    const reg = nexthops ? this.nexthops : undefined
    const plan = reg !== undefined ? nexthopPlan(reg, ops) : undefined
    if (plan !== undefined && plan.head.length > 0) {
      const r = await this.runner.run('ip', ['-force', '-batch', '-'], { input: plan.head.join('\n') + '\n', ...this.nsOpt() })
      for (const [i, m] of parseBatchErrors(r.stderr)) if (plan.head[i] !== undefined) this.forgetNexthop(plan.head[i] as string, m)
    }
    // Devices by index, for the routes that name one and go through no object.
    const devices = new Set<string>()
    for (let i = 0; i < ops.length; i++) {
      const o = ops[i] as RouteOp
      if (o.op === 'replace' && plan?.nhid?.(i) !== undefined) continue
      for (const h of o.route.nexthops) if (h.dev !== undefined) devices.add(h.dev)
    }
    const index = devices.size > 0 ? await socket.linkIndexes(devices) : new Map<string, number>()
    const link = (dev: string): number | undefined => index.get(dev)
    const nhid = plan?.nhid
    const { failures, skipped: rest } = await socket.write(ops.length, (i, seq, w) => {
      const o = ops[i] as RouteOp
      return o.op === 'replace' ? w.replace(o.route, nhid?.(i), seq, link) : w.delete(o.route, seq, link)
    })
    if (rest.length > 0) {
      const failed = await this.writeIp(rest.map((i) => ops[i] as RouteOp), false)
      for (const [k, m] of failed) failures.set(rest[k] as number, m)
    }
    return failures
  }

  /**
   * The write through `ip -force -batch`, so one bad line cannot stop the rest. The first script of every
   * writer makes the write's missing objects (`nexthop replace` is idempotent, so no writer waits for
   * another). Large diffs go to a few concurrent `ip -batch` processes, dealt a chunk at a time as each
   * reads: ip's per-line round trip is the cost, and two writers nearly halve the time.
   */
  private async writeIp(ops: readonly RouteOp[], nexthops: boolean): Promise<Map<number, string>> {
    const reg = nexthops ? this.nexthops : undefined
    const dealer = new BatchDealer(ops, reg !== undefined ? { plan: () => nexthopPlan(reg, ops) } : {})
    const failures = new Map<number, string>()
    const run = async (w: BatchWriter): Promise<void> => {
      const r = await this.runner.run('ip', ['-force', '-batch', '-'], { input: w.script(), ...this.nsOpt() })
      const lines = parseBatchErrors(r.stderr)
      for (const [i, m] of lines) {
        const at = w.line(i)
        if (at === undefined) continue
        if ('head' in at) this.forgetNexthop(dealer.plan().head[at.head] as string, m)
        else failures.set(at.op, m)
      }
      // ip itself failed (not a line): count each of its ops as failed so the resync pass re-checks them.
      if (r.exitCode !== 0 && lines.size === 0) for (const i of w.taken()) failures.set(i, r.stderr.trim() || `ip exited ${r.exitCode}`)
    }
    // Each writer's ip gives way to a fresh one after LINES_PER_PROCESS lines, started as soon as the old
    // one's script is all written, so the two overlap. The fresh one skips the head: the old one ran it long
    // before, and a second `nexthop replace` of an object that many routes use makes the kernel announce
    // every one of them again (1M routes over two writers: 5.5 s with the head repeated, 3.0 s without).
    const slot = async (): Promise<void> => {
      const runs: Promise<void>[] = []
      for (;;) {
        const w = dealer.writer(LINES_PER_PROCESS, runs.length === 0)
        const running = run(w)
        runs.push(running)
        await Promise.race([w.ended, running])
        if (!w.full) break
      }
      await Promise.all(runs)
    }
    await Promise.all(Array.from({ length: ops.length >= PARALLEL_MIN_OPS ? this.writers : 1 }, slot))
    for (let i = dealer.dealt; i < ops.length; i++) failures.set(i, 'not written: every ip -batch writer ended early')
    return failures
  }

  private forgetNexthop(line: string, message: string): void {
    const id = Number(/ id (\d+) /.exec(line)?.[1])
    this.log.debug({ id, err: message }, 'nexthop object not made')
    this.nexthops?.forget(id)
  }

  /**
   * After a clean apply from a fresh read: felix's nexthop objects that neither a desired route nor a route
   * in the kernel uses go (deleting an object would take its routes with it).
   */
  private async sweepNexthops(known: KnownTable): Promise<void> {
    const reg = this.nexthops
    if (reg === undefined || reg.size === 0) return
    const inUse = new Set<number>()
    for (const r of this.desired.hopRoutes?.() ?? this.desired.values()) {
      const id = reg.lookup(r)
      if (id !== undefined) inUse.add(id)
    }
    // felix's own routes in the known table are the desired ones (no object named); others' may name one.
    for (const [, r] of known.others()) if (r.nhid !== undefined) inUse.add(r.nhid)
    const lines = reg.sweep(inUse)
    if (lines.length === 0) return
    const r = await this.runner.run('ip', ['-force', '-batch', '-'], { input: lines.join('\n') + '\n', ...this.nsOpt() })
    if (r.exitCode !== 0) this.log.debug({ err: r.stderr.trim() }, 'removing unused nexthop objects failed; the next resync retries')
  }

  private async applyOnce(): Promise<ApplyResult> {
    const t0 = performance.now()
    const read = this.wantRead || this.known === undefined
    this.wantRead = false
    // A read over the route socket streams: each dumped route of felix's that is exactly as desired is
    // marked in the desired table and made no object; only the rest is kept and diffed.
    const d = this.desired
    const streamed = read && this.socket !== undefined && d.matchDumped !== undefined && d.unmatched !== undefined && d.clearMatched !== undefined
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
        this.known = KnownTable.read(await this.read(streamed ? filter : undefined), this.protocol)
      } catch (err) {
        if (streamed) d.clearMatched!()
        throw err
      }
    }
    const known = this.known as KnownTable
    // Taken at every apply: a full diff covers what changed as well.
    const list = streamed ? undefined : d.takeChanges?.()
    if (!read && list !== undefined && list.size >= this.streamMin) return this.applyBatches(list.entries(), list.size, known, t0)
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
        return await this.applyBatches(missing(), Math.max(kept.ops.length, d.size - matched), known, t0, kept)
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
      if (read) await this.sweepNexthops(this.known as KnownTable)
      return { ...NOTHING, conflicts: first.conflicts, readMs }
    }
    const t1 = performance.now()
    // Set before any of the write's echo can be read from the monitor; a failure sends felix back to the kernel.
    this.known = after(first.ops)
    // A large write runs with the monitor stopped: `ip monitor` printing every route felix writes, and
    // felix reading each line, took the CPU its writers need (100k routes: 0.38 s without a monitor, 0.65 s
    // with). What others changed meanwhile waits for the periodic resync.
    const quiet = first.ops.length >= QUIET_MIN_OPS && (await this.pauseMonitor())
    if (!quiet) this.echoes.note(first.ops)
    const failures = await this.write(first.ops, true)
      .catch((err: unknown) => {
        this.known = undefined
        throw err
      })
      .finally(() => {
        if (quiet) this.startMonitor()
      })
    const errors = failures.size > 0 ? await this.retryAfterFailures(failures.size, first.ops.length) : []
    const writeMs = performance.now() - t1
    this.reportErrors(errors)
    if (errors.length === 0 && read && failures.size === 0) await this.sweepNexthops(this.known ?? known)
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
    const second = this.tracker.diff(this.desired, await this.read(), this.now(), this.workloads)
    this.echoes.note(second.ops)
    const retry = await this.write(second.ops, false)
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
   * desired routes that read lacked. A large one runs with `ip monitor` stopped, as in applyOnce. A failed
   * route sends the whole table through retryAfterFailures.
   */
  private async applyBatches(entries: Iterator<KeyChange>, size: number, start: KnownTable, t0: number, first?: DiffResult): Promise<ApplyResult> {
    const written = this.desired.asWritten?.() ?? this.desired
    const per = this.streamBatch ?? (this.socket !== undefined ? STREAM_BATCH : STREAM_BATCH_IP)
    // A batch is diffed as soon as it is taken: each entry's desired route holds until the table changes.
    const take = (): KeyChange[] => {
      const m: KeyChange[] = []
      while (m.length < per) {
        const r = entries.next()
        if (r.done === true) break
        m.push(r.value)
      }
      return m
    }
    // The first batch is diffed at once, with the fixed routes' changes as of the take.
    let batch: KeyChange[] = first !== undefined ? [] : take()
    let d: DiffResult = first ?? this.tracker.diffKeys(this.desired, start, batch, start.others(), this.now(), this.workloads)
    if (d.graceDeadline !== undefined) this.schedule(Math.max(0, d.graceDeadline - this.now()) + 10)
    else this.schedule(this.resyncMs)
    let readMs = performance.now() - t0
    let writeMs = 0
    const conflicts: RouteConflict[] = []
    const counts = { replace: 0, delete: 0 }
    let failed = 0
    let known = start
    const quiet = size >= QUIET_MIN_OPS && (await this.pauseMonitor())
    let full = first !== undefined
    try {
      for (;;) {
        for (const c of d.conflicts) conflicts.push(c)
        const before = known
        known = full ? known.written(written, d.ops, d.conflicts) : known.writtenKeys(written, d.ops, d.conflicts, keysOf(batch))
        full = false
        // Unless the monitor saw drift meanwhile (the known table is then gone until the next read).
        if (this.known === before) this.known = known
        if (d.ops.length > 0) {
          for (const o of d.ops) counts[o.op]++
          if (!quiet) this.echoes.note(d.ops)
          const t1 = performance.now()
          failed += (await this.write(d.ops, true)).size
          writeMs += performance.now() - t1
        }
        batch = take()
        if (batch.length === 0) break
        const t2 = performance.now()
        d = this.tracker.diffKeys(this.desired, known, batch, undefined, this.now(), this.workloads)
        readMs += performance.now() - t2
      }
    } catch (err) {
      this.known = undefined
      throw err
    } finally {
      entries.return?.(undefined)
      if (quiet) this.startMonitor()
    }
    this.reportConflicts(conflicts)
    const planned = counts.replace + counts.delete
    const t3 = performance.now()
    const errors = failed > 0 ? await this.retryAfterFailures(failed, planned) : []
    writeMs += performance.now() - t3
    this.reportErrors(errors)
    if (first !== undefined && failed === 0 && errors.length === 0) await this.sweepNexthops(this.known ?? known)
    this.log.info({ ...counts, errors: errors.length, readMs: Math.round(readMs), writeMs: Math.round(writeMs), batched: true }, 'routes reconciled')
    return { planned, errors, conflicts, readMs, writeMs }
  }

  private reportConflicts(conflicts: readonly RouteConflict[]): void {
    for (const c of conflicts.slice(0, 20)) {
      this.log.warn({ dst: c.desired.dst, holderProtocol: c.holder.protocol }, 'route key held by another protocol; left alone')
    }
  }
}
