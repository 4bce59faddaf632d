// bench/reflect: route reflection at cluster scale. Two pinto-node reflectors (Nodes with a cluster ID, a
// BGPPeer selecting them for every node, one Node resource per simulated node in the embedded datastore)
// and N simulated nodes (bench/bgp-clients, a few processes) over real sessions inside a namespace of our
// own; then the same clients against two BIRD 2 reflectors in the same run. Optionally one real pinto-node
// with its dataplane (in a namespace of its own) as a client of the pinto reflectors: what a node pays.
// Prints, per reflector kind: cold start until every client holds every route, one block change to every
// client (p50/p99), each reflector's VmHWM and CPU seconds, UPDATE bytes the clients received per change.
// Run (root): node dist/bench/reflect.js [--clients 500] [--changes 50] [--processes P] [--only pinto|bird] [--node 0|1]
//   [--json FILE]: also writes per kind the cold start, one change's p50/p99 and the larger VmHWM there (bench/json-figures).

import { readFileSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { request } from 'node:http'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createInterface } from 'node:readline'
import type { ResultPromise } from 'execa'
import { execa } from 'execa'
import { Topology, type NetNode } from '../test/harness/netns.js'
import { WaitTimeoutError, waitFor } from '../test/harness/wait.js'
import { openDatastore } from '../config/datastore-open.js'
import { encodeResource, resourceKey } from '../config/resources/index.js'
import { AGENT_NODE_FLAGS } from '../agent/node-flags.js'
import { table } from '../agent/demo/tables.js'
import { numberArg } from './args.js'
import { type Figure, figure, jsonPathArg, writeFigures } from './json-figures.js'
import { makePlan, NODES_CIDR, spareOwner, type Plan } from './reflect-plan.js'
import { birdConfig, clusterResources, REFLECTORS } from './reflect-cluster.js'

const HERE = fileURLToPath(new URL('.', import.meta.url))
const CLIENTS_JS = join(HERE, 'bgp-clients.js')
const NODE_BIN = join(HERE, '..', '..', 'bin', 'pinto-node.js')
const N = numberArg('--clients', 500)
const CHANGES = numberArg('--changes', 50)
const PROCESSES = numberArg('--processes', Math.min(4, Math.ceil(N / 1250)))
/** Sessions each client process has in Connect/OpenSent at once. */
const CONNECTING = numberArg('--connecting', 256)
const WITH_NODE = numberArg('--node', 1) === 1
const onlyAt = process.argv.indexOf('--only')
const ONLY = onlyAt >= 0 ? process.argv[onlyAt + 1] : undefined
/** Descriptors each process may need (a reflector: one per client and then some), within our hard limit. */
const HARD_NOFILE = Number(/^Max open files\s+\S+\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1] ?? 4 * N + 4096)
const NOFILE = ['prlimit', `--nofile=${Math.min(4 * N + 4096, HARD_NOFILE)}:${Math.min(4 * N + 4096, HARD_NOFILE)}`, '--']
const CLIENT_NODE = { name: 'client-node', address: '192.0.2.10' }
const DEADLINE_MS = numberArg('--deadline', Math.max(120, N / 20)) * 1000
const plan: Plan = makePlan(N, Math.ceil(CHANGES / 2))
const HZ = 100
/** --prof DIR: the pinto reflectors write V8 CPU profiles there when they stop. */
const profAt = process.argv.indexOf('--prof')
const PROF = profAt >= 0 ? [`--cpu-prof`, `--cpu-prof-dir=${process.argv[profAt + 1]}`] : []
const JSON_OUT = jsonPathArg()

function procStat(pid: number): { cpu: number; hwmMb: number; rssMb: number } {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN)
  return { cpu: (Number(f[11]) + Number(f[12])) / HZ, hwmMb: kb('VmHWM') / 1024, rssMb: kb('VmRSS') / 1024 }
}

