// felix's resync over the route socket on a real kernel, with a desired table of learned routes: the dump
// is compared route by route against the table as it is read, so only the routes that differ become
// objects; drift made by hand (a route deleted, one through another hop, one with another metric, a stale
// route of felix's protocol) is repaired, routes of other protocols are left alone; a churn of most of the
// table, written a batch at a time, leaves the kernel equal to the table and another protocol's route at
// a learned route's key untouched; IPv6 as IPv4.

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
  lines?: string[]
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

/** One family's case: the node's address, its neighbours, the blackhole written, and the drift made by hand. */
interface Family {
  readonly family: 4 | 6
  readonly title: string
  readonly node: { v4: string } | { v6: string }
  readonly neighbours: readonly string[]
  readonly blackhole: (written: readonly string[]) => boolean
  /** The deleted route, the one through another hop, the one given another metric, a stale one, another protocol's. */
  readonly drift: { readonly del: string; readonly hop: string; readonly metric: string; readonly stale: string; readonly other: string }
  /** A learned route's prefix (metric as the table has it) that another protocol's route takes before the churn. */
  readonly taken: string
  /** Via these: the table's own gateway and another. */
  readonly gw: string
  readonly gw2: string
}

const FAMILIES: readonly Family[] = [
  {
    family: 4, title: 'a resync compares the dump against the table as it reads it, and repairs drift',
    node: { v4: '192.0.2.11/24' }, neighbours: ['192.0.2.12'],
    blackhole: (w) => w.includes('route replace blackhole 198.18.0.32/28 proto 87'),
    drift: { del: '198.18.0.64/28', hop: '198.18.0.80/28', metric: '198.18.0.112/28', stale: '198.18.200.0/24', other: '198.18.201.0/24' },
    taken: '198.18.0.208/28',
    gw: '192.0.2.12', gw2: '192.0.2.13',
  },
  {
    family: 6, title: 'an IPv6 resync compares the dump by its address bytes, and repairs drift',
    node: { v6: '2001:db8::11/64' }, neighbours: ['2001:db8::12', '2001:db8::13'],
    blackhole: (w) => w.some((l) => l.startsWith('route replace blackhole 2001:db8:1:2::/64 ')),
    drift: { del: '2001:db8:1:4::/64', hop: '2001:db8:1:5::/64', metric: '2001:db8:1:7::/64', stale: '2001:db8:1:ff00::/64', other: '2001:db8:1:ff01::/64' },
    taken: '2001:db8:1:d::/64',
    gw: '2001:db8::12', gw2: '2001:db8::13',
  },
]

for (const f of FAMILIES) {
  t.test(f.title, async (t) => {
    const topo = await createTopology(t)
    const a = await topo.addNode({ name: 'a', ...f.node })
    const fam = f.family === 6 ? ['-6'] : []
    for (const n of f.neighbours) await execa('ip', ['-n', a.ns, ...fam, 'neigh', 'replace', n, 'lladdr', `02:00:00:00:00:${n.slice(-2)}`, 'dev', 'eth0'])
    const { child, step } = startChild(t, a.ns, f.family === 6 ? [String(COUNT), '6'] : [String(COUNT)])
    t.match(await step(1), { planned: COUNT, errors: 0, socketError: null })
    const written = await ourRoutes(a.ns, f.family)
    t.equal(written.length, COUNT, 'every route in, the blackhole in place of the learned route it covers')
    t.ok(f.blackhole(written), `the blackhole: ${written.filter((l) => l.includes('blackhole')).join(', ')}`)

    child.stdin?.write('\n')
    const clean = await step(2)
    t.match(clean, { planned: 0, errors: 0, ipReads: 0 }, 'nothing to do, read over the socket')
    t.ok(clean.kept < 20, `the read kept ${clean.kept} routes as objects (the blackhole, the kernel's own), not ${COUNT}`)

    const ipn = (...args: string[]) => execa('ip', ['-n', a.ns, ...fam, ...args])
    const d = f.drift
    await ipn('route', 'del', d.del, 'proto', String(PROTO))
    await ipn('route', 'replace', d.hop, 'via', f.gw, 'dev', 'eth0', 'proto', String(PROTO))
    await ipn('route', 'del', d.metric, 'proto', String(PROTO), 'metric', '300')
    await ipn('route', 'add', d.metric, 'via', f.gw2, 'dev', 'eth0', 'proto', String(PROTO))
    await ipn('route', 'add', d.stale, 'via', f.gw, 'dev', 'eth0', 'proto', String(PROTO))
    await ipn('route', 'add', d.other, 'via', f.gw, 'dev', 'eth0', 'proto', 'static')
    child.stdin?.write('\n')
    // Back: the deleted one and the one with its metric; replaced: the changed hop; deleted: the stale one
    // and the one with the wrong metric.
    t.match(await step(3), { planned: 5, errors: 0, ipReads: 0 }, 'back, replaced, deleted')
    t.same(await ourRoutes(a.ns, f.family), written, 'the kernel holds the table again')
    t.ok((await ipn('route', 'show', d.other)).stdout.includes('proto static'), "another protocol's route left alone")
    child.stdin?.write('\n')
    t.match(await step(4), { planned: 0, errors: 0 }, 'and nothing is left to do')

    // Another protocol's route takes a learned route's key; the resync sees it there and leaves it.
    await ipn('route', 'replace', f.taken, 'via', f.gw2, 'dev', 'eth0', 'proto', 'static')
    child.stdin?.write('\n')
    t.match(await step(5), { planned: 0, errors: 0 }, 'the taken key is left to its holder')
    child.stdin?.write('churn\n')
    const churned = await step(6)
    t.match(churned, { errors: 0, ipReads: 0, socketError: null }, 'the churn is written')
    t.ok(churned.planned > COUNT / 2, `most of the table changed (${churned.planned} operations)`)
    const want = (churned.lines ?? []).filter((l) => !l.includes(`${f.taken} `))
    t.same(await ourRoutes(a.ns, f.family), want, 'the kernel equals the table but for the taken key')
    t.ok((await ipn('route', 'show', f.taken)).stdout.includes('proto static'), "the route another protocol holds at a learned key is left alone")
    child.stdin?.write('\n')
    t.match(await step(7), { planned: 0, errors: 0 }, 'and a resync finds nothing more to do')
    child.stdin?.end()
    t.equal((await child).exitCode, 0, 'the child stopped cleanly')
  })
}
