// Two clients of the Kubernetes API doing the same work against one real kube-apiserver (and its etcd) that the
// bench starts: pinto's own KubeHttp (config/kubernetes/kube-http.ts, a keep-alive pool that takes only its
// credentials from @kubernetes/client-node) and the Kubernetes project's client itself (its generated
// CustomObjectsApi and its Watch). GETs, compare-and-swap PUTs and LISTs of Calico IPAMBlocks run interleaved,
// one client then the other; the watch is timed from a write to its event, and read back as a burst of events.
// Module load cost is measured in fresh processes. curl and kubectl doing the same GET are the anchor.
// Run: npx tsc -p . && node dist/bench/kube-client.js [--n 300] [--objects 1000] [--burst 2000] [--lists 20] [--json FILE]

import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { KubeHttp } from '../config/kubernetes/kube-http.js'
import { type KubeApiserver, startKubeApiserver } from '../test/harness/kube-apiserver.js'
import { kubernetesBin } from '../test/harness/kubernetes-bin.js'
import { numberArg } from './args.js'
import { type Figure, figure, jsonPathArg, writeFigures } from './json-figures.js'

const N = numberArg('--n', 300)
const OBJECTS = numberArg('--objects', 1000)
const BURST = numberArg('--burst', 2000)
const LISTS = numberArg('--lists', 20)
const LATENCY_WRITES = numberArg('--watch-writes', 100)
const LOAD_RUNS = numberArg('--load-runs', 5)
const ANCHOR_RUNS = numberArg('--anchor-runs', 7)
const JSON_OUT = jsonPathArg()
const SELF = fileURLToPath(import.meta.url)
const CRDS = fileURLToPath(new URL('../../deploy/kubernetes/crds', import.meta.url))
const run = promisify(execFile)

const GROUP = 'crd.projectcalico.org'
const VERSION = 'v1'
const PLURAL = 'ipamblocks'
const COLLECTION = `/apis/${GROUP}/${VERSION}/${PLURAL}`

interface Block {
  apiVersion: string
  kind: string
  metadata: { name: string; resourceVersion?: string }
  spec: { cidr: string; affinity: string; allocations: (number | null)[]; unallocated: number[]; attributes: unknown[]; sequenceNumber: number; strictAffinity: boolean }
}

/** The i-th /26 of 198.18.0.0/15 as an IPAMBlock as pinto writes one: free, affine to a bench node. */
function block(i: number): Block {
  const third = 18 * 256 + (i >> 2)
  const addr = `198.${third >> 8}.${third & 255}.${(i & 3) * 64}`
  return {
    apiVersion: `${GROUP}/${VERSION}`, kind: 'IPAMBlock',
    metadata: { name: `${addr.replaceAll('.', '-')}-26` },
    spec: { cidr: `${addr}/26`, affinity: `host:bench-${i % 50}`, allocations: Array<null>(64).fill(null), unallocated: Array.from({ length: 64 }, (_, k) => k), attributes: [], sequenceNumber: 0, strictAffinity: false },
  }
}

const pct = (xs: readonly number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN
}
const f1 = (v: number): string => (Number.isFinite(v) ? v.toFixed(2) : '-')
const rssMb = (): number => process.memoryUsage().rss / 1e6

/** One client's side of the comparison: the same operations, each returning what the apiserver answered. */
interface Side {
  readonly name: string
  get(name: string): Promise<Block>
  replace(b: Block): Promise<Block>
  list(): Promise<number>
  /** Watches the collection from `rv`; `onEvent` per event; resolves to a stop function once the stream is open. */
  watch(rv: string, onEvent: (type: string, b: Block) => void): Promise<() => void>
}

/** Time and CPU of each call of one operation, per side. */
class Samples {
  readonly ms: number[] = []
  readonly cpuMs: number[] = []
  async time<T>(fn: () => Promise<T>): Promise<T> {
    const c = process.cpuUsage()
    const t0 = performance.now()
    const r = await fn()
    this.ms.push(performance.now() - t0)
    const d = process.cpuUsage(c)
    this.cpuMs.push((d.user + d.system) / 1000)
    return r
  }
}

