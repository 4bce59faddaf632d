// Four processes increment shared counters on one embedded store with CAS retry loops, compacting as they go:
// every acknowledged increment must be in the final counts, and the store must check out clean.
import t from 'tap'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { checkEmbeddedStore } from '../../config/datastore-embedded-check.js'
import { openEmbeddedDatastore } from '../../config/datastore-embedded.js'

const worker = fileURLToPath(new URL('./datastore-worker.js', import.meta.url))

/** Every worker started, so a failed test can stop the others before it removes their directory. */
const running = new Set<ReturnType<typeof spawn>>()

function runWorker(args: string[], timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [worker, ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
    running.add(child)
    let out = ''
    let err = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    child.stderr.on('data', (d: Buffer) => (err += d.toString()))
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    child.on('exit', (code, signal) => {
      running.delete(child)
      clearTimeout(timer)
      if (code === 0) resolve(out)
      else reject(new Error(`worker ${args.join(' ')} exited ${code ?? signal}: ${err}`))
    })
  })
}

t.test('4 processes x 250 CAS increments over 5 counters', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pinto-mp-'))
  t.teardown(async () => {
    // When one worker fails the others still write: stop them first, or they refill the directory as it goes.
    const exits = [...running].map((c) => new Promise((r) => c.once('exit', r)))
    for (const c of running) c.kill('SIGKILL')
    await Promise.all(exits)
    fs.rmSync(dir, { recursive: true, force: true })
  })
  const outputs = await Promise.all([0, 1, 2, 3].map(() => runWorker(['counter', dir, '5', '250', String(8 * 1024)], 60_000)))
  const expected = new Map<string, number>()
  for (const out of outputs) {
    const { acked } = JSON.parse(out) as { acked: Record<string, number> }
    for (const [k, n] of Object.entries(acked)) expected.set(k, (expected.get(k) ?? 0) + n)
  }
  t.equal([...expected.values()].reduce((a, b) => a + b, 0), 1000, 'every worker acknowledged all its increments')
  const store = await openEmbeddedDatastore(dir)
  t.teardown(() => store.close())
  const { items } = await store.list('/counter/')
  t.same(Object.fromEntries(items.map((i) => [i.key, Number(i.value)])), Object.fromEntries(expected), 'final counts equal acknowledged increments')
  const check = checkEmbeddedStore(dir)
  t.same(check.problems, [])
  t.equal(check.tornTailBytes, 0)
  t.ok(check.gen > 0, `compaction ran while 4 processes wrote (generation ${check.gen})`)
  t.equal(fs.readdirSync(dir).filter((n) => n.startsWith('lock')).length, 1, 'only our own prepared lock dir is left')
})
