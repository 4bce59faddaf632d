// The IPAM service's mutation queue over a real embedded datastore whose answers are held back, as a slow
// fdatasync would hold them: the next ADD's transaction goes out once the one before it is applied, against
// that write (no compare lost), while a release of the same handle still waits for its assign's answer. Over the
// same store without transactions (as Kubernetes is), an ADD queues only its block write: the next ADD's reads
// and handle record go out while the block write before it is held, and the ADDs that come meanwhile share the
// next block write.

import t, { type Test } from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pino from 'pino'
import { ClusterState } from '../../agent/cluster-state.js'
import { IpamService } from '../../agent/ipam-service.js'
import { CountingDatastore, diffCounts } from '../../config/datastore-counting.js'
import { openDatastore } from '../../config/datastore-open.js'
import type { Datastore, KeyValue, TxnApplied, TxnOp } from '../../config/datastore.js'
import { encodeResource, resourceKey } from '../../config/resources/index.js'
import { BLOCKS_PREFIX, decodeHandle, handleKey } from '../../ipam/records.js'
import { withoutTransactions } from '../ipam/stores.js'
import { waitFor } from '../harness/wait.js'

/** The store, with each txn's answer held until `open()`; `txns` lists each txn's keys as it goes out. */
interface HeldStore {
  readonly store: Datastore
  readonly txns: string[][]
  hold(): void
  open(): void
}

function held(inner: Datastore): HeldStore {
  let gate: Promise<void> | undefined
  let release = (): void => undefined
  const txns: string[][] = []
  const txn = async (ops: readonly TxnOp[], applied?: TxnApplied): Promise<KeyValue[]> => {
    txns.push(ops.map((o) => o.key))
    const answer = await inner.txn(ops, applied)
    await gate
    return answer
  }
  // Everything else is the store's own, called on it.
  const store = new Proxy(inner, {
    get: (target, prop) => {
      if (prop === 'txn') return txn
      const v = Reflect.get(target, prop) as unknown
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v
    },
  })
  return {
    store, txns,
    hold: () => {
      gate = new Promise((resolve) => (release = resolve))
    },
    open: () => {
      gate = undefined
      release()
    },
  }
}

/** An embedded store in a directory of its own with one pool of /26 blocks; the directory. */
async function storeWithPool(t: Test): Promise<{ inner: Datastore; dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'pinto-ipammut-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const inner = await openDatastore(join(dir, 'store'))
  t.teardown(() => inner.close())
  const pool = { apiVersion: 'projectcalico.org/v3', kind: 'IPPool', metadata: { name: 'p4' }, spec: { cidr: '198.18.0.0/24', blockSize: 26 } }
  await inner.create(resourceKey('IPPool', 'p4'), encodeResource(pool as never))
  return { inner, dir }
}

async function service(t: Test): Promise<{ svc: IpamService; h: HeldStore }> {
  const { inner, dir } = await storeWithPool(t)
  const h = held(inner)
  const svc = new IpamService({ store: h.store, node: 'n1', socket: join(dir, 'pinto.sock') })
  t.teardown(() => {
    h.open()
    return svc.close(0)
  })
  // The node's block claimed (several writes), so that the ADDs below are one transaction each.
  await svc.assign({ handle: 'net.first', num4: 1 })
  return { svc, h }
}

const issued = (h: HeldStore, handle: string): boolean => h.txns.some((keys) => keys.includes(handleKey(handle)))

t.test('the next ADD goes out while the one before it is only awaiting its answer, and compares against it', async (t) => {
  const { svc, h } = await service(t)
  const before = h.txns.length
  h.hold()
  const a = svc.assign({ handle: 'net.a', num4: 1 })
  const b = svc.assign({ handle: 'net.b', num4: 1 })
  await waitFor(() => issued(h, 'net.b') || undefined, { timeoutMs: 5000, what: "net.b's transaction while net.a's answer is held" })
  h.open()
  const [ra, rb] = await Promise.all([a, b])
  t.not(ra.ipv4[0]?.address, rb.ipv4[0]?.address, 'two addresses')
  t.equal(h.txns.length - before, 2, 'one transaction each: the second compared against the first write, and won')
})

