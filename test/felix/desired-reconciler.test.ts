// The reconciler over felix's incremental desired table, on a real kernel: after the first full apply, a
// change to a few learned routes (new, ECMP, metric, withdrawn) is written as exactly those operations
// without walking the table; changes that arrive while a full resync reads the kernel, or while a write
// runs, are in the kernel after the next apply; the kernel always ends equal to the table.

import t from 'tap'
import { createTopology, type NetNode, type Teardown } from '../harness/netns.js'
import { DesiredTable, ExecaRunner, RouteReconciler, renderDesired, type HopSource, type RouteReconcilerOptions, type KernelRoute, type LearnedNextHop, type ProcessRunner, type RunOptions, type RunResult } from '../../felix/index.js'
import { replaceLine } from '../../felix/kernel-route.js'
import { ourRoutes, pool, PROTO } from './lab.js'

const HOPS: LearnedNextHop[] = [{ address: '192.0.2.12' }, { address: '192.0.2.13' }]
const hops: HopSource = { hop: (id) => HOPS[id] }
const localNode = { name: 'a', ipv4Address: '192.0.2.11/24', parentInterface: 'eth0' }
const net = (i: number): number => (((198 << 24) | (18 << 16) | (i << 6)) >>> 0) // 198.18.0.0/26, .64/26, ...

/** A desired table that counts its full walks. */
class CountingTable extends DesiredTable {
  walks = 0
  override *[Symbol.iterator](): IterableIterator<readonly [string, KernelRoute]> {
    this.walks++
    yield* super[Symbol.iterator]()
  }
}

/** Runs `ip` for real; `onBatch` runs once, when the first write starts. */
class HookRunner implements ProcessRunner {
  private readonly real = new ExecaRunner()
  onBatch: (() => void) | undefined
  batches = 0
  run(cmd: string, args: readonly string[], opts?: RunOptions): Promise<RunResult> {
    if (args.includes('-batch')) this.batches++
    if (args.includes('-batch') && this.onBatch !== undefined) {
      const hook = this.onBatch
      this.onBatch = undefined
      hook()
    }
    return this.real.run(cmd, args, opts)
  }
  watch(...args: Parameters<ProcessRunner['watch']>): ReturnType<ProcessRunner['watch']> {
    return this.real.watch(...args)
  }
}

async function node(t: Teardown): Promise<NetNode> {
  const topo = await createTopology(t)
  return topo.addNode({ name: 'a', v4: '192.0.2.11/24' })
}

function setup(t: Teardown, a: NetNode, runner: ProcessRunner = new ExecaRunner(), more: Partial<RouteReconcilerOptions> = {}): { d: CountingTable; rec: RouteReconciler } {
  const d = new CountingTable({ protocol: PROTO })
  d.setContext({ pools: [pool('plain', '198.18.0.0/16')], vteps: [], localNode }, hops)
  const rec = new RouteReconciler({ runner, netns: a.ns, protocol: PROTO, resyncIntervalMs: 600_000, monitor: false, ...more })
  t.teardown(() => rec.stop())
  rec.setDesired(d)
  return { d, rec }
}

const tableLines = (d: DesiredTable): string[] => [...d.values()].map(replaceLine).sort()

t.test('after the first apply, a few changes are written as exactly those operations, with no walk', async (t) => {
  const a = await node(t)
  const { d, rec } = setup(t, a)
  for (let i = 0; i < 50; i++) d.set(4, net(i), undefined, 26, [i % 2], undefined)
  const first = await rec.start()
  t.equal(first.planned, 50, 'the first apply writes every route')
  t.same(await ourRoutes(a.ns), tableLines(d))

  d.walks = 0
  d.set(4, net(60), undefined, 26, [0], undefined) // new
  d.set(4, net(1), undefined, 26, [0, 1], undefined) // ECMP
  d.set(4, net(2), undefined, 26, [0], 512) // a metric: another key
  d.delete(4, net(3), undefined, 26) // withdrawn
  const r = await rec.apply()
  t.equal(r.planned, 5, 'new, ECMP, the metric (old key deleted, new written), withdrawn')
  t.equal(d.walks, 0, 'the table was not walked')
  t.same(r.errors, [])
  const kernel = await ourRoutes(a.ns)
  t.same(kernel, tableLines(d), 'the kernel equals the table')
  t.ok(kernel.some((l) => l.startsWith('route replace 198.18.0.64/26 proto 87 nexthop')), 'ECMP route in the kernel')
  t.ok(kernel.some((l) => l.includes('198.18.0.128/26') && l.endsWith('metric 512')), 'metric route in the kernel')
  t.notOk(kernel.some((l) => l.includes('198.18.0.128/26') && !l.endsWith('metric 512')), 'the old metric is gone')
  t.notOk(kernel.some((l) => l.includes('198.18.0.192/26')), 'withdrawn route gone')
  t.equal((await rec.apply()).planned, 0, 'nothing left to do')
})