function getJson(socketPath: string, path: string): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path }, (res) => {
      let body = ''
      res.on('data', (d: Buffer) => (body += d.toString()))
      res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(body) as Record<string, unknown>) : reject(new Error(`${path}: HTTP ${res.statusCode}`))))
    })
    req.on('error', reject)
    req.end()
  })
}

const pct = (xs: number[], p: number): number => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)]!
const ms = (ns: bigint): number => Number(ns) / 1e6

interface ClientEvent {
  event: string
  server?: number
  at?: string | string[]
  id?: number
  updateBytes?: number[]
  retries?: number
  established?: number
  message?: string
}

/** The client processes: their events, and a way to wait for one from each. */
class Clients {
  readonly procs: ResultPromise[] = []
  private readonly events: ClientEvent[][] = []
  private failure: string | undefined
  private stopping = false

  constructor(topo: Topology, ns: string, servers: readonly string[]) {
    const per = Math.ceil(N / PROCESSES)
    for (let p = 0; p < PROCESSES; p++) {
      const spec = { clients: N, from: p * per, to: Math.min(N, (p + 1) * per), servers, asn: 64512, spares: plan.spares, connecting: CONNECTING }
      const child = topo.spawn(ns, NOFILE[0]!, [...NOFILE.slice(1), process.execPath, CLIENTS_JS, JSON.stringify(spec)], { stdin: 'pipe', stdout: 'pipe', stderr: 'inherit', buffer: false })
      const log: ClientEvent[] = []
      this.events.push(log)
      createInterface({ input: child.stdout! }).on('line', (line) => {
        const ev = JSON.parse(line) as ClientEvent
        if (ev.event === 'error' || ev.event === 'notification') this.failure ??= line
        log.push(ev)
      })
      this.procs.push(child)
      void child.then((r) => {
        if (!this.stopping) this.failure ??= `client process ${p} exited (${r.exitCode ?? r.signal})`
      })
    }
  }

  send(cmd: Record<string, unknown>): void {
    for (const c of this.procs) c.stdin!.write(JSON.stringify(cmd) + '\n')
  }

  /** One event per process matching `match`, taken from the logs. */
  async each(what: string, match: (e: ClientEvent) => boolean, timeoutMs = DEADLINE_MS): Promise<ClientEvent[]> {
    const got = await waitFor(() => {
      if (this.failure !== undefined) return this.failure
      const found = this.events.map((log) => log.findIndex(match))
      if (found.some((i) => i < 0)) return undefined
      return found.map((i, p) => this.events[p]!.splice(i, 1)[0]!)
    }, { timeoutMs, intervalMs: 5, what })
    if (typeof got === 'string') throw new Error(`clients: ${got}`)
    return got
  }

  async any(what: string, match: (e: ClientEvent) => boolean): Promise<ClientEvent> {
    const got = await waitFor((): ClientEvent | string | undefined => {
      if (this.failure !== undefined) return this.failure
      for (const log of this.events) {
        const i = log.findIndex(match)
        if (i >= 0) return log.splice(i, 1)[0]!
      }
      return undefined
    }, { timeoutMs: DEADLINE_MS, intervalMs: 5, what })
    if (typeof got === 'string') throw new Error(`clients: ${got}`)
    return got
  }

  async stop(): Promise<void> {
    this.stopping = true
    for (const c of this.procs) c.kill('SIGTERM')
    await Promise.all(this.procs)
  }
}

interface Agent {
  readonly name: string
  readonly pid: number
  readonly api: string
  readonly child: ResultPromise
}

interface PhaseResult {
  coldSeconds: number[]
  /** Until every session was Established. */
  upSeconds: number
  /** CPU seconds of the client processes, for the whole phase. */
  clientCpu: number
  changeMs: number[]
  bytesPerChange: number[]
  /** Connections the clients opened again before Established (refused, reset or timed out). */
  retries: number
  reflectors: { cpu: number; hwmMb: number; rssMb: number }[]
  /** Set when not every session came up within the deadline: how far it got (the rest is then empty). */
  unfinished?: string
}

