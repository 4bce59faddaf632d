// Run by stream-resync.test.ts inside a node namespace, as pinto-node runs felix: a desired table of learned
// routes of one family (one hop, ECMP, a metric, a blackhole over a learned block) written through the route
// socket, then, on each line of stdin, one resync; a line `churn` instead changes most of the table (new
// metrics, other hops, withdrawals) and applies it, a batch at a time. It prints one JSON line per apply:
// what it planned, how many routes the read kept as objects (the rest were matched in the dump), whether
// `ip` read the table instead, and after a churn the table's routes as `ip route replace` lines.

import { createInterface } from 'node:readline'
import { DesiredTable, renderDesired, RouteReconciler, type HopSource, type LearnedNextHop } from '../../felix/index.js'
import { replaceLine } from '../../felix/kernel-route.js'
import { RouteSocket } from '../../felix/route-socket.js'
import { countingRunner, pool, PROTO } from './lab.js'

const COUNT = Number(process.argv[2] ?? 300)
const V6 = process.argv[3] === '6'
const socket = await RouteSocket.open()
if (socket instanceof Error) {
  process.stderr.write(`route socket: ${socket.message}\n`)
  process.exit(2)
}
let kept = -1
const readTable = socket.readTable.bind(socket)
socket.readTable = async (families, table, filter) => {
  const routes = await readTable(families, table, filter)
  kept = routes.length
  return routes
}
const { runner, ipReads: reads } = countingRunner()
const HOPS: LearnedNextHop[] = V6 ? [{ address: '2001:db8::12' }, { address: '2001:db8::13' }] : [{ address: '192.0.2.12' }, { address: '192.0.2.13' }]
const hops: HopSource = { hop: (id) => HOPS[id] }
const localNode = V6 ? { name: 'a', ipv6Address: '2001:db8::11/64', parentInterface: 'eth0' } : { name: 'a', ipv4Address: '192.0.2.11/24', parentInterface: 'eth0' }
const d = new DesiredTable({ protocol: PROTO })
d.setContext({ pools: [V6 ? pool('plain', '2001:db8:1::/48') : pool('plain', '198.18.0.0/16')], vteps: [], localNode }, hops)
// IPv4 /28s from 198.18.0.0 (IPv6 /64s from 2001:db8:1::): every tenth through both hops, every seventh with
// metric 300.
const addr6 = new Uint8Array([0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])
const set = (i: number, via: number[] | undefined, metric: number | undefined): void => {
  addr6[6] = i >> 8
  addr6[7] = i & 0xff
  const addr4 = (((198 << 24) | (18 << 16)) >>> 0) + i * 16
  if (via === undefined) {
    if (V6) d.delete(6, 0, addr6, 64)
    else d.delete(4, addr4, undefined, 28)
  } else if (V6) d.set(6, 0, addr6, 64, via, metric)
  else d.set(4, addr4, undefined, 28, via, metric)
}
for (let i = 0; i < COUNT; i++) set(i, i % 10 === 0 ? [0, 1] : [i % 2], i % 7 === 0 ? 300 : undefined)
// Every third route to metric 500 (a new key), every fifth withdrawn, the rest of every fourth to the other hop.
const churn = (): void => {
  for (let i = 0; i < COUNT; i++) {
    if (i % 5 === 0) set(i, undefined, undefined)
    else if (i % 3 === 0) set(i, [i % 2], 500)
    else if (i % 4 === 1) set(i, [(i + 1) % 2], i % 7 === 0 ? 300 : undefined)
  }
}
d.setFixed(renderDesired({ pools: [], routes: [], localBlocks: [V6 ? '2001:db8:1:2::/64' : '198.18.0.32/28'], vteps: [], localNode }, { protocol: PROTO }).routes)
// From 50 changes an apply goes a batch of 64 at a time: a churn of the table runs as a table arriving does.
const rec = new RouteReconciler({ runner, protocol: PROTO, routeSocket: socket, monitor: false, retryMs: 600_000, resyncIntervalMs: 600_000, streamMinChanges: 50, streamBatch: 64 })
rec.setDesired(d, new Set())
const report = (r: { planned: number; errors: readonly unknown[] }, lines?: string[]): void => {
  process.stdout.write(JSON.stringify({ planned: r.planned, errors: r.errors.length, kept, ipReads: reads(), socketError: socket.error?.message ?? null, ...(lines !== undefined ? { lines } : {}) }) + '\n')
}
report(await rec.start())
for await (const line of createInterface({ input: process.stdin })) {
  if (line !== 'churn') {
    report(await rec.resync())
    continue
  }
  churn()
  report(await rec.apply(), [...d.values()].map(replaceLine).sort())
}
await rec.stop()
socket.close()
