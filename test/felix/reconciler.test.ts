// The reconciler on a real kernel: no-encap, ECMP and blackhole routes compared with `ip -json route`;
// drift (ours deleted or changed by hand) repaired through `ip monitor` within 2 s; other protocols' routes
// in the same range untouched; per-route errors that do not block the rest; veth grace; stop keeps routes.

import t from 'tap'
import { execa } from 'execa'
import { createTopology, type NetNode, type Teardown } from '../harness/netns.js'
import { waitFor } from '../harness/wait.js'
import { ExecaRunner, RecordingRunner, renderDesired, RouteReconciler, workloadAddresses, type DesiredState, type ProcessRunner } from '../../felix/index.js'
import { ourRoutes, pool, PROTO } from './lab.js'
import { NEXTHOP_ID_BASE } from '../../felix/nexthops.js'

const ip = (ns: string, args: string[]) => execa('ip', ['-n', ns, ...args])

function state(over: Partial<DesiredState> = {}): DesiredState {
  return {
    pools: [pool('plain', '198.18.0.0/20'), pool('ipip', '198.18.16.0/20', { ipipMode: 'Always' })],
    routes: [
      { prefix: '198.18.0.64/26', nextHops: [{ address: '192.0.2.12' }] },
      { prefix: '198.18.0.128/26', nextHops: [{ address: '192.0.2.13' }, { address: '192.0.2.12' }] },
    ],
    localBlocks: ['198.18.0.0/26'],
    vteps: [],
    localNode: { name: 'a', ipv4Address: '192.0.2.11/24', parentInterface: 'eth0' },
    ...over,
  }
}

const EXPECTED = [
  'route replace 198.18.0.128/26 proto 87 nexthop via 192.0.2.12 dev eth0 nexthop via 192.0.2.13 dev eth0',
  'route replace 198.18.0.64/26 via 192.0.2.12 dev eth0 proto 87',
  'route replace blackhole 198.18.0.0/26 proto 87',
]

async function node(t: Teardown): Promise<NetNode> {
  const topo = await createTopology(t)
  return topo.addNode({ name: 'a', v4: '192.0.2.11/24' })
}

function reconciler(t: Teardown, a: NetNode, s: DesiredState, opts: Partial<ConstructorParameters<typeof RouteReconciler>[0]> = {}): RouteReconciler {
  const rec = new RouteReconciler({ runner: new ExecaRunner(), netns: a.ns, protocol: PROTO, ...opts })
  t.teardown(() => rec.stop())
  rec.setDesired(renderDesired(s, { protocol: PROTO }).routes, workloadAddresses(s))
  return rec
}

t.test('routes match, drift is repaired via the monitor, other protocols are left alone, stop keeps routes', async (t) => {
  const a = await node(t)
  // Another protocol's routes in our range, one a key-level twin of nothing we want, one covering the range.
  await ip(a.ns, ['route', 'add', '198.18.0.192/26', 'via', '192.0.2.14', 'proto', 'static'])
  await ip(a.ns, ['route', 'add', '198.18.0.0/15', 'via', '192.0.2.1', 'proto', 'bird'])
  const rec = reconciler(t, a, state(), { resyncIntervalMs: 60_000 })
  const first = await rec.start()
  t.equal(first.planned, 3)
  t.same(await ourRoutes(a.ns), EXPECTED)
  t.same((await rec.apply()).planned, 0, 'a second apply has nothing to do')

  const restored = async (what: string) =>
    waitFor(async () => JSON.stringify(await ourRoutes(a.ns)) === JSON.stringify(EXPECTED), { timeoutMs: 2000, intervalMs: 50, what })
  await ip(a.ns, ['route', 'del', '198.18.0.64/26', 'proto', String(PROTO)])
  t.ok(await restored('a deleted route restored'), 'deleted by hand: back within 2 s')
  await ip(a.ns, ['route', 'replace', '198.18.0.64/26', 'via', '192.0.2.99', 'dev', 'eth0', 'proto', String(PROTO)])
  t.ok(await restored('a changed route restored'), 'changed by hand: back within 2 s')
  await ip(a.ns, ['route', 'add', '198.18.1.0/26', 'via', '192.0.2.12', 'proto', String(PROTO)])
  t.ok(await restored('a stray route of ours removed'), 'a route with our protocol that we do not want: removed')

  const others = await execa('ip', ['-n', a.ns, 'route', 'show', 'table', '254'])
  t.match(others.stdout, /198\.18\.0\.192\/26 via 192\.0\.2\.14 dev eth0 proto static/)
  t.match(others.stdout, /198\.18\.0\.0\/15 via 192\.0\.2\.1 dev eth0 proto bird/)

  await rec.stop()
  t.same(await ourRoutes(a.ns), EXPECTED, 'stop leaves the routes in place')
  await ip(a.ns, ['route', 'del', '198.18.0.64/26', 'proto', String(PROTO)])
  await new Promise((r) => setTimeout(r, 300))
  t.equal((await ourRoutes(a.ns)).length, 2, 'and no longer repairs them after stop')
})

