// The agents of bench/ipam-scale.ts: worker processes (ipam-scale-worker.ts), each one node's identity over
// the datastore under test, started one after the other (their start-up reads timed), then let ADD and DEL
// at once. It prints what they measured, with the etcd under the datastore's disk latencies and the servers'
// CPU over the phase, and returns the figures the side-by-side table shows. Bench-only.

import { type ChildProcess, spawn } from 'node:child_process'
import { loadavg } from 'node:os'
import { fileURLToPath } from 'node:url'
import { type DatastoreCounts, commits, roundTrips, writes, zeroCounts } from '../config/datastore-counting.js'
import type { ApiCounts, ScaleWorkerArgs, ScaleWorkerLine } from './ipam-scale-worker.js'
import type { AddTrace } from './ipam-scale-trace.js'
import { nodeName } from './ipam-scale-data.js'
import { cpuMsOf } from './proc-cpu.js'

const WORKER = fileURLToPath(new URL('./ipam-scale-worker.js', import.meta.url))

export const load = (): string => loadavg().map((l) => l.toFixed(1)).join(' ')
export const pct = (sorted: readonly number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN
export const ms = (v: number): string => `${v.toFixed(1)} ms`

interface Worker {
  readonly child: ChildProcess
  readonly lines: AsyncIterator<ScaleWorkerLine>
  readonly exited: Promise<number | null>
}

/** Every child the bench started and has not seen exit: killed if the bench is interrupted. */
export const children = new Set<ChildProcess>()

function startWorker(args: ScaleWorkerArgs): Worker {
  const child = spawn(process.execPath, ['--expose-gc', WORKER, JSON.stringify(args)], { stdio: ['pipe', 'pipe', 'inherit'] })
  children.add(child)
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => { children.delete(child); resolve(code) }))
  async function* lines(): AsyncGenerator<ScaleWorkerLine> {
    let buf = ''
    for await (const chunk of child.stdout as AsyncIterable<Buffer>) {
      buf += chunk.toString()
      for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
        yield JSON.parse(buf.slice(0, i)) as ScaleWorkerLine
        buf = buf.slice(i + 1)
      }
    }
    throw new Error(`worker ${args.node} exited ${await exited} before its report`)
  }
  return { child, lines: lines(), exited }
}

async function next<K extends ScaleWorkerLine['op']>(w: Worker, op: K): Promise<Extract<ScaleWorkerLine, { op: K }>> {
  const r = await w.lines.next()
  if (r.done === true || r.value.op !== op) throw new Error(`expected a ${op} line from a worker, got ${JSON.stringify(r.value)}`)
  return r.value as Extract<ScaleWorkerLine, { op: K }>
}

function perOp(c: DatastoreCounts, n: number): string {
  const f = (v: number): string => (v / n).toFixed(2)
  return `${f(roundTrips(c))} round trips (get ${f(c.get)}, list ${f(c.list)} returning ${f(c.listed)} records, txn ${f(c.txn)} (with ${f(c.txnChecks)} checks), single writes ${f(commits(c) - c.txn)}), ` +
    `${f(writes(c))} keys written (create ${f(c.create)}, update ${f(c.update)}, delete ${f(c.delete)}) in ${f(commits(c))} commits, ${f(c.casFailures)} CAS failures (conflict retries)`
}

/** One of etcd's latency histograms (seconds), cumulative per bucket bound. */
interface Histogram { readonly count: number; readonly sum: number; readonly buckets: ReadonlyMap<number, number> }

