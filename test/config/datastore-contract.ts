// The datastore contract suite, run against every backend (embedded, etcd, kubernetes) by their test files. A backend
// without transactions (`transactions` false) runs the one-write txn test in place of the three multi-op ones.
// `open` must return a NEW client of the SAME store each call, so two-client behaviour is tested for real.
// Each subtest uses its own key prefix, so one store serves the whole suite.

import type { Test } from 'tap'
import { DatastoreError, type Datastore, type TxnOp, type WatchEvent } from '../../config/datastore.js'

export type OpenClient = () => Promise<Datastore>

/** Polls `cond` until it holds or the deadline passes (never a fixed sleep). */
export async function waitFor(cond: () => boolean, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p
    return 'resolved'
  } catch (err) {
    return err instanceof DatastoreError ? err.code : `not a DatastoreError: ${String(err)}`
  }
}

let counter = 0
/** Each txn's outcome: the failing op's code and key, or 'resolved'. */
async function txnFailures(s: Datastore, txns: readonly (readonly TxnOp[])[]): Promise<[string, string | undefined][]> {
  const out: [string, string | undefined][] = []
  for (const ops of txns) {
    try {
      await s.txn(ops)
      out.push(['resolved', undefined])
    } catch (err) {
      out.push(err instanceof DatastoreError ? [err.code, err.key] : [String(err), undefined])
    }
  }
  return out
}

const uniquePrefix = (name: string): string => `/contract/${Date.now().toString(36)}-${counter++}/${name}/`

