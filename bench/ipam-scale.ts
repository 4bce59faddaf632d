// IPAM at cluster scale on a private etcd: N Node resources and M allocations spread over their blocks, then
// pod ADD/DEL from 20 agent processes at once (each one node's identity). Prints ADD p50/p99, datastore round
// trips and writes per ADD beside Calico's count for the same allocation, CAS failures per ADD, the time of
// `pintoctl ipam check` over the whole store and the agent's start-up reads, with the load average.
// Run: npx tsc -p . && node dist/bench/ipam-scale.js [--nodes 5000] [--allocations 150000] [--agents 20] [--adds 200]
//      [--rate ADDS_PER_S_PER_AGENT] [--path service|ipam] [--ahead on|off] [--cpu-prof DIR] [--json FILE]
// --json FILE also writes the check's time, ADD p50/p99 per path and etcd's own floor there (bench/json-figures).
// Per ADD it keeps what the ADD's own datastore calls were (a block claim, round trips, commits, time in etcd),
// and etcd's WAL fsync and backend commit latencies over each phase, so the tail can be told pinto's or the disk's.
import { type ChildProcess, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { fileURLToPath } from 'node:url'
import { Etcd3 } from 'etcd3'
import { ETCD_BIN, TEST_LIMIT_ARGS, startEtcd } from '../test/harness/etcd.js'
import { type DatastoreCounts, commits, roundTrips, writes, zeroCounts } from '../config/datastore-counting.js'
import { encodeResource, resourceKey } from '../config/resources/index.js'
import type { Resource } from '../config/resources/index.js'
import { type Cidr, formatCidr } from '../net/index.js'
import { blockAutoAssign, hostAffinity, newBlock } from '../ipam/block.js'
import { HandleClaim } from '../ipam/handle-claim.js'
import { blockCandidates, toPool } from '../ipam/pools.js'
import { BLOCKS_PREFIX, affinityKey, affinityRecord, blockKey, handleKey } from '../ipam/records.js'
import type { ScaleWorkerArgs, ScaleWorkerLine } from './ipam-scale-worker.js'
import type { AddTrace } from './ipam-scale-trace.js'
import { numberArg } from './args.js'
import { type Figure, figure, jsonPathArg, writeFigures } from './json-figures.js'

const WORKER = fileURLToPath(new URL('./ipam-scale-worker.js', import.meta.url))
const PINTOCTL = fileURLToPath(new URL('../../bin/pintoctl.js', import.meta.url))
const NODES = numberArg('--nodes', 5000)
const ALLOCATIONS = numberArg('--allocations', 150000)
const AGENTS = numberArg('--agents', 20)
const ADDS = numberArg('--adds', 200)
/** Pods an agent holds before each ADD is followed by a DEL of its oldest: enough that each agent claims a second block. */
const WINDOW = numberArg('--window', 40)
/** ADDs per second each agent starts on a fixed schedule; 0: back to back (each when its last ADD/DEL is done). */
const RATE = numberArg('--rate', 0)
/** Where agent 0 of each path writes a CPU profile of its ADD/DEL phase (--cpu-prof DIR). */
const PROFILE_DIR = process.argv.includes('--cpu-prof') ? process.argv[process.argv.indexOf('--cpu-prof') + 1] : undefined
/** --ahead off: the service without its start-up warm and claims ahead (each block claimed by the ADD that needs it). */
const AHEAD = !(process.argv.includes('--ahead') && process.argv[process.argv.indexOf('--ahead') + 1] === 'off')
const PATHS = (process.argv.includes('--path') ? [process.argv[process.argv.indexOf('--path') + 1]] : ['service', 'ipam']) as ScaleWorkerArgs['path'][]
// 198.18.0.0/15 has 131,072 addresses, fewer than 150,000 pods: the pods are IPv6, in Calico's default /122 blocks.
const POOL = { name: 'bench-v6', cidr: '2001:db8:1::/64', blockSize: 122 }
const TXN_OPS = 128 // etcd's default --max-txn-ops
const JSON_OUT = jsonPathArg()

const nodeName = (i: number): string => `node-${String(i).padStart(5, '0')}`
const load = (): string => loadavg().map((l) => l.toFixed(1)).join(' ')

function nodeResource(i: number): Resource {
  const net = ['192.0.2', '198.51.100', '203.0.113'][i % 3] as string
  return {
    apiVersion: 'projectcalico.org/v3', kind: 'Node',
    metadata: { name: nodeName(i), labels: { 'kubernetes.io/hostname': nodeName(i), rack: `r${i % 40}` } },
    spec: { bgp: { ipv4Address: `${net}.${1 + (Math.floor(i / 3) % 254)}/24` } },
  }
}

/**
 * Writes what pinto's IPAM would have written for `allocations` pods spread evenly over `nodes` nodes: the Node
 * resources, the pool, per node its confirmed affinities and blocks (the CIDRs its claims would pick first), and a
 * handle per pod. Built with ipam/'s own record functions and put in etcd transactions of 128 keys, because
 * 150,000 ADDs through the IPAM (two round trips each) would take most of the ten minutes the bench may run.
 */
async function preload(endpoint: string, nodes: number, allocations: number): Promise<number> {
  const client = new Etcd3({ hosts: `http://${endpoint}` })
  const pool = toPool(POOL)
  const batch: { key: string; value: string }[] = []
  const inFlight = new Set<Promise<unknown>>()
  let keys = 0
  const flush = async (): Promise<void> => {
    const ops = batch.splice(0).map((kv) => ({ request_put: { key: Buffer.from(kv.key), value: Buffer.from(kv.value) } }))
    keys += ops.length
    const p = client.kv.txn({ success: ops })
    inFlight.add(p)
    void p.finally(() => inFlight.delete(p))
    if (inFlight.size >= 8) await Promise.race(inFlight)
  }
  const put = async (key: string, value: string): Promise<void> => {
    batch.push({ key, value })
    if (batch.length >= TXN_OPS) await flush()
  }
  try {
    await put(resourceKey('IPPool', POOL.name), encodeResource({ apiVersion: 'projectcalico.org/v3', kind: 'IPPool', metadata: { name: POOL.name }, spec: { cidr: POOL.cidr, blockSize: POOL.blockSize, nodeSelector: 'all()' } }))
    const claimTime = new Date().toISOString()
    let pod = 0
    for (let n = 0; n < nodes; n++) {
      const node = nodeName(n)
      await put(resourceKey('Node', node), encodeResource(nodeResource(n)))
      const mine = Math.floor(allocations / nodes) + (n < allocations % nodes ? 1 : 0)
      const candidates = blockCandidates(pool, node)
      for (let left = mine; left > 0;) {
        const cidr = candidates.next().value as Cidr
        const block = newBlock(cidr, hostAffinity(node), claimTime, Date.now() * 1000)
        const handles: string[] = []
        while (left > 0 && block.unallocated.length > 0) {
          const handle = `k8s-pod-network.preload-${pod}`
          blockAutoAssign(block, 1, handle, { node, namespace: 'preload', pod: `preload-${pod}` })
          handles.push(handle)
          left--
          pod++
        }
        await put(affinityKey(node, cidr), JSON.stringify(affinityRecord(node, cidr, 'confirmed')))
        await put(blockKey(cidr), JSON.stringify(block))
        for (const h of handles) await put(handleKey(h), HandleClaim.createValue(h, { [formatCidr(cidr)]: 1 }))
      }
    }
    if (batch.length > 0) await flush()
    await Promise.all(inFlight)
    return keys
  } finally {
    client.close()
  }
}

interface Worker {
  readonly child: ChildProcess
  readonly lines: AsyncIterator<ScaleWorkerLine>
  readonly exited: Promise<number | null>
}

const children = new Set<ChildProcess>()

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

const pct = (sorted: readonly number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN
const ms = (v: number): string => `${v.toFixed(1)} ms`

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

/** CPU milliseconds a process has used (utime + stime from /proc). */
function cpuMsOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return ((Number(f[11]) + Number(f[12])) * 1000) / 100 // fields 14 and 15, in clock ticks of 1/100 s
}

/** Starts the agents, lets them read what they read at start, then runs their ADD/DEL cycles at once; returns ADD p50/p99. */
async function runAgents(etcdPid: number, endpoint: string, url: string, path: ScaleWorkerArgs['path'], startup: boolean): Promise<Figure[]> {
  // One after the other: twenty Node.js processes loading at once on two shared cores miss etcd's connect deadline.
  const workers: Worker[] = []
  const starts: Extract<ScaleWorkerLine, { op: 'startup' }>[] = []
  for (let i = 0; i < AGENTS; i++) {
    const w = startWorker({ store: `etcd://${endpoint}`, node: nodeName(Math.floor((i * NODES) / AGENTS)), id: `${path}-a${i}`, adds: ADDS, window: WINDOW, num4: 0, num6: 1, path, startup, rate: RATE, ahead: AHEAD,
      ...(PROFILE_DIR !== undefined && i === 0 ? { profile: `${PROFILE_DIR}/ipam-scale-${path}-agent0.cpuprofile` } : {}) })
    workers.push(w)
    starts.push(await next(w, 'startup'))
  }
  const startMs = starts.map((s) => s.ms).sort((a, b) => a - b)
  const s0 = starts[0]
  const d0 = await etcdDisk(url)
  const etcdCpu0 = cpuMsOf(etcdPid)
  const t0 = performance.now()
  for (const w of workers) w.child.stdin?.end('go\n')
  const done = await Promise.all(workers.map((w) => next(w, 'done')))
  const wall = performance.now() - t0
  const d1 = await etcdDisk(url)
  const etcdCpu = cpuMsOf(etcdPid) - etcdCpu0
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
  console.log(`\n${label}: ${AGENTS} agents x ${ADDS} ADDs (a DEL of the oldest once ${WINDOW} are held), in ${(wall / 1000).toFixed(1)} s, load ${load()}`)
  if (startup && s0 !== undefined) {
    console.log(`  agent start-up reads (ClusterState list + watch, its affinities), one agent at a time: p50 ${ms(pct(startMs, 50))}, max ${ms(startMs[startMs.length - 1] ?? NaN)}; ${s0.resources} resources, ${s0.blocks} blocks, ${s0.affinities} affinities in ${roundTrips(s0.counts)} round trips returning ${s0.counts.listed} records`)
  }
  const ops = adds.length + dels.length
  const agentWall = done.reduce((a, d) => a + d.wallMs, 0) / done.length
  console.log(RATE > 0
    ? `  load offered: ${RATE} ADDs/s per agent on a fixed schedule (${(RATE * AGENTS).toFixed(0)}/s in all), each ADD past ${WINDOW} held followed by a DEL; achieved ${((1000 * ADDS) / agentWall).toFixed(1)} ADDs/s per agent`
    : `  load offered: back to back (closed loop: each agent starts its next ADD when its last ADD and DEL are done, so the offered rate is whatever the system sustains): ${((1000 * ADDS) / agentWall).toFixed(1)} ADDs/s per agent, ${((1000 * ADDS * AGENTS) / wall).toFixed(0)}/s in all`)
  if (PROFILE_DIR !== undefined) console.log(`  CPU profile of agent 0's ADD/DEL phase: ${PROFILE_DIR}/ipam-scale-${path}-agent0.cpuprofile (node dist/bench/cpu-profile-top.js FILE)`)
  const phase = sum((d) => d.phaseCounts)
  console.log(`  whole phase, ADDs and DELs together: ${(roundTrips(phase) / ops).toFixed(2)} round trips per ADD or DEL, ${(phase.txnChecks / adds.length).toFixed(2)} txn checks per ADD`)
  console.log(`  ADD p50 ${ms(pct(adds, 50))}  p99 ${ms(pct(adds, 99))}  max ${ms(adds[adds.length - 1] ?? NaN)}   (target p99 < 100 ms)${errors.length > 0 ? `   ${errors.length} errors, first: ${errors[0]}` : ''}`)
  console.log(`  ADD: ${perOp(sum((d) => d.addCounts), adds.length)}`)
  console.log(`  etcd meanwhile: WAL fsyncs ${describeHistogram(d1.fsync, d0.fsync)}; backend commits ${describeHistogram(d1.commit, d0.commit)} (every write waits for a WAL fsync)`)
  if (path === 'service') console.log(`  start-up warm (IpamService.prepare: the node's blocks read and decoded, a claim ahead if due) ${AHEAD ? `p50 ${ms(pct(done.map((d) => d.prepareMs).sort((a, b) => a - b), 50))}` : 'off (--ahead off)'}`)
  const delays = done.map((d) => d.loopDelayMs.max).sort((a, b) => a - b)
  console.log(`  the agents' own processes: event loop late by p99 ${ms(pct(done.map((d) => d.loopDelayMs.p99).sort((a, b) => a - b), 50))} (median agent), max ${ms(pct(delays, 50))} (median agent) to ${ms(delays[delays.length - 1] ?? NaN)} (worst); ` +
    `GC pauses ${(done.reduce((a, d) => a + d.gc.count, 0) / done.length).toFixed(0)} per agent, ${ms(done.reduce((a, d) => a + d.gc.totalMs, 0) / done.length)} in all per agent, longest ${ms(Math.max(...done.map((d) => d.gc.maxMs)))}`)
  console.log('  where the ADDs\' time went (per ADD, its own datastore calls):')
  for (const l of describeTail(done.flatMap((d) => d.addTraces.map((x, i) => ({ ...x, first: i === 0 }))))) console.log(l)
  console.log(`  CPU per ADD or DEL: agent ${ms(done.reduce((a, d) => a + d.cpuMs, 0) / ops)}, etcd ${ms(etcdCpu / ops)} (${((done.reduce((a, d) => a + d.cpuMs, 0) + etcdCpu) / wall).toFixed(2)} cores busy of 2, beside whatever else runs)`)
  console.log(`  DEL p50 ${ms(pct(dels, 50))}  p99 ${ms(pct(dels, 99))}; ${perOp(sum((d) => d.delCounts), dels.length)}`)
  return [figure(`${path} path: ADD p50`, pct(adds, 50), 'ms'), figure(`${path} path: ADD p99`, pct(adds, 99), 'ms')]
}

/**
 * etcd alone doing an ADD's writes from `clients` clients at once: create a key that is absent (the handle) and
 * compare-and-swap a value the size of a real block (the block), either back to back (Calico's order, two
 * commits) or in one transaction (pinto's, one commit). What any IPAM that writes a handle and a block pays on
 * this etcd at this size; the keys are removed after.
 */
async function etcdFloor(endpoint: string, clients: number, rounds: number, oneTxn: boolean): Promise<number[]> {
  const admin = new Etcd3({ hosts: `http://${endpoint}` })
  const sample = await admin.getAll().prefix(BLOCKS_PREFIX).limit(1).strings()
  const value = Object.values(sample)[0] ?? 'x'.repeat(4096)
  const cs = Array.from({ length: clients }, () => new Etcd3({ hosts: `http://${endpoint}` }))
  const times: number[] = []
  try {
    await Promise.all(cs.map(async (c, ci) => {
      const block = `/pinto-bench-floor/block-${ci}`
      let rev = Number((await c.put(block).value(value).exec()).header.revision)
      for (let i = 0; i < rounds; i++) {
        const t0 = performance.now()
        const handle = `/pinto-bench-floor/handle-${ci}-${i}`
        let r
        if (oneTxn) {
          r = await c.if(handle, 'Create', '==', 0).and(block, 'Mod', '==', rev).then(c.put(handle).value('{}'), c.put(block).value(value)).commit()
        } else {
          await c.if(handle, 'Create', '==', 0).then(c.put(handle).value('{}')).commit()
          r = await c.if(block, 'Mod', '==', rev).then(c.put(block).value(value)).commit()
        }
        if (!r.succeeded) throw new Error(`etcd floor: the block CAS of client ${ci} failed`)
        rev = Number(r.header.revision)
        times.push(performance.now() - t0)
      }
    }))
  } finally {
    await admin.delete().prefix('/pinto-bench-floor/').exec()
    for (const c of [admin, ...cs]) c.close()
  }
  return times.sort((a, b) => a - b)
}

function run(cmd: string, args: readonly string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; out: string; ms: number }> {
  const t0 = performance.now()
  const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] })
  children.add(child)
  let out = ''
  child.stdout.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr.on('data', (d: Buffer) => (out += d.toString()))
  return new Promise((resolve) => child.once('exit', (code) => { children.delete(child); resolve({ code, out, ms: performance.now() - t0 }) }))
}

