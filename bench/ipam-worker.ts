// One IPAM client process for the multi-process stress test and the bench: allocates (and randomly releases)
// on one node identity and logs every allocation and release with monotonic timestamps as JSON lines on stdout.
// Usage: node dist/bench/ipam-worker.js '<json WorkerArgs>'
import { Ipam, IpamError } from '../ipam/ipam.js'
import type { PoolSpec } from '../ipam/pools.js'
import { openDatastore } from '../config/datastore-open.js'

export interface WorkerArgs {
  readonly store: string
  readonly node: string
  readonly id: string
  readonly count: number
  /** Probability of releasing one random held handle after each allocation. */
  readonly releaseP: number
  /** Release one whenever more than this many handles are held. */
  readonly cap: number
  readonly num4: number
  readonly num6: number
  readonly pools: readonly PoolSpec[]
  readonly maxBlocksPerHost?: number
  /** Log every operation (stress) or only the summary (bench). */
  readonly log: boolean
}

export type WorkerLine =
  | { readonly op: 'alloc'; readonly h: string; readonly a: readonly string[]; readonly borrowed: number; readonly t0: number; readonly t1: number }
  | { readonly op: 'release'; readonly h: string; readonly a: readonly string[]; readonly t0: number; readonly t1: number }
  | { readonly op: 'error'; readonly h: string; readonly code: string; readonly msg: string }
  | { readonly op: 'done'; readonly held: readonly string[]; readonly allocs: number; readonly ms: number }

const now = (): number => Number(process.hrtime.bigint()) // CLOCK_MONOTONIC: comparable across processes

async function main(): Promise<void> {
  const args = JSON.parse(process.argv[2] ?? '{}') as WorkerArgs
  const store = await openDatastore(args.store)
  const ipam = new Ipam(store, { pools: args.pools, config: { maxBlocksPerHost: args.maxBlocksPerHost ?? 20 }, maxRetries: 20 })
  const out = (l: WorkerLine): void => void process.stdout.write(JSON.stringify(l) + '\n')
  const held: { h: string; a: string[] }[] = []
  let allocs = 0
  const start = Date.now()
  for (let i = 0; i < args.count; i++) {
    const h = `k8s-pod-network.${args.id}-${i}`
    const t0 = now()
    try {
      const r = await ipam.autoAssign({ handle: h, node: args.node, num4: args.num4, num6: args.num6, attrs: { node: args.node, pod: `p${i}`, namespace: args.id } })
      const a = [...r.ipv4, ...r.ipv6]
      held.push({ h, a: a.map((x) => x.address) })
      allocs++
      if (args.log) out({ op: 'alloc', h, a: a.map((x) => x.address), borrowed: a.filter((x) => x.borrowed === true).length, t0, t1: now() })
    } catch (err) {
      out({ op: 'error', h, code: err instanceof IpamError ? err.code : 'other', msg: (err as Error).message })
    }
    if (held.length > 0 && (held.length > args.cap || Math.random() < args.releaseP)) {
      const [victim] = held.splice(Math.floor(Math.random() * held.length), 1)
      const r0 = now()
      await ipam.releaseByHandle(victim!.h)
      if (args.log) out({ op: 'release', h: victim!.h, a: victim!.a, t0: r0, t1: now() })
    }
  }
  out({ op: 'done', held: held.map((x) => x.h), allocs, ms: Date.now() - start })
  await store.close()
}

main().catch((err: unknown) => {
  process.stderr.write(`ipam-worker: ${(err as Error).stack ?? String(err)}\n`)
  process.exitCode = 1
})