t.test('changes apply against the known table; its own echo starts no read; a device down and up is repaired', async (t) => {
  const a = await node(t)
  const reads: string[] = []
  // The real runner, counting table reads; the monitor is real too.
  const real = new ExecaRunner()
  const runner: ProcessRunner = {
    run(cmd, args, opts) {
      if (args.includes('route') && args.includes('show')) reads.push(args.join(' '))
      return real.run(cmd, args, opts)
    },
    watch: (cmd, args, opts) => real.watch(cmd, args, opts),
  }
  const rec = new RouteReconciler({ runner, netns: a.ns, protocol: PROTO, resyncIntervalMs: 60_000 })
  t.teardown(() => rec.stop())
  rec.setDesired(renderDesired(state(), { protocol: PROTO }).routes, workloadAddresses(state()))
  await rec.start()
  t.equal(reads.length, 1, 'start reads the table once')
  const more = state({ routes: [...state().routes, { prefix: '198.18.0.192/26', nextHops: [{ address: '192.0.2.14' }] }] })
  rec.setDesired(renderDesired(more, { protocol: PROTO }).routes, workloadAddresses(more))
  const res = await rec.apply()
  t.equal(res.planned, 1)
  t.equal(reads.length, 1, 'a desired-state change is applied without reading the kernel again')
  await new Promise((r) => setTimeout(r, 300))
  t.equal(reads.length, 1, 'the monitor recognised its own write and started no resync')
  t.match((await execa('ip', ['-n', a.ns, 'route', 'show', '198.18.0.192/26'])).stdout, /via 192\.0\.2\.14 dev eth0 proto 87/)

  // The kernel drops routes through a device that goes down without a route notification; felix sees the link.
  await ip(a.ns, ['link', 'set', 'eth0', 'down'])
  await ip(a.ns, ['link', 'set', 'eth0', 'up'])
  const want = [...EXPECTED, 'route replace 198.18.0.192/26 via 192.0.2.14 dev eth0 proto 87'].sort()
  t.ok(
    await waitFor(async () => JSON.stringify((await ourRoutes(a.ns)).sort()) === JSON.stringify(want), { timeoutMs: 2000, intervalMs: 50, what: 'routes back after eth0 down and up' }),
    'routes through eth0 are back within 2 s of it coming up',
  )
  t.ok(reads.length > 1, 'by reading the kernel again')
})

t.test('a bad route is reported per route and does not block the rest (IPIP routes without tunl0)', async (t) => {
  const a = await node(t)
  const s = state({ routes: [...state().routes, { prefix: '198.18.16.64/26', nextHops: [{ address: '192.0.2.12' }] }] })
  const rec = reconciler(t, a, s, { monitor: false, retryMs: 60_000 })
  const res = await rec.start()
  t.equal(res.planned, 4)
  t.equal(res.errors.length, 1)
  t.match(res.errors[0], { op: { op: 'replace', route: { dst: '198.18.16.64/26' } }, message: /Cannot find device "tunl0"/ })
  t.ok(rec.errors.has('254 198.18.16.64/26 0 0'), 'kept by route key for the API')
  t.same(await ourRoutes(a.ns), EXPECTED, 'the other three routes are in')
})