/** Starts the clients against running reflectors, measures, stops the clients. */
async function runClients(topo: Topology, ns: string, pids: readonly number[], afterColdStart?: () => Promise<void>): Promise<PhaseResult> {
  const servers = REFLECTORS.map((r) => r.address)
  const clients = new Clients(topo, ns, servers)
  try {
    await clients.each('client processes ready', (e) => e.event === 'ready', 30_000)
    clients.send({ cmd: 'go' })
    const going = await clients.each('clients going', (e) => e.event === 'going')
    const t0 = going.map((e) => BigInt(e.at as string)).reduce((a, b) => (a < b ? a : b))
    const coldSeconds: number[] = []
    let up: ClientEvent[]
    try {
      up = await clients.each('every session Established', (e) => e.event === 'up')
    } catch (err) {
      if (!(err instanceof WaitTimeoutError)) throw err
      // What the reflectors reached by the deadline, so a run that falls behind still prints its figures.
      clients.send({ cmd: 'counters' })
      const c = await clients.each('counters', (e) => e.event === 'counters', 60_000)
      const established = c.reduce((n, e) => n + (e.established ?? 0), 0)
      const clientCpu = clients.procs.reduce((n, p) => n + procStat(p.pid!).cpu, 0)
      const unfinished = `${established} of ${N * servers.length} sessions Established after ${DEADLINE_MS / 1000} s`
      return { coldSeconds: [], upSeconds: NaN, clientCpu, changeMs: [], bytesPerChange: [], retries: c.reduce((n, e) => n + (e.retries ?? 0), 0), reflectors: pids.map(procStat), unfinished }
    }
    const upSeconds = Math.max(...up.map((e) => ms(BigInt(e.at as string) - t0))) / 1000
    for (let s = 0; s < servers.length; s++) {
      const done = await clients.each(`every client holding all ${plan.routes} routes from ${servers[s]}`, (e) => e.event === 'complete' && e.server === s)
      coldSeconds.push(Math.max(...done.map((e) => ms(BigInt(e.at as string) - t0))) / 1000)
    }
    await afterColdStart?.()
    const changeMs: number[] = []
    const bytesPerChange: number[] = []
    let retries = 0
    const bytes = async (): Promise<number[]> => {
      clients.send({ cmd: 'counters' })
      const c = await clients.each('counters', (e) => e.event === 'counters')
      retries = c.reduce((n, e) => n + (e.retries ?? 0), 0)
      return servers.map((_, s) => c.reduce((n, e) => n + e.updateBytes![s]!, 0))
    }
    let before = await bytes()
    for (let k = 0; k < CHANGES; k++) {
      const spare = k >> 1
      clients.send({ cmd: 'change', id: k, spare, owner: spareOwner(plan, spare), op: k % 2 === 0 ? 'announce' : 'withdraw' })
      const sent = await clients.any(`change ${k} sent`, (e) => e.event === 'sent' && e.id === k)
      const reached = await clients.each(`change ${k} at every client`, (e) => e.event === 'reached' && e.id === k, 60_000)
      const last = reached.flatMap((e) => (e.at as string[]).map(BigInt)).reduce((a, b) => (a > b ? a : b))
      changeMs.push(ms(last - BigInt(sent.at as string)))
      const after = await bytes()
      bytesPerChange.push(after.reduce((n, b, s) => n + b - before[s]!, 0))
      before = after
    }
    const clientCpu = clients.procs.reduce((n, c) => n + procStat(c.pid!).cpu, 0)
    return { coldSeconds, upSeconds, clientCpu, changeMs, bytesPerChange, retries, reflectors: pids.map(procStat) }
  } finally {
    await clients.stop()
  }
}

/** The client pinto-node's figures (--node 1): printed rows, and its VmHWM and idle CPU for the JSON. */
interface NodeFigures {
  readonly rows: string[][]
  readonly hwmMb: number
  readonly idlePercent: number
}