t.test('a release waits for the answer to its handle\'s assign; other handles go on', async (t) => {
  const { svc, h } = await service(t)
  h.hold()
  const a = svc.assign({ handle: 'net.c', num4: 1 })
  await waitFor(() => issued(h, 'net.c') || undefined, { timeoutMs: 5000, what: "net.c's transaction" })
  const c = h.txns.length
  const rel = svc.release({ handle: 'net.c' })
  const b = svc.assign({ handle: 'net.d', num4: 1 })
  await waitFor(() => issued(h, 'net.d') || undefined, { timeoutMs: 5000, what: "net.d's transaction while net.c's answer is held" })
  t.notOk(h.txns.slice(c).some((keys) => keys.includes(handleKey('net.c'))), "net.c's release not yet out")
  h.open()
  const [ra] = await Promise.all([a, b])
  const r = await rel
  t.same(r.released.map((x) => x.address), ra.ipv4.map((x) => x.address.replace(/\/\d+$/, '')), 'the release freed what the assign gave')
  t.same(await svc.allocations('net.c'), [], 'net.c holds nothing')
})

t.test('without transactions, the next ADD writes its handle record while the block write before it is held', async (t) => {
  const { inner, dir } = await storeWithPool(t)
  const plain = withoutTransactions(inner)
  // Block writes wait at the gate before they go out; every write is listed as it is asked for.
  let gate: Promise<void> | undefined
  let release = (): void => undefined
  const writes: string[] = []
  const store: Datastore = {
    ...plain,
    transactions: false,
    create: (key, value) => (writes.push(`create ${key}`), plain.create(key, value)),
    update: async (key, value, revision) => {
      writes.push(`update ${key}`)
      if (key.startsWith(BLOCKS_PREFIX)) await gate
      return plain.update(key, value, revision)
    },
  }
  const svc = new IpamService({ store, node: 'n1', socket: join(dir, 'pinto.sock') })
  t.teardown(() => {
    release()
    return svc.close(0)
  })
  await svc.assign({ handle: 'net.first', num4: 1 })
  gate = new Promise((resolve) => (release = resolve))
  const blockWrites = (): number => writes.filter((w) => w.startsWith(`update ${BLOCKS_PREFIX}`)).length
  const before = blockWrites()
  const a = svc.assign({ handle: 'net.a', num4: 1 })
  await waitFor(() => blockWrites() > before || undefined, { timeoutMs: 5000, what: "net.a's block write, held" })
  const b = svc.assign({ handle: 'net.b', num4: 1 })
  await waitFor(() => writes.includes(`create ${handleKey('net.b')}`) || undefined, { timeoutMs: 5000, what: "net.b's handle record while net.a's block write is held" })
  t.equal(blockWrites(), before + 1, "net.b's block write waits for net.a's")
  gate = undefined
  release()
  const [ra, rb] = await Promise.all([a, b])
  t.not(ra.ipv4[0]?.address, rb.ipv4[0]?.address, 'two addresses')
  t.equal(blockWrites(), before + 2, 'one block write each: the second against the first')
  for (const [handle, r] of [['net.a', ra], ['net.b', rb]] as const) {
    const kv = await inner.get(handleKey(handle))
    t.same(kv === undefined ? undefined : decodeHandle(kv.key, kv.value).blocks, { [r.ipv4[0]!.block]: 1 }, `${handle}'s record names its block, once`)
  }

  // A burst while a block write is held: every ADD that came meanwhile is in the next write, one for all.
  gate = new Promise((resolve) => (release = resolve))
  const held = blockWrites()
  const first = svc.assign({ handle: 'net.burst-0', num4: 1 })
  await waitFor(() => blockWrites() > held || undefined, { timeoutMs: 5000, what: 'the first block write of the burst, held' })
  const rest = Array.from({ length: 10 }, (_, i) => svc.assign({ handle: `net.burst-${i + 1}`, num4: 1 }))
  await waitFor(() => writes.filter((w) => w.startsWith(`create ${handleKey('net.burst-')}`)).length === 11 || undefined, { timeoutMs: 5000, what: "the burst's handle records" })
  gate = undefined
  release()
  const burst = await Promise.all([first, ...rest])
  t.equal(new Set(burst.map((r) => r.ipv4[0]?.address)).size, 11, 'eleven distinct addresses')
  t.equal(blockWrites(), held + 2, 'two block writes: the held one, then one for the ten that came meanwhile')
  const allocs = await svc.allocations('net.burst-')
  t.same(allocs.map((a) => a.handle).sort(), burst.map((_, i) => `net.burst-${i}`).sort(), 'each address in the block under its own handle')
})