t.test('a large write over two ip processes: each failure is mapped back to its own route', async (t) => {
  const a = await node(t)
  const good = Array.from({ length: 3000 }, (_, i) => ({ prefix: `198.18.${4 + (i >> 8)}.${i & 255}/32`, nextHops: [{ address: '192.0.2.12' }] }))
  // A gateway off every link: the kernel refuses its nexthop object, then each route through it, line by line.
  const bad = (n: number) => ({ prefix: `198.18.${n + 1}.0/26`, nextHops: [{ address: '203.0.113.1' }] })
  // Bad routes at the start, in the middle and at the end of the diff, so both writers get some.
  const routes = [bad(0), ...good.slice(0, 1500), bad(1), ...good.slice(1500), bad(2)]
  const batches: number[] = []
  const real = new ExecaRunner()
  const runner: ProcessRunner = {
    run: (cmd, args, o) => {
      if (args.includes('-batch')) batches.push(batches.length)
      return real.run(cmd, args, o)
    },
    watch: (cmd, args, o) => real.watch(cmd, args, o),
  }
  const rec = reconciler(t, a, state({ routes }), { monitor: false, retryMs: 60_000, runner })
  const res = await rec.start()
  t.equal(res.planned, 3004)
  t.equal(batches.length, 3, 'two writers, then one per-route retry pass for the three failures')
  t.same(res.errors.map((e) => e.op.route.dst).sort(), ['198.18.1.0/26', '198.18.2.0/26', '198.18.3.0/26'])
  t.ok(res.errors.every((e) => /invalid gateway/i.test(e.message)), 'each with its own error')
  const ours = await ourRoutes(a.ns)
  t.equal(ours.filter((l) => / 198\.18\.([4-9]|1[0-5])\.\d+\/32 /.test(l)).length, 3000, 'every good route is in')
})

t.test('a large write pauses the monitor and starts it again, with no read of the table after', async (t) => {
  const a = await node(t)
  const routes = Array.from({ length: 3000 }, (_, i) => ({ prefix: `198.18.${4 + (i >> 8)}.${i & 255}/32`, nextHops: [{ address: '192.0.2.12' }] }))
  const calls: string[] = []
  const real = new ExecaRunner()
  const runner: ProcessRunner = {
    run: (cmd, args, o) => {
      if (args.includes('route') && args.includes('show')) calls.push('read')
      return real.run(cmd, args, o)
    },
    watch: (cmd, args, o) => {
      calls.push('monitor')
      return real.watch(cmd, args, o)
    },
  }
  const rec = reconciler(t, a, state({ routes }), { resyncIntervalMs: 60_000, runner })
  const first = await rec.start()
  t.equal(first.planned, 3001, 'the 3000 routes and the local block')
  t.same(calls, ['monitor', 'read'], 'the monitor was stopped for the write')
  // Started again a moment after it, unless another large write follows (a table comes in several).
  await waitFor(() => calls.length === 3, { timeoutMs: 2000, intervalMs: 10, what: 'the monitor started again' })
  t.same(calls, ['monitor', 'read', 'monitor'], 'the monitor was started again after the write')
  // What the monitor missed waits for the periodic resync (60 s here): the next apply reads nothing.
  t.equal((await rec.apply()).planned, 0, 'nothing left to write')
  t.equal(calls.filter((c) => c === 'read').length, 1, 'no second read of the whole table')
  // The monitor is back: drift is repaired at once again.
  await ip(a.ns, ['route', 'del', '198.18.4.7/32', 'proto', String(PROTO)])
  t.ok(await waitFor(async () => (await ourRoutes(a.ns)).some((l) => l.startsWith('route replace 198.18.4.7/32 ')), { timeoutMs: 2000, intervalMs: 50, what: 'the deleted route back' }))
  t.equal(calls.filter((c) => c === 'monitor').length, 2, 'one monitor since')
})