async function pintoPhase(topo: Topology, rr: NetNode, clientNs: NetNode | undefined): Promise<{ result: PhaseResult; node?: NodeFigures }> {
  const dir = await topo.tempDir('store')
  const store = await openDatastore(join(dir, 'store'))
  const t = Date.now()
  for (const r of clusterResources(plan, clientNs ? [CLIENT_NODE] : [])) await store.create(resourceKey(r.kind, r.metadata.name), encodeResource(r))
  await store.close()
  process.stdout.write(`wrote ${N + 2 + (clientNs ? 1 : 0)} Node resources and the reflector topology in ${((Date.now() - t) / 1000).toFixed(1)} s\n`)
  const agents: Agent[] = []
  const start = async (name: string, ns: string, address: string, dataplane: 'none' | 'kernel'): Promise<Agent> => {
    const d = await topo.tempDir(name)
    const env = {
      PINTO_NODENAME: name,
      PINTO_IP: `${address}/24`,
      PINTO_DATASTORE: join(dir, 'store'),
      PINTO_SOCKET: join(d, 'pinto.sock'),
      PINTO_API_SOCKET: join(d, 'api.sock'),
      PINTO_MTU_FILE: join(d, 'mtu'),
      PINTO_STATE_DIR: d,
      PINTO_API_LISTEN: `${address}:9099`,
      PINTO_DATAPLANE: dataplane,
      PINTO_LOG_LEVEL: 'warn',
    }
    const child = topo.spawn(ns, NOFILE[0]!, [...NOFILE.slice(1), process.execPath, ...AGENT_NODE_FLAGS, ...(dataplane === 'none' ? PROF : []), NODE_BIN], { env: { ...process.env, ...env }, stdout: 'inherit', stderr: 'inherit' })
    const api = env.PINTO_API_SOCKET
    await waitFor(() => {
      if (child.exitCode !== undefined && child.exitCode !== null) throw new Error(`${name}: pinto-node exited ${child.exitCode}`)
      return getJson(api, '/v1/status').then((s) => ((s['peers'] as { configured: number }).configured > 0 ? s : undefined), () => undefined)
    }, { timeoutMs: DEADLINE_MS, intervalMs: 100, what: `${name} computing its peers` })
    return { name, pid: child.pid!, api, child }
  }
  const tStart = Date.now()
  for (const r of REFLECTORS) agents.push(await start(r.name, rr.ns, r.address, 'none'))
  const startedIn = (Date.now() - tStart) / 1000
  const configured = await Promise.all(agents.map((a) => getJson(a.api, '/v1/status').then((s) => (s['peers'] as { configured: number }).configured)))
  process.stdout.write(`pinto reflectors up with ${configured.join(' and ')} peers configured, ${startedIn.toFixed(1)} s from the first start\n`)
  if (clientNs) agents.push(await start(CLIENT_NODE.name, clientNs.ns, CLIENT_NODE.address, 'kernel'))
  let node: NodeFigures | undefined
  const nodeAgent = agents[REFLECTORS.length]
  const result = await runClients(topo, rr.ns, agents.slice(0, REFLECTORS.length).map((a) => a.pid), nodeAgent && clientNs ? async () => void (node = await nodeFigures(nodeAgent.pid, clientNs)) : undefined)
  for (const a of agents) a.child.kill('SIGTERM')
  await Promise.all(agents.map((a) => a.child))
  return { result, ...(node !== undefined ? { node } : {}) }
}

async function kernelRoutes(ns: string): Promise<number> {
  const out = String((await execa('ip', ['-n', ns, 'route', 'show', 'proto', '87'])).stdout)
  return out === '' ? 0 : out.split('\n').filter((l) => !/^\s/.test(l)).length
}