t.test('without transactions and with a view that follows the store, an ADD from the last block reads nothing: it creates its handle record and writes its block', async (t) => {
  const { inner, dir } = await storeWithPool(t)
  const store = new CountingDatastore(withoutTransactions(inner))
  const cluster = new ClusterState(store, pino({ level: 'silent' }), { node: 'n1' })
  t.teardown(() => cluster.close())
  await cluster.start()
  const svc = new IpamService({ store, node: 'n1', socket: join(dir, 'pinto.sock'), cluster })
  t.teardown(() => svc.close(0))
  await svc.assign({ handle: 'net.first', num4: 1 })
  await waitFor(() => (cluster.current && [...cluster.blocks()].length === 1) || undefined, { timeoutMs: 5000, what: "the view current, with the node's block" })

  let before = store.counts()
  const r = await svc.assign({ handle: 'net.a', num4: 1 })
  let d = diffCounts(store.counts(), before)
  t.same({ reads: d.get + d.list, creates: d.create, updates: d.update }, { reads: 0, creates: 1, updates: 1 }, `the handle record created, the block written, nothing read: ${JSON.stringify(d)}`)

  // The runtime asks again for the same handle: its record is there, read, and what it holds answered.
  before = store.counts()
  const again = await svc.assign({ handle: 'net.a', num4: 1 })
  d = diffCounts(store.counts(), before)
  t.same(again.ipv4, r.ipv4, 'the same address again')
  t.equal(d.update, 0, 'no block written')
  t.same((await svc.allocations('net.a')).map((a) => a.address), [r.ipv4[0]!.address.replace(/\/\d+$/, '')], 'one address under the handle')

  // A view that no longer follows the store (its watches are gone): the ADD reads its inputs.
  cluster.close()
  before = store.counts()
  await svc.assign({ handle: 'net.b', num4: 1 })
  d = diffCounts(store.counts(), before)
  t.ok(d.get + d.list >= 3, `the Node, the IPAMConfig and the pools read: ${JSON.stringify(d)}`)
})

t.test('without transactions, a burst on a node with no block yet: one ADD claims it, the others share the next block write', async (t) => {
  const { inner, dir } = await storeWithPool(t)
  const plain = withoutTransactions(inner)
  const writes: string[] = []
  const store: Datastore = {
    ...plain,
    transactions: false,
    create: (key, value) => (writes.push(`create ${key}`), plain.create(key, value)),
    update: (key, value, revision) => (writes.push(`update ${key}`), plain.update(key, value, revision)),
  }
  const svc = new IpamService({ store, node: 'n1', socket: join(dir, 'pinto.sock') })
  t.teardown(() => svc.close(0))
  const burst = await Promise.all(Array.from({ length: 20 }, (_, i) => svc.assign({ handle: `net.p${i}`, num4: 1 })))
  t.equal(new Set(burst.map((r) => r.ipv4[0]?.address)).size, 20, 'twenty distinct addresses')
  const blockCreates = writes.filter((w) => w.startsWith(`create ${BLOCKS_PREFIX}`)).length
  const blockUpdates = writes.filter((w) => w.startsWith(`update ${BLOCKS_PREFIX}`)).length
  t.equal(blockCreates, 1, 'one block claimed')
  t.ok(blockUpdates <= 3, `${blockUpdates} block writes for 20 ADDs: the claiming ADD's, then the others together`)
  const allocs = await svc.allocations('net.p')
  t.equal(allocs.length, 20, 'each address in the block under its own handle')
})