t.test('large writes in a row (a table arriving in parts) start the monitor again once, after the last', async (t) => {
  const a = await node(t)
  // The same 2,048 routes, then each through another gateway: two writes of more than QUIET_MIN_OPS.
  const part = (k: number) => Array.from({ length: 2048 }, (_, i) => ({ prefix: `198.18.${4 + (i >> 8)}.${i & 255}/32`, nextHops: [{ address: `192.0.2.${12 + k}` }] }))
  const calls: string[] = []
  const real = new ExecaRunner()
  const runner: ProcessRunner = {
    run: (cmd, args, o) => real.run(cmd, args, o),
    watch: (cmd, args, o) => {
      calls.push('monitor')
      return real.watch(cmd, args, o)
    },
  }
  const rec = reconciler(t, a, state({ routes: part(0) }), { resyncIntervalMs: 60_000, runner })
  t.equal((await rec.start()).planned, 2049, 'the routes and the local block')
  rec.setDesired(renderDesired(state({ routes: part(1) }), { protocol: PROTO }).routes)
  t.equal((await rec.apply()).planned, 2048, 'each through the other gateway, straight after')
  t.same(calls, ['monitor'], 'the monitor stayed stopped between the parts')
  await waitFor(() => calls.length === 2, { timeoutMs: 2000, intervalMs: 10, what: 'the monitor started again' })
  // The monitor is back: drift is repaired at once again.
  t.equal((await rec.apply()).planned, 0, 'nothing left to write')
  await ip(a.ns, ['route', 'del', '198.18.4.7/32', 'proto', String(PROTO)])
  t.ok(await waitFor(async () => (await ourRoutes(a.ns)).some((l) => l.startsWith('route replace 198.18.4.7/32 via 192.0.2.13 ')), { timeoutMs: 2000, intervalMs: 50, what: 'the deleted route back' }))
  t.same(calls, ['monitor', 'monitor'], 'one monitor since')
})

t.test('conflict: a key held by another protocol is left alone and reported', async (t) => {
  const a = await node(t)
  await ip(a.ns, ['route', 'add', '198.18.0.64/26', 'via', '192.0.2.14', 'proto', 'static'])
  const rec = reconciler(t, a, state(), { monitor: false })
  const res = await rec.start()
  t.match(res.conflicts, [{ desired: { dst: '198.18.0.64/26' }, holder: { protocol: 4 } }])
  const r = await execa('ip', ['-n', a.ns, 'route', 'show', '198.18.0.64/26'])
  t.match(r.stdout, /via 192\.0\.2\.14 dev eth0 proto static/)
})

t.test('veth /32s: known pods kept, unknown ones deleted after the grace period, other interfaces never', async (t) => {
  const a = await node(t)
  await ip(a.ns, ['link', 'add', 'pinto1', 'type', 'veth', 'peer', 'name', 'x1'])
  await ip(a.ns, ['link', 'add', 'other1', 'type', 'veth', 'peer', 'name', 'x2'])
  for (const l of ['pinto1', 'x1', 'other1', 'x2']) await ip(a.ns, ['link', 'set', l, 'up'])
  await ip(a.ns, ['route', 'add', '198.18.0.2/32', 'dev', 'pinto1', 'scope', 'link'])
  await ip(a.ns, ['route', 'add', '198.18.0.3/32', 'dev', 'pinto1', 'scope', 'link'])
  await ip(a.ns, ['route', 'add', '198.18.0.4/32', 'dev', 'other1', 'scope', 'link'])
  const rec = reconciler(t, a, state({ workloads: [{ address: '198.18.0.2' }] }), { graceMs: 400, monitor: false })
  const started = Date.now()
  await rec.start()
  const hosts = async () => (await execa('ip', ['-n', a.ns, '-4', 'route', 'show', 'scope', 'link'])).stdout
  t.match(await hosts(), /198\.18\.0\.3 dev pinto1/, 'still there inside the grace period')
  // The reconciler schedules its own resync for when the grace period ends.
  await waitFor(async () => !/198\.18\.0\.3 /.test(await hosts()), { timeoutMs: 3000, what: 'the unknown pod route to go' })
  t.ok(Date.now() - started >= 400, 'not before the grace period')
  t.match(await hosts(), /198\.18\.0\.2 dev pinto1/)
  t.match(await hosts(), /198\.18\.0\.4 dev other1/)
})

