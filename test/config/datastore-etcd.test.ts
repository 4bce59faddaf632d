// The etcd backend against a private etcd: the shared contract, compaction reported to watchers,
// an unreachable cluster failing fast with the endpoint named, and a recovered one answering at once.
import t from 'tap'
import { createServer, type Socket } from 'node:net'
import { DatastoreError } from '../../config/datastore.js'
import { openEtcdDatastore } from '../../config/datastore-etcd.js'
import { openDatastore } from '../../config/datastore-open.js'
import { startEtcd } from '../harness/etcd.js'
import { datastoreContract, waitFor } from './datastore-contract.js'

const etcd = await startEtcd(t)

t.test('contract', async (t) => {
  datastoreContract(t, () => openDatastore(`etcd://${etcd.endpoint}`))
})

t.test('a watch from a compacted revision reports compacted', async (t) => {
  const s = await openEtcdDatastore([etcd.endpoint])
  t.teardown(() => s.close())
  const first = await s.create('/compact/a', '1')
  const second = await s.update('/compact/a', '2', first.revision)
  // Compact through etcd's own API (the Datastore contract has no compaction call).
  const { Etcd3 } = await import('etcd3')
  const raw = new Etcd3({ hosts: `http://${etcd.endpoint}` })
  t.teardown(() => raw.close())
  await raw.kv.compact({ revision: String(second.revision) })
  const errors: Error[] = []
  const w = s.watch('/compact/', first.revision, () => undefined, (e) => errors.push(e))
  t.teardown(() => w.close())
  await waitFor(() => errors.length > 0, 'the compacted error')
  t.equal((errors[0] as DatastoreError).code, 'compacted', (errors[0] as Error).message)
})

t.test('a list larger than one gRPC message (4 MiB) returns every record, in key order', async (t) => {
  const s = await openEtcdDatastore([etcd.endpoint])
  t.teardown(() => s.close())
  const value = (i: number): string => `${i}:`.padEnd(100 * 1024, String.fromCharCode(97 + (i % 26)))
  for (let i = 0; i < 60; i++) await s.create(`/big/${String(i).padStart(3, '0')}`, value(i))
  const { items } = await s.list('/big/')
  t.equal(items.length, 60, `${items.length} of 60 records (6 MiB in all)`)
  t.ok(items.every((kv, i) => kv.key === `/big/${String(i).padStart(3, '0')}` && kv.value === value(i)), 'each record whole and in key order')
})

t.test('a list in many pages is one snapshot, while writers change the prefix', async (t) => {
  const s = await openEtcdDatastore([etcd.endpoint], { listPageBytes: 1 })
  t.teardown(() => s.close())
  const { Etcd3 } = await import('etcd3')
  const raw = new Etcd3({ hosts: `http://${etcd.endpoint}` })
  t.teardown(() => raw.close())
  for (let i = 0; i < 40; i++) await s.create(`/snap/${String(i).padStart(2, '0')}`, 'v0')
  // The writer changes the last key and adds keys after it: the pages a list reads last.
  let writing = true
  let wrote = 0
  let started: () => void = () => undefined
  const going = new Promise<void>((resolve) => (started = resolve))
  const writer = (async () => {
    for (let n = 0; writing; n++) {
      await raw.put(n % 2 === 0 ? '/snap/39' : `/snap/z${n}`).value(`v${n + 1}`)
      if (++wrote === 3) started()
    }
  })()
  try {
    await going
    const before = wrote
    const listed = await s.list('/snap/')
    const at = await raw.getAll().prefix('/snap/').revision(String(listed.revision)).exec()
    t.ok(listed.items.every((kv) => kv.revision <= listed.revision), 'no record is newer than the listing revision')
    t.same(listed.items.map((kv) => [kv.key, kv.value]), at.kvs.map((kv) => [kv.key.toString(), kv.value.toString()]), `the records as etcd held them at revision ${listed.revision}`)
    t.ok(wrote > before, `${wrote - before} writes landed while the list was paging`)
  } finally {
    writing = false
    await writer
  }
})

t.test('an unreachable etcd is unavailable within 5 s, naming the endpoint', async (t) => {
  // A port we just had and closed: nothing listens there.
  const port = await new Promise<number>((resolve) => {
    const srv = createServer().listen(0, '127.0.0.1', () => {
      const addr = srv.address()
      srv.close(() => resolve(typeof addr === 'object' && addr ? addr.port : 0))
    })
  })
  const started = Date.now()
  const err = await openDatastore(`etcd://127.0.0.1:${port}`).then(
    () => undefined,
    (e: unknown) => e,
  )
  const took = Date.now() - started
  t.ok(err instanceof DatastoreError, String(err))
  t.equal((err as DatastoreError).code, 'unavailable')
  t.match((err as Error).message, `127.0.0.1:${port}`)
  t.ok(took < 5000, `failed after ${took} ms`)
})

t.test('an endpoint that accepts but never answers is unavailable within 5 s', async (t) => {
  const sockets = new Set<Socket>()
  const silent = createServer((socket) => {
    sockets.add(socket)
    socket.on('error', () => undefined)
  })
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
  t.teardown(() => {
    for (const s of sockets) s.destroy()
    silent.close()
  })
  const addr = silent.address()
  const endpoint = `127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`
  const started = Date.now()
  await t.rejects(openDatastore(`etcd://${endpoint}`), { code: 'unavailable', message: new RegExp(endpoint) })
  const took = Date.now() - started
  t.ok(took < 5000, `failed after ${took} ms`)
})

t.test('calls after close fail as unavailable instead of hanging', async (t) => {
  const s = await openEtcdDatastore([etcd.endpoint])
  await s.close()
  await t.rejects(s.get('/x'), { code: 'unavailable' })
})

t.test('after an outage that failed several calls, the next call to a recovered etcd answers', async (t) => {
  const own = await startEtcd(t)
  const s = await openEtcdDatastore([own.endpoint], { timeoutMs: 300 })
  t.teardown(() => s.close())
  await s.create('/outage/k', 'v')
  own.freeze()
  t.teardown(() => own.thaw())
  for (let i = 0; i < 4; i++) await t.rejects(s.get('/outage/k'), { code: 'unavailable' }, `call ${i + 1} during the outage fails`)
  own.thaw()
  // Not after a hold-off: the first call once etcd answers again.
  t.equal((await s.get('/outage/k'))?.value, 'v')
})
