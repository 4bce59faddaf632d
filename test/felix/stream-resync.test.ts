// felix's resync over the route socket on a real kernel, with a desired table of learned routes: the dump
// is compared route by route against the table as it is read, so only the routes that differ become
// objects; drift made by hand (a route deleted, one through another hop, one with another metric, a stale
// route of felix's protocol) is repaired, routes of other protocols are left alone; IPv6 as IPv4.

import t, { type Test } from 'tap'
import { execa } from 'execa'
import { fileURLToPath } from 'node:url'
import { createTopology } from '../harness/netns.js'
import { waitFor } from '../harness/wait.js'
import { ourRoutes, PROTO } from './lab.js'

const CHILD = fileURLToPath(new URL('stream-resync-child.js', import.meta.url))
const COUNT = 300

interface Step {
  planned: number
  errors: number
  kept: number
  ipReads: number
  socketError: string | null
}

/** The child that owns the reconciler, in namespace `ns`: each apply's result is a line; stdin's lines step it. */
function startChild(t: Test, ns: string, args: readonly string[]) {
  const child = execa('ip', ['netns', 'exec', ns, process.execPath, CHILD, ...args], { stdin: 'pipe', reject: false })
  t.teardown(() => {
    child.kill('SIGTERM')
    return child
  })
  const lines: Step[] = []
  let out = ''
  child.stdout?.on('data', (b: Buffer) => {
    out += b.toString()
    for (let i = out.indexOf('\n'); i >= 0; i = out.indexOf('\n')) {
      lines.push(JSON.parse(out.slice(0, i)) as Step)
      out = out.slice(i + 1)
    }
  })
  const step = async (n: number): Promise<Step> => {
    await waitFor(() => lines.length >= n, { timeoutMs: 30_000, what: `the child's apply ${n}` })
    return lines[n - 1]!
  }
  return { child, step }
}

t.test('a resync compares the dump against the table as it reads it, and repairs drift', async (t) => {
  const topo = await createTopology(t)
  const a = await topo.addNode({ name: 'a', v4: '192.0.2.11/24' })
  await execa('ip', ['-n', a.ns, 'neigh', 'replace', '192.0.2.12', 'lladdr', '02:00:00:00:00:12', 'dev', 'eth0'])
  const { child, step } = startChild(t, a.ns, [String(COUNT)])
  const first = await step(1)
  t.match(first, { planned: COUNT, errors: 0, socketError: null })
  const written = await ourRoutes(a.ns)
  t.equal(written.length, COUNT, 'every route in, the blackhole in place of the learned route it covers')
  t.ok(written.includes('route replace blackhole 198.18.0.32/28 proto 87'))

  child.stdin?.write('\n')
  const clean = await step(2)
  t.match(clean, { planned: 0, errors: 0, ipReads: 0 }, 'nothing to do, read over the socket')
  t.ok(clean.kept < 20, `the read kept ${clean.kept} routes as objects (the blackhole, the kernel's own), not ${COUNT}`)

  const ipn = (...args: string[]) => execa('ip', ['-n', a.ns, ...args])
  await ipn('route', 'del', '198.18.0.64/28', 'proto', String(PROTO))
  await ipn('route', 'replace', '198.18.0.80/28', 'via', '192.0.2.12', 'dev', 'eth0', 'proto', String(PROTO))
  await ipn('route', 'del', '198.18.0.112/28', 'proto', String(PROTO), 'metric', '300')
  await ipn('route', 'add', '198.18.0.112/28', 'via', '192.0.2.13', 'dev', 'eth0', 'proto', String(PROTO))
  await ipn('route', 'add', '198.18.200.0/24', 'via', '192.0.2.12', 'dev', 'eth0', 'proto', String(PROTO))
  await ipn('route', 'add', '198.18.201.0/24', 'via', '192.0.2.12', 'dev', 'eth0', 'proto', 'static')
  child.stdin?.write('\n')
  const repaired = await step(3)
  // Back: the deleted one and the one with its metric; replaced: the changed hop; deleted: the stale one
  // and the one with the wrong metric.
  t.match(repaired, { planned: 5, errors: 0, ipReads: 0 })
  t.same(await ourRoutes(a.ns), written, 'the kernel holds the table again')
  t.ok((await ipn('route', 'show', '198.18.201.0/24')).stdout.includes('proto static'), 'another protocol\'s route left alone')
  child.stdin?.write('\n')
  t.match(await step(4), { planned: 0, errors: 0 }, 'and nothing is left to do')
  child.stdin?.end()
  t.equal((await child).exitCode, 0, 'the child stopped cleanly')
})

t.test('an IPv6 resync compares the dump by its address bytes, and repairs drift', async (t) => {
  const topo = await createTopology(t)
  const a = await topo.addNode({ name: 'a', v6: '2001:db8::11/64' })
  for (const h of ['12', '13']) await execa('ip', ['-n', a.ns, '-6', 'neigh', 'replace', `2001:db8::${h}`, 'lladdr', `02:00:00:00:00:${h}`, 'dev', 'eth0'])
  const { child, step } = startChild(t, a.ns, [String(COUNT), '6'])
  t.match(await step(1), { planned: COUNT, errors: 0, socketError: null })
  const written = await ourRoutes(a.ns, 6)
  t.equal(written.length, COUNT, 'every route in, the blackhole in place of the learned route it covers')
  t.ok(written.some((l) => l.startsWith('route replace blackhole 2001:db8:1:2::/64 ')), `the blackhole: ${written.filter((l) => l.includes('blackhole')).join(', ')}`)

  child.stdin?.write('\n')
  const clean = await step(2)
  t.match(clean, { planned: 0, errors: 0, ipReads: 0 }, 'nothing to do, read over the socket')
  t.ok(clean.kept < 20, `the read kept ${clean.kept} routes as objects (the blackhole, the kernel's own), not ${COUNT}`)

  const ipn = (...args: string[]) => execa('ip', ['-n', a.ns, '-6', ...args])
  await ipn('route', 'del', '2001:db8:1:4::/64', 'proto', String(PROTO))
  await ipn('route', 'replace', '2001:db8:1:5::/64', 'via', '2001:db8::12', 'dev', 'eth0', 'proto', String(PROTO))
  await ipn('route', 'del', '2001:db8:1:7::/64', 'proto', String(PROTO), 'metric', '300')
  await ipn('route', 'add', '2001:db8:1:7::/64', 'via', '2001:db8::13', 'dev', 'eth0', 'proto', String(PROTO))
  await ipn('route', 'add', '2001:db8:1:ff00::/64', 'via', '2001:db8::12', 'dev', 'eth0', 'proto', String(PROTO))
  await ipn('route', 'add', '2001:db8:1:ff01::/64', 'via', '2001:db8::12', 'dev', 'eth0', 'proto', 'static')
  child.stdin?.write('\n')
  t.match(await step(3), { planned: 5, errors: 0, ipReads: 0 }, 'back, replaced, deleted')
  t.same(await ourRoutes(a.ns, 6), written, 'the kernel holds the table again')
  t.ok((await ipn('route', 'show', '2001:db8:1:ff01::/64')).stdout.includes('proto static'), "another protocol's route left alone")
  child.stdin?.write('\n')
  t.match(await step(4), { planned: 0, errors: 0 }, 'and nothing is left to do')
  child.stdin?.end()
  t.equal((await child).exitCode, 0, 'the child stopped cleanly')
})