t.test('a table other than main that does not exist yet reads as empty; main must exist', async (t) => {
  const missing = { stdout: '', stderr: 'Error: ipv4: FIB table does not exist.\nDump terminated\n', exitCode: 2 }
  const rec = new RecordingRunner((c) => (c.args.includes('show') ? missing : { stdout: '', stderr: '', exitCode: 0 }))
  const routes = new Map([...renderDesired(state(), { protocol: PROTO }).routes].map(([k, r]) => [k, { ...r, table: 200 }]))
  const r = new RouteReconciler({ runner: rec, netns: 'n1', protocol: PROTO, table: 200, monitor: false, nexthopObjects: false })
  r.setDesired(routes)
  const res = await r.apply()
  t.equal(res.planned, 3, 'everything to write')
  t.equal(rec.lines()[1], '[n1] ip -force -batch -')
  const main = new RouteReconciler({ runner: rec, netns: 'n1', protocol: PROTO, monitor: false, nexthopObjects: false })
  await t.rejects(main.apply(), /FIB table does not exist/, 'the main table missing is a real error')
})

t.test('exact commands, through a recording runner', async (t) => {
  const rec = new RecordingRunner((c) => ({ stdout: c.args.includes('show') ? '[]' : '', stderr: '', exitCode: 0 }))
  const r = new RouteReconciler({ runner: rec, netns: 'n1', protocol: PROTO, monitor: false, nexthopObjects: false })
  r.setDesired(renderDesired(state(), { protocol: PROTO }).routes)
  await r.apply()
  t.same(rec.lines(), ['[n1] ip -N -json -4 route show table 254', '[n1] ip -force -batch -'])
  t.same(rec.calls[1]?.input?.split('\n').filter((l) => l !== '').sort(), [...EXPECTED].sort())
  t.throws(() => r.setDesired(renderDesired(state(), { protocol: 12 }).routes), /owns table 254 proto 87/)
})

t.test('exact commands with nexthop objects: one per hop, a group per ECMP set, made before the routes in one script', async (t) => {
  const rec = new RecordingRunner((c) => ({ stdout: c.args.includes('show') ? '[]' : '', stderr: '', exitCode: 0 }))
  const r = new RouteReconciler({ runner: rec, netns: 'n1', protocol: PROTO, monitor: false })
  r.setDesired(renderDesired(state(), { protocol: PROTO }).routes)
  await r.apply()
  t.same(rec.lines(), ['[n1] ip -N -json nexthop show', '[n1] ip -N -json -4 route show table 254', '[n1] ip -force -batch -'])
  const [a, b, g] = [NEXTHOP_ID_BASE, NEXTHOP_ID_BASE + 1, NEXTHOP_ID_BASE + 2]
  const lines = rec.calls[2]?.input?.split('\n').filter((l) => l !== '') ?? []
  t.same(lines.slice(0, 3), [
    `nexthop replace id ${a} via 192.0.2.12 dev eth0 proto 87`,
    `nexthop replace id ${b} via 192.0.2.13 dev eth0 proto 87`,
    `nexthop replace id ${g} group ${a}/${b} proto 87`,
  ])
  t.same(lines.slice(3).sort(), [
    `route replace 198.18.0.128/26 nhid ${g} proto 87`,
    `route replace 198.18.0.64/26 nhid ${a} proto 87`,
    'route replace blackhole 198.18.0.0/26 proto 87',
  ])
})

t.test('start asks the kernel for its nexthop objects once, and the first read uses that answer', async (t) => {
  const rec = new RecordingRunner((c) => ({ stdout: c.args.includes('show') ? '[]' : '', stderr: '', exitCode: 0 }))
  const r = new RouteReconciler({ runner: rec, netns: 'n1', protocol: PROTO, monitor: false, resyncIntervalMs: 60_000 })
  r.setDesired(renderDesired(state(), { protocol: PROTO }).routes)
  await r.start()
  await r.stop()
  t.same(rec.lines(), ['[n1] ip -N -json nexthop show', '[n1] ip -N -json -4 route show table 254', '[n1] ip -force -batch -'])
})
