// pinto-fanout at cluster scale: N Nodes (as kubelets register them) and M allocations in a real kube-apiserver,
// one real pinto-fanout in front of it, and A agents' event streams at the fan-out (two each, as pinto-node opens
// with PINTO_FANOUT_*). With the kubelets' Node status reports going on at their default rate, it prints what the
// apiserver sends and spends, what the fan-out receives, drops and sends, and how long a real Node change takes to
// reach every agent. The anchor, in the same run against the same apiserver: D agents watching the Nodes at the
// apiserver themselves, as they do without a fan-out; their per-agent figures are measured, and the same times A
// is printed as an extrapolation, labelled so.
// Run: npx tsc -p . && node dist/bench/fanout.js [--nodes 5000] [--allocations 150000] [--agents 5000] [--direct 100]
//      [--kubelet-period 300] [--window 60] [--changes 20] [--lists 20] [--workers 4]
import { type ChildProcess, fork, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { FANOUT_ROOTS } from '../agent/fanout/roots.js'
import { AFFINITIES_PREFIX } from '../ipam/records.js'
import { kubernetesBin } from '../test/harness/kubernetes-bin.js'
import { numberArg } from './args.js'
import { bytes, deltaBy, parseMetrics, scrape, type Scrape, total } from './ipam-scale-api-figures.js'
import { AGENTS_USER, preloadApiserver, startBenchApiserver } from './ipam-scale-kube.js'
import { KubeletReports } from './ipam-scale-node.js'
import { cpuMsOf } from './proc-cpu.js'
import { nodeName, scaleRecords } from './ipam-scale-data.js'
import { load, pct } from './ipam-scale-agents.js'
import type { FollowersArgs, FollowersReport } from './fanout-followers.js'

const NODES = numberArg('--nodes', 5000)
const ALLOCATIONS = numberArg('--allocations', 150000)
const AGENTS = numberArg('--agents', 5000)
const DIRECT = numberArg('--direct', 100)
const PERIOD = numberArg('--kubelet-period', 300)
const WINDOW = numberArg('--window', 60)
const CHANGES = numberArg('--changes', 20)
const LISTS = numberArg('--lists', 20)
const WORKERS = Math.max(1, numberArg('--workers', 4))
const FANOUT_BIN = fileURLToPath(new URL('../../bin/pinto-fanout.js', import.meta.url))
const FOLLOWERS = fileURLToPath(new URL('./fanout-followers.js', import.meta.url))

const teardowns: (() => unknown)[] = []
const teardown = { teardown: (fn: () => unknown) => void teardowns.push(fn) }
async function cleanUp(): Promise<void> {
  for (const fn of teardowns.splice(0).reverse()) await Promise.resolve(fn()).catch(() => undefined)
}
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))
const core = (cpuMs: number, seconds: number): string => `${((cpuMs / (seconds * 1000)) * 100).toFixed(1)} % of a core`

interface Fanout {
  readonly child: ChildProcess
  readonly port: number
  readonly startSeconds: number
  metrics(): Promise<Scrape>
}

async function startFanout(kubeconfig: string): Promise<Fanout> {
  const t0 = performance.now()
  const child = spawn(process.execPath, [FANOUT_BIN], { env: { PATH: process.env.PATH ?? '', PINTO_DATASTORE: 'kubernetes', KUBECONFIG: kubeconfig, PINTO_FANOUT_LISTEN: '127.0.0.1:0', PINTO_LOG_LEVEL: 'info' }, stdio: ['ignore', 'pipe', 'inherit'] })
  teardown.teardown(() => child.kill('SIGKILL'))
  let out = ''
  child.stdout?.on('data', (c: Buffer) => (out += c.toString()))
  const port = await new Promise<number>((resolve, reject) => {
    const poll = setInterval(() => {
      const m = /"port":(\d+)/.exec(out)
      if (m !== null) {
        clearInterval(poll)
        resolve(Number(m[1]))
      }
    }, 50)
    child.once('exit', (code) => reject(new Error(`pinto-fanout exited ${code}: ${out.slice(-1000)}`)))
  })
  return { child, port, startSeconds: (performance.now() - t0) / 1000, metrics: async () => parseMetrics(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()) }
}

async function listing(port: number, prefix: string): Promise<{ epoch: string; seq: number; bytes: number; items: number }> {
  const text = await (await fetch(`http://127.0.0.1:${port}/v1/list?prefix=${encodeURIComponent(prefix)}`)).text()
  const l = JSON.parse(text) as { epoch: string; seq: number; items: unknown[] }
  return { epoch: l.epoch, seq: l.seq, bytes: text.length, items: l.items.length }
}

