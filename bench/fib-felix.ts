// bench/fib's felix run, as the agent runs it: inside the node's namespace (started there by
// `ip netns exec`), with the rtnetlink route socket unless `--ip`. Renders N /32s through 192.0.2.2, times
// start() (nexthop probe, `ip monitor`, read, write), a no-op resync and a no-op apply against the known
// table, and prints the figures as one JSON line. With `--warm` the same routes first go into another
// table (200) of the namespace, so the timed start runs on code already compiled, as every apply after
// pinto-node's first does; without it the timed start is the process's first, as at pinto-node's start.
// Usage: node dist/bench/fib-felix.js N PROTO [--ip] [--warm]

import type { IPPool } from '../config/resources/index.js'
import { ExecaRunner, renderDesired, RouteReconciler, type LearnedRoute } from '../felix/index.js'
import { RouteSocket } from '../felix/route-socket.js'
import { fibPrefixes, FIB_NEXT_HOP } from './fib-routes.js'

const WARM_TABLE = 200

export interface FelixFigures {
  renderMs: number
  applyMs: number
  readMs: number
  noopMs: number
  knownNoopMs: number
  /** How felix wrote: through the route socket, or `ip -batch`. */
  via: 'netlink' | 'ip'
}

async function main(): Promise<void> {
  const n = Number(process.argv[2])
  const proto = Number(process.argv[3])
  if (!Number.isInteger(n) || n < 1 || !Number.isInteger(proto)) throw new Error('usage: fib-felix.js N PROTO [--ip]')
  const p = fibPrefixes(n)
  let socket: RouteSocket | undefined
  if (!process.argv.includes('--ip')) {
    const s = await RouteSocket.open()
    if (s instanceof Error) throw new Error(`route socket: ${s.message}`)
    socket = s
  }
  const pool: IPPool = { apiVersion: 'projectcalico.org/v3', kind: 'IPPool', metadata: { name: 'p' }, spec: { cidr: n <= 131072 ? '198.18.0.0/15' : '10.64.0.0/10' } }
  const routes: LearnedRoute[] = p.map((prefix) => ({ prefix, nextHops: [{ address: FIB_NEXT_HOP }] }))
  const t0 = performance.now()
  const desired = renderDesired({ pools: [pool], routes, localBlocks: [], vteps: [], localNode: { name: 'a', ipv4Address: '192.0.2.1/24', parentInterface: 'va' } }, { protocol: proto })
  const renderMs = performance.now() - t0
  const opts = { runner: new ExecaRunner(), protocol: proto, resyncIntervalMs: 3_600_000, ...(socket !== undefined ? { routeSocket: socket } : {}) }
  if (process.argv.includes('--warm')) {
    const warm = new RouteReconciler({ ...opts, table: WARM_TABLE, monitor: false })
    warm.setDesired(new Map([...desired.routes].map(([k, r]) => [k, { ...r, table: WARM_TABLE }])))
    const w = await warm.start()
    await warm.stop()
    if (w.errors.length > 0) throw new Error(`felix warm-up: ${w.errors.length} route errors, first: ${w.errors[0]?.message}`)
  }
  const rec = new RouteReconciler(opts)
  rec.setDesired(desired.routes)
  const t1 = performance.now()
  const res = await rec.start()
  const applyMs = performance.now() - t1
  await rec.stop()
  if (res.errors.length > 0) throw new Error(`felix: ${res.errors.length} route errors, first: ${res.errors[0]?.message}`)
  const t2 = performance.now()
  const noop = await rec.resync()
  const noopMs = performance.now() - t2
  if (noop.planned !== 0) throw new Error(`felix: no-op resync planned ${noop.planned} ops`)
  const t3 = performance.now()
  const known = await rec.apply()
  const knownNoopMs = performance.now() - t3
  if (known.planned !== 0) throw new Error(`felix: no-op apply planned ${known.planned} ops`)
  socket?.close()
  const out: FelixFigures = { renderMs, applyMs, readMs: res.readMs, noopMs, knownNoopMs, via: socket !== undefined ? 'netlink' : 'ip' }
  process.stdout.write(JSON.stringify(out) + '\n')
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`)
  process.exitCode = 1
})
