// The fan-out over a real store (embedded) and real sockets: agents' lists and watches of the resources and
// affinities are served from its one list and watch, everything else goes to the store; a watch goes on after a
// reconnect; a fan-out that restarted is listed again; puts of unchanged bytes reach no agent where the store has
// no transactions, and every put does where it has; a token is asked for when set.
import t, { type Test } from 'tap'
import pino from 'pino'
import type { AddressInfo } from 'node:net'
import { createServer } from 'node:http'
import { ClusterState } from '../../../agent/cluster-state.js'
import { buildFanoutServer } from '../../../agent/fanout/server.js'
import { FanoutView } from '../../../agent/fanout/view.js'
import { readyEndpoints } from '../../../agent/fanout/endpoints.js'
import { FANOUT_ROOTS } from '../../../agent/fanout/roots.js'
import { type Datastore, DatastoreError, FanoutDatastore, type WatchEvent, encodeResource, resourceKey, type Resource } from '../../../config/index.js'
import { AFFINITIES_PREFIX, HANDLES_PREFIX } from '../../../ipam/records.js'
import { embeddedStore } from '../../ipam/stores.js'
import { waitFor } from '../../harness/wait.js'

const silent = pino({ level: 'silent' })

const pool = (name: string, cidr: string): Resource => ({ apiVersion: 'projectcalico.org/v3', kind: 'IPPool', metadata: { name }, spec: { cidr } })

interface Running {
  readonly view: FanoutView
  readonly address: string
  /** Drops every open connection. */
  cut(): void
  close(): Promise<void>
}

async function serve(t: Test, store: Datastore, options: { token?: string; logSize?: number; port?: number } = {}): Promise<Running> {
  const view = new FanoutView(store, silent, { roots: FANOUT_ROOTS, retryMs: 50, ...(options.logSize !== undefined ? { logSize: options.logSize } : {}) })
  await view.start()
  const app = buildFanoutServer(view, { token: options.token })
  await app.listen({ host: '127.0.0.1', port: options.port ?? 0 })
  const address = `127.0.0.1:${(app.server.address() as AddressInfo).port}`
  let closed = false
  const close = async (): Promise<void> => {
    if (closed) return
    closed = true
    view.close()
    await app.close()
  }
  t.teardown(close)
  return { view, address, close, cut: () => app.server.closeAllConnections() }
}

/** A store that says it has no transactions (as the kubernetes datastore), over an embedded one. */
function withoutTransactions(store: Datastore): Datastore {
  return new Proxy(store, { get: (target, p, r) => (p === 'transactions' ? false : Reflect.get(target, p, r) as unknown) })
}

t.test('lists and watches of the served roots come from the fan-out; the rest from the store', async (t) => {
  const { store } = await embeddedStore(t)
  await store.create(resourceKey('IPPool', 'a'), encodeResource(pool('a', '10.1.0.0/16')))
  const fan = await serve(t, store)
  const client = new FanoutDatastore(store, { roots: FANOUT_ROOTS, addresses: [fan.address] })
  const listed = await client.list(FANOUT_ROOTS[0] as string)
  t.same(listed.items, (await store.list(FANOUT_ROOTS[0] as string)).items, 'the listing is the store\'s')
  const events: WatchEvent[] = []
  const w = client.watch(FANOUT_ROOTS[0] as string, listed.revision + 1, (e) => events.push(e))
  t.teardown(() => w.close())
  await waitFor(() => fan.view.followers === 1, { timeoutMs: 5000, what: 'the watch open at the fan-out' })
  const b = await store.create(resourceKey('IPPool', 'b'), encodeResource(pool('b', '10.2.0.0/16')))
  await store.delete(resourceKey('IPPool', 'a'))
  await waitFor(() => events.length === 2, { timeoutMs: 5000, what: 'two events' })
  t.same(events[0], { type: 'put', key: b.key, value: b.value, revision: b.revision }, 'a put with the store\'s revision')
  t.equal(events[1]?.type, 'delete')
  t.equal(events[1]?.key, resourceKey('IPPool', 'a'))
  t.same((await client.list(FANOUT_ROOTS[0] as string)).items.map((kv) => kv.key), [resourceKey('IPPool', 'b')], 'a listing after events holds them (not one made before)')

  // Not served: a handle prefix is the store's own list.
  await store.create(`${HANDLES_PREFIX}h1`, '{}')
  t.equal((await client.list(HANDLES_PREFIX)).items.length, 1, 'an unserved prefix is listed from the store')
  t.equal(fan.view.received, 2, 'the fan-out received the two events from its watch, never the handle')
  // A watch not from one of this client's listings is told to list again.
  const err = await new Promise<Error>((resolve) => client.watch(AFFINITIES_PREFIX, 5, () => undefined, resolve))
  t.ok(err instanceof DatastoreError && err.code === 'compacted', `a watch from an unknown revision: ${err.message}`)
})