/** Starts the followers over WORKERS processes; resolves once each says it has opened its streams. */
async function startFollowers(args: Omit<FollowersArgs, 'count'>, count: number): Promise<ChildProcess[]> {
  const workers: ChildProcess[] = []
  const started: Promise<void>[] = []
  for (let w = 0; w < WORKERS; w++) {
    const n = Math.floor(count / WORKERS) + (w < count % WORKERS ? 1 : 0)
    if (n === 0) continue
    const child = fork(FOLLOWERS, [JSON.stringify({ ...args, count: n })], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] })
    teardown.teardown(() => child.kill('SIGKILL'))
    workers.push(child)
    started.push(new Promise((resolve, reject) => {
      child.on('message', (m) => (m as { started?: boolean }).started === true && resolve())
      child.once('exit', (code) => reject(new Error(`a followers worker exited ${code}`)))
    }))
  }
  await Promise.all(started)
  return workers
}

async function reports(workers: readonly ChildProcess[]): Promise<FollowersReport> {
  const all = await Promise.all(workers.map((w) => new Promise<FollowersReport>((resolve) => {
    const on = (m: unknown): void => {
      if ((m as FollowersReport).seen === undefined) return
      w.off('message', on)
      resolve(m as FollowersReport)
    }
    w.on('message', on)
    w.send('report')
  })))
  const seen: Record<string, number[]> = {}
  for (const r of all) for (const [k, v] of Object.entries(r.seen)) (seen[k] ??= []).push(...v)
  return { open: all.reduce((s, r) => s + r.open, 0), events: all.reduce((s, r) => s + r.events, 0), bytes: all.reduce((s, r) => s + r.bytes, 0), failures: all.reduce((s, r) => s + r.failures, 0), seen }
}

interface Sample {
  readonly at: number
  readonly api: Scrape
  readonly apiCpu: number
  readonly fanoutCpu: number
  readonly fanout: Scrape | undefined
  readonly followers: FollowersReport
}

async function sample(b: Awaited<ReturnType<typeof startBenchApiserver>>, fanout: Fanout | undefined, workers: readonly ChildProcess[]): Promise<Sample> {
  return {
    at: performance.now(), api: await scrape(b.admin), apiCpu: cpuMsOf(b.api.pid),
    fanoutCpu: fanout?.child.pid !== undefined ? cpuMsOf(fanout.child.pid) : 0, fanout: fanout !== undefined ? await fanout.metrics() : undefined, followers: await reports(workers),
  }
}

interface WindowFigures {
  readonly seconds: number
  readonly reports: number
  readonly nodeEvents: number
  readonly nodeEventBytes: number
  readonly apiCpuMs: number
  readonly fanoutCpuMs: number
  readonly followerEvents: number
  readonly followerBytes: number
  readonly fanoutReceived: number
  readonly fanoutSent: number
}

function describe(label: string, a: Sample, z: Sample, reportsWritten: number): WindowFigures {
  const seconds = (z.at - a.at) / 1000
  const f = (s: Scrape | undefined, name: string): number => (s === undefined ? 0 : total(s, name))
  const w: WindowFigures = {
    seconds, reports: reportsWritten,
    nodeEvents: deltaBy(z.api, a.api, 'apiserver_watch_events_total', 'resource').get('nodes') ?? 0,
    nodeEventBytes: deltaBy(z.api, a.api, 'apiserver_watch_events_sizes_sum', 'resource').get('nodes') ?? 0,
    apiCpuMs: z.apiCpu - a.apiCpu, fanoutCpuMs: z.fanoutCpu - a.fanoutCpu,
    followerEvents: z.followers.events - a.followers.events, followerBytes: z.followers.bytes - a.followers.bytes,
    fanoutReceived: f(z.fanout, 'pinto_fanout_events_received_total') - f(a.fanout, 'pinto_fanout_events_received_total'),
    fanoutSent: f(z.fanout, 'pinto_fanout_events_sent_total') - f(a.fanout, 'pinto_fanout_events_sent_total'),
  }
  console.log(`  ${label}, ${seconds.toFixed(0)} s, ${reportsWritten} Node status reports (${(reportsWritten / seconds).toFixed(1)}/s); load ${load()}`)
  console.log(`    apiserver: ${w.nodeEvents} Node watch events sent (${(w.nodeEvents / seconds).toFixed(0)}/s, ${bytes(w.nodeEventBytes)}), ${core(w.apiCpuMs, seconds)}`)
  if (z.fanout !== undefined) console.log(`    pinto-fanout: received ${w.fanoutReceived} events, sent ${w.fanoutSent} to agents; ${core(w.fanoutCpuMs, seconds)}`)
  console.log(`    agents' streams: ${w.followerEvents} events, ${bytes(w.followerBytes)} in all (${(w.followerEvents / seconds).toFixed(1)}/s)`)
  return w
}

