// felix writing through its rtnetlink route socket on a real kernel, as pinto-node runs it: in a process
// inside the node's namespace (route-socket-child.ts). Every form felix writes (through nexthop objects and
// groups, and without them: gateway and device, ECMP through ip, blackholes), changes and deletes, read back
// both by the reconciler (over the socket's dump, in a resync with nothing to do) and here with `ip -json`,
// line by line; a route the kernel refuses is reported on its own while the rest go in.

import t from 'tap'
import { execa } from 'execa'
import { fileURLToPath } from 'node:url'
import { createTopology, type NetNode, type Teardown } from '../harness/netns.js'
import type { DesiredState } from '../../felix/index.js'
import { ourRoutes, pool, PROTO } from './lab.js'
import { waitFor } from '../harness/wait.js'

const CHILD = fileURLToPath(new URL('route-socket-child.js', import.meta.url))

function state(routes: DesiredState['routes'], blocks = ['198.18.0.0/26']): DesiredState {
  return {
    pools: [pool('plain', '198.18.0.0/20'), pool('ipip', '198.18.16.0/20', { ipipMode: 'Always' })],
    routes,
    localBlocks: blocks,
    vteps: [],
    localNode: { name: 'a', ipv4Address: '192.0.2.11/24', parentInterface: 'eth0' },
  }
}

const FIRST = state([
  { prefix: '198.18.0.64/26', nextHops: [{ address: '192.0.2.12' }] },
  { prefix: '198.18.0.128/26', nextHops: [{ address: '192.0.2.13' }, { address: '192.0.2.12' }] },
  { prefix: '198.18.1.7/32', nextHops: [{ address: '192.0.2.13' }] },
])
const FIRST_LINES = [
  'route replace 198.18.0.128/26 proto 87 nexthop via 192.0.2.12 dev eth0 nexthop via 192.0.2.13 dev eth0',
  'route replace 198.18.0.64/26 via 192.0.2.12 dev eth0 proto 87',
  'route replace 198.18.1.7/32 via 192.0.2.13 dev eth0 proto 87',
  'route replace blackhole 198.18.0.0/26 proto 87',
]
// One gone, the ECMP set down to one hop, a gateway changed, a second block.
const SECOND = state(
  [
    { prefix: '198.18.0.128/26', nextHops: [{ address: '192.0.2.13' }] },
    { prefix: '198.18.1.7/32', nextHops: [{ address: '192.0.2.14' }] },
  ],
  ['198.18.0.0/26', '198.18.2.0/26'],
)
const SECOND_LINES = [
  'route replace 198.18.0.128/26 via 192.0.2.13 dev eth0 proto 87',
  'route replace 198.18.1.7/32 via 192.0.2.14 dev eth0 proto 87',
  'route replace blackhole 198.18.0.0/26 proto 87',
  'route replace blackhole 198.18.2.0/26 proto 87',
]

interface Step {
  planned: number
  errors: { op: string; dst: string; message: string }[]
  resyncPlanned: number
  socketError: string | null
  /** Reads of the table through `ip route show`: none while the socket works. */
  ipReads: number
}

async function run(a: NetNode, states: DesiredState[], nexthopObjects: boolean): Promise<Step[]> {
  const r = await execa('ip', ['netns', 'exec', a.ns, process.execPath, CHILD], { input: JSON.stringify({ states, nexthopObjects, protocol: PROTO }), reject: false, timeout: 60_000 })
  if (r.exitCode !== 0) throw new Error(`route socket child exited ${r.exitCode}: ${String(r.stderr)}${r.failed && r.exitCode === undefined ? r.message : ''}`)
  return String(r.stdout).trim().split('\n').map((l) => JSON.parse(l) as Step)
}

async function node(t: Teardown): Promise<NetNode> {
  const topo = await createTopology(t)
  return topo.addNode({ name: 'a', v4: '192.0.2.11/24' })
}

for (const nexthopObjects of [true, false]) {
  t.test(`every form, changes and deletes, ${nexthopObjects ? 'through nexthop objects' : 'naming their hops'}`, async (t) => {
    const a = await node(t)
    const [first, second] = await run(a, [FIRST], nexthopObjects)
    t.same(first, { planned: 4, errors: [], resyncPlanned: 0, socketError: null, ipReads: 0 }, 'written; read back, nothing left to do')
    t.equal(second, undefined)
    t.same(await ourRoutes(a.ns), FIRST_LINES)
    if (nexthopObjects) {
      const ids = JSON.parse(String((await execa('ip', ['-n', a.ns, '-j', 'route', 'show', 'proto', String(PROTO)])).stdout)) as { dst: string; nhid?: number }[]
      t.ok(ids.filter((r) => r.dst !== '198.18.0.0/26').every((r) => r.nhid !== undefined), 'routes through a gateway name their object')
    }
    const steps = await run(a, [SECOND], nexthopObjects)
    t.same(steps, [{ planned: 4, errors: [], resyncPlanned: 0, socketError: null, ipReads: 0 }], 'a fresh start: one delete, three replaces (one new)')
    t.same(await ourRoutes(a.ns), SECOND_LINES)
  })
}