t.test('a cluster view over the fan-out follows the store, and after the fan-out restarts it lists again', async (t) => {
  const { store } = await embeddedStore(t)
  const fan = await serve(t, store)
  const port = Number(fan.address.split(':')[1])
  const client = new FanoutDatastore(store, { roots: FANOUT_ROOTS, addresses: [fan.address] })
  const cluster = new ClusterState(client, silent, { blocks: false })
  t.teardown(() => cluster.close())
  await cluster.start()
  await store.create(resourceKey('IPPool', 'a'), encodeResource(pool('a', '10.1.0.0/16')))
  await waitFor(() => cluster.get('IPPool', 'a') !== undefined, { timeoutMs: 5000, what: 'pool a in the view' })

  await fan.close()
  await waitFor(() => !cluster.current, { timeoutMs: 5000, what: 'the view behind while the fan-out is gone' })
  await store.create(resourceKey('IPPool', 'b'), encodeResource(pool('b', '10.2.0.0/16')))
  await store.delete(resourceKey('IPPool', 'a'))
  const again = await serve(t, store, { port })
  await waitFor(() => cluster.get('IPPool', 'b') !== undefined && cluster.get('IPPool', 'a') === undefined && cluster.current, { timeoutMs: 15_000, what: 'the view listed again from the new fan-out' })
  t.not(again.view.epoch, fan.view.epoch, 'the new fan-out is another epoch')
  t.pass('what changed while the fan-out was down is in the view')
})

t.test('a view whose relist fails lists again until it succeeds (a fan-out replaced by one not ready yet)', async (t) => {
  const { store } = await embeddedStore(t)
  const fan = await serve(t, store)
  const port = Number(fan.address.split(':')[1])
  const cluster = new ClusterState(new FanoutDatastore(store, { roots: FANOUT_ROOTS, addresses: [fan.address] }), silent, { blocks: false })
  t.teardown(() => cluster.close())
  await cluster.start()
  await fan.close()
  // In its place, one that has not listed yet: its watch says list again, its listing is unavailable.
  let lists = 0
  const stub = createServer((req, res) => {
    const listing = req.url?.startsWith('/v1/list') === true
    if (listing) lists++
    res.writeHead(listing ? 503 : 410, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ error: { code: listing ? 'unavailable' : 'compacted', message: 'not listed yet' } }))
  })
  await new Promise<void>((resolve) => stub.listen(port, '127.0.0.1', resolve))
  await waitFor(() => lists >= 2, { timeoutMs: 20_000, what: 'the view listing again after a failed listing' })
  await new Promise<void>((resolve) => stub.close(() => resolve()))
  stub.closeAllConnections()
  await serve(t, store, { port })
  await store.create(resourceKey('IPPool', 'late'), encodeResource(pool('late', '10.3.0.0/16')))
  await waitFor(() => cluster.get('IPPool', 'late') !== undefined && cluster.current, { timeoutMs: 30_000, what: 'the view following the new fan-out' })
  t.pass(`the view listed again ${lists} times while the listing failed, then followed the new fan-out`)
})

