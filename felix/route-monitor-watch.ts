// Drift seen as it happens: `ip monitor` (routes, links, addresses, nexthops) read line by line, felix's own
// echo recognised against its pending writes and the known table, anything else a debounced resync. It writes
// nothing to the kernel and decides no route; the known table and the resync are its owner's (route-reconciler.ts).

import type { Logger } from 'pino'
import { defaultMetric, hopText, routeKey, type KernelRoute } from './kernel-route.js'
import type { KnownTable } from './known-table.js'
import { isDeviceLine, monitorDeviceEvent, parseMonitorHopLine, parseMonitorLine, type MonitorEvent } from './route-parse.js'
import type { RouteOp } from './route-diff.js'
import type { WatchHandle } from './runner.js'
import { type NexthopRegistry, parseNexthopMonitorLine } from './nexthops.js'
import { PendingEchoes } from './pending-echoes.js'
import type { KernelRouteIo } from './route-kernel-io.js'
import { familyOfText } from '../net/index.js'

/** What the monitor asks of the reconciler that owns it. */
export interface MonitorOwner {
  /** Whether a route is desired under `key`. */
  wants(key: string): boolean
  /** Whether the pods are known (a route on a pod's veth is then felix's to judge). */
  knowsPods(): boolean
  /** The table as felix knows it; undefined when unknown. */
  known(): KnownTable | undefined
  /** A change felix did not write was seen: its known table no longer holds. */
  drifted(): void
  /**
   * A full read and diff of the table, coalesced with any apply in progress; with `nexthops` false, felix's
   * nexthop objects are not read again (a route line cannot have changed them).
   */
  resync(nexthops: boolean): Promise<unknown>
}

export interface RouteMonitorOptions {
  /** The kernel I/O the monitor's `ip monitor` runs through, and whose nexthop objects it recognises. */
  readonly io: KernelRouteIo
  readonly table: number
  readonly protocol: number
  readonly vethPrefix: string
  /** false: no `ip monitor` runs; drift is caught by the periodic resync only. */
  readonly enabled: boolean
  readonly log: Logger
  readonly owner: MonitorOwner
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

/** How long after a large write the monitor comes back, unless another large write starts meanwhile. */
const RESUME_MS = 100

export class RouteMonitor {
  private readonly io: KernelRouteIo
  private readonly owner: MonitorOwner
  private readonly log: Logger
  /** Between start() and stop(). */
  private active = false
  private monitor: WatchHandle | undefined
  private resyncTimer: NodeJS.Timeout | undefined
  /** Whether the debounced resync reads the nexthop objects too: a nexthop or device line came. */
  private resyncNexthops = false
  private resumeTimer: NodeJS.Timeout | undefined
  /** A multipath route's head line from the monitor, waiting for its hop lines. */
  private multipath: { line: string; ev: MonitorEvent; key: string; hops: string[] } | undefined
  /** Felix's own writes whose monitor lines have not come yet. */
  private readonly echoes = new PendingEchoes()

  constructor(private readonly opts: RouteMonitorOptions) {
    this.io = opts.io
    this.owner = opts.owner
    this.log = opts.log
  }

  /** Whether `ip monitor` is running (a write then notes its echoes). */
  get reading(): boolean {
    return this.monitor !== undefined
  }

  /** Starts `ip monitor` (unless turned off); it is started again after each pause until stop(). */
  start(): void {
    this.active = true
    this.launch()
  }

  /** Stops `ip monitor` and every timer of the monitor's. */
  async stop(): Promise<void> {
    this.active = false
    clearTimeout(this.resyncTimer)
    this.resyncTimer = undefined
    clearTimeout(this.resumeTimer)
    this.resumeTimer = undefined
    const m = this.monitor
    this.monitor = undefined
    await m?.stop()
  }

  /** Notes the echoes a write of `ops` is about to cause (only while the monitor reads). */
  expect(ops: readonly RouteOp[]): void {
    this.echoes.note(ops)
  }

  private launch(): void {
    if (!this.active || !this.opts.enabled) return
    // Links and addresses too: the kernel drops routes through a device that goes down, or whose address
    // goes, without a route notification.
    const objects = ['route', 'link', 'address', ...(this.io.nexthops !== undefined ? ['nexthop'] : [])]
    const handle = this.io.watch(objects, (l) => this.onMonitorLine(l))
    this.monitor = handle
    void handle.exited.then((code) => {
      if (this.active && this.monitor === handle) this.log.warn({ code }, 'ip monitor exited; drift is now caught by the periodic resync only')
    })
  }