/** etcd's own account of its disk (WAL fsyncs, backend commits), from its Prometheus endpoint. */
async function etcdDisk(url: string): Promise<{ fsync: Histogram; commit: Histogram }> {
  const text = await (await fetch(`${url}/metrics`)).text()
  const hist = (name: string): Histogram => {
    const v = (suffix: string): number => Number(new RegExp(`^${name}_${suffix} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN)
    const buckets = new Map<number, number>()
    for (const m of text.matchAll(new RegExp(`^${name}_bucket\\{le="([^"]+)"\\} (\\S+)$`, 'gm'))) buckets.set(m[1] === '+Inf' ? Infinity : Number(m[1]), Number(m[2]))
    return { count: v('count'), sum: v('sum'), buckets }
  }
  return { fsync: hist('etcd_disk_wal_fsync_duration_seconds'), commit: hist('etcd_disk_backend_commit_duration_seconds') }
}

/** The phase's share of a histogram: count, mean, and the bucket bounds holding its p50 and p99 (etcd's buckets double). */
function describeHistogram(after: Histogram, before: Histogram): string {
  const n = after.count - before.count
  if (!(n > 0)) return 'none'
  const bounds = [...after.buckets.keys()].sort((a, b) => a - b)
  const at = (p: number): string => {
    const b = bounds.find((le) => (after.buckets.get(le) ?? 0) - (before.buckets.get(le) ?? 0) >= p * n)
    return b === undefined || b === Infinity ? '> the largest bucket' : `<= ${(b * 1000).toFixed(0)} ms`
  }
  return `${n}, mean ${ms((1000 * (after.sum - before.sum)) / n)}, p50 ${at(0.5)}, p99 ${at(0.99)}`
}

/** Where the slow ADDs' time went: those that claimed a block against those that did not, the first of each agent, the slowest 1 %. */
function describeTail(traces: readonly (AddTrace & { readonly first: boolean })[]): string[] {
  const group = (label: string, g: readonly AddTrace[]): string => {
    if (g.length === 0) return `  ${label}: none`
    const t = [...g].sort((a, b) => a.ms - b.ms)
    const mean = (f: (x: AddTrace) => number): string => (g.reduce((a, x) => a + f(x), 0) / g.length).toFixed(1)
    return `  ${label}: ${g.length}, p50 ${ms(pct(t.map((x) => x.ms), 50))}, p99 ${ms(pct(t.map((x) => x.ms), 99))}; mean ${mean((x) => x.roundTrips)} round trips, ${mean((x) => x.commits)} commits, ` +
      `${mean((x) => x.storeMs)} ms with a datastore call outstanding, ${mean((x) => x.waitMs)} ms before its first call`
  }
  const sorted = [...traces].sort((a, b) => a.ms - b.ms)
  const slowest = sorted.slice(Math.floor(sorted.length * 0.99))
  return [
    group('ADDs that claimed a block inline', traces.filter((x) => x.claims > 0)),
    group('ADDs from a block with room', traces.filter((x) => x.claims === 0)),
    group('first ADD of each agent', traces.filter((x) => x.first)),
    group('the others, neither first nor claiming', traces.filter((x) => !x.first && x.claims === 0)),
    group(`slowest 1 % (${slowest.filter((x) => x.claims > 0).length} of them claimed, ${slowest.filter((x) => x.first).length} first ADDs)`, slowest),
  ]
}

export interface AgentsConfig {
  readonly nodes: number
  readonly agents: number
  readonly adds: number
  /** Pods an agent holds before each ADD is followed by a DEL of its oldest. */
  readonly window: number
  /** ADDs per second each agent starts on a fixed schedule; 0: back to back. */
  readonly rate: number
  readonly ahead: boolean
  readonly profileDir: string | undefined
}

export interface AgentsRun {
  /** The datastore as PINTO_DATASTORE says it, and the kubeconfig of the kubernetes one. */
  readonly store: string
  readonly kubeconfig?: string
  readonly path: ScaleWorkerArgs['path']
  /** Time each agent's start-up reads (the first path of a run). */
  readonly startup: boolean
  /** The etcd under the datastore (its disk metrics), and the servers whose CPU the phase is charged (etcd, the apiserver). */
  readonly etcdUrl: string
  readonly servers: readonly { readonly name: string; readonly pid: number }[]
  /** Called just before the agents are told to go, and just after the last is done. */
  readonly beforePhase?: () => Promise<void>
  readonly afterPhase?: () => Promise<void>
}

export interface AgentsResult {
  readonly startupMs?: { readonly p50: number; readonly max: number }
  readonly add: { readonly p50: number; readonly p99: number; readonly max: number }
  readonly del: { readonly p50: number; readonly p99: number }
  readonly roundTripsPerAdd: number
  readonly commitsPerAdd: number
  readonly adds: number
  readonly dels: number
  readonly errors: number
  readonly wallMs: number
  /** Kubernetes: what each agent sent at start-up (mean), and what all sent over the phase. */
  readonly api?: { readonly startup: ApiCounts; readonly phase: ApiCounts }
}

export async function runAgents(cfg: AgentsConfig, run: AgentsRun): Promise<AgentsResult> {
  const { path, startup } = run
  // One after the other: twenty Node.js processes loading at once on two shared cores miss the store's connect deadline.
  const workers: Worker[] = []
  const starts: Extract<ScaleWorkerLine, { op: 'startup' }>[] = []
  for (let i = 0; i < cfg.agents; i++) {
    const w = startWorker({
      store: run.store, ...(run.kubeconfig !== undefined ? { kubeconfig: run.kubeconfig } : {}),
      node: nodeName(Math.floor((i * cfg.nodes) / cfg.agents)), id: `${path}-a${i}`, adds: cfg.adds, window: cfg.window, num4: 0, num6: 1, path, startup, rate: cfg.rate, ahead: cfg.ahead,
      ...(cfg.profileDir !== undefined && i === 0 ? { profile: `${cfg.profileDir}/ipam-scale-${path}-agent0.cpuprofile` } : {}),
    })
    workers.push(w)
    starts.push(await next(w, 'startup'))
  }
  const startMs = starts.map((s) => s.ms).sort((a, b) => a - b)
  const s0 = starts[0]
  await run.beforePhase?.()
  const d0 = await etcdDisk(run.etcdUrl)
  const cpu0 = run.servers.map((s) => cpuMsOf(s.pid))
  const t0 = performance.now()
  for (const w of workers) w.child.stdin?.end('go\n')
  const done = await Promise.all(workers.map((w) => next(w, 'done')))
  const wall = performance.now() - t0
  const d1 = await etcdDisk(run.etcdUrl)
  const serverCpu = run.servers.map((s, i) => cpuMsOf(s.pid) - (cpu0[i] as number))
  await run.afterPhase?.()
  await Promise.all(workers.map((w) => w.exited))
  const adds = done.flatMap((d) => d.add).sort((a, b) => a - b)
  const dels = done.flatMap((d) => d.del).sort((a, b) => a - b)
  const sum = (pick: (d: (typeof done)[number]) => DatastoreCounts): DatastoreCounts => {
    const out = zeroCounts()
    for (const d of done) for (const k of Object.keys(out) as (keyof DatastoreCounts)[]) out[k] += pick(d)[k]
    return out
  }
  const errors = done.flatMap((d) => d.errors)
  const label = path === 'service' ? "agent IPAM service (IpamService.assign/release, the socket's and CNI channel's path, no socket)" : 'IPAM part (Ipam.autoAssign/releaseByHandle alone)'
  console.log(`\n${label}: ${cfg.agents} agents x ${cfg.adds} ADDs (a DEL of the oldest once ${cfg.window} are held), in ${(wall / 1000).toFixed(1)} s, load ${load()}`)
  if (startup && s0 !== undefined) {
    console.log(`  agent start-up reads (ClusterState list + watch, its affinities), one agent at a time: p50 ${ms(pct(startMs, 50))}, max ${ms(startMs[startMs.length - 1] ?? NaN)}; ${s0.resources} resources, ${s0.blocks} blocks, ${s0.affinities} affinities in ${roundTrips(s0.counts)} round trips returning ${s0.counts.listed} records` +
      (s0.api !== undefined ? `; ${s0.api.requests} requests to the apiserver, ${s0.api.streams} watch streams` : ''))
  }
  const ops = adds.length + dels.length
  const traces = done.flatMap((d) => d.addTraces)
  const agentWall = done.reduce((a, d) => a + d.wallMs, 0) / done.length
  console.log(cfg.rate > 0
    ? `  load offered: ${cfg.rate} ADDs/s per agent on a fixed schedule (${(cfg.rate * cfg.agents).toFixed(0)}/s in all), each ADD past ${cfg.window} held followed by a DEL; achieved ${((1000 * cfg.adds) / agentWall).toFixed(1)} ADDs/s per agent`
    : `  load offered: back to back (closed loop: each agent starts its next ADD when its last ADD and DEL are done, so the offered rate is whatever the system sustains): ${((1000 * cfg.adds) / agentWall).toFixed(1)} ADDs/s per agent, ${((1000 * cfg.adds * cfg.agents) / wall).toFixed(0)}/s in all`)
  if (cfg.profileDir !== undefined) console.log(`  CPU profile of agent 0's ADD/DEL phase: ${cfg.profileDir}/ipam-scale-${path}-agent0.cpuprofile (node dist/bench/cpu-profile-top.js FILE)`)
  const phase = sum((d) => d.phaseCounts)
  console.log(`  whole phase, ADDs and DELs together: ${(roundTrips(phase) / ops).toFixed(2)} round trips per ADD or DEL, ${(phase.txnChecks / adds.length).toFixed(2)} txn checks per ADD`)
  console.log(`  ADD p50 ${ms(pct(adds, 50))}  p99 ${ms(pct(adds, 99))}  max ${ms(adds[adds.length - 1] ?? NaN)}   (target p99 < 100 ms)${errors.length > 0 ? `   ${errors.length} errors, first: ${errors[0]}` : ''}`)
  const addCounts = sum((d) => d.addCounts)
  console.log(`  ADD: ${perOp(addCounts, adds.length)}${cfg.rate > 0 ? ' (counted around each ADD: with ADDs overlapping, the others\' calls too; each ADD\'s own are below)' : ''}`)
  console.log(`  etcd meanwhile: WAL fsyncs ${describeHistogram(d1.fsync, d0.fsync)}; backend commits ${describeHistogram(d1.commit, d0.commit)} (every write waits for a WAL fsync)`)
  if (path === 'service') console.log(`  start-up warm (IpamService.prepare: the node's blocks read and decoded, a claim ahead if due) ${cfg.ahead ? `p50 ${ms(pct(done.map((d) => d.prepareMs).sort((a, b) => a - b), 50))}` : 'off (--ahead off)'}`)
  const delays = done.map((d) => d.loopDelayMs.max).sort((a, b) => a - b)
  console.log(`  the agents' own processes: event loop late by p99 ${ms(pct(done.map((d) => d.loopDelayMs.p99).sort((a, b) => a - b), 50))} (median agent), max ${ms(pct(delays, 50))} (median agent) to ${ms(delays[delays.length - 1] ?? NaN)} (worst); ` +
    `GC pauses ${(done.reduce((a, d) => a + d.gc.count, 0) / done.length).toFixed(0)} per agent, ${ms(done.reduce((a, d) => a + d.gc.totalMs, 0) / done.length)} in all per agent, longest ${ms(Math.max(...done.map((d) => d.gc.maxMs)))}`)
  console.log('  where the ADDs\' time went (per ADD, its own datastore calls):')
  for (const l of describeTail(done.flatMap((d) => d.addTraces.map((x, i) => ({ ...x, first: i === 0 }))))) console.log(l)
  const agentCpu = done.reduce((a, d) => a + d.cpuMs, 0)
  const servers = run.servers.map((s, i) => `${s.name} ${ms((serverCpu[i] as number) / ops)}`).join(', ')
  console.log(`  CPU per ADD or DEL: agent ${ms(agentCpu / ops)}, ${servers} (${((agentCpu + serverCpu.reduce((a, b) => a + b, 0)) / wall).toFixed(2)} cores busy of 2, beside whatever else runs)`)
  console.log(`  DEL p50 ${ms(pct(dels, 50))}  p99 ${ms(pct(dels, 99))}; ${perOp(sum((d) => d.delCounts), dels.length)}`)
  const apiPhase = done.reduce((a, d) => ({ requests: a.requests + (d.api?.requests ?? 0), streams: a.streams + (d.api?.streams ?? 0) }), { requests: 0, streams: 0 })
  const apiStart = starts.reduce((a, s) => ({ requests: a.requests + (s.api?.requests ?? 0), streams: a.streams + (s.api?.streams ?? 0) }), { requests: 0, streams: 0 })
  if (done[0]?.api !== undefined) {
    console.log(`  requests to the apiserver (each agent's own count): ${(apiPhase.requests / ops).toFixed(2)} per ADD or DEL, ${apiPhase.streams} watch streams opened over the phase`)
  }
  return {
    ...(startup ? { startupMs: { p50: pct(startMs, 50), max: startMs[startMs.length - 1] ?? NaN } } : {}),
    add: { p50: pct(adds, 50), p99: pct(adds, 99), max: adds[adds.length - 1] ?? NaN },
    del: { p50: pct(dels, 50), p99: pct(dels, 99) },
    // Each ADD's own calls (exact with ADDs overlapping, where the counts around each call are not).
    roundTripsPerAdd: traces.reduce((a, x) => a + x.roundTrips, 0) / traces.length,
    commitsPerAdd: traces.reduce((a, x) => a + x.commits, 0) / traces.length,
    adds: adds.length, dels: dels.length, errors: errors.length, wallMs: wall,
    ...(done[0]?.api !== undefined ? { api: { startup: { requests: apiStart.requests / starts.length, streams: apiStart.streams / starts.length }, phase: apiPhase } } : {}),
  }
}