t.test('a dropped stream goes on after its last event, when the fan-out still keeps it', async (t) => {
  const { store } = await embeddedStore(t)
  const fan = await serve(t, store)
  const client = new FanoutDatastore(store, { roots: FANOUT_ROOTS, addresses: [fan.address] })
  const listed = await client.list(FANOUT_ROOTS[0] as string)
  const seen: string[] = []
  let failed: Error | undefined
  const w = client.watch(FANOUT_ROOTS[0] as string, listed.revision + 1, (e) => seen.push(e.key), (e) => (failed = e))
  t.teardown(() => w.close())
  await waitFor(() => fan.view.followers === 1, { timeoutMs: 5000, what: 'the stream open' })
  await store.create(resourceKey('IPPool', 'a'), encodeResource(pool('a', '10.1.0.0/16')))
  await waitFor(() => seen.length === 1, { timeoutMs: 5000, what: 'the first event' })
  // Cut every connection to the fan-out; the event meanwhile is kept, and told after the reconnect.
  fan.cut()
  await waitFor(() => fan.view.followers === 0, { timeoutMs: 5000, what: 'the stream cut' })
  await store.create(resourceKey('IPPool', 'b'), encodeResource(pool('b', '10.2.0.0/16')))
  await waitFor(() => seen.length === 2, { timeoutMs: 5000, what: 'the second event' })
  t.same(seen, [resourceKey('IPPool', 'a'), resourceKey('IPPool', 'b')], 'each event once, in order')
  t.equal(failed, undefined, 'the watch never failed')
  await waitFor(() => fan.view.followers === 1, { timeoutMs: 5000, what: 'the stream open again' })
})

t.test('unchanged bytes: no event without transactions, an event with them', async (t) => {
  for (const txn of [false, true]) {
    const { store: inner } = await embeddedStore(t)
    const store = txn ? inner : withoutTransactions(inner)
    const kv = await inner.create(resourceKey('IPPool', 'a'), encodeResource(pool('a', '10.1.0.0/16')))
    const fan = await serve(t, store)
    const client = new FanoutDatastore(store, { roots: FANOUT_ROOTS, addresses: [fan.address] })
    const listed = await client.list(FANOUT_ROOTS[0] as string)
    const events: WatchEvent[] = []
    const w = client.watch(FANOUT_ROOTS[0] as string, listed.revision + 1, (e) => events.push(e))
    await waitFor(() => fan.view.followers === 1, { timeoutMs: 5000, what: 'the stream open' })
    const same = await inner.update(kv.key, kv.value, kv.revision)
    const changed = await inner.update(kv.key, encodeResource(pool('a', '10.9.0.0/16')), same.revision)
    await waitFor(() => events.some((e) => e.revision === changed.revision), { timeoutMs: 5000, what: 'the change' })
    t.same(events.map((e) => e.revision), txn ? [same.revision, changed.revision] : [changed.revision], txn ? 'with transactions every put is told' : 'without, the put of the same bytes is not')
    t.equal(fan.view.unchanged, txn ? 0 : 1)
    w.close()
  }
})

t.test('a token is asked for when set', async (t) => {
  const { store } = await embeddedStore(t)
  const fan = await serve(t, store, { token: 's3cret' })
  await t.rejects(new FanoutDatastore(store, { roots: FANOUT_ROOTS, addresses: [fan.address] }).list(FANOUT_ROOTS[0] as string), /401 send Authorization: Bearer/)
  await t.rejects(new FanoutDatastore(store, { roots: FANOUT_ROOTS, addresses: [fan.address], token: 'wrong' }).list(FANOUT_ROOTS[0] as string), /401 the bearer token is not the configured one/)
  const ok = await new FanoutDatastore(store, { roots: FANOUT_ROOTS, addresses: [fan.address], token: 's3cret' }).list(FANOUT_ROOTS[0] as string)
  t.same(ok.items, [])
})

