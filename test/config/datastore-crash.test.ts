// Writers on one embedded store are SIGKILLed at random moments, round after round (compacting often, so kills
// also land inside compactions and while holding the lock). After every round the store must open, check out
// consistent (CRC-valid, consecutive revisions) and hold every write a writer acknowledged before it died.
import t from 'tap'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { checkEmbeddedStore } from '../../config/datastore-embedded-check.js'
import { openEmbeddedDatastore } from '../../config/datastore-embedded.js'
import { waitFor } from './datastore-contract.js'

const worker = fileURLToPath(new URL('./datastore-worker.js', import.meta.url))
const ROUNDS = 6
const WRITERS = 3

interface Writer {
  child: ChildProcessWithoutNullStreams
  acks: number
  exited: Promise<void>
  stderr: string
}

function startWriter(dir: string, id: string, created: Map<string, string>, counters: Map<string, number>): Writer {
  const child = spawn(process.execPath, [worker, 'writer', dir, id, String(4 * 1024)], { stdio: ['pipe', 'pipe', 'pipe'] })
  const w: Writer = { child, acks: 0, stderr: '', exited: new Promise((resolve) => child.on('exit', () => resolve())) }
  let partial = ''
  child.stdout.on('data', (d: Buffer) => {
    const lines = (partial + d.toString()).split('\n')
    partial = lines.pop() ?? ''
    for (const line of lines) {
      const [ack, kind, key, value] = line.split(' ')
      if (ack !== 'ack' || key === undefined || value === undefined) continue
      w.acks++
      if (kind === 'create') created.set(key, value)
      else counters.set(key, Math.max(counters.get(key) ?? 0, Number(value)))
    }
  })
  child.stderr.on('data', (d: Buffer) => (w.stderr += d.toString()))
  return w
}

t.test(`${ROUNDS} rounds of ${WRITERS} writers killed with SIGKILL at random moments`, async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pinto-crash-'))
  const live = new Set<Writer>()
  t.teardown(async () => {
    for (const w of live) w.child.kill('SIGKILL')
    await Promise.all([...live].map((w) => w.exited))
    fs.rmSync(dir, { recursive: true, force: true })
  })
  const created = new Map<string, string>()
  const counters = new Map<string, number>()
  let totalAcks = 0
  for (let round = 0; round < ROUNDS; round++) {
    const writers = Array.from({ length: WRITERS }, (_, i) => startWriter(dir, `r${round}w${i}`, created, counters))
    writers.forEach((w) => live.add(w))
    // Each writer must make progress first (so a broken lock or store shows up as a timeout, not a pass).
    await waitFor(() => writers.every((w) => w.acks >= 20), `round ${round}: every writer to acknowledge 20 writes (${writers.map((w) => w.acks).join(',')}; ${writers.map((w) => w.stderr).join('')})`, 15_000)
    // Then kill each at its own random moment in the next ~100 ms.
    await Promise.all(
      writers.map(
        (w) =>
          new Promise<void>((resolve) =>
            setTimeout(() => {
              w.child.kill('SIGKILL')
              resolve()
            }, Math.random() * 100),
          ),
      ),
    )
    await Promise.all(writers.map((w) => w.exited))
    writers.forEach((w) => live.delete(w))
    t.ok(writers.every((w) => w.child.signalCode === 'SIGKILL'), `round ${round}: all writers died by SIGKILL, none failed by itself`)
    totalAcks += writers.reduce((n, w) => n + w.acks, 0)

    const lockLeft = fs.existsSync(path.join(dir, 'lock'))
    t.comment(`round ${round}: ${lockLeft ? 'a dead writer left the lock held' : 'no writer died holding the lock'}`)
    const check = checkEmbeddedStore(dir)
    t.same(check.problems, [], `round ${round}: the store checks out (generation ${check.gen}, revision ${check.revision}, torn tail ${check.tornTailBytes} B)`)
    const missing = [...created].filter(([k, v]) => check.keys.get(k)?.value !== v)
    t.same(missing, [], `round ${round}: all ${created.size} acknowledged creates are there`)
    const behind = [...counters].filter(([k, n]) => {
      const have = Number(check.keys.get(k)?.value ?? 0)
      return have !== n && have !== n + 1 // at most one unacknowledged increment may have landed
    })
    t.same(behind, [], `round ${round}: every counter holds its last acknowledged value`)
  }
  t.ok(totalAcks > ROUNDS * WRITERS * 20, `${totalAcks} acknowledged writes in all`)

  // A fresh instance opens (breaking any lock a dead writer held), agrees with the checker and can write.
  const store = await openEmbeddedDatastore(dir, { lockTimeoutMs: 5000 })
  t.teardown(() => store.close())
  const check = checkEmbeddedStore(dir)
  const listed = await store.list('/crash/')
  t.same(new Map(listed.items.map((i) => [i.key, i.value])), new Map([...check.keys].filter(([k]) => k.startsWith('/crash/')).map(([k, e]) => [k, e.value])))
  const after = await store.create('/crash/after', 'ok')
  t.equal(after.revision, listed.revision + 1, 'the revision continues after the crashes')
})