async function nodeFigures(pid: number, clientNs: NetNode): Promise<NodeFigures> {
  const want = plan.routes
  const t0 = Date.now()
  const routes = await waitFor(async () => {
    const n = await kernelRoutes(clientNs.ns)
    return n >= want ? n : undefined
  }, { timeoutMs: DEADLINE_MS, intervalMs: 500, what: `the client node's kernel holding ${want} routes` })
  const waited = (Date.now() - t0) / 1000
  const IDLE = numberArg('--idle', 30)
  await new Promise((r) => setTimeout(r, 5000))
  const a = procStat(pid)
  const w0 = process.hrtime.bigint()
  await new Promise((r) => setTimeout(r, IDLE * 1000))
  const b = procStat(pid)
  const secs = Number(process.hrtime.bigint() - w0) / 1e9
  const idlePercent = ((b.cpu - a.cpu) / secs) * 100
  const rows = [
    ['kernel routes (proto 87)', String(await kernelRoutes(clientNs.ns)), `${routes} after ${waited.toFixed(1)} s more`],
    ['VmRSS / VmHWM', `${b.rssMb.toFixed(1)} / ${b.hwmMb.toFixed(1)} MB`, ''],
    [`idle CPU over ${secs.toFixed(0)} s (utime+stime)`, `${(b.cpu - a.cpu).toFixed(2)} s = ${idlePercent.toFixed(2)} %`, ''],
  ]
  return { rows, hwmMb: b.hwmMb, idlePercent }
}

async function birdPhase(topo: Topology, rr: NetNode): Promise<PhaseResult> {
  const pids: number[] = []
  const children: ResultPromise[] = []
  for (let k = 0; k < REFLECTORS.length; k++) {
    const dir = await topo.tempDir(`bird${k}`)
    await writeFile(join(dir, 'bird.conf'), birdConfig(plan, k, dir))
    const ctl = join(dir, 'bird.ctl')
    const child = topo.spawn(rr.ns, NOFILE[0]!, [...NOFILE.slice(1), 'bird', '-f', '-c', join(dir, 'bird.conf'), '-s', ctl], { stdout: 'inherit', stderr: 'inherit' })
    await waitFor(() => {
      if (child.exitCode !== undefined && child.exitCode !== null) throw new Error(`BIRD ${REFLECTORS[k]!.name} exited ${child.exitCode}`)
      return execa('birdc', ['-s', ctl, 'show', 'status']).then((r) => String(r.stdout).includes('Daemon is up'), () => false)
    }, { timeoutMs: 60_000, intervalMs: 100, what: `BIRD ${REFLECTORS[k]!.name} up` })
    pids.push(child.pid!)
    children.push(child)
  }
  try {
    return await runClients(topo, rr.ns, pids)
  } finally {
    for (const c of children) c.kill('SIGTERM')
    await Promise.all(children)
  }
}

function rows(label: string, r: PhaseResult): string[][] {
  const stats = r.reflectors.map((x, k) => [`${label}: ${REFLECTORS[k]!.name} VmHWM, CPU (utime+stime)${r.unfinished !== undefined ? ' at the deadline' : ''}`, `${x.hwmMb.toFixed(1)} MB, ${x.cpu.toFixed(1)} s`])
  if (r.unfinished !== undefined) {
    return [[`${label}: cold start (did not finish)`, `${r.unfinished} (${r.retries} connections retried)`], ...stats, [`${label}: the client processes' CPU`, `${r.clientCpu.toFixed(1)} s`]]
  }
  return [
    [`${label}: cold start, every client holds all ${plan.routes} routes (rr1 / rr2)`, r.coldSeconds.map((s) => `${s.toFixed(2)} s`).join(' / ')],
    [`${label}: cold start, every session Established`, `${r.upSeconds.toFixed(2)} s (${r.retries} connections retried)`],
    [`${label}: one /26 change at all ${N} clients (both sessions), p50 / p99 of ${r.changeMs.length}`, `${pct(r.changeMs, 50).toFixed(1)} / ${pct(r.changeMs, 99).toFixed(1)} ms`],
    [`${label}: UPDATE bytes to the clients per change (both reflectors)`, `${pct(r.bytesPerChange, 50)}`],
    ...stats,
    [`${label}: the client processes' CPU`, `${r.clientCpu.toFixed(1)} s`],
  ]
}