  /**
   * Stops the monitor for a large write; true if it was running, or paused for a write just before and
   * not yet back. No line of the monitor is read from the call on, so the write need not wait for `ip
   * monitor` to exit.
   */
  async pause(): Promise<boolean> {
    if (this.resumeTimer !== undefined) {
      clearTimeout(this.resumeTimer)
      this.resumeTimer = undefined
      return true
    }
    const m = this.monitor
    if (m === undefined) return false
    this.monitor = undefined
    m.stop().catch((err: unknown) => this.log.warn({ err }, 'ip monitor did not stop'))
    return true
  }

  /**
   * Starts the monitor again after a large write, once no other has followed for RESUME_MS: a table
   * arrives as several large writes, and each restart of `ip monitor` costs a process's start-up.
   */
  resume(): void {
    if (this.resumeTimer !== undefined || !this.active) return
    this.resumeTimer = setTimeout(() => {
      this.resumeTimer = undefined
      if (this.monitor === undefined) this.launch()
    }, RESUME_MS)
    this.resumeTimer.unref()
  }

  private onMonitorLine(line: string): void {
    if (line.startsWith('\t') || line.startsWith(' ')) {
      // A multipath route's hops follow its head line, one per line.
      const hop = parseMonitorHopLine(line)
      if (hop !== undefined) this.multipath?.hops.push(hopText(hop))
      return
    }
    this.endMultipath()
    const nexthops = this.io.nexthops
    const nh = nexthops !== undefined ? parseNexthopMonitorLine(line) : undefined
    if (nh !== undefined) {
      const reg = nexthops as NexthopRegistry
      if (reg.isEcho(nh) || (!reg.has(nh.id) && !line.includes(` proto ${this.opts.protocol}`))) return
      this.resyncSoon(line, true)
      return
    }
    if (isDeviceLine(line)) {
      const dev = monitorDeviceEvent(line)
      // A pod's veth coming or going is followed by its own route lines; any other device may have taken routes with it.
      if (dev !== undefined && !dev.startsWith(this.opts.vethPrefix)) this.resyncSoon(line, true)
      return
    }
    const ev = parseMonitorLine(line)
    if (ev === undefined || ev.table !== this.opts.table) return
    const ours = ev.protocol === this.opts.protocol || (ev.dev?.startsWith(this.opts.vethPrefix) === true && this.owner.knowsPods())
    // A route of another protocol appearing on a key we want is a conflict worth re-checking too.
    const metric = ev.metric ?? defaultMetric(familyOfText(ev.dst))
    const key = routeKey({ table: ev.table, dst: ev.dst, tos: 0, metric })
    const wanted = this.owner.wants(key)
    if (!ours && !wanted) return
    if (!ev.deleted && ev.type === 'unicast' && ev.gateway === undefined && ev.dev === undefined) {
      // A multipath head: judge it once its hop lines are in (they come in the same read).
      this.multipath = { line, ev, key, hops: [] }
      setImmediate(() => this.endMultipath())
      return
    }
    if (!this.isEcho(ev, key, undefined)) this.resyncSoon(line, false)
  }

  private endMultipath(): void {
    const m = this.multipath
    if (m === undefined) return
    this.multipath = undefined
    if (!this.isEcho(m.ev, m.key, m.hops)) this.resyncSoon(m.line, false)
  }

  private resyncSoon(line: string, nexthops: boolean): void {
    // Debounced: a burst (a flush, a device going down, a pod's routes) costs one resync, not one per line. A
    // route line alone reads the routes only: felix's nexthop objects change only with lines of their own or
    // a device's, and reading them forks `ip` on the agent's thread.
    this.owner.drifted()
    this.resyncNexthops ||= nexthops
    if (this.resyncTimer !== undefined || !this.active) return
    this.resyncTimer = setTimeout(() => {
      this.resyncTimer = undefined
      const withNexthops = this.resyncNexthops
      this.resyncNexthops = false
      this.log.debug({ line }, 'kernel route change seen; resyncing')
      this.owner.resync(withNexthops).catch((err: unknown) => this.log.error({ err }, 'resync after monitor event failed'))
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
    const known = this.owner.known()
    return known !== undefined && showsRoute(ev, hops, known.get(key))
  }
}
