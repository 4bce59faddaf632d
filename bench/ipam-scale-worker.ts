// One agent's identity for bench/ipam-scale.ts: first the reads pinto-node makes at start (ClusterState's list
// and watch, the node's affinities), then, on "go" from stdin, pod ADD/DEL cycles through the agent's IPAM
// service (or the bare Ipam), each timed and its datastore calls counted. Prints one JSON line per phase.
// Usage: node dist/bench/ipam-scale-worker.js '<json ScaleWorkerArgs>'
import { createInterface } from 'node:readline'
import pino from 'pino'
import { openDatastore } from '../config/datastore-open.js'
import { CountingDatastore, type DatastoreCounts, diffCounts, zeroCounts } from '../config/datastore-counting.js'
import { ClusterState } from '../agent/cluster-state.js'
import { IpamService } from '../agent/ipam-service.js'
import { loadPoolSpecs } from '../agent/ipam-service-pools.js'
import { Ipam } from '../ipam/ipam.js'

export interface ScaleWorkerArgs {
  readonly store: string
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
}

export type ScaleWorkerLine =
  | { readonly op: 'startup'; readonly ms: number; readonly resources: number; readonly blocks: number; readonly affinities: number; readonly counts: DatastoreCounts }
  | { readonly op: 'done'; readonly add: readonly number[]; readonly del: readonly number[]; readonly addCounts: DatastoreCounts; readonly delCounts: DatastoreCounts; readonly errors: readonly string[]; readonly cpuMs: number }

const out = (l: ScaleWorkerLine): void => void process.stdout.write(JSON.stringify(l) + '\n')

function add(into: DatastoreCounts, d: DatastoreCounts): void {
  for (const k of Object.keys(into) as (keyof DatastoreCounts)[]) into[k] += d[k]
}

async function main(): Promise<void> {
  const args = JSON.parse(process.argv[2] ?? '{}') as ScaleWorkerArgs
  const t0 = performance.now()
  const store = new CountingDatastore(await openDatastore(args.store))
  const service = new IpamService({ store, node: args.node, socket: '/nonexistent/unused.sock' })
  if (args.startup) {
    const cluster = new ClusterState(store, pino({ level: 'silent' }))
    await cluster.start()
    const affinities = (await service.ipam.affinities(args.node)).length
    let blocks = 0
    for (const _ of cluster.blocks()) blocks++
    out({ op: 'startup', ms: performance.now() - t0, resources: cluster.list('Node').length + cluster.list('IPPool').length, blocks, affinities, counts: store.counts() })
    // Twenty agents' watches decoding every other agent's writes would share this machine's two cores; in a
    // cluster each runs on its own node, so the ADD phase runs without them.
    cluster.close()
  } else {
    out({ op: 'startup', ms: 0, resources: 0, blocks: 0, affinities: 0, counts: store.counts() })
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
  const held: string[] = []
  const cpu0 = process.cpuUsage()
  const del = async (handle: string): Promise<void> => {
    const before = store.counts()
    const s = performance.now()
    await release(handle)
    delMs.push(performance.now() - s)
    add(delCounts, diffCounts(store.counts(), before))
  }
  for (let i = 0; i < args.adds; i++) {
    const handle = `k8s-pod-network.${args.id}-${i}`
    const before = store.counts()
    const s = performance.now()
    try {
      await assign(handle, i)
      addMs.push(performance.now() - s)
      add(addCounts, diffCounts(store.counts(), before))
      held.push(handle)
    } catch (err) {
      errors.push((err as Error).message)
    }
    if (held.length > args.window) await del(held.shift() as string)
  }
  while (held.length > 0) await del(held.shift() as string)
  const cpu = process.cpuUsage(cpu0)
  out({ op: 'done', add: addMs, del: delMs, addCounts, delCounts, errors: errors.slice(0, 5), cpuMs: (cpu.user + cpu.system) / 1000 })
  await service.close()
  await store.close()
}

main().catch((err: unknown) => {
  process.stderr.write(`ipam-scale-worker: ${(err as Error).stack ?? String(err)}\n`)
  process.exitCode = 1
})
