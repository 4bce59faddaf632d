// felix's kernel nexthop objects: the pure registry (ids, groups, adoption, sweep, echo) from tables, and on a
// real kernel: routes go through objects, an object deleted by hand is made again with its routes, unused
// objects go at the next resync, and routes whose object cannot be made report their own error.

import t from 'tap'
import { execa } from 'execa'
import { createTopology } from '../harness/netns.js'
import { waitFor } from '../harness/wait.js'
import { ExecaRunner, renderDesired, RouteReconciler, type DesiredState, type KernelRoute } from '../../felix/index.js'
import { NEXTHOP_ID_BASE, NexthopRegistry, parseNexthopJson, parseNexthopMonitorLine } from '../../felix/nexthops.js'
import { ourRoutes, pool, PROTO } from './lab.js'

const route = (dst: string, ...hops: [string, string, boolean?][]): KernelRoute => ({
  family: 4, table: 254, dst, tos: 0, metric: 0, type: 'unicast', protocol: PROTO,
  nexthops: hops.map(([gateway, dev, onlink]) => ({ gateway, dev, onlink: onlink ?? false })),
})

t.test('registry: one object per hop, one group per set, ids above every taken one', async (t) => {
  const reg = new NexthopRegistry(PROTO)
  reg.load(parseNexthopJson(JSON.stringify([
    { id: NEXTHOP_ID_BASE, gateway: '192.0.2.99', dev: 'eth0', protocol: 'zebra', flags: [] },
    { id: 7, gateway: '192.0.2.12', dev: 'eth0', protocol: '87', flags: [] },
  ])))
  const create: string[] = []
  t.equal(reg.idFor(route('198.18.0.0/26', ['192.0.2.12', 'eth0']), create), 7, 'an object of ours in the kernel is adopted')
  const b = reg.idFor(route('198.18.0.64/26', ['192.0.2.13', 'eth0', true]), create)
  t.equal(b, NEXTHOP_ID_BASE + 1, 'a new id skips one another owner holds')
  const g = reg.idFor(route('198.18.0.128/26', ['192.0.2.13', 'eth0', true], ['192.0.2.12', 'eth0']), create)
  t.equal(reg.idFor(route('198.18.1.0/26', ['192.0.2.12', 'eth0'], ['192.0.2.13', 'eth0', true]), create), g, 'the same set in another order: the same group')
  t.same(create, [
    `nexthop replace id ${b} via 192.0.2.13 dev eth0 onlink proto 87`,
    `nexthop replace id ${g} group ${b}/7 proto 87`,
  ])
  t.equal(reg.idFor({ ...route('198.18.2.0/26'), type: 'blackhole' }, create), undefined, 'a blackhole names no object')
  t.equal(reg.idFor({ ...route('198.18.3.0/26'), nexthops: [{ dev: 'eth0', onlink: false }] }, create), undefined, 'nor a device route')
  t.equal(reg.lookup(route('198.18.9.0/26', ['192.0.2.12', 'eth0'])), 7)
  t.equal(reg.lookup(route('198.18.9.0/26', ['192.0.2.14', 'eth0'])), undefined, 'lookup makes nothing')

  // Echoes: what the registry says, for its own ids.
  t.ok(reg.isEcho(parseNexthopMonitorLine(`id ${b} via 192.0.2.13 dev eth0 scope link onlink proto 87`)!))
  t.notOk(reg.isEcho(parseNexthopMonitorLine(`id ${b} via 192.0.2.99 dev eth0 scope link proto 87`)!), 'changed by hand')
  t.ok(reg.isEcho(parseNexthopMonitorLine(`id ${g} group 7/${b} proto 87`)!))
  t.notOk(reg.isEcho(parseNexthopMonitorLine(`Deleted id 7 via 192.0.2.12 dev eth0 scope link proto 87`)!), 'ours deleted by someone else')
  t.equal(parseNexthopMonitorLine('198.18.0.0/26 nhid 7 via 192.0.2.12 dev eth0 proto 87'), undefined, 'a route line is not a nexthop line')

  // The group in use keeps its members; the rest of ours goes, groups first.
  t.same(reg.sweep(new Set([g!])), [])
  t.same(reg.sweep(new Set()), [`nexthop del id ${g}`, 'nexthop del id 7', `nexthop del id ${b}`])
  t.equal(reg.size, 0)
  t.throws(() => parseNexthopJson('[{"id": 0}]'), /nexthops\[0\]\.id: expected a positive integer/)
})

function state(over: Partial<DesiredState> = {}): DesiredState {
  return {
    pools: [pool('plain', '198.18.0.0/20')],
    routes: [
      { prefix: '198.18.0.64/26', nextHops: [{ address: '192.0.2.12' }] },
      { prefix: '198.18.0.128/26', nextHops: [{ address: '192.0.2.13' }, { address: '192.0.2.12' }] },
    ],
    localBlocks: [],
    vteps: [],
    localNode: { name: 'a', ipv4Address: '192.0.2.11/24', parentInterface: 'eth0' },
    ...over,
  }
}

