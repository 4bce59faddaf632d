// The reconciler's I/O with the kernel's table: reads (an rtnetlink dump, else `ip -N -json`, felix's nexthop
// objects beside), writes (the route socket, else `ip -force -batch -`, failures per operation), and the `ip
// monitor` child the monitor reads. It decides nothing to write (route-reconciler.ts) and judges no line (route-monitor-watch.ts).

import type { Logger } from 'pino'
import { MAIN_TABLE, type KernelRoute, type NextHop } from './kernel-route.js'
import type { KnownTable } from './known-table.js'
import { BatchDealer, type BatchPlan, type BatchWriter } from './batch-dealer.js'
import type { RouteSocket } from './route-socket.js'
import type { DumpFilter } from './rtnl-routes.js'
import { parseBatchErrors, type RouteOp } from './route-diff.js'
import { parseRouteJson } from './route-parse.js'
import { CommandError, type ProcessRunner, type RunResult, type WatchHandle } from './runner.js'
import { NexthopRegistry, parseNexthopJson } from './nexthops.js'
import type { DesiredRoutes } from './desired-routes.js'
import { RouteOpList, type WriteOps } from './learned-ops.js'
import type { Family } from '../net/index.js'

export interface KernelRouteIoOptions {
  readonly runner: ProcessRunner
  readonly netns: string | undefined
  readonly table: number
  readonly protocol: number
  /** Concurrent `ip -batch` writers for large diffs. */
  readonly writers: number
  /** Routes through kernel nexthop objects where the kernel has them. */
  readonly nexthopObjects: boolean
  /** Reads and writes go through this rtnetlink socket, until it fails (never with `netns`). */
  readonly routeSocket: RouteSocket | undefined
  readonly log: Logger
}

/** The objects a write's routes go through, made by the first script of each writer. */
function nexthopPlan(reg: NexthopRegistry, ops: WriteOps): BatchPlan {
  const head: string[] = []
  const ids = new Array<number | undefined>(ops.length)
  // Runs of routes through the same hops (rendering shares hop lists and hop objects) are asked about once.
  let last: readonly NextHop[] | undefined
  let lastHop: NextHop | undefined
  let lastId: number | undefined
  for (let i = 0; i < ops.length; i++) {
    if (ops.isDelete(i)) continue
    const r = ops.route(i)
    const hops = r.nexthops
    if (r.type === 'unicast' && (hops === last || (hops.length === 1 && hops[0] === lastHop))) {
      ids[i] = lastId
      continue
    }
    ids[i] = reg.idFor(r, head)
    if (r.type === 'unicast') {
      last = hops
      lastHop = hops.length === 1 ? hops[0] : undefined
      lastId = ids[i]
    } else [last, lastHop, lastId] = [undefined, undefined, undefined]
  }
  return { head, nhid: (i) => ids[i] }
}

/** Below this many operations a second `ip -batch` process costs more to start than it saves. */
const PARALLEL_MIN_OPS = 2_000
/**
 * Lines one `ip -batch` process runs before a fresh one takes over. ip 6.1 keeps memory for every route
 * line until it exits, and each line gets slower as that grows, so a long script is run by several in turn.
 */
const LINES_PER_PROCESS = 50_000

/** Every operation of `ops` as a RouteOp of its own. */
function routeOps(ops: WriteOps): readonly RouteOp[] {
  if (ops instanceof RouteOpList) return ops.ops
  return Array.from({ length: ops.length }, (_, i) => ops.op(i))
}

export class KernelRouteIo {
  private readonly runner: ProcessRunner
  private readonly netns: string | undefined
  private readonly table: number
  private readonly protocol: number
  private readonly writers: number
  private readonly nexthopObjects: boolean
  private readonly log: Logger
  /** felix's nexthop objects; undefined when the kernel has none (before 5.3) or they are turned off. */
  private registry: NexthopRegistry | undefined
  private probed = false
  /** The probe's answer, for the first read. */
  private probedObjects: RunResult | undefined
  /** The rtnetlink socket reads and writes go through, until it fails. */
  private socket: RouteSocket | undefined

  constructor(opts: KernelRouteIoOptions) {
    if (opts.routeSocket !== undefined && opts.netns !== undefined) throw new Error('routeSocket: a route socket writes to its own namespace only; it cannot be used with netns')
    this.runner = opts.runner
    this.netns = opts.netns
    this.table = opts.table
    this.protocol = opts.protocol
    this.writers = Math.max(1, opts.writers)
    this.nexthopObjects = opts.nexthopObjects
    this.log = opts.log
    this.socket = opts.routeSocket
  }

  /** felix's nexthop objects, once the kernel is known to have them. */
  get nexthops(): NexthopRegistry | undefined {
    return this.registry
  }

  /** Whether reads and writes go through the route socket (it has not failed). */
  get viaSocket(): boolean {
    return this.socket !== undefined
  }

  /** Starts `ip monitor` for `objects` in the table's namespace, each line to `onLine`. */
  watch(objects: readonly string[], onLine: (line: string) => void): WatchHandle {
    return this.runner.watch('ip', ['monitor', ...objects], { ...this.nsOpt(), onLine })
  }

  /** Whether the kernel has nexthop objects (Linux 5.3+), asked once. */
  async probeNexthops(): Promise<void> {
    if (this.probed || !this.nexthopObjects) return
    const probe = await this.runner.run('ip', ['-N', '-json', 'nexthop', 'show'], this.nsOpt())
    this.learnNexthopSupport(probe)
    // The first read takes the objects from here rather than asking again.
    if (probe.exitCode === 0) this.probedObjects = probe
  }