/** One kind's summary for --json: the later reflector's cold start, one change's p50/p99, the larger VmHWM. */
function phaseFigures(label: string, r: PhaseResult, anchor: boolean): Figure[] {
  const name = `${label}:`
  return [
    figure(`${name} cold start, every client holds every route`, r.unfinished === undefined ? Math.max(...r.coldSeconds) : NaN, 's', anchor),
    figure(`${name} one change at every client p50`, r.changeMs.length > 0 ? pct(r.changeMs, 50) : NaN, 'ms', anchor),
    figure(`${name} one change at every client p99`, r.changeMs.length > 0 ? pct(r.changeMs, 99) : NaN, 'ms', anchor),
    figure(`${name} reflector VmHWM (the larger)`, Math.max(...r.reflectors.map((x) => x.hwmMb)), 'MB', anchor),
  ]
}

async function main(): Promise<void> {
  const topo = await Topology.create()
  const stop = (): void => void topo.destroy().then(() => process.exit(130))
  process.once('SIGINT', stop)
  try {
    const rr = await topo.addNode({ name: 'rr', v4: '192.0.2.1/24' })
    await execa('ip', ['-n', rr.ns, 'addr', 'add', '192.0.2.2/24', 'dev', 'eth0'])
    // Thousands of sessions connect at once: queues as a loaded reflector host would have them.
    for (const kv of ['net.core.somaxconn=65535', 'net.ipv4.tcp_max_syn_backlog=65535']) await topo.exec(rr.ns, 'sysctl', ['-q', '-w', kv])
    const clientNs = WITH_NODE && ONLY !== 'bird' ? await topo.addNode({ name: 'node', v4: `${CLIENT_NODE.address}/24` }) : undefined
    // The simulated nodes' addresses are all local in the bench namespace (an address with its prefix on
    // lo), and on the fabric for the client node, so felix programs them as it would any node address.
    await execa('ip', ['-n', rr.ns, 'addr', 'add', NODES_CIDR, 'dev', 'lo'])
    if (clientNs) await execa('ip', ['-n', clientNs.ns, 'route', 'add', NODES_CIDR, 'dev', 'eth0'])
    process.stdout.write(`reflect: ${N} simulated nodes (${plan.blocks} /26 blocks, ${plan.borrowed.length} borrowed /32s) in ${PROCESSES} processes, 2 reflectors; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}\n`)
    const out: string[][] = []
    const json: Figure[] = []
    if (ONLY !== 'bird') {
      const p = await pintoPhase(topo, rr, clientNs)
      json.push(...phaseFigures('pinto', p.result, false))
      if (p.node !== undefined) json.push(figure('client pinto-node: VmHWM', p.node.hwmMb, 'MB'), figure('client pinto-node: idle CPU', p.node.idlePercent, '%'))
      const mine = [...rows('pinto', p.result), ...(p.node?.rows ?? []).map(([a, b, c]) => [`client pinto-node with dataplane: ${a}`, `${b} ${c}`.trim()])]
      process.stdout.write(table(['measure', 'value'], mine) + `load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}\n`)
      out.push(...mine)
    }
    if (ONLY !== 'pinto') {
      const phase = await birdPhase(topo, rr)
      json.push(...phaseFigures('BIRD 2', phase, true))
      const bird = rows('BIRD 2', phase)
      process.stdout.write(table(['measure', 'value'], bird) + `load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}\n`)
      out.push(...bird)
    }
    if (ONLY === undefined) process.stdout.write(table(['measure', 'value'], out))
    process.stdout.write(`load average at the end ${loadavg().map((l) => l.toFixed(2)).join(' ')} (2 cores shared)\n`)
    writeFigures(JSON_OUT, 'reflect', json)
  } finally {
    await topo.destroy()
    process.off('SIGINT', stop)
  }
}

await main()
