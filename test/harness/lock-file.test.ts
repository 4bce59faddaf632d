// scripts/lock-file.js: the pid lock the Kubernetes build and the image build share.
import t from 'tap'
import { existsSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const { tryLock } = (await import(new URL('../../../scripts/lock-file.js', import.meta.url).href)) as { tryLock: (lock: string) => 'taken' | 'retry' | 'wait' | number }

t.test('taken once; held by a live process, a dead one, or one still writing', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pinto-lock-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const lock = join(dir, 'x.lock')
  t.equal(tryLock(lock), 'taken', 'a free lock is taken')
  t.equal(tryLock(lock), process.pid, 'a held one names its live holder')
  writeFileSync(lock, '2147483646')
  t.equal(tryLock(lock), 'retry', 'a dead holder\'s lock is removed')
  t.notOk(existsSync(lock), 'and gone')
  writeFileSync(lock, '')
  t.equal(tryLock(lock), 'wait', 'an empty one is being written: wait, do not remove it')
  t.ok(existsSync(lock), 'and it stays')
  const old = new Date(Date.now() - 60_000)
  utimesSync(lock, old, old)
  t.equal(tryLock(lock), 'retry', 'one left empty for a minute lost its holder before it wrote: removed')
  t.notOk(existsSync(lock), 'and gone')
  t.equal(tryLock(lock), 'taken', 'then taken')
})