  private learnNexthopSupport(probe: RunResult): void {
    this.probed = true
    if (probe.exitCode === 0) this.registry = new NexthopRegistry(this.protocol)
    else this.log.info({ err: probe.stderr.trim() }, 'the kernel has no nexthop objects; routes name their gateways')
  }

  /**
   * The table's routes of `families`, with felix's nexthop objects read beside them unless `withObjects` is
   * false (the first read also learns whether there are any). `filter` leaves out dumped routes it accounts for
   * (see readTable).
   */
  async read(families: readonly Family[], filter?: DumpFilter, withObjects = true): Promise<KernelRoute[]> {
    // Without objects only once they are known: the first read learns whether there are any.
    const nexthops = this.nexthopObjects && (!this.probed || this.registry !== undefined) && (withObjects || !this.probed)
    const probed = this.probedObjects
    this.probedObjects = undefined
    const [objects, tables] = await Promise.all([probed ?? (nexthops ? this.runner.run('ip', ['-N', '-json', 'nexthop', 'show'], this.nsOpt()) : undefined), this.readTable(families, filter)])
    if (objects !== undefined) {
      if (!this.probed) this.learnNexthopSupport(objects)
      if (this.registry !== undefined) {
        if (objects.exitCode !== 0) throw new CommandError('ip', ['-N', '-json', 'nexthop', 'show'], objects)
        this.registry.load(parseNexthopJson(objects.stdout))
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
  async write(ops: WriteOps, nexthops: boolean): Promise<Map<number, string>> {
    const failures = await this.writeVia(ops, nexthops)
    // A delete that finds no such route leaves the kernel as wanted: it went meanwhile (a device taking its
    // routes along, or a change made while a streaming read ran that the next apply lists again).
    for (const [i, m] of failures) if (ops.isDelete(i) && /ESRCH|No such process/.test(m)) failures.delete(i)
    return failures
  }

  private async writeVia(ops: WriteOps, nexthops: boolean): Promise<Map<number, string>> {
    const socket = this.socket
    if (socket === undefined) return this.writeIp(routeOps(ops), nexthops)
    try {
      return await this.writeNetlink(socket, ops, nexthops)
    } catch (err) {
      // What took effect is unknown: every op counts as failed, so the caller reads the kernel and retries.
      this.log.warn({ err: (err as Error).message }, 'route socket failed; routes go through ip -batch from now on')
      this.socket = undefined
      const message = `route socket failed: ${(err as Error).message}`
      return new Map(Array.from({ length: ops.length }, (_, i) => [i, message]))
    }
  }

  /**
   * The write through the route socket: nexthop objects the write needs are made first by one `ip` (the
   * few `nexthop replace` lines), then every route it can express goes to the kernel in chunks of
   * messages, with no process and no text per route, which takes the kernel the table sooner than `ip -batch`
   * writers do. The rest (several hops without an object, a device the kernel does not know) goes
   * through `ip` naming its hops.
   */
  private async writeNetlink(socket: RouteSocket, ops: WriteOps, nexthops: boolean): Promise<Map<number, string>> {
    const reg = nexthops ? this.registry : undefined
    const plan = reg !== undefined ? nexthopPlan(reg, ops) : undefined
    if (plan !== undefined && plan.head.length > 0) {
      const r = await this.runner.run('ip', ['-force', '-batch', '-'], { input: plan.head.join('\n') + '\n', ...this.nsOpt() })
      for (const [i, m] of parseBatchErrors(r.stderr)) if (plan.head[i] !== undefined) this.forgetNexthop(plan.head[i], m)
    }
    // Devices by index, for the routes that name one and go through no object.
    const devices = new Set<string>()
    let lastHops: readonly NextHop[] | undefined
    for (let i = 0; i < ops.length; i++) {
      if (!ops.isDelete(i) && plan?.nhid?.(i) !== undefined) continue
      const hops = ops.route(i).nexthops
      if (hops === lastHops) continue
      lastHops = hops
      for (const h of hops) if (h.dev !== undefined) devices.add(h.dev)
    }
    const index = devices.size > 0 ? await socket.linkIndexes(devices) : new Map<string, number>()
    const link = (dev: string): number | undefined => index.get(dev)
    const nhid = plan?.nhid
    const { failures, skipped: rest } = await socket.write(ops.length, (i, seq, w) => (ops.isDelete(i) ? w.delete(ops.route(i), seq, link) : w.replace(ops.route(i), nhid?.(i), seq, link)))
    if (rest.length > 0) {
      const failed = await this.writeIp(rest.map((i) => ops.op(i)), false)
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
    const reg = nexthops ? this.registry : undefined
    const dealer = new BatchDealer(ops, reg !== undefined ? { plan: () => nexthopPlan(reg, new RouteOpList(ops)) } : {})
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
    // every one of them again, which at a full table costs as much as the write itself.
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
    this.registry?.forget(id)
  }

  /**
   * After a clean apply from a fresh read: felix's nexthop objects that neither a `desired` route nor a route
   * in the kernel uses go (deleting an object would take its routes with it).
   */
  async sweepNexthops(desired: DesiredRoutes, known: KnownTable): Promise<void> {
    const reg = this.registry
    if (reg === undefined || reg.size === 0) return
    const inUse = new Set<number>()
    for (const r of desired.hopRoutes?.() ?? desired.values()) {
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
}
