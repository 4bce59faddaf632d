// The embedded backend in one process: the shared contract (two instances on one directory), reopening,
// compaction followed by other instances and watchers, torn tails, and locks left by dead processes.
import t, { type Test } from 'tap'
import fs from 'node:fs'
import path from 'node:path'
import os from 'node:os'
import { spawnSync } from 'node:child_process'
import type { WatchEvent } from '../../config/datastore.js'
import { openEmbeddedDatastore, type EmbeddedDatastore, type EmbeddedOptions } from '../../config/datastore-embedded.js'
import { encodeRecord, encodeSnapshot } from '../../config/datastore-embedded-log.js'
import { checkEmbeddedStore } from '../../config/datastore-embedded-check.js'
import { DirLock } from '../../config/datastore-embedded-lock.js'
import { datastoreContract, waitFor } from './datastore-contract.js'

function tempStore(t: Test): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pinto-store-'))
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }))
  return dir
}

async function open(t: Test, dir: string, options?: EmbeddedOptions): Promise<EmbeddedDatastore> {
  const s = await openEmbeddedDatastore(dir, options)
  t.teardown(() => s.close())
  return s
}

t.test('contract', async (t) => {
  const dir = tempStore(t)
  datastoreContract(t, () => openEmbeddedDatastore(dir))
})

t.test('contract with compaction every few KB', async (t) => {
  const dir = tempStore(t)
  datastoreContract(t, () => openEmbeddedDatastore(dir, { compactBytes: 2048 }))
})

t.test('a reopened store has every write and continues the revision', async (t) => {
  const dir = tempStore(t)
  const a = await openEmbeddedDatastore(dir)
  for (let i = 0; i < 50; i++) await a.create(`/k/${i}`, String(i))
  await a.delete('/k/7')
  const before = await a.list('/')
  await a.close()
  const b = await open(t, dir)
  t.same(await b.list('/'), before)
  const next = await b.create('/k/new', 'x')
  t.equal(next.revision, before.revision + 1)
})

t.test('compaction: another instance and its watcher follow into new generations', async (t) => {
  const dir = tempStore(t)
  const writer = await open(t, dir, { compactBytes: 1024 })
  const reader = await open(t, dir)
  const seen: WatchEvent[] = []
  const w = reader.watch('/c/', 1, (e) => seen.push(e))
  t.teardown(() => w.close())
  let kv = await writer.create('/c/n', '0')
  for (let i = 1; i <= 200; i++) kv = await writer.update('/c/n', String(i), kv.revision)
  await waitFor(() => seen.length === 201, `201 events (have ${seen.length})`)
  t.same(seen.map((e) => (e.type === 'put' ? e.value : '')), Array.from({ length: 201 }, (_, i) => String(i)))
  t.equal((await reader.get('/c/n'))?.value, '200')
  const gens = fs.readdirSync(dir).filter((n) => /^log\.\d+$/.test(n))
  t.ok(gens.length <= 2, `old generations are removed (${gens.join(' ')})`)
  t.notOk(gens.includes('log.0'), 'the log did compact')
  const late = await open(t, dir)
  t.same(await late.list('/c/'), await writer.list('/c/'), 'a newcomer starts from the snapshot')
  const errors: Error[] = []
  late.watch('/c/', 1, () => undefined, (e) => errors.push(e))
  await waitFor(() => errors.length > 0, 'the compacted error')
  t.match(errors[0], { code: 'compacted' })
})

t.test('a torn tail is ignored by readers and truncated by the next writer', async (t) => {
  const dir = tempStore(t)
  const s = await openEmbeddedDatastore(dir)
  const a = await s.create('/t/a', '1')
  await s.close()
  const log = path.join(dir, 'log.0')
  const good = fs.statSync(log).size
  // A frame header announcing 100 bytes, followed by only 5: a writer killed mid-append.
  fs.appendFileSync(log, Buffer.concat([Buffer.from([100, 0, 0, 0, 1, 2, 3, 4]), Buffer.from('{"t":')]))
  const torn: number[] = []
  const r = await open(t, dir, { onTornTail: (info) => torn.push(info.offset) })
  t.same(await r.get('/t/a'), a, 'the reader sees the valid prefix')
  t.same(torn, [], 'a reader without the lock leaves the tail alone')
  const b = await r.create('/t/b', '2')
  t.equal(b.revision, a.revision + 1)
  t.same(torn, [good], 'the writer cut the tail at the last valid record')
  t.equal(fs.readFileSync(path.join(dir, `torn.0.${good}`)).length, 13, 'and kept the cut bytes aside')
  const r2 = await open(t, dir)
  t.same((await r2.list('/t/')).items.map((i) => i.value), ['1', '2'], 'the garbage is gone and the append is readable')
  t.ok(fs.statSync(log).size > good)
})

