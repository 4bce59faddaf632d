// Drift seen as it happens: `ip monitor` (routes, links, addresses, nexthops) read line by line, felix's own
// echo recognised against its pending writes and known table, anything else a debounced resync. It writes
// nothing to the kernel and decides no route; a resync is the reconciler's (route-reconciler.ts).

import { defaultMetric, hopText, routeKey, type KernelRoute } from './kernel-route.js'
import { isDeviceLine, monitorDeviceEvent, parseMonitorHopLine, parseMonitorLine, type MonitorEvent } from './route-parse.js'
import type { WatchHandle } from './runner.js'
import { type NexthopRegistry, parseNexthopMonitorLine } from './nexthops.js'
import { RouteKernelIo } from './route-kernel-io.js'

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

export abstract class RouteMonitorWatch extends RouteKernelIo {
  protected monitor: WatchHandle | undefined
  protected monitorTimer: NodeJS.Timeout | undefined
  private resumeTimer: NodeJS.Timeout | undefined
  /** A multipath route's head line from the monitor, waiting for its hop lines. */
  private multipath: { line: string; ev: MonitorEvent; key: string; hops: string[] } | undefined

  /** A full read and diff of the table, coalesced with any apply in progress. */
  abstract resync(): Promise<unknown>

  protected startMonitor(): void {
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

  /**
   * Stops the monitor for a large write (see applyOnce); true if it was running, or paused for a write
   * just before and not yet back. No line of the monitor is read from the call on, so the write need not
   * wait for `ip monitor` to exit.
   */
  protected async pauseMonitor(): Promise<boolean> {
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
  protected resumeMonitor(): void {
    if (this.resumeTimer !== undefined || !this.started) return
    this.resumeTimer = setTimeout(() => {
      this.resumeTimer = undefined
      if (this.monitor === undefined) this.startMonitor()
    }, RESUME_MS)
    this.resumeTimer.unref()
  }

  protected stopResume(): void {
    clearTimeout(this.resumeTimer)
    this.resumeTimer = undefined
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
}