/** Puts label bench-change=N on node N, one a second; returns each write's time. */
async function changes(b: Awaited<ReturnType<typeof startBenchApiserver>>, from: number, count: number): Promise<Map<string, number>> {
  const written = new Map<string, number>()
  for (let i = from; i < from + count; i++) {
    const t0 = Date.now()
    const r = await b.admin.request('PATCH', `/api/v1/nodes/${nodeName(i % NODES)}`, undefined, { metadata: { labels: { 'bench-change': String(i) } } }, 'application/merge-patch+json')
    if (r.status !== 200) throw new Error(`label of ${nodeName(i)}: ${r.status} ${r.text.slice(0, 200)}`)
    written.set(String(i), t0)
    await sleep(1000)
  }
  return written
}

/** Waits until every follower has seen every change (or 60 s), and prints the delivery times. */
async function delivery(label: string, workers: readonly ChildProcess[], written: Map<string, number>, followers: number): Promise<{ p50: number; p99: number; max: number; missing: number }> {
  const until = Date.now() + 60_000
  let r = await reports(workers)
  while (Date.now() < until && [...written.keys()].some((k) => (r.seen[k]?.length ?? 0) < followers)) {
    await sleep(500)
    r = await reports(workers)
  }
  const lags: number[] = []
  let missing = 0
  for (const [k, t0] of written) {
    const seen = r.seen[k] ?? []
    missing += followers - seen.length
    for (const at of seen) lags.push(at - t0)
  }
  lags.sort((a, b) => a - b)
  const out = { p50: pct(lags, 50), p99: pct(lags, 99), max: lags.at(-1) ?? NaN, missing }
  console.log(`  ${label}: ${written.size} Node label changes, each to ${followers} agents: from the write to an agent p50 ${out.p50} ms, p99 ${out.p99} ms, max ${out.max} ms; ${missing} deliveries missing`)
  return out
}

