// One agent's identity for bench/ipam-scale.ts: first the reads pinto-node makes at start (ClusterState's list
// and watch, the node's affinities), then, on "go" from stdin, pod ADD/DEL cycles through the agent's IPAM
// service (with the watched resources pinto-node hands it) or the bare Ipam, each timed and its datastore
// calls counted, back to back or at a fixed rate. Prints one JSON line per phase.
// Usage: node dist/bench/ipam-scale-worker.js '<json ScaleWorkerArgs>'
import { createInterface } from 'node:readline'
import { PerformanceObserver, monitorEventLoopDelay } from 'node:perf_hooks'
import pino from 'pino'
import { openDatastore } from '../config/datastore-open.js'
import { KubernetesDatastore } from '../config/datastore-kubernetes.js'
import { CountingDatastore, type DatastoreCounts, diffCounts, zeroCounts } from '../config/datastore-counting.js'
import { ClusterState } from '../agent/cluster-state.js'
import { IpamService } from '../agent/ipam-service.js'
import { loadPoolSpecs } from '../agent/ipam-service-pools.js'
import { Ipam } from '../ipam/ipam.js'
import { startProfile } from './cpu-profile.js'
import { type AddTrace, TracingDatastore } from './ipam-scale-trace.js'

export interface ScaleWorkerArgs {
  /** A PINTO_DATASTORE value: etcd://host:port or kubernetes. */
  readonly store: string
  /** The kubeconfig the kubernetes datastore uses. */
  readonly kubeconfig?: string
  readonly node: string
  readonly id: string
  /** ADDs to make; a DEL of the oldest follows each ADD once `window` pods are held. */
  readonly adds: number
  readonly window: number
  readonly num4: number
  readonly num6: number
  /** 'service': IpamService.assign/release, the path the socket and the CNI channel take; 'ipam': the Ipam alone. */
  readonly path: 'service' | 'ipam'
  /** Make the agent's start-up reads (and time them) before the ADDs; without it the line says 0 ms. */
  readonly startup: boolean
  /**
   * ADDs started per second, on a fixed schedule whether or not the last has finished (a kubelet does not wait
   * for one pod's network before the next pod's sandbox); 0: each ADD starts when the last ADD/DEL is done.
   */
  readonly rate: number
  /** The service warms at start and claims blocks ahead (false: a cold start, and blocks claimed inline by the ADD that needs one, as Calico does). */
  readonly ahead: boolean
  /** A CPU profile of the ADD/DEL phase is written here (a .cpuprofile) when set. */
  readonly profile?: string
}

/** Requests sent to the Kubernetes apiserver and watch streams opened (the kubernetes datastore's own count). */
export interface ApiCounts {
  readonly requests: number
  readonly streams: number
}

export type ScaleWorkerLine =
  | { readonly op: 'startup'; readonly ms: number; readonly resources: number; readonly blocks: number; readonly affinities: number; readonly counts: DatastoreCounts; readonly api?: ApiCounts }
  | {
    readonly op: 'done'; readonly add: readonly number[]; readonly del: readonly number[]; readonly addCounts: DatastoreCounts; readonly delCounts: DatastoreCounts
    /** Per ADD in the order made (failed ones left out): what its own datastore calls were. */
    readonly addTraces: readonly AddTrace[]
    /** IpamService.prepare() before the first ADD (0 on the ipam path). */
    readonly prepareMs: number
    /** Everything the phase sent, ADDs and DELs together (exact when they overlap, where the per-op counts are not). */
    readonly phaseCounts: DatastoreCounts; readonly errors: readonly string[]; readonly cpuMs: number; readonly wallMs: number
    /** How late this process's event loop ran its timers over the phase (GC pauses, no CPU to be had), and its GC pauses. */
    readonly loopDelayMs: { readonly p99: number; readonly max: number }; readonly gc: { readonly count: number; readonly totalMs: number; readonly maxMs: number }
    /** On the kubernetes datastore: what the ADD/DEL phase sent the apiserver. */
    readonly api?: ApiCounts
  }

const out = (l: ScaleWorkerLine): void => void process.stdout.write(JSON.stringify(l) + '\n')

function add(into: DatastoreCounts, d: DatastoreCounts): void {
  for (const k of Object.keys(into) as (keyof DatastoreCounts)[]) into[k] += d[k]
}