t.test('on a real kernel: routes through objects, repaired when an object is deleted by hand, unused ones swept', async (t) => {
  const topo = await createTopology(t)
  const a = await topo.addNode({ name: 'a', v4: '192.0.2.11/24' })
  const rec = new RouteReconciler({ runner: new ExecaRunner(), netns: a.ns, protocol: PROTO, resyncIntervalMs: 60_000 })
  t.teardown(() => rec.stop())
  rec.setDesired(renderDesired(state(), { protocol: PROTO }).routes)
  t.same((await rec.start()).errors, [])
  const routes = JSON.parse((await execa('ip', ['-n', a.ns, '-j', 'route', 'show', 'proto', String(PROTO)])).stdout) as { dst: string; nhid?: number }[]
  t.ok(routes.length === 2 && routes.every((r) => typeof r.nhid === 'number'), 'both routes name a nexthop object')
  const objects = async (): Promise<{ id: number; group?: unknown }[]> => JSON.parse((await execa('ip', ['-n', a.ns, '-j', 'nexthop', 'show', 'proto', String(PROTO)])).stdout)
  t.equal((await objects()).length, 3, 'two hops and one group')
  const want = ['route replace 198.18.0.128/26 proto 87 nexthop via 192.0.2.12 dev eth0 nexthop via 192.0.2.13 dev eth0', 'route replace 198.18.0.64/26 via 192.0.2.12 dev eth0 proto 87']
  t.same(await ourRoutes(a.ns), want)

  // Deleting an object takes its routes (and its groups') with it, without a route notification.
  const single = routes.find((r) => r.dst === '198.18.0.64/26')!.nhid!
  await execa('ip', ['-n', a.ns, 'nexthop', 'del', 'id', String(single)])
  t.ok(await waitFor(async () => JSON.stringify(await ourRoutes(a.ns)) === JSON.stringify(want), { timeoutMs: 2000, intervalMs: 50, what: 'routes back after their nexthop object was deleted' }))

  // The ECMP route goes: at the next resync its group (and the member it alone used) go too.
  rec.setDesired(renderDesired(state({ routes: [{ prefix: '198.18.0.64/26', nextHops: [{ address: '192.0.2.12' }] }] }), { protocol: PROTO }).routes)
  await rec.apply()
  await rec.resync()
  t.same((await objects()).length, 1, 'only the object still in use is left')
})

t.test('a kernel without nexthop objects (or with them turned off): routes name their hops', async (t) => {
  const topo = await createTopology(t)
  const a = await topo.addNode({ name: 'a', v4: '192.0.2.11/24' })
  const rec = new RouteReconciler({ runner: new ExecaRunner(), netns: a.ns, protocol: PROTO, monitor: false, nexthopObjects: false })
  rec.setDesired(renderDesired(state(), { protocol: PROTO }).routes)
  t.same((await rec.start()).errors, [])
  const routes = JSON.parse((await execa('ip', ['-n', a.ns, '-j', 'route', 'show', 'proto', String(PROTO)])).stdout) as { nhid?: number }[]
  t.ok(routes.length === 2 && routes.every((r) => r.nhid === undefined))
  await rec.stop()
})

t.test('a resync brought by a route line reads the routes alone; one brought by a nexthop line reads the objects too', async (t) => {
  const topo = await createTopology(t)
  const a = await topo.addNode({ name: 'a', v4: '192.0.2.11/24' })
  const real = new ExecaRunner()
  const reads = { objects: 0, routes: 0 }
  const runner: typeof real = Object.assign(Object.create(real) as typeof real, {
    run: (cmd: string, args: readonly string[], opts?: Parameters<typeof real.run>[2]) => {
      if (args.includes('nexthop') && args.includes('show')) reads.objects++
      if (args.includes('route') && args.includes('show')) reads.routes++
      return real.run(cmd, args, opts)
    },
  })
  const rec = new RouteReconciler({ runner, netns: a.ns, protocol: PROTO, resyncIntervalMs: 60_000 })
  t.teardown(() => rec.stop())
  rec.setDesired(renderDesired(state(), { protocol: PROTO }).routes)
  t.same((await rec.start()).errors, [])
  const want = await ourRoutes(a.ns)
  const before = { ...reads }
  // A route of felix's protocol that felix did not write: removed at the resync it brings, the objects not read.
  await execa('ip', ['-n', a.ns, 'route', 'add', '198.18.9.0/26', 'via', '192.0.2.12', 'dev', 'eth0', 'proto', String(PROTO)])
  t.ok(await waitFor(async () => JSON.stringify(await ourRoutes(a.ns)) === JSON.stringify(want), { timeoutMs: 5000, intervalMs: 50, what: 'the stray route removed' }))
  t.ok(reads.routes > before.routes, 'the route line brought a read of the routes')
  t.equal(reads.objects, before.objects, 'and no read of the nexthop objects')
  // An object deleted by hand: its line brings a read of the objects too, and the routes come back.
  const nhid = (JSON.parse((await execa('ip', ['-n', a.ns, '-j', 'route', 'show', 'proto', String(PROTO)])).stdout) as { nhid?: number }[]).find((r) => r.nhid !== undefined)!.nhid!
  await execa('ip', ['-n', a.ns, 'nexthop', 'del', 'id', String(nhid)])
  t.ok(await waitFor(async () => reads.objects > before.objects && JSON.stringify(await ourRoutes(a.ns)) === JSON.stringify(want), { timeoutMs: 5000, intervalMs: 50, what: 'routes back, the objects read again' }))
})