t.test('a lock left by a dead process is broken; a live holder is waited for', async (t) => {
  const dir = tempStore(t)
  const s = await open(t, dir, { lockTimeoutMs: 3000 })
  // A process that exited: its pid is free (or reused with another start time).
  const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' })
  const deadPid = Number(dead.stdout)
  fs.mkdirSync(path.join(dir, 'lock'))
  fs.writeFileSync(path.join(dir, 'lock', `owner.${deadPid}.1.abc`), '')
  const kv = await s.create('/l/a', '1')
  t.equal(kv.value, '1', 'the write went through after breaking the stale lock')
  t.notOk(fs.readdirSync(dir).includes('lock'), 'the lock is released after the write')
  // Our own (live) pid with another nonce: the lock must be respected until the timeout.
  fs.mkdirSync(path.join(dir, 'lock'))
  fs.writeFileSync(path.join(dir, 'lock', `owner.${process.ppid}.?.def`), '')
  const started = Date.now()
  await t.rejects(s.create('/l/b', '2'), { code: 'unavailable', message: /held by pid/ })
  t.ok(Date.now() - started >= 2900, 'it waited for the live holder')
  fs.rmSync(path.join(dir, 'lock'), { recursive: true })
  t.equal((await s.create('/l/b', '2')).value, '2')
})

t.test('a sweep removes dead processes\' prepared lock directories, never one a live process is still making', async (t) => {
  const dir = tempStore(t)
  const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' })
  const deadPid = Number(dead.stdout)
  // A live process between its mkdir and the write of its owner file: an empty directory named by its pid.
  fs.mkdirSync(path.join(dir, `lock.${process.ppid}.aa`))
  fs.mkdirSync(path.join(dir, `lock.${deadPid}.bb`))
  fs.mkdirSync(path.join(dir, `lock.${deadPid}.cc`))
  fs.writeFileSync(path.join(dir, `lock.${deadPid}.cc`, `owner.${deadPid}.1.cc`), '')
  DirLock.sweep(dir)
  t.same(fs.readdirSync(dir).sort(), [`lock.${process.ppid}.aa`])
})

t.test('a bad store path is a clear error', async (t) => {
  const dir = tempStore(t)
  const file = path.join(dir, 'plain-file')
  fs.writeFileSync(file, '')
  await t.rejects(openEmbeddedDatastore(file), { code: 'unavailable', message: /plain-file/ })
  await t.rejects(openEmbeddedDatastore(''), { code: 'invalid' })
})

t.test('a compaction whose writer died before sealing is finished by the next lock holder', async (t) => {
  const dir = tempStore(t)
  const old = await open(t, dir) // stays in generation 0, as a running agent would
  for (let i = 0; i < 5; i++) await old.create(`/i/${i}`, String(i))
  // What a compactor leaves when killed right after renaming its snapshot: snap.1, no log.1, no seal in log.0.
  const state = await old.list('/')
  const logOffset = fs.statSync(path.join(dir, 'log.0')).size
  const kvs = state.items.map((i) => [i.key, i.value, i.revision] as const)
  fs.writeFileSync(path.join(dir, 'snap.1'), encodeSnapshot({ gen: 1, rev: state.revision, logOffset, kvs }))
  // ...and it died halfway through appending the seal: a torn tail after the snapshot's offset.
  fs.appendFileSync(path.join(dir, 'log.0'), encodeRecord({ t: 'seal', r: state.revision, next: 1 }).subarray(0, 11))
  const newcomer = await open(t, dir)
  t.same(await newcomer.list('/'), state, 'a newcomer starts from the snapshot (creating log.1)')
  const kv = await old.create('/i/after', 'x')
  t.equal(kv.revision, state.revision + 1)
  const check = checkEmbeddedStore(dir)
  t.same(check.problems, [])
  t.equal(check.gen, 1, 'the old instance sealed log.0 and wrote into log.1')
  t.equal(check.records, 1, 'log.1 holds the new write')
  t.equal((await newcomer.get('/i/after'))?.value, 'x', 'the newcomer sees it')
})

t.test('txn tells `applied` what it wrote before it answers, readable by then; a failed check tells nothing', async (t) => {
  const s = await open(t, tempStore(t))
  const heard: { written: unknown; seen: string | undefined; answered: boolean }[] = []
  let answered = false
  const reading: Promise<string | undefined>[] = []
  const answer = await s.txn([{ op: 'create', key: '/a', value: 'one' }, { op: 'create', key: '/b', value: 'two' }], (written) => {
    heard.push({ written, seen: undefined, answered })
    reading.push(s.get('/b').then((kv) => kv?.value))
  })
  answered = true
  t.equal(heard.length, 1, 'told once')
  t.same(heard[0]?.written, answer, 'what the answer says')
  t.equal(heard[0]?.answered, false, 'before the answer')
  t.equal(await reading[0], 'two', 'a read issued then sees the write')
  const rev = answer[0]?.revision ?? 0
  let told = false
  await t.rejects(s.txn([{ op: 'check', key: '/a', revision: rev + 100 }, { op: 'create', key: '/c', value: 'three' }], () => (told = true)), { code: 'conflict' })
  t.notOk(told, 'a refused txn is not applied')
})