async function main(): Promise<void> {
  console.log(`fanout: ${NODES} Nodes, ${ALLOCATIONS} allocations; ${AGENTS} agents through pinto-fanout, ${DIRECT} watching the apiserver directly; kubelets report every ${PERIOD} s; load ${load()}`)
  await kubernetesBin(['etcd', 'kube-apiserver', 'kubectl'])
  const b = await startBenchApiserver(teardown)
  const t0 = performance.now()
  const preload = await preloadApiserver(b.api, scaleRecords(NODES, ALLOCATIONS), Number.MAX_SAFE_INTEGER)
  console.log(`  preload: ${[...preload.counts].map(([p, n]) => `${n} ${p.split('/').at(-1)}`).join(', ')} in ${((performance.now() - t0) / 1000).toFixed(1)} s`)

  const fanout = await startFanout(b.kubeconfigs[AGENTS_USER])
  console.log(`  pinto-fanout: listed and serving in ${fanout.startSeconds.toFixed(1)} s (RSS ${rss(fanout.child.pid)} MB)`)
  const [resources, affinities] = await Promise.all([listing(fanout.port, FANOUT_ROOTS[0] as string), listing(fanout.port, AFFINITIES_PREFIX)])
  console.log(`  an agent's start from the fan-out: the resources (${resources.items} records, ${bytes(resources.bytes)}) and the affinities (${affinities.items}, ${bytes(affinities.bytes)})`)
  {
    const c0 = cpuMsOf(fanout.child.pid as number)
    const l0 = performance.now()
    await Promise.all(Array.from({ length: LISTS }, () => listing(fanout.port, FANOUT_ROOTS[0] as string)))
    const ms = performance.now() - l0
    const cpu = cpuMsOf(fanout.child.pid as number) - c0
    console.log(`  ${LISTS} agents listing the resources at once: ${ms.toFixed(0)} ms, ${(cpu / LISTS).toFixed(1)} ms of the fan-out's CPU each -> ${((cpu / LISTS) * AGENTS / 1000).toFixed(0)} s of CPU for ${AGENTS} agents starting at once (from this measure)`)
  }

  const c0 = performance.now()
  const followers = await startFollowers({ mode: 'fanout', address: `127.0.0.1:${fanout.port}`, streams: [{ prefix: FANOUT_ROOTS[0] as string, epoch: resources.epoch, seq: resources.seq }, { prefix: AFFINITIES_PREFIX, epoch: affinities.epoch, seq: affinities.seq }] }, AGENTS)
  const opened = total(await fanout.metrics(), 'pinto_fanout_followers')
  console.log(`  ${AGENTS} agents' streams open at the fan-out: ${opened} in ${((performance.now() - c0) / 1000).toFixed(1)} s (RSS ${rss(fanout.child.pid)} MB)`)

  const quiet0 = await sample(b, fanout, followers)
  await sleep(Math.min(WINDOW, 20) * 1000)
  const quiet = describe('through the fan-out, no Node changing', quiet0, await sample(b, fanout, followers), 0)
  const kubelets = new KubeletReports(b.admin, NODES, PERIOD)
  const r0 = await sample(b, fanout, followers)
  const w0 = kubelets.written
  kubelets.start()
  await sleep(WINDOW * 1000)
  const reporting = describe(`through the fan-out, ${NODES} kubelets reporting`, r0, await sample(b, fanout, followers), kubelets.written - w0)
  const ch0 = await sample(b, fanout, followers)
  const written = await changes(b, 0, CHANGES)
  const viaFanout = await delivery('through the fan-out', followers, written, AGENTS)
  const changing = describe('through the fan-out, reports and a label change a second', ch0, await sample(b, fanout, followers), kubelets.written - w0 - reporting.reports)
  for (const w of followers) w.kill('SIGKILL')

  // The anchor: agents watching the apiserver themselves.
  const nodesList = await b.admin.request('GET', '/api/v1/nodes', { limit: 1 })
  const resourceVersion = ((nodesList.body as { metadata?: { resourceVersion?: string } }).metadata?.resourceVersion) ?? '0'
  const direct = await startFollowers({ mode: 'direct', kubeconfig: b.kubeconfigs[AGENTS_USER], resourceVersion }, DIRECT)
  const d0 = await sample(b, undefined, direct)
  const dw0 = kubelets.written
  await sleep(WINDOW * 1000)
  const directWindow = describe(`${DIRECT} agents watching the apiserver, ${NODES} kubelets reporting`, d0, await sample(b, undefined, direct), kubelets.written - dw0)
  const directChanges = await delivery(`${DIRECT} agents watching the apiserver`, direct, await changes(b, CHANGES, Math.min(CHANGES, 5)), DIRECT)
  kubelets.stop()

  const rate = reporting.reports / reporting.seconds
  const perAgentEvents = directWindow.followerEvents / directWindow.seconds / DIRECT
  const perAgentBytes = directWindow.followerBytes / directWindow.seconds / DIRECT
  const apiCpuPerEvent = Math.max(0, directWindow.apiCpuMs - (reporting.apiCpuMs * directWindow.seconds) / reporting.seconds) / Math.max(1, directWindow.nodeEvents - (reporting.nodeEvents * directWindow.seconds) / reporting.seconds)
  console.log(`\nAt ${NODES} Nodes with kubelets reporting every ${PERIOD} s (${rate.toFixed(1)} reports/s), ${AGENTS} agents:`)
  console.log(`  through one pinto-fanout (measured): the apiserver sends ${(reporting.nodeEvents / reporting.seconds).toFixed(1)} Node events/s (${bytes(reporting.nodeEventBytes / reporting.seconds)}/s) at ${core(reporting.apiCpuMs, reporting.seconds)};`)
  console.log(`    the fan-out ${core(reporting.fanoutCpuMs, reporting.seconds)} (quiet: ${core(quiet.fanoutCpuMs, quiet.seconds)}), sends agents ${(reporting.fanoutSent / reporting.seconds).toFixed(2)} events/s in all; a label change reaches all ${AGENTS} agents in p50 ${viaFanout.p50} / p99 ${viaFanout.p99} / max ${viaFanout.max} ms, at ${core(changing.fanoutCpuMs, changing.seconds)} of the fan-out`)
  console.log(`  without it (measured with ${DIRECT} agents, the same times ${AGENTS / DIRECT} EXTRAPOLATED): each agent receives ${perAgentEvents.toFixed(1)} Node events/s (${bytes(perAgentBytes)}/s) -> the apiserver sends ${(perAgentEvents * AGENTS).toFixed(0)} events/s, ${bytes(perAgentBytes * AGENTS)}/s;`)
  console.log(`    the apiserver's CPU per Node event sent: ${apiCpuPerEvent.toFixed(3)} ms -> ${core(apiCpuPerEvent * perAgentEvents * AGENTS * 1000, 1000)} for ${AGENTS} agents; a label change reached the ${DIRECT} agents in p50 ${directChanges.p50} / p99 ${directChanges.p99} ms`)
}

function rss(pid: number | undefined): string {
  if (pid === undefined) return '?'
  const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return (Number(m?.[1] ?? NaN) / 1024).toFixed(0)
}

for (const sig of ['SIGINT', 'SIGTERM'] as const) process.once(sig, () => void cleanUp().finally(() => process.exit(130)))
main().then(cleanUp, async (err: unknown) => {
  console.error(err)
  process.exitCode = 1
  await cleanUp()
})