t.test('a route the kernel cannot take is reported on its own; the rest go in (IPIP without tunl0)', async (t) => {
  const a = await node(t)
  const bad = state([...FIRST.routes, { prefix: '198.18.16.64/26', nextHops: [{ address: '192.0.2.12' }] }])
  for (const nexthopObjects of [true, false]) {
    const [step] = await run(a, [bad], nexthopObjects)
    t.equal(step?.errors.length, 1, `one error (nexthop objects ${nexthopObjects})`)
    t.match(step?.errors[0], { op: 'replace', dst: '198.18.16.64/26', message: /tunl0/ })
    t.equal(step?.socketError, null, 'a refused route does not take the socket down')
    t.same(await ourRoutes(a.ns), FIRST_LINES, 'the other four are in')
  }
})

t.test('a gateway off every link: the kernel refuses it through the socket, and says why', async (t) => {
  const a = await node(t)
  const off = state([...FIRST.routes, { prefix: '198.18.3.0/26', nextHops: [{ address: '203.0.113.9' }] }])
  const [step] = await run(a, [off], false)
  t.equal(step?.errors.length, 1)
  t.match(step?.errors[0], { dst: '198.18.3.0/26', message: /^netlink: ENETUNREACH/ })
  t.comment(step?.errors[0]?.message ?? '')
  t.same(await ourRoutes(a.ns), FIRST_LINES)
})

t.test('a large write in many chunks: each refusal is mapped back to its own route', async (t) => {
  const a = await node(t)
  const good = Array.from({ length: 3000 }, (_, i) => ({ prefix: `198.18.${4 + (i >> 8)}.${i & 255}/32`, nextHops: [{ address: '192.0.2.12' }] }))
  // Every 97th route through a gateway off every link: refused, each in whichever chunk it falls.
  const bad = new Set<string>()
  const routes = good.map((r, i) => {
    if (i % 97 !== 5) return r
    bad.add(r.prefix)
    return { prefix: r.prefix, nextHops: [{ address: '203.0.113.9' }] }
  })
  const [step] = await run(a, [state(routes)], false)
  t.equal(step?.errors.length, bad.size, `${bad.size} refused`)
  t.same(new Set(step?.errors.map((e) => e.dst)), bad, 'the refused ones, by their own prefixes')
  t.equal(step?.resyncPlanned, bad.size, 'the rest are in: only the refused ones are still to do')
  const lines = await ourRoutes(a.ns)
  t.equal(lines.length, 3000 - bad.size + 1, 'every other route and the blackhole')
})

t.test('a write of 12,000 routes, every one refused: each refusal is answered and reported, and the socket stays up', async (t) => {
  const a = await node(t)
  // Far more answers than the receive buffer holds at once: a lost answer would fail the socket.
  const routes = Array.from({ length: 12_000 }, (_, i) => ({ prefix: `198.19.${i >> 8}.${i & 255}/32`, nextHops: [{ address: '203.0.113.9' }] }))
  const [step] = await run(a, [state([...FIRST.routes, ...routes])], false)
  t.equal(step?.socketError, null, 'no answer was lost')
  t.equal(step?.errors.length, routes.length, 'each refused')
  t.ok(step?.errors.every((e) => /^netlink: ENETUNREACH/.test(e.message)), 'each for its own reason')
  t.same(await ourRoutes(a.ns), FIRST_LINES, 'the routes that could go in are in')
})

t.test('drift: a route deleted or changed by hand is written back through the socket within 2 s', async (t) => {
  const a = await node(t)
  const child = execa('ip', ['netns', 'exec', a.ns, process.execPath, CHILD], { input: JSON.stringify({ states: [FIRST], nexthopObjects: true, protocol: PROTO, hold: true }), reject: false })
  t.teardown(() => {
    child.kill('SIGTERM')
    return child
  })
  let out = ''
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()))
  await waitFor(() => out.includes('\n'), { timeoutMs: 30_000, what: 'the child applied its state' })
  t.match(JSON.parse(out.split('\n')[0] as string), { errors: [], resyncPlanned: 0 })
  const back = (what: string) => waitFor(async () => JSON.stringify(await ourRoutes(a.ns)) === JSON.stringify(FIRST_LINES), { timeoutMs: 2000, intervalMs: 50, what })
  await execa('ip', ['-n', a.ns, 'route', 'del', '198.18.0.64/26', 'proto', String(PROTO)])
  await back('a deleted route restored')
  await execa('ip', ['-n', a.ns, 'route', 'replace', '198.18.1.7/32', 'via', '192.0.2.99', 'dev', 'eth0', 'proto', String(PROTO)])
  await back('a changed route restored')
  t.pass('both restored within 2 s')
  child.kill('SIGTERM')
  t.equal((await child).exitCode, 0, 'the child stopped cleanly')
  t.same(await ourRoutes(a.ns), FIRST_LINES, 'stopping leaves the routes in place')
})