let stopEtcd: (() => Promise<void>) | undefined

async function main(): Promise<void> {
  // etcd as operators run it: its default quota, snapshot count and WAL retention, every commit fsynced.
  const etcd = await startEtcd(undefined, { defaults: true })
  stopEtcd = () => etcd.stop()
  try {
    console.log(`IPAM at scale on etcd (private etcd ${etcd.endpoint}): ${NODES} nodes, ${ALLOCATIONS} allocations in pool ${POOL.cidr} /${POOL.blockSize} blocks; load ${load()}`)
    console.log(`etcd: ${ETCD_BIN}, one member, its default limits (none of ${TEST_LIMIT_ARGS.filter((a) => a.startsWith('--')).join(', ')}) and durability (every commit fsynced to its WAL; no --unsafe-no-fsync), data in ${etcd.dataDir}`)
    let t0 = performance.now()
    const keys = await preload(etcd.endpoint, NODES, ALLOCATIONS)
    console.log(`preload: ${keys} keys (Node resources, affinities, blocks, handles as ipam/ writes them) in ${((performance.now() - t0) / 1000).toFixed(1)} s, written directly in etcd transactions`)

    const env = { ...process.env, PINTO_DATASTORE: `etcd://${etcd.endpoint}` }
    const nodes = Array.from({ length: NODES }, (_, i) => nodeName(i)).join(',')
    t0 = performance.now()
    const check = await run(process.execPath, [PINTOCTL, 'ipam', 'check', `--nodes=${nodes}`], env)
    const summary = check.out.split('\n').filter((l) => /Found|IPAM handles|Allocated IPs|complete|Error|error/.test(l)).map((l) => l.trim()).join('; ')
    console.log(`pintoctl ipam check --nodes=<all ${NODES}>: ${(check.ms / 1000).toFixed(1)} s (target < 30 s), exit ${check.code}: ${summary.slice(0, 400)}`)
    const json: Figure[] = [figure('pintoctl ipam check', check.code === 0 ? check.ms / 1000 : NaN, 's')]

    for (const oneTxn of [false, true]) {
      for (const n of [...new Set([1, AGENTS])]) {
        const f = await etcdFloor(etcd.endpoint, n, Math.max(50, Math.ceil(ADDS / 2)), oneTxn)
        const how = oneTxn ? 'in one transaction (one commit)' : 'back to back (two commits)'
        console.log(`etcd alone, an ADD's two writes ${how} (create the handle, CAS a block-sized value), ${n} client${n === 1 ? '' : 's'} at once: p50 ${ms(pct(f, 50))}  p99 ${ms(pct(f, 99))}, load ${load()}`)
        if (oneTxn && n === AGENTS) json.push(figure(`etcd alone: an ADD's writes in one transaction, ${n} clients, p50`, pct(f, 50), 'ms', true), figure(`etcd alone: an ADD's writes in one transaction, ${n} clients, p99`, pct(f, 99), 'ms', true))
      }
    }

    for (const [i, path] of PATHS.entries()) json.push(...(await runAgents(etcd.pid, etcd.endpoint, etcd.url, path, i === 0)))

    console.log('\nCalico (libcalico-go/lib/ipam, read from its code) for the same ADD, one address from an affine block with room:')
    console.log('  10 round trips, 2 writes in 2 commits: get IPAMConfig, list IPReservations, get Node, list IPPools, list the host\'s affinities,')
    console.log('  get the affinity, get the block, get the handle, create the handle, update the block (CAS) (ipam.go assignFromExistingBlock:')
    console.log('  incrementHandle, then the block\'s Update; no transaction joins them).')
    console.log('  DEL: 6 round trips, 2 writes: get handle, get IPAMConfig, get block, update block, get handle, delete handle.')
    console.log('  A new block claim adds a list of every block, then create affinity, create block, update affinity.')
    writeFigures(JSON_OUT, 'ipam-scale', json)
  } finally {
    for (const c of children) c.kill('SIGKILL')
    await etcd.stop()
  }
}

for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    for (const c of children) c.kill('SIGKILL')
    void (stopEtcd?.() ?? Promise.resolve()).finally(() => process.exit(130))
  })
}

main().catch((err: unknown) => {
  console.error(err)
  process.exitCode = 1
})
