// The IPAM stress run shared by the stress test files: four real processes on two node identities allocate and
// release against one store at once, each allocation logged with monotonic timestamps; then no address may have
// been held by two handles at overlapping times, the store must be consistent and `check` clean.
import type { Test } from 'tap'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { WorkerArgs, WorkerLine } from '../../bench/ipam-worker.js'
import { openDatastore } from '../../config/datastore-open.js'
import { checkIpam } from '../../ipam/check.js'
import { Ipam } from '../../ipam/ipam.js'
import type { PoolSpec } from '../../ipam/pools.js'

const WORKER = fileURLToPath(new URL('../../bench/ipam-worker.js', import.meta.url))
const POOLS: PoolSpec[] = [
  { name: 'v4', cidr: '198.18.0.0/24', blockSize: 28 },
  { name: 'v6', cidr: '2001:db8::/120', blockSize: 124 },
]

function runWorker(args: WorkerArgs, deadlineMs: number, env: Readonly<Record<string, string>>): Promise<WorkerLine[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [WORKER, JSON.stringify(args)], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } })
    let out = ''
    let err = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    child.stderr.on('data', (d: Buffer) => (err += d.toString()))
    const timer = setTimeout(() => child.kill('SIGKILL'), deadlineMs)
    child.on('exit', (code) => {
      clearTimeout(timer)
      if (code !== 0) reject(new Error(`worker ${args.id} exited ${code}: ${err}`))
      else resolve(out.trim().split('\n').map((l) => JSON.parse(l) as WorkerLine))
    })
  })
}

/** Each address's definite holding intervals [allocation returned, release started) must not overlap across handles. */
function overlaps(lines: readonly WorkerLine[]): string[] {
  const start = new Map<string, number>()
  const spans = new Map<string, { h: string; from: number; to: number }[]>()
  for (const l of lines) if (l.op === 'alloc') start.set(l.h, l.t1)
  const ends = new Map<string, number>()
  for (const l of lines) if (l.op === 'release') ends.set(l.h, l.t0)
  for (const l of lines) {
    if (l.op !== 'alloc') continue
    for (const a of l.a) {
      const s = spans.get(a) ?? []
      s.push({ h: l.h, from: start.get(l.h)!, to: ends.get(l.h) ?? Number.MAX_SAFE_INTEGER })
      spans.set(a, s)
    }
  }
  const bad: string[] = []
  for (const [a, s] of spans) {
    s.sort((x, y) => x.from - y.from)
    for (let i = 1; i < s.length; i++) {
      if (s[i]!.from < s[i - 1]!.to) bad.push(`${a}: ${s[i - 1]!.h} and ${s[i]!.h}`)
    }
  }
  return bad
}

/** `count` allocations per process against the store PINTO_DATASTORE=`spec` names (with `env`, e.g. KUBECONFIG). */
export async function stress(t: Test, spec: string, count = 250, env: Readonly<Record<string, string>> = {}): Promise<void> {
  const store = await openDatastore(spec, { kubeEnv: env })
  t.teardown(() => store.close())
  const ipam = new Ipam(store, { pools: POOLS })
  // n2 owns its 3 blocks per family before the workers start, so what n1 can borrow does not hang on how far n2's
  // processes have got (a loaded machine may start them late): n1's at most 58 fit its own 48 and n2's 48 less
  // n2's at most 10.
  await ipam.autoAssign({ handle: 'stress-n2-blocks', node: 'n2', num4: 33, num6: 33 })
  await ipam.releaseByHandle('stress-n2-blocks')
  const nodes = ['n1', 'n1', 'n2', 'n2']
  // n1's processes keep many pods (28 each, and one being added), n2's few, and a node may own 3 blocks per
  // family: n1 must borrow from n2.
  const results = await Promise.all(nodes.map((node, i) => runWorker({
    store: spec, node, id: `w${i}`, count, releaseP: 0.3, cap: node === 'n1' ? 28 : 4, num4: 1, num6: 1,
    pools: POOLS, maxBlocksPerHost: 3, log: true,
  }, 150_000, env)))
  const lines = results.flat()
  const errors = lines.filter((l) => l.op === 'error')
  t.same(errors.filter((e) => e.op === 'error' && e.code !== 'exhausted'), [], 'no errors other than a full pool')
  const allocs = lines.filter((l) => l.op === 'alloc')
  const why = [...new Set(errors.map((e) => (e.op === 'error' ? e.msg.replace(/ for \S+/, '') : '')))].slice(0, 3)
  t.ok(allocs.length >= count * 3.6, `${allocs.length} allocations succeeded (${errors.length} refused as exhausted)`, { why })
  t.ok(allocs.some((l) => l.op === 'alloc' && l.borrowed > 0), 'some addresses were borrowed across nodes')
  t.same(overlaps(lines), [], 'no address held by two handles at once')

  const live = results.flatMap((r) => r.flatMap((l) => (l.op === 'done' ? l.held : [])))
  const report = await checkIpam(ipam, { liveHandles: live, liveNodes: ['n1', 'n2'] })
  t.same(report.problems, [], 'check is clean')
  t.equal(report.handles, live.length, 'one handle record per live pod')
  t.equal(report.allocations, live.length * 2, 'two addresses per live pod')
  const logged = new Map(allocs.map((l) => [l.h, l.op === 'alloc' ? [...l.a].sort() : []]))
  for (const h of live.slice(0, 40)) t.same((await ipam.handleAddresses(h)).map((a) => a.address).sort(), logged.get(h), `${h} holds what it was given`)
}