t.test('IPv6: routes through a gateway and blackholes, written and read back', async (t) => {
  const dual: DesiredState = {
    pools: [pool('v4', '198.18.0.0/20'), pool('v6', '2001:db8:1::/48')],
    routes: [
      { prefix: '198.18.0.64/26', nextHops: [{ address: '192.0.2.12' }] },
      { prefix: '2001:db8:1:0:1::/122', nextHops: [{ address: '2001:db8::12' }] },
      { prefix: '2001:db8:1:0:2::/122', nextHops: [{ address: '2001:db8::13' }, { address: '2001:db8::12' }] },
    ],
    localBlocks: ['198.18.0.0/26', '2001:db8:1::/122'],
    vteps: [],
    localNode: { name: 'a', ipv4Address: '192.0.2.11/24', ipv6Address: '2001:db8::11/64', parentInterface: 'eth0' },
  }
  for (const nexthopObjects of [true, false]) {
    const topo = await createTopology(t)
    const a = await topo.addNode({ name: 'a', v4: '192.0.2.11/24', v6: '2001:db8::11/64' })
    const [step] = await run(a, [dual], nexthopObjects)
    t.same(step, { planned: 5, errors: [], resyncPlanned: 0, socketError: null, ipReads: 0 }, `written and read back (nexthop objects ${nexthopObjects})`)
    t.same(await ourRoutes(a.ns, 6), [
      'route replace 2001:db8:1:0:1::/122 via 2001:db8::12 dev eth0 proto 87',
      'route replace 2001:db8:1:0:2::/122 proto 87 nexthop via 2001:db8::12 dev eth0 nexthop via 2001:db8::13 dev eth0',
      'route replace blackhole 2001:db8:1::/122 proto 87',
    ])
  }
})

t.test('VXLAN routes (a device by index, onlink) and CrossSubnet routes through the socket', async (t) => {
  const vx: DesiredState = {
    pools: [pool('vx', '198.18.48.0/20', { vxlanMode: 'Always' }), pool('vxx', '198.18.64.0/20', { vxlanMode: 'CrossSubnet' })],
    routes: [
      { prefix: '198.18.48.64/26', nextHops: [{ nodeName: 'b', address: '192.0.2.12' }] },
      { prefix: '198.18.64.64/26', nextHops: [{ nodeName: 'b', address: '192.0.2.12' }] },
      { prefix: '198.18.64.128/26', nextHops: [{ nodeName: 'c', address: '198.51.100.13' }] },
    ],
    localBlocks: [],
    vteps: [
      { nodeName: 'b', nodeAddress: '192.0.2.12', tunnelAddress: '198.18.48.65', mac: '66:00:00:00:00:02' },
      { nodeName: 'c', nodeAddress: '198.51.100.13', tunnelAddress: '198.18.48.129', mac: '66:00:00:00:00:03' },
    ],
    localNode: { name: 'a', ipv4Address: '192.0.2.11/24', parentInterface: 'eth0' },
  }
  for (const nexthopObjects of [true, false]) {
    const a = await node(t)
    // The device felix would make; only its index matters here.
    await execa('ip', ['-n', a.ns, 'link', 'add', 'vxlan.pinto', 'type', 'vxlan', 'id', '4096', 'dstport', '4789', 'dev', 'eth0'])
    await execa('ip', ['-n', a.ns, 'link', 'set', 'vxlan.pinto', 'up'])
    const [step] = await run(a, [vx], nexthopObjects)
    t.same(step, { planned: 3, errors: [], resyncPlanned: 0, socketError: null, ipReads: 0 }, `written and read back (nexthop objects ${nexthopObjects})`)
    t.same(await ourRoutes(a.ns), [
      'route replace 198.18.48.64/26 via 198.18.48.65 dev vxlan.pinto onlink proto 87',
      'route replace 198.18.64.128/26 via 198.18.48.129 dev vxlan.pinto onlink proto 87',
      'route replace 198.18.64.64/26 via 192.0.2.12 dev eth0 onlink proto 87',
    ])
  }
})