t.test('the datastore\'s own apiserver connection is still found through the fan-out\'s datastore', async (t) => {
  const { store } = await embeddedStore(t)
  const api = { connection: true }
  const kube = new Proxy(store, { get: (target, p, r) => (p === 'api' ? api : Reflect.get(target, p, r) as unknown) })
  t.equal(new FanoutDatastore(kube, { roots: FANOUT_ROOTS, addresses: ['127.0.0.1:1'] }).api, api, 'the pods\' reader uses the datastore\'s connection, not one of its own')
})

t.test('a replica that does not answer is passed over for the next', async (t) => {
  const { store } = await embeddedStore(t)
  const fan = await serve(t, store)
  const client = new FanoutDatastore(store, { roots: FANOUT_ROOTS, addresses: ['127.0.0.1:1', fan.address] })
  t.same((await client.list(AFFINITIES_PREFIX)).items, [])
  t.equal(client.address, fan.address)
})

t.test('the events no longer kept: a watch from them is told to list again', async (t) => {
  const { store } = await embeddedStore(t)
  const fan = await serve(t, store, { logSize: 2 })
  const client = new FanoutDatastore(store, { roots: FANOUT_ROOTS, addresses: [fan.address] })
  const listed = await client.list(FANOUT_ROOTS[0] as string)
  for (const n of ['a', 'b', 'c']) await store.create(resourceKey('IPPool', n), encodeResource(pool(n, '10.1.0.0/16')))
  await waitFor(() => fan.view.received === 3, { timeoutMs: 5000, what: 'three events at the fan-out' })
  const err = await new Promise<Error>((resolve) => client.watch(FANOUT_ROOTS[0] as string, listed.revision + 1, () => undefined, resolve))
  t.ok(err instanceof DatastoreError && err.code === 'compacted', err.message)
})

t.test('a Service\'s ready endpoints, at its fanout port', async (t) => {
  const slice = (ports: unknown[], endpoints: unknown[]): unknown => ({ ports, endpoints })
  t.same(readyEndpoints({ items: [
    slice([{ name: 'fanout', port: 5474 }, { name: 'metrics', port: 9093 }], [{ addresses: ['10.0.0.2'] }, { addresses: ['10.0.0.1'], conditions: { ready: true } }, { addresses: ['10.0.0.3'], conditions: { ready: false } }]),
    slice([{ port: 5474 }], [{ addresses: ['fd00::1'] }]),
    slice([{ name: 'a', port: 1 }, { name: 'b', port: 2 }], [{ addresses: ['10.0.0.9'] }]),
  ] }), ['10.0.0.1:5474', '10.0.0.2:5474', '[fd00::1]:5474'])
  t.same(readyEndpoints({}), [])
})

t.test('pinto-fanout\'s settings: each bad one refused naming its variable', async (t) => {
  const { fanoutSettingsFromEnv } = await import('../../../agent/fanout/main.js')
  t.same(fanoutSettingsFromEnv({}), { listen: { host: '0.0.0.0', port: 5474 }, token: undefined, logLevel: 'info' })
  t.throws(() => fanoutSettingsFromEnv({ PINTO_FANOUT_LISTEN: '5474' }), { message: /^PINTO_FANOUT_LISTEN: listen address "5474": expected host:port/ })
  t.throws(() => fanoutSettingsFromEnv({ PINTO_LOG_LEVEL: 'loud' }), { message: /^PINTO_LOG_LEVEL: "loud" is not one of/ })
  t.throws(() => fanoutSettingsFromEnv({ PINTO_FANOUT_TOKEN_FILE: '/nonexistent/token' }), { message: /^PINTO_FANOUT_TOKEN_FILE: cannot read \/nonexistent\/token/ })
  const dir = t.testdir({ empty: '\n', token: 's3cret\n' })
  t.throws(() => fanoutSettingsFromEnv({ PINTO_FANOUT_TOKEN_FILE: `${dir}/empty` }), { message: /^PINTO_FANOUT_TOKEN_FILE: .* is empty/ })
  t.equal(fanoutSettingsFromEnv({ PINTO_FANOUT_TOKEN_FILE: `${dir}/token` }).token, 's3cret')
})