t.test('changes during a full resync, and during a write, reach the kernel at the next apply', async (t) => {
  const a = await node(t)
  const runner = new HookRunner()
  const { d, rec } = setup(t, a, runner)
  for (let i = 0; i < 20; i++) d.set(4, net(i), undefined, 26, [0], undefined)
  await rec.start()
  // While the resync reads the kernel: the diff that follows sees the changes.
  const resync = rec.resync()
  d.set(4, net(30), undefined, 26, [1], undefined)
  d.delete(4, net(4), undefined, 26)
  await resync
  // While that write runs, another change: the write holds the routes as of its diff.
  runner.onBatch = () => {
    d.set(4, net(31), undefined, 26, [1], undefined)
    d.set(4, net(5), undefined, 26, [1], undefined)
  }
  d.set(4, net(32), undefined, 26, [0], undefined)
  await rec.apply()
  t.notOk((await ourRoutes(a.ns)).some((l) => l.includes('198.18.7.192/26')), 'the change made during the write is not in yet')
  const last = await rec.apply()
  t.equal(last.planned, 2, 'the next apply writes the two changes made during the write')
  t.same(await ourRoutes(a.ns), tableLines(d), 'the kernel equals the table')
  t.equal(d.learnedCount, 22)
})

t.test('many changes are diffed and written a batch at a time; changes made meanwhile reach the kernel next', async (t) => {
  const a = await node(t)
  const runner = new HookRunner()
  // Every apply of more than one change goes in batches of four.
  const { d, rec } = setup(t, a, runner, { streamMinChanges: 2, streamBatch: 4 })
  for (let i = 0; i < 30; i++) d.set(4, net(i), undefined, 26, [0], undefined)
  await rec.start()
  t.same(await ourRoutes(a.ns), tableLines(d))

  d.walks = 0
  runner.batches = 0
  for (let i = 30; i < 40; i++) d.set(4, net(i), undefined, 26, [1], undefined) // new
  for (let i = 0; i < 5; i++) d.set(4, net(i), undefined, 26, [0, 1], undefined) // ECMP
  for (let i = 5; i < 9; i++) d.set(4, net(i), undefined, 26, [0], 700) // a metric: the old key goes, a new one comes
  for (let i = 9; i < 14; i++) d.delete(4, net(i), undefined, 26) // withdrawn
  d.set(4, net(14), undefined, 26, [1], undefined)
  d.delete(4, net(14), undefined, 26) // changed and withdrawn before the write: one delete
  // A local block over a learned prefix: the blackhole wins.
  d.setFixed(renderDesired({ pools: [], routes: [], localBlocks: ['198.18.3.192/26'], vteps: [], localNode }, { protocol: PROTO }).routes)
  // While the first batch is written: prefixes of later batches change again (one is withdrawn before it
  // was ever written), one of the first changes back.
  runner.onBatch = () => {
    d.set(4, net(39), undefined, 26, [0], 900)
    d.delete(4, net(36), undefined, 26)
    d.set(4, net(30), undefined, 26, [0], undefined)
    d.delete(4, net(20), undefined, 26)
  }
  const r = await rec.apply()
  t.same(r.errors, [])
  t.ok(runner.batches >= 6, `written in batches (${runner.batches} ip runs)`)
  t.equal(d.walks, 0, 'the table was not walked')
  const next = await rec.apply()
  t.same(next.errors, [])
  t.equal(d.walks, 0, 'no route failed (a failure resyncs, walking the table)')
  t.same(await ourRoutes(a.ns), tableLines(d), 'the kernel equals the table')
  const kernel = await ourRoutes(a.ns)
  t.ok(kernel.includes('route replace blackhole 198.18.3.192/26 proto 87'), 'the blackhole is in')
  t.ok(kernel.some((l) => l.includes('198.18.9.192/26') && l.endsWith('metric 900')), 'the change made during the write is in')
  t.notOk(kernel.some((l) => l.includes('198.18.1.64/26 ') && !l.includes('metric 700')), 'the old metric keys are gone')
  t.equal((await rec.apply()).planned, 0, 'nothing left to do')
  t.equal((await rec.resync()).planned, 0, 'a resync finds the kernel as the table says')
})