async function main(): Promise<void> {
  const args = JSON.parse(process.argv[2] ?? '{}') as ScaleWorkerArgs
  const t0 = performance.now()
  const opened = await openDatastore(args.store, args.kubeconfig !== undefined ? { kubeEnv: { KUBECONFIG: args.kubeconfig } } : {})
  const http = opened instanceof KubernetesDatastore ? opened.api : undefined
  const apiCounts = (): ApiCounts | undefined => (http === undefined ? undefined : { ...http.counts })
  const counting = new CountingDatastore(opened)
  const store = new TracingDatastore(counting)
  // The resources the service decides an ADD with, watched as pinto-node watches them (blocks left out: see
  // below), started after the start-up reads are timed.
  const resources = new ClusterState(store, pino({ level: 'silent' }), { blocks: false })
  const service = new IpamService({ store, node: args.node, socket: '/nonexistent/unused.sock', ...(args.path === 'service' ? { cluster: resources } : {}), ...(args.ahead ? {} : { claimAheadBelow: 0 }) })
  if (args.startup) {
    const cluster = new ClusterState(store, pino({ level: 'silent' }), { node: args.node })
    await cluster.start()
    const affinities = (await service.ipam.affinities(args.node)).length
    let blocks = 0
    for (const _ of cluster.blocks()) blocks++
    out({ op: 'startup', ms: performance.now() - t0, resources: cluster.list('Node').length + cluster.list('IPPool').length, blocks, affinities, counts: counting.counts(), ...(http ? { api: apiCounts() } : {}) })
    // Twenty agents' block watches decoding every other agent's writes would share this machine's two cores; in
    // a cluster each runs on its own node, so the ADD phase runs without them.
    cluster.close()
  } else {
    out({ op: 'startup', ms: 0, resources: 0, blocks: 0, affinities: 0, counts: counting.counts() })
  }

  let prepareMs = 0
  // The start-up view's garbage (every block, decoded) is collected now, as a running agent's would have been:
  // left, each agent's first major GC falls in the timed phase (seconds of wall time on a starved machine).
  ;(globalThis as { gc?: () => void }).gc?.()
  if (args.path === 'service') {
    await resources.start()
    // What pinto-node's listen() does before the first ADD: the node's blocks decoded, a claim ahead if due.
    const p0 = performance.now()
    if (args.ahead) await service.prepare()
    await service.ahead.settled()
    prepareMs = performance.now() - p0
  }
  await new Promise<void>((resolve) => createInterface({ input: process.stdin }).once('line', () => resolve()))
  const ipam = new Ipam(store, { pools: () => loadPoolSpecs(store) })
  const assign = args.path === 'service'
    ? (handle: string, i: number) => service.assign({ handle, num4: args.num4, num6: args.num6, attrs: { namespace: 'bench', pod: `${args.id}-${i}` } })
    : (handle: string, i: number) => ipam.autoAssign({ handle, node: args.node, num4: args.num4, num6: args.num6, attrs: { node: args.node, namespace: 'bench', pod: `${args.id}-${i}` } })
  const release = args.path === 'service' ? (handle: string) => service.release({ handle }) : (handle: string) => ipam.releaseByHandle(handle)
  const addMs: number[] = []
  const delMs: number[] = []
  const addCounts = zeroCounts()
  const delCounts = zeroCounts()
  const errors: string[] = []
  const addTraces: AddTrace[] = []
  const held: string[] = []
  const profile = args.profile !== undefined ? await startProfile() : undefined
  const loop = monitorEventLoopDelay({ resolution: 10 })
  loop.enable()
  const gc = { count: 0, totalMs: 0, maxMs: 0 }
  const gcs = new PerformanceObserver((list) => {
    for (const e of list.getEntries()) {
      gc.count++
      gc.totalMs += e.duration
      gc.maxMs = Math.max(gc.maxMs, e.duration)
    }
  })
  gcs.observe({ entryTypes: ['gc'] })
  const cpu0 = process.cpuUsage()
  const phaseStart = performance.now()
  // Counts are taken around each call; with ADDs overlapping (a rate) they are summed over the phase instead.
  const phase0 = counting.counts()
  const api0 = apiCounts()
  const del = async (handle: string): Promise<void> => {
    const before = counting.counts()
    const s = performance.now()
    await release(handle)
    delMs.push(performance.now() - s)
    add(delCounts, diffCounts(counting.counts(), before))
  }
  const one = async (i: number): Promise<void> => {
    const handle = `k8s-pod-network.${args.id}-${i}`
    const before = counting.counts()
    const s = performance.now()
    try {
      const { trace } = await store.trace(() => assign(handle, i))
      addMs.push(performance.now() - s)
      addTraces.push(trace)
      add(addCounts, diffCounts(counting.counts(), before))
      held.push(handle)
    } catch (err) {
      errors.push((err as Error).message)
    }
    if (held.length > args.window) await del(held.shift() as string)
  }
  if (args.rate > 0) {
    const running: Promise<void>[] = []
    for (let i = 0; i < args.adds; i++) {
      const at = phaseStart + (i * 1000) / args.rate
      if (at > performance.now()) await new Promise((r) => setTimeout(r, at - performance.now()))
      running.push(one(i))
    }
    await Promise.all(running)
  } else {
    for (let i = 0; i < args.adds; i++) await one(i)
  }
  while (held.length > 0) await del(held.shift() as string)
  const wallMs = performance.now() - phaseStart
  const cpu = process.cpuUsage(cpu0)
  loop.disable()
  gcs.disconnect()
  await profile?.stop(args.profile as string)
  await service.ahead.settled()
  out({ op: 'done', add: addMs, del: delMs, addCounts, delCounts, addTraces, prepareMs, phaseCounts: diffCounts(counting.counts(), phase0), errors: errors.slice(0, 5), cpuMs: (cpu.user + cpu.system) / 1000, wallMs,
    loopDelayMs: { p99: loop.percentile(99) / 1e6, max: loop.max / 1e6 }, gc,
    ...(http !== undefined && api0 !== undefined ? { api: { requests: http.counts.requests - api0.requests, streams: http.counts.streams - api0.streams } } : {}) })
  resources.close()
  await service.close()
  await store.close()
}

main().catch((err: unknown) => {
  process.stderr.write(`ipam-scale-worker: ${(err as Error).stack ?? String(err)}\n`)
  process.exitCode = 1
})