export function datastoreContract(t: Test, open: OpenClient): void {
  const clients: Datastore[] = []
  const client = async (): Promise<Datastore> => {
    const c = await open()
    clients.push(c)
    return c
  }
  t.teardown(async () => {
    await Promise.all(clients.map((c) => c.close()))
  })

  t.test('get, create, and create of an existing key', async (t) => {
    const s = await client()
    const p = uniquePrefix('create')
    t.equal(await s.get(`${p}a`), undefined, 'a missing key reads as undefined')
    const kv = await s.create(`${p}a`, '{"n":1}')
    t.match(kv, { key: `${p}a`, value: '{"n":1}' })
    t.ok(kv.revision > 0, 'a write has a positive revision')
    t.same(await s.get(`${p}a`), kv, 'get returns what create returned')
    t.equal(await code(s.create(`${p}a`, 'x')), 'exists')
    t.same(await s.get(`${p}a`), kv, 'the failed create changed nothing')
  })

  t.test('update is a compare-and-swap on the revision', async (t) => {
    const s = await client()
    const p = uniquePrefix('update')
    const v1 = await s.create(`${p}k`, '1')
    const v2 = await s.update(`${p}k`, '2', v1.revision)
    t.ok(v2.revision > v1.revision, 'update moves the revision forward')
    t.equal(await code(s.update(`${p}k`, '3', v1.revision)), 'conflict', 'a stale revision conflicts')
    t.equal((await s.get(`${p}k`))?.value, '2')
    t.equal(await code(s.update(`${p}missing`, '1', v1.revision)), 'not-found')
  })

  t.test('delete, with and without a revision', async (t) => {
    const s = await client()
    const p = uniquePrefix('delete')
    const a = await s.create(`${p}a`, '1')
    const a2 = await s.update(`${p}a`, '2', a.revision)
    t.equal(await code(s.delete(`${p}a`, a.revision)), 'conflict')
    await s.delete(`${p}a`, a2.revision)
    t.equal(await s.get(`${p}a`), undefined)
    t.equal(await code(s.delete(`${p}a`)), 'not-found')
    t.equal(await code(s.delete(`${p}a`, a2.revision)), 'not-found')
    await s.create(`${p}b`, '1')
    await s.delete(`${p}b`)
    t.equal(await s.get(`${p}b`), undefined)
    const again = await s.create(`${p}b`, 'reborn')
    t.ok(again.revision > a2.revision, 'a re-created key gets a new revision')
  })

  t.test('list returns the prefix only, sorted, with a revision covering them', async (t) => {
    const s = await client()
    const p = uniquePrefix('list')
    t.same((await s.list(p)).items, [])
    for (const k of ['c', 'a', 'b/x', 'b/y']) await s.create(`${p}${k}`, k)
    await s.create(`${p.slice(0, -1)}-sibling`, 'not under the prefix')
    const last = await s.create(`${p}d`, 'd')
    const listed = await s.list(p)
    t.same(listed.items.map((i) => i.key), ['a', 'b/x', 'b/y', 'c', 'd'].map((k) => `${p}${k}`))
    t.ok(listed.revision >= last.revision, 'the listing revision covers the last write')
    t.same((await s.list(`${p}b/`)).items.map((i) => i.value), ['b/x', 'b/y'])
  })

  t.test('revisions increase strictly across keys and operations', async (t) => {
    const s = await client()
    const p = uniquePrefix('monotonic')
    const revs: number[] = []
    for (let i = 0; i < 10; i++) revs.push((await s.create(`${p}${i}`, String(i))).revision)
    const u = await s.update(`${p}0`, 'u', revs[0] as number)
    revs.push(u.revision)
    await s.delete(`${p}1`)
    revs.push((await s.create(`${p}1`, 'again')).revision)
    t.ok(revs.every((r, i) => i === 0 || r > (revs[i - 1] as number)), `strictly increasing: ${revs.join(',')}`)
  })

  t.test('concurrent CAS from two clients: exactly one wins', async (t) => {
    const [a, b] = [await client(), await client()]
    const p = uniquePrefix('race')
    const base = await a.create(`${p}k`, '0')
    const attempts = Array.from({ length: 8 }, (_, i) => code((i % 2 ? a : b).update(`${p}k`, `w${i}`, base.revision)))
    const codes = await Promise.all(attempts)
    t.equal(codes.filter((c) => c === 'resolved').length, 1, `one winner: ${codes.join(',')}`)
    t.equal(codes.filter((c) => c === 'conflict').length, 7)
  })

  t.test('two clients see each other\u2019s writes', async (t) => {
    const [a, b] = [await client(), await client()]
    const p = uniquePrefix('two')
    const kv = await a.create(`${p}k`, 'from a')
    t.same(await b.get(`${p}k`), kv, 'b reads what a wrote')
    const kv2 = await b.update(`${p}k`, 'from b', kv.revision)
    t.equal(await code(a.update(`${p}k`, 'late a', kv.revision)), 'conflict', 'a must not overwrite b blindly')
    t.same(await a.get(`${p}k`), kv2)
    t.same((await a.list(p)).items, [kv2])
  })

  t.test('watch replays from a revision, then follows live, in order', async (t) => {
    const s = await client()
    const p = uniquePrefix('watch')
    const a = await s.create(`${p}a`, '1')
    const b = await s.create(`${p}b`, '2')
    await s.create(`${p.slice(0, -1)}x/outside`, 'no')
    await s.delete(`${p}a`, a.revision)
    const events: WatchEvent[] = []
    const errors: Error[] = []
    const w = s.watch(p, b.revision, (e) => events.push(e), (e) => errors.push(e))
    t.teardown(() => w.close())
    await waitFor(() => events.length >= 2, 'the replayed events')
    const c = await s.create(`${p}c`, '3')
    await s.update(`${p}c`, '4', c.revision)
    await waitFor(() => events.length >= 4, 'the live events')
    t.same(
      events.map((e) => [e.type, e.key.slice(p.length), e.type === 'put' ? e.value : null]),
      [
        ['put', 'b', '2'],
        ['delete', 'a', null],
        ['put', 'c', '3'],
        ['put', 'c', '4'],
      ],
    )
    t.equal(events[0]?.revision, b.revision, 'replay starts at the asked revision')
    t.ok(events.every((e, i) => i === 0 || e.revision > (events[i - 1] as WatchEvent).revision), 'revision order')
    t.same(errors, [])
  })

  t.test('watch from list revision + 1 sees only what follows, including another client\u2019s writes', async (t) => {
    const [a, b] = [await client(), await client()]
    const p = uniquePrefix('follow')
    await a.create(`${p}old`, 'old')
    const listed = await a.list(p)
    const events: WatchEvent[] = []
    const w = a.watch(p, listed.revision + 1, (e) => events.push(e))
    t.teardown(() => w.close())
    const n = await b.create(`${p}new`, 'from b')
    await waitFor(() => events.length >= 1, 'b\u2019s write to reach a\u2019s watch')
    t.same(events, [{ type: 'put', key: `${p}new`, value: 'from b', revision: n.revision }])
    w.close()
    await b.create(`${p}after-close`, 'x')
    const probe: WatchEvent[] = []
    const w2 = a.watch(p, n.revision + 1, (e) => probe.push(e))
    t.teardown(() => w2.close())
    await waitFor(() => probe.length >= 1, 'a second watch to catch up')
    t.equal(events.length, 1, 'a closed watch gets nothing more')
  })

  t.test('watch from a future revision starts there', async (t) => {
    const s = await client()
    const p = uniquePrefix('future')
    let kv = await s.create(`${p}k`, '0')
    const from = kv.revision + 3
    const events: WatchEvent[] = []
    const w = s.watch(p, from, (e) => events.push(e))
    t.teardown(() => w.close())
    for (let i = 1; i <= 5; i++) kv = await s.update(`${p}k`, String(i), kv.revision)
    await waitFor(() => events.some((e) => e.revision === kv.revision), 'the last update')
    t.ok(events.length > 0 && events.every((e) => e.revision >= from), `only revisions >= ${from}: ${events.map((e) => e.revision).join(',')}`)
    t.same(events.map((e) => (e.type === 'put' ? e.value : '')), ['3', '4', '5'])
  })

  t.test('txn writes all its ops at one revision, or none, naming the op that failed', async (t) => {
    const s = await client()
    if (!s.transactions) return void t.pass('no multi-object transactions here: the one-write txn test stands for this one')
    const p = uniquePrefix('txn')
    const block = await s.create(`${p}block`, 'b0')
    const gone = await s.create(`${p}gone`, 'g')
    const out = await s.txn([
      { op: 'create', key: `${p}handle`, value: 'h' },
      { op: 'update', key: `${p}block`, value: 'b1', revision: block.revision },
      { op: 'delete', key: `${p}gone`, revision: gone.revision },
    ])
    const rev = out[0]?.revision as number
    t.ok(rev > gone.revision && out.every((kv) => kv.revision === rev), `one new revision for every op: ${out.map((kv) => kv.revision).join(',')}`)
    t.same(out.map((kv) => [kv.key, kv.value]), [[`${p}handle`, 'h'], [`${p}block`, 'b1'], [`${p}gone`, '']])
    t.same((await s.list(p)).items, [{ key: `${p}block`, value: 'b1', revision: rev }, { key: `${p}handle`, value: 'h', revision: rev }])
    const failures = await txnFailures(s, [
      [{ op: 'create', key: `${p}new`, value: 'x' }, { op: 'update', key: `${p}block`, value: 'b2', revision: block.revision }],
      [{ op: 'create', key: `${p}handle`, value: 'x' }, { op: 'update', key: `${p}block`, value: 'b2', revision: rev }],
      [{ op: 'update', key: `${p}block`, value: 'b2', revision: rev }, { op: 'delete', key: `${p}gone` }],
    ])
    t.same(failures, [['conflict', `${p}block`], ['exists', `${p}handle`], ['not-found', `${p}gone`]], 'the failing op, by code and key')
    t.same((await s.list(p)).items.map((kv) => [kv.key, kv.value, kv.revision]), [[`${p}block`, 'b1', rev], [`${p}handle`, 'h', rev]], 'a failed txn wrote nothing')
    t.equal(await code(s.txn([])), 'invalid', 'an empty txn')
    t.equal(await code(s.txn([{ op: 'create', key: `${p}d`, value: '1' }, { op: 'delete', key: `${p}d` }])), 'invalid', 'a key twice')
  })

  t.test('a txn reaches watchers as one event per op, all at its revision', async (t) => {
    const s = await client()
    if (!s.transactions) return void t.pass('no multi-object transactions here: the one-write txn test stands for this one')
    const p = uniquePrefix('txn-watch')
    const a = await s.create(`${p}a`, '1')
    const events: WatchEvent[] = []
    const w = s.watch(p, a.revision + 1, (e) => events.push(e))
    t.teardown(() => w.close())
    // The watch is following live before the txn: its events come as it happens, not from the replay.
    const m = await s.create(`${p}m`, 'm')
    await waitFor(() => events.some((e) => e.revision === m.revision), 'the watch to follow')
    const [x] = await s.txn([{ op: 'update', key: `${p}a`, value: '2', revision: a.revision }, { op: 'create', key: `${p}b`, value: 'b' }])
    const after = await s.create(`${p}c`, 'c')
    await waitFor(() => events.some((e) => e.revision === after.revision), 'the write after the txn')
    t.same(events.map((e) => [e.type, e.key, e.revision]), [['put', `${p}m`, m.revision], ['put', `${p}a`, x?.revision], ['put', `${p}b`, x?.revision], ['put', `${p}c`, after.revision]])
    // A watch started later replays the txn from the log (or etcd's history) the same way.
    const replayed: WatchEvent[] = []
    const w2 = s.watch(p, a.revision + 1, (e) => replayed.push(e))
    t.teardown(() => w2.close())
    await waitFor(() => replayed.length >= 4, 'the replay')
    t.same(replayed.map((e) => [e.key, e.revision]), events.map((e) => [e.key, e.revision]))
  })

  t.test('a txn check holds the txn to a key read elsewhere, writes nothing of it, and fails it when the key moved', async (t) => {
    const s = await client()
    if (!s.transactions) return void t.pass('no multi-object transactions here: the one-write txn test stands for this one')
    const p = uniquePrefix('txn-check')
    const guard = await s.create(`${p}guard`, 'g1')
    const out = await s.txn([{ op: 'create', key: `${p}a`, value: '1' }, { op: 'check', key: `${p}guard`, revision: guard.revision }, { op: 'check', key: `${p}absent`, revision: 0 }])
    t.same(out.map((kv) => [kv.key, kv.value]), [[`${p}a`, '1'], [`${p}guard`, ''], [`${p}absent`, '']])
    t.equal(out[1]?.revision, guard.revision, 'a check answers the revision it held to')
    t.same((await s.list(p)).items.map((kv) => [kv.key, kv.value, kv.revision]), [[`${p}a`, '1', out[0]?.revision], [`${p}guard`, 'g1', guard.revision]], 'the checked keys are not written')
    const moved = await s.update(`${p}guard`, 'g2', guard.revision)
    await s.create(`${p}absent`, 'now')
    const failures = await txnFailures(s, [
      [{ op: 'create', key: `${p}b`, value: '1' }, { op: 'check', key: `${p}guard`, revision: guard.revision }],
      [{ op: 'create', key: `${p}b`, value: '1' }, { op: 'check', key: `${p}absent`, revision: 0 }],
      [{ op: 'create', key: `${p}b`, value: '1' }, { op: 'check', key: `${p}never`, revision: moved.revision }],
    ])
    t.same(failures, [['conflict', `${p}guard`], ['conflict', `${p}absent`], ['not-found', `${p}never`]], 'the failing check, by code and key')
    t.equal(await s.get(`${p}b`), undefined, 'a failed check wrote nothing')
    t.equal(await code(s.txn([{ op: 'check', key: `${p}guard`, revision: moved.revision }])), 'invalid', 'a txn of checks only')
    t.equal(await code(s.txn([{ op: 'create', key: `${p}c`, value: '1' }, { op: 'check', key: `${p}guard`, revision: -1 }])), 'invalid', 'a negative revision')
  })

  t.test('without transactions, txn takes one write and no check, and refuses more writing nothing', async (t) => {
    const s = await client()
    if (s.transactions) return void t.pass('this backend has transactions: the multi-op txn tests stand for this one')
    const p = uniquePrefix('txn-one')
    const events: WatchEvent[] = []
    const start = await s.create(`${p}start`, 's')
    const w = s.watch(p, start.revision + 1, (e) => events.push(e))
    t.teardown(() => w.close())
    const [a] = await s.txn([{ op: 'create', key: `${p}a`, value: '1' }])
    t.match(a, { key: `${p}a`, value: '1' })
    const [a2] = await s.txn([{ op: 'update', key: `${p}a`, value: '2', revision: a?.revision as number }])
    t.ok((a2?.revision as number) > (a?.revision as number), 'an update txn moves the revision')
    t.same(await txnFailures(s, [
      [{ op: 'update', key: `${p}a`, value: '3', revision: a?.revision as number }],
      [{ op: 'create', key: `${p}a`, value: 'x' }],
      [{ op: 'delete', key: `${p}missing` }],
    ]), [['conflict', `${p}a`], ['exists', `${p}a`], ['not-found', `${p}missing`]], 'a one-write txn fails as the single call does')
    t.same(await txnFailures(s, [
      [{ op: 'create', key: `${p}b`, value: '1' }, { op: 'create', key: `${p}c`, value: '1' }],
      [{ op: 'create', key: `${p}b`, value: '1' }, { op: 'check', key: `${p}a`, revision: a2?.revision as number }],
    ]), [['invalid', `${p}b`], ['invalid', `${p}b`]], 'two writes, or a write and a check, are refused')
    await s.txn([{ op: 'delete', key: `${p}a`, revision: a2?.revision as number }])
    await waitFor(() => events.length >= 3, 'the one-write txns to reach the watch')
    t.same(events.map((e) => [e.type, e.key.slice(p.length)]), [['put', 'a'], ['put', 'a'], ['delete', 'a']])
    t.same((await s.list(p)).items.map((kv) => kv.key), [`${p}start`], 'the refused txns wrote nothing')
  })

  t.test('bad input is rejected as invalid', async (t) => {
    const s = await client()
    t.equal(await code(s.get('')), 'invalid')
    t.equal(await code(s.create('', 'x')), 'invalid')
    t.equal(await code(s.create('/k', 42 as unknown as string)), 'invalid')
  })
}