function thinSide(http: KubeHttp): Side {
  const ok = (r: { status: number; text: string }, what: string): void => {
    if (r.status !== 200 && r.status !== 201) throw new Error(`${what}: ${r.status} ${r.text.slice(0, 200)}`)
  }
  return {
    name: 'KubeHttp',
    async get(name) {
      const r = await http.request('GET', `${COLLECTION}/${name}`)
      ok(r, 'GET')
      return r.body as Block
    },
    async replace(b) {
      const r = await http.request('PUT', `${COLLECTION}/${b.metadata.name}`, undefined, b)
      ok(r, 'PUT')
      return r.body as Block
    },
    async list() {
      const r = await http.request('GET', COLLECTION)
      ok(r, 'LIST')
      return (r.body as { items: unknown[] }).items.length
    },
    watch(rv, onEvent) {
      const s = http.stream(COLLECTION, { watch: true, resourceVersion: rv, allowWatchBookmarks: true }, 120_000, (line) => {
        const e = JSON.parse(line) as { type: string; object: Block }
        if (e.type !== 'BOOKMARK') onEvent(e.type, e.object)
      }, (end) => {
        if (end.status !== undefined || end.error !== undefined) process.stderr.write(`KubeHttp watch ended: ${end.status ?? ''} ${end.error?.message ?? JSON.stringify(end.body)}\n`)
      })
      return Promise.resolve(() => s.close())
    },
  }
}

type ClientNode = typeof import('@kubernetes/client-node')

function clientNodeSide(k8s: ClientNode, kc: InstanceType<ClientNode['KubeConfig']>): Side {
  const api = kc.makeApiClient(k8s.CustomObjectsApi)
  const watcher = new k8s.Watch(kc)
  return {
    name: 'client-node',
    async get(name) {
      return (await api.getClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, name })) as Block
    },
    async replace(b) {
      return (await api.replaceClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL, name: b.metadata.name, body: b })) as Block
    },
    async list() {
      return ((await api.listClusterCustomObject({ group: GROUP, version: VERSION, plural: PLURAL })) as { items: unknown[] }).items.length
    },
    async watch(rv, onEvent) {
      const ctl = await watcher.watch(COLLECTION, { resourceVersion: rv, allowWatchBookmarks: true }, (type: string, obj: Block) => {
        if (type !== 'BOOKMARK') onEvent(type, obj)
      }, (err: unknown) => {
        if (err !== null && err !== undefined && !(err instanceof Error && err.name === 'AbortError')) process.stderr.write(`client-node watch ended: ${err instanceof Error ? err.message : JSON.stringify(err)}\n`)
      })
      return () => ctl.abort()
    },
  }
}

/** In a fresh process: the import's time, and RSS and heap after it (`--load none|kubeconfig|full`). */
async function loadProbe(what: string): Promise<void> {
  const before = process.memoryUsage()
  const t0 = performance.now()
  if (what === 'kubeconfig') await import('@kubernetes/client-node/dist/config.js')
  else if (what === 'full') await import('@kubernetes/client-node')
  const ms = performance.now() - t0
  const m = process.memoryUsage()
  process.stdout.write(JSON.stringify({ ms, rss: m.rss / 1e6, heap: m.heapUsed / 1e6, rssBefore: before.rss / 1e6 }) + '\n')
}

async function loadCost(): Promise<Map<string, { ms: number[]; rss: number[]; heap: number[] }>> {
  const out = new Map<string, { ms: number[]; rss: number[]; heap: number[] }>()
  for (let i = 0; i < LOAD_RUNS; i++) {
    for (const what of ['none', 'kubeconfig', 'full']) {
      const { stdout } = await run(process.execPath, [SELF, '--load', what])
      const r = JSON.parse(stdout) as { ms: number; rss: number; heap: number }
      const o = out.get(what) ?? { ms: [], rss: [], heap: [] }
      o.ms.push(r.ms)
      o.rss.push(r.rss)
      o.heap.push(r.heap)
      out.set(what, o)
    }
  }
  return out
}

