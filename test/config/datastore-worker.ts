// Child process for the embedded store's multi-process and crash tests (compiled to dist/, run with node).
// It only writes to the store directory it is given and reports on stdout; the tests decide what is correct.
//   counter <dir> <keys> <increments> <compactBytes>: CAS-increment random counters, print {"acked": {key: n}}
//   writer  <dir> <id> <compactBytes>: create /crash/<id>/<n> forever and CAS a counter, printing each ack
// stdout to a pipe is synchronous on Linux, so a printed ack has left this process before the next write.

import { DatastoreError } from '../../config/datastore.js'
import { openEmbeddedDatastore, type EmbeddedDatastore } from '../../config/datastore-embedded.js'

async function increment(store: EmbeddedDatastore, key: string): Promise<void> {
  for (;;) {
    const cur = await store.get(key)
    try {
      if (cur) await store.update(key, String(Number(cur.value) + 1), cur.revision)
      else await store.create(key, '1')
      return
    } catch (err) {
      if (!(err instanceof DatastoreError) || (err.code !== 'conflict' && err.code !== 'exists')) throw err
    }
  }
}

async function counter(dir: string, keys: number, increments: number, compactBytes: number): Promise<void> {
  const store = await openEmbeddedDatastore(dir, { compactBytes })
  const acked: Record<string, number> = {}
  // Two loops per process, so batches inside one process and contention across processes both happen.
  const loop = async (n: number): Promise<void> => {
    for (let i = 0; i < n; i++) {
      const key = `/counter/${Math.floor(Math.random() * keys)}`
      await increment(store, key)
      acked[key] = (acked[key] ?? 0) + 1
    }
  }
  await Promise.all([loop(Math.ceil(increments / 2)), loop(Math.floor(increments / 2))])
  await store.close()
  process.stdout.write(`${JSON.stringify({ acked })}\n`)
}

async function writer(dir: string, id: string, compactBytes: number): Promise<void> {
  const store = await openEmbeddedDatastore(dir, { compactBytes })
  process.stdout.write('ready\n')
  const creates = async (lane: number): Promise<void> => {
    for (let n = 0; ; n++) {
      const kv = await store.create(`/crash/${id}/${lane}-${n}`, `v${n}`)
      process.stdout.write(`ack create ${kv.key} ${kv.value} ${kv.revision}\n`)
    }
  }
  const counts = async (): Promise<void> => {
    for (;;) {
      const key = `/crash/${id}/counter`
      const cur = await store.get(key)
      const kv = cur ? await store.update(key, String(Number(cur.value) + 1), cur.revision) : await store.create(key, '1')
      process.stdout.write(`ack counter ${kv.key} ${kv.value} ${kv.revision}\n`)
    }
  }
  await Promise.all([creates(0), creates(1), counts()])
}

const [mode, dir, a, b, c] = process.argv.slice(2)
const run =
  mode === 'counter' && dir ? counter(dir, Number(a), Number(b), Number(c)) : mode === 'writer' && dir && a ? writer(dir, a, Number(b)) : undefined
if (!run) {
  process.stderr.write('usage: datastore-worker counter <dir> <keys> <increments> <compactBytes> | writer <dir> <id> <compactBytes>\n')
  process.exit(2)
}
run.catch((err: unknown) => {
  process.stderr.write(`worker failed: ${err instanceof Error ? err.stack : String(err)}\n`)
  process.exit(1)
})