/** Many at once, at most `width` in flight. */
async function inParallel(n: number, width: number, fn: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0
  await Promise.all(Array.from({ length: width }, async () => {
    while (next < n) await fn(next++)
  }))
}

/** curl and kubectl doing the bench's GET, each a fresh process (TLS handshake and all), ANCHOR_RUNS times. */
async function anchors(api: KubeApiserver, name: string): Promise<{ curl: number[]; kubectl: number[] }> {
  const curl: number[] = []
  const kubectl: number[] = []
  for (let i = 0; i < ANCHOR_RUNS; i++) {
    let t0 = performance.now()
    await run('curl', ['-sf', '-o', '/dev/null', '--cacert', api.ca.cert, '-H', `Authorization: Bearer ${api.token}`, `${api.url}${COLLECTION}/${name}`])
    curl.push(performance.now() - t0)
    t0 = performance.now()
    await run(join(api.binDir, 'kubectl'), ['--kubeconfig', api.kubeconfig, 'get', `${PLURAL}.${GROUP}`, name, '-o', 'json'], { env: { ...process.env, KUBECACHEDIR: join(api.dir, 'kubectl-cache') } })
    kubectl.push(performance.now() - t0)
  }
  return { curl, kubectl }
}

async function main(): Promise<void> {
  const loadArg = process.argv.indexOf('--load')
  if (loadArg >= 0) return loadProbe(process.argv[loadArg + 1] ?? 'none')
  const loadStart = readFileSync('/proc/loadavg', 'utf8').trim()
  console.log(`kube-client: N=${N} objects=${OBJECTS} burst=${BURST} lists=${LISTS}; /proc/loadavg at start: ${loadStart}`)

  const loads = await loadCost()

  const teardowns: (() => unknown)[] = []
  const t = { teardown: (fn: () => unknown) => void teardowns.push(fn), setTimeout: () => undefined }
  try {
    await kubernetesBin(['kube-apiserver', 'kubectl', 'etcd'], t)
    const api = await startKubeApiserver(t, { etcdDefaults: true, readyTimeoutMs: 300_000 })
    await api.kubectl('apply', '-k', CRDS)
    await api.kubectl('wait', '--for=condition=Established', '--timeout=120s', 'crd', '--all')

    const rss0 = rssMb()
    const thin = await KubeHttp.connect({ kubeconfig: api.kubeconfig }, 60_000)
    teardowns.push(() => thin.close())
    const k8s = await import('@kubernetes/client-node')
    const kc = new k8s.KubeConfig()
    kc.loadFromFile(api.kubeconfig)
    const sides = [thinSide(thin), clientNodeSide(k8s, kc)]
    const writer = await KubeHttp.connect({ kubeconfig: api.kubeconfig }, 60_000)
    teardowns.push(() => writer.close())
    console.log(`bench process RSS ${f1(rssMb())} MB after both clients were loaded (${f1(rss0)} MB before)`)

    // The objects: block 0 is the one read and written; OBJECTS in all for the list.
    const put = async (i: number): Promise<void> => {
      const r = await writer.request('POST', COLLECTION, undefined, block(i))
      if (r.status !== 201) throw new Error(`creating block ${i}: ${r.status} ${r.text.slice(0, 200)}`)
    }
    await inParallel(OBJECTS, 8, put)
    const target = block(0).metadata.name

    // Warm both (connections, JIT) before anything is timed.
    for (const s of sides) for (let i = 0; i < 10; i++) await s.get(target)

    const stats = new Map<string, Samples>()
    const samples = (op: string, side: Side): Samples => {
      const k = `${op} ${side.name}`
      let s = stats.get(k)
      if (s === undefined) stats.set(k, (s = new Samples()))
      return s
    }
    // Interleaved: each round one client then the other, which goes first alternating.
    const rounds = async (n: number, op: string, fn: (s: Side) => Promise<unknown>): Promise<void> => {
      for (let i = 0; i < n; i++) {
        const order = i % 2 === 0 ? sides : [...sides].reverse()
        for (const s of order) await samples(op, s).time(() => fn(s))
      }
    }
    await rounds(N, 'GET', (s) => s.get(target))
    let current = await sides[0]!.get(target)
    await rounds(N, 'PUT (CAS)', async (s) => {
      const next: Block = { ...current, spec: { ...current.spec, sequenceNumber: current.spec.sequenceNumber + 1 } }
      current = await s.replace(next)
    })
    let listed = 0
    await rounds(LISTS, `LIST ${OBJECTS}`, async (s) => void (listed = await s.list()))
    if (listed !== OBJECTS) throw new Error(`LIST answered ${listed} objects, ${OBJECTS} made`)

    // Watch latency: both clients watch at once; a write, then the time until each has its event.
    const seen = new Map<string, Map<string, number>>(sides.map((s) => [s.name, new Map()]))
    const rvNow = (await writer.request('GET', COLLECTION, { limit: 1 })).body as { metadata: { resourceVersion: string } }
    const stops: (() => void)[] = []
    for (const s of sides) stops.push(await s.watch(rvNow.metadata.resourceVersion, (_type, b) => void seen.get(s.name)!.set(b.metadata.resourceVersion ?? '', performance.now())))
    const latency = new Map<string, number[]>(sides.map((s) => [s.name, []]))
    const waitFor = async (cond: () => boolean, what: string): Promise<void> => {
      const end = Date.now() + 60_000
      while (!cond()) {
        if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
        await new Promise((r) => setImmediate(r))
      }
    }
    for (let i = 0; i < LATENCY_WRITES + 5; i++) {
      const b = (await writer.request('GET', `${COLLECTION}/${target}`)).body as Block
      const t0 = performance.now()
      const r = await writer.request('PUT', `${COLLECTION}/${target}`, undefined, { ...b, spec: { ...b.spec, sequenceNumber: b.spec.sequenceNumber + 1 } })
      const rv = (r.body as Block).metadata.resourceVersion ?? ''
      await waitFor(() => sides.every((s) => seen.get(s.name)!.has(rv)), `the watch event of write ${i}`)
      if (i >= 5) for (const s of sides) latency.get(s.name)!.push(seen.get(s.name)!.get(rv)! - t0)
    }
    for (const stop of stops) stop()

    // Watch burst: BURST writes made with no watch open, then each client watches from before them, alone, and
    // reads the apiserver's BURST events back: its receive rate and CPU per event, interleaved over 3 runs.
    const before = ((await writer.request('GET', COLLECTION, { limit: 1 })).body as { metadata: { resourceVersion: string } }).metadata.resourceVersion
    await inParallel(BURST, 16, async (i) => {
      const name = block(i % OBJECTS).metadata.name
      for (;;) {
        const b = (await writer.request('GET', `${COLLECTION}/${name}`)).body as Block
        const r = await writer.request('PUT', `${COLLECTION}/${name}`, undefined, { ...b, spec: { ...b.spec, sequenceNumber: b.spec.sequenceNumber + 1 } })
        if (r.status === 200) return
        if (r.status !== 409) throw new Error(`burst write: ${r.status}`)
      }
    })
    const burst = new Map<string, { perSec: number[]; cpuUsPerEvent: number[] }>(sides.map((s) => [s.name, { perSec: [], cpuUsPerEvent: [] }]))
    for (let runNo = 0; runNo < 3; runNo++) {
      for (const s of runNo % 2 === 0 ? sides : [...sides].reverse()) {
        let n = 0
        let first = 0
        let last = 0
        const c = process.cpuUsage()
        const stop = await s.watch(before, () => {
          last = performance.now()
          if (n++ === 0) first = last
        })
        await waitFor(() => n >= BURST, `${s.name} reading ${BURST} events`)
        const d = process.cpuUsage(c)
        stop()
        const b = burst.get(s.name)!
        b.perSec.push(((n - 1) * 1000) / (last - first))
        b.cpuUsPerEvent.push((d.user + d.system) / n)
      }
    }

    const anchor = await anchors(api, target)
    const loadEnd = readFileSync('/proc/loadavg', 'utf8').trim()

    // The report.
    const figures: Figure[] = []
    const row = (label: string, cells: string[]): void => console.log(`| ${label} | ${cells.join(' | ')} |`)
    console.log(`\n| op (ms: p50 / p99; CPU of this process per call, mean) | ${sides.map((s) => s.name).join(' | ')} |`)
    console.log(`|---|${sides.map(() => '---').join('|')}|`)
    for (const op of ['GET', 'PUT (CAS)', `LIST ${OBJECTS}`]) {
      row(`${op}, ${op.startsWith('LIST') ? LISTS : N} each`, sides.map((s) => {
        const x = stats.get(`${op} ${s.name}`)!
        const cpu = x.cpuMs.reduce((a, b) => a + b, 0) / x.cpuMs.length
        figures.push(figure(`${s.name}: ${op} p50`, pct(x.ms, 50), 'ms'), figure(`${s.name}: ${op} p99`, pct(x.ms, 99), 'ms'), figure(`${s.name}: ${op} CPU per call`, cpu, 'ms'))
        return `${f1(pct(x.ms, 50))} / ${f1(pct(x.ms, 99))} ms; CPU ${f1(cpu)} ms`
      }))
    }
    row(`watch: a write to its event, ${LATENCY_WRITES} writes, both watching`, sides.map((s) => {
      const l = latency.get(s.name)!
      figures.push(figure(`${s.name}: write to watch event p50`, pct(l, 50), 'ms'), figure(`${s.name}: write to watch event p99`, pct(l, 99), 'ms'))
      return `${f1(pct(l, 50))} / ${f1(pct(l, 99))} ms`
    }))
    row(`watch: ${BURST} events read back, events/s (best of 3); CPU per event`, sides.map((s) => {
      const b = burst.get(s.name)!
      const cpu = pct(b.cpuUsPerEvent, 50)
      figures.push(figure(`${s.name}: watch CPU per event`, cpu / 1000, 'ms'))
      return `${Math.max(...b.perSec).toFixed(0)} /s (runs ${b.perSec.map((v) => v.toFixed(0)).join(', ')}); CPU ${f1(cpu)} µs`
    }))
    console.log('\nmodule load, each in a fresh node process (p50 of ' + LOAD_RUNS + '): import time, RSS and heap after it')
    for (const [what, label] of [['none', 'nothing imported'], ['kubeconfig', 'client-node\'s config.js only (KubeConfig)'], ['full', '@kubernetes/client-node, the whole package']] as const) {
      const o = loads.get(what)!
      figures.push(figure(`load ${what}: import`, pct(o.ms, 50), 'ms'), figure(`load ${what}: RSS`, pct(o.rss, 50), 'MB'))
      console.log(`  ${label}: ${f1(pct(o.ms, 50))} ms, RSS ${f1(pct(o.rss, 50))} MB, heap ${f1(pct(o.heap, 50))} MB`)
    }
    console.log(`\nanchor, the same GET as a fresh process each (${ANCHOR_RUNS} runs, p50 / max): curl ${f1(pct(anchor.curl, 50))} / ${f1(Math.max(...anchor.curl))} ms, kubectl ${f1(pct(anchor.kubectl, 50))} / ${f1(Math.max(...anchor.kubectl))} ms`)
    figures.push(figure('curl GET p50', pct(anchor.curl, 50), 'ms', true), figure('kubectl get p50', pct(anchor.kubectl, 50), 'ms', true))
    console.log(`/proc/loadavg at end: ${loadEnd}`)
    writeFigures(JSON_OUT, 'kube-client', figures)
  } finally {
    for (const fn of teardowns.reverse()) await fn()
  }
}

main().then(() => process.exit(0), (err: unknown) => {
  process.stderr.write(`kube-client: ${(err as Error).stack ?? String(err)}\n`)
  process.exit(1)
})
