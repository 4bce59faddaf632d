// The REST API through app.inject() over real objects: a BGP speaker in session with another over
// loopback, IPAM on an embedded store, felix routes as data. Every endpoint's content, the error
// catalogue for bad parameters, /readyz's window, /metrics text, the OpenAPI document, and who may mutate.
import t from 'tap'
import { request as httpRequest } from 'node:http'
import { mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildApi, listenApi } from '../../../agent/api/index.js'
import { judgeReadiness } from '../../../agent/api/readiness.js'
import { peerView } from '../../../agent/api/views.js'
import { fixture, TOKEN } from './fixture.js'

type Json = Record<string, any>

t.test('API over a live speaker, IPAM and FIB', async (t) => {
  const f = await fixture(t)
  const app = await buildApi(f.deps)
  t.teardown(() => app.close())
  const get = async (url: string, headers: Record<string, string> = {}) => {
    const r = await app.inject({ method: 'GET', url, headers })
    return { status: r.statusCode, body: r.headers['content-type']?.toString().startsWith('application/json') ? r.json<Json>() : ({ text: r.body } as Json), headers: r.headers }
  }

  t.test('status counts', async (t) => {
    const { status, body } = await get('/v1/status')
    t.equal(status, 200)
    t.match(body, { node: 'node-a', asn: 64512, routerId: '192.0.2.1', peers: { configured: 1, established: 1 }, routes: { locRib: 6, fib: 4 }, ipam: { pools: 1, addressesInUse: 3 } })
    t.equal(body.ipam.blocks, 2, 'one block per node')
    t.equal(body.ipam.localBlocks, 1)
    t.type(body.uptimeSeconds, 'number')
  })

  t.test('peers: type, state, since, prefixes and negotiated capabilities', async (t) => {
    const { body } = await get('/v1/peers')
    t.equal(body.peers.length, 1)
    const p = body.peers[0]
    t.match(p, { name: 'node-b', address: '127.0.0.2', type: 'mesh', session: 'ibgp', state: 'Established', lastError: null, peerAsn: 64512, routerId: '192.0.2.2' })
    t.ok(Date.parse(p.since) <= Date.now() && Date.parse(p.since) > Date.now() - 60_000, 'since is a recent ISO time')
    t.same(p.prefixes, { received: 4, accepted: 4, advertised: 3 })
    t.match(p, { importTable: false, importTablePrefixes: 0 }, 'route refresh negotiated: no routes kept before import policy')
    t.match(peerView({ ...f.a.peerStatus()[0]!, importTable: 7 }), { importTable: true, importTablePrefixes: 7 }, 'a peer without route refresh shows its import table')
    t.match(p.capabilities, { fourOctetAs: true, routeRefresh: true, gracefulRestart: true, families: ['ipv4-unicast'], holdTime: 9 })
    t.ok(p.counters.updatesIn > 0)
  })

  t.test('loc-rib: ordered by prefix, each best path with why it won', async (t) => {
    const { status, body } = await get('/v1/routes')
    t.equal(status, 200)
    t.equal(body.table, 'loc-rib')
    t.equal(body.total, 6)
    t.equal(body.nextCursor, null)
    t.same(body.routes.map((r: Json) => r.prefix), ['198.18.0.0/26', '198.18.0.64/26', '198.18.1.0/26', '198.18.1.64/26', '198.18.9.0/24', '198.19.0.0/24'])
    const contested = body.routes.find((r: Json) => r.prefix === '198.18.9.0/24')
    t.match(contested, { source: 'local', reason: 'local-origin', attributes: { localPref: 50 } })
    t.match(body.routes[0], { source: 'local', reason: 'only path' })
    const fromB = await get('/v1/routes?table=loc-rib&peer=node-b')
    t.equal(fromB.body.total, 3, 'peer filters the Loc-RIB by where the best path came from')
    const byAddr = await get('/v1/routes?peer=127.0.0.2')
    t.equal(byAddr.body.total, 3, 'a peer may be named by address')
    const inside = await get('/v1/routes?prefix=198.18.1.0/24')
    t.same(inside.body.routes.map((r: Json) => r.prefix), ['198.18.1.0/26', '198.18.1.64/26'], 'prefix keeps routes inside it')
  })

  t.test('adj-rib-in and adj-rib-out of a peer', async (t) => {
    const rin = await get('/v1/routes?table=adj-rib-in&peer=node-b')
    t.same(rin.body.routes.map((r: Json) => r.prefix), ['198.18.1.0/26', '198.18.1.64/26', '198.18.9.0/24', '198.19.0.0/24'])
    t.match(rin.body.routes[0], { source: 'node-b', nextHop: ['127.0.0.2'], stale: false })
    const rout = await get('/v1/routes?table=adj-rib-out&peer=node-b')
    t.same(rout.body.routes.map((r: Json) => r.prefix), ['198.18.0.0/26', '198.18.0.64/26', '198.18.9.0/24'], 'iBGP-learned routes are not sent back to iBGP')
    t.match(rout.body.routes[0], { nextHop: ['127.0.0.1'], attributes: { localPref: 100, origin: 'igp' } })
    t.same((await get('/v1/routes?table=adj-rib-out&peer=node-b')).body.routes, rout.body.routes, 'the same answer twice')
  })

  t.test('fib: felix routes by prefix', async (t) => {
    const { body } = await get('/v1/routes?table=fib&limit=2')
    t.equal(body.total, 4)
    t.same(body.routes.map((r: Json) => r.prefix), ['198.18.0.0/26', '198.18.1.0/26'])
    t.match(body.routes[0], { type: 'blackhole', table: 254, protocol: 87, nextHop: [] })
    t.match(body.routes[1], { type: 'unicast', nextHop: [{ gateway: '127.0.0.2', onlink: true }] })
    const next = await get(`/v1/routes?table=fib&limit=2&cursor=${body.nextCursor}`)
    t.same(next.body.routes.map((r: Json) => r.prefix), ['198.18.1.64/26', '198.19.0.0/24'])
    t.equal(next.body.nextCursor, null)
  })

  t.test('bad parameters: 400 naming the parameter, from one catalogue', async (t) => {
    const cases: [string, string, RegExp][] = [
      ['/v1/routes?table=rib', 'table', /table: must be one of loc-rib, adj-rib-in, adj-rib-out, fib/],
      ['/v1/routes?limit=0', 'limit', /limit/],
      ['/v1/routes?limit=abc', 'limit', /limit/],
      ['/v1/routes?limit=100000', 'limit', /limit: must be <= 5000/],
      ['/v1/routes?tabel=fib', 'tabel', /tabel: is not a known parameter/],
      ['/v1/routes?prefix=198.18.0.0/33', 'prefix', /prefix: "198\.18\.0\.0\/33" has an invalid prefix length \(0-32 for IPv4\)/],
      ['/v1/routes?prefix=198.18.0.1/16', 'prefix', /prefix: "198\.18\.0\.1\/16" has host bits set \(the network is 198\.18\.0\.0\/16\)/],
      ['/v1/routes?prefix=198.018.0.0/16', 'prefix', /prefix: "198\.018\.0\.0\/16" has an octet with a leading zero/],
      ['/v1/routes?prefix=fe80::%25eth0', 'prefix', /prefix: "fe80::%eth0" has a zone index/],
      ['/v1/routes?prefix=nonsense', 'prefix', /prefix/],
      ['/v1/routes?cursor=zzz', 'cursor', /cursor: not a cursor/],
      ['/v1/routes?table=adj-rib-in', 'peer', /peer: table adj-rib-in needs a peer/],
      ['/v1/routes?table=fib&peer=node-b', 'peer', /fib table has no peers/],
      ['/v1/ipam/blocks?nod=x', 'nod', /nod/],
    ]
    for (const [url, field, message] of cases) {
      const r = await get(url)
      t.equal(r.status, 400, url)
      t.match(r.body, { error: { code: 'invalid-parameter', field, message } }, url)
    }
    const unknown = await get('/v1/routes?table=adj-rib-out&peer=nobody')
    t.equal(unknown.status, 404)
    t.match(unknown.body, { error: { code: 'unknown-peer', field: 'peer' } })
    const nowhere = await get('/v1/nothing')
    t.match(nowhere, { status: 404, body: { error: { code: 'not-found', message: 'no route GET /v1/nothing' } } })
  })

  t.test('ipam blocks and allocations', async (t) => {
    const blocks = (await get('/v1/ipam/blocks')).body.blocks
    t.equal(blocks.length, 2)
    t.match(blocks.find((b: Json) => b.node === 'node-a'), { pool: 'default-ipv4-ippool', affinity: 'host:node-a', size: 64, inUse: 2, free: 62 })
    t.match(blocks.find((b: Json) => b.node === 'node-b'), { inUse: 1 })
    t.ok(blocks[0].cidr.localeCompare(blocks[1].cidr, 'en', { numeric: true }) < 0, 'ordered by address')
    t.equal((await get('/v1/ipam/blocks?node=node-b')).body.blocks.length, 1)
    const allocs = (await get('/v1/ipam/allocations')).body.allocations
    t.equal(allocs.length, 3)
    t.match(allocs.find((a: Json) => a.handle === 'k8s-pod-network.c1'), { handle: 'k8s-pod-network.c1', node: 'node-a', blockNode: 'node-a', borrowed: false, attributes: { pod: 'web-1', namespace: 'default' } })
    t.same((await get('/v1/ipam/allocations?node=node-b')).body.allocations.map((a: Json) => a.attributes.pod), ['dns'])
  })

  t.test('livez, readyz', async (t) => {
    t.match(await get('/livez'), { status: 200, body: { live: true } })
    t.match(await get('/readyz'), { status: 200, body: { ready: true, established: 1, peers: 1 } })
  })

  t.test('metrics in Prometheus text, read at scrape time', async (t) => {
    const { status, body, headers } = await get('/metrics')
    t.equal(status, 200)
    t.match(String(headers['content-type']), /text\/plain/)
    const text = body.text as string
    t.match(text, /pinto_bgp_session_state\{peer="node-b",address="127.0.0.2",type="mesh",state="Established"\} 1/)
    t.match(text, /pinto_bgp_session_state\{peer="node-b",address="127.0.0.2",type="mesh",state="Idle"\} 0/)
    t.match(text, /pinto_bgp_prefixes_received\{peer="node-b",address="127.0.0.2",type="mesh"\} 4/)
    t.match(text, /pinto_bgp_prefixes_advertised\{peer="node-b",address="127.0.0.2",type="mesh"\} 3/)
    t.match(text, /pinto_bgp_import_table_prefixes\{peer="node-b",address="127.0.0.2",type="mesh"\} 0/)
    t.match(text, /pinto_bgp_updates_received_total\{peer="node-b",[^}]*\} [1-9]/)
    t.match(text, /pinto_bgp_session_flaps_total\{peer="node-b",[^}]*\} 0/)
    t.match(text, /pinto_fib_routes\{family="4"\} 4/)
    t.match(text, /pinto_fib_apply_duration_seconds_bucket\{le="0.005"\} 1/)
    t.match(text, /pinto_fib_apply_duration_seconds_count 1/)
    t.match(text, /pinto_ipam_blocks\{ippool="default-ipv4-ippool",node="node-a"\} 1/)
    t.match(text, /pinto_ipam_allocations_in_use\{ippool="default-ipv4-ippool",node="node-a"\} 2/)
    t.match(text, /pinto_ipam_ippool_size\{ippool="default-ipv4-ippool"\} 65536/)
    t.notMatch(text, /node="node-b"/, 'only this node\'s IPAM rows: node-b\'s agent exports its own')
    // A second scrape sees a new apply exactly once.
    f.fibLog.record({ planned: 1, errors: [{ op: { kind: 'replace' } as never, message: 'RTNETLINK answers: File exists' }], conflicts: [], readMs: 1, writeMs: 1 }, 0.2)
    const again = (await get('/metrics')).body.text as string
    t.match(again, /pinto_fib_apply_duration_seconds_count 2/)
    t.match(again, /pinto_fib_apply_failures_total 1/)
    t.match(again, /pinto_fib_route_errors 1/)
    t.match((await get('/metrics')).body.text, /pinto_fib_apply_duration_seconds_count 2/)
  })

  t.test('OpenAPI document at /docs/json', async (t) => {
    const { body } = await get('/docs/json')
    t.equal(body.openapi, '3.0.3')
    for (const path of ['/v1/status', '/v1/peers', '/v1/routes', '/v1/ipam/blocks', '/v1/ipam/allocations', '/livez', '/readyz', '/metrics', '/v1/peers/{name}/refresh']) {
      t.ok(body.paths[path], `documents ${path}`)
    }
    const params = body.paths['/v1/routes'].get.parameters.map((p: Json) => p.name).sort()
    t.same(params, ['cursor', 'limit', 'peer', 'prefix', 'table'])
    t.notOk(body.paths['/docs/json'], 'the document does not list itself')
  })

  t.test('mutations over TCP: 403 without a configured token path, 401 with a wrong token, ok with the token', async (t) => {
    const post = (headers: Record<string, string> = {}) => app.inject({ method: 'POST', url: '/v1/peers/node-b/refresh?direction=out', headers })
    const none = await post()
    t.equal(none.statusCode, 401)
    t.match(none.json(), { error: { code: 'unauthenticated' } })
    t.match(none.headers['www-authenticate'], /Bearer/)
    t.equal((await post({ authorization: 'Bearer wrong' })).statusCode, 401)
    const ok = await post({ authorization: `Bearer ${TOKEN}` })
    t.equal(ok.statusCode, 200)
    t.same(ok.json(), { peer: 'node-b', direction: 'out', sent: true })
    const nobody = await app.inject({ method: 'POST', url: '/v1/peers/nobody/refresh', headers: { authorization: `Bearer ${TOKEN}` } })
    t.match(nobody.json(), { error: { code: 'unknown-peer' } })
  })
})

t.test('no token configured: TCP is read-only (403); the unix socket may mutate', async (t) => {
  const f = await fixture(t, { token: undefined })
  const app = await buildApi(f.deps)
  const dir = mkdtempSync(join(tmpdir(), 'pinto-api-sock-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const socket = join(dir, 'run', 'pinto.sock')
  const listeners = await listenApi(app, { tcp: '127.0.0.1:0', socket })
  t.teardown(() => listeners.close())
  t.equal(statSync(socket).mode & 0o777, 0o600, 'socket is root-only')
  const call = (opts: { socketPath?: string; port?: number; method: string; path: string; headers?: Record<string, string> }) =>
    new Promise<{ status: number; body: Json }>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', ...opts }, (res) => {
        let text = ''
        res.on('data', (c: Buffer) => (text += c.toString()))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as Json }))
      })
      req.on('error', reject)
      req.end()
    })
  const tcp = await call({ port: listeners.port, method: 'POST', path: '/v1/peers/node-b/refresh', headers: { authorization: 'Bearer anything' } })
  t.equal(tcp.status, 403)
  t.match(tcp.body, { error: { code: 'read-only' } })
  t.match(await call({ port: listeners.port, method: 'GET', path: '/v1/status' }), { status: 200, body: { node: 'node-a' } }, 'TCP reads work')
  const unix = await call({ socketPath: socket, method: 'POST', path: '/v1/peers/node-b/refresh' })
  t.equal(unix.status, 200, JSON.stringify(unix.body))
  t.same(unix.body, { peer: 'node-b', direction: 'in', sent: true })
  t.match(await call({ socketPath: socket, method: 'GET', path: '/v1/peers' }), { status: 200, body: { peers: [{ name: 'node-b' }] } })
})

t.test('readiness: Calico semantics around the start-up window', async (t) => {
  const up = { address: '192.0.2.2', state: 'Established' } as const
  const down = { address: '192.0.2.3', state: 'Active' } as const
  const win = { startupWindowSeconds: 30 }
  t.match(judgeReadiness([], 1, win), { ready: true, reason: 'no BGP peers configured' })
  t.match(judgeReadiness([up, down], 5, win), { ready: false, reason: 'BGP not established with 192.0.2.3' }, 'in the window every peer must be up')
  t.match(judgeReadiness([up], 5, win), { ready: true })
  t.match(judgeReadiness([up], 5, { ...win, gracefulRestartInProgress: () => true }), { ready: false, reason: 'graceful restart in progress' })
  t.match(judgeReadiness([up, down], 31, win), { ready: true, reason: 'BGP established with 1 of 2 peers' }, 'after the window one is enough')
  t.match(judgeReadiness([down], 31, win), { ready: false, reason: 'BGP not established with 192.0.2.3' })
  t.match(judgeReadiness([up], 31, { ...win, checks: () => [{ name: 'felix', ok: false, detail: 'first apply pending' }] }), { ready: false, reason: 'felix not ready: first apply pending' })
})

t.test('/readyz answers 503 while a peer is down in the window', async (t) => {
  const f = await fixture(t)
  f.a.addPeer({ name: 'ghost', kind: 'global', address: '127.0.0.9', port: 1, peerAsn: 65001, holdTime: 9 })
  const app = await buildApi(f.deps)
  t.teardown(() => app.close())
  f.uptime.seconds = 1
  const early = await app.inject('/readyz')
  t.equal(early.statusCode, 503)
  t.match(early.json(), { ready: false, reason: 'BGP not established with 127.0.0.9', established: 1, peers: 2 })
  f.uptime.seconds = 3600
  t.equal((await app.inject('/readyz')).statusCode, 200)
})

t.test('a scrape reads the IPAM blocks the agent holds, not the datastore\'s list', async (t) => {
  const f = await fixture(t)
  const held = (await f.deps.ipam.blocks()).filter((b) => b.affinity === 'host:node-a')
  let lists = 0
  const app = await buildApi({ ...f.deps, ipam: { ...f.deps.ipam, blocks: async () => { lists++; return f.deps.ipam.blocks() }, heldBlocks: () => held } })
  t.teardown(() => app.close())
  const text = (await app.inject('/metrics')).body
  t.match(text, /pinto_ipam_allocations_in_use\{ippool="default-ipv4-ippool",node="node-a"\} 2/, 'the gauges from the held blocks')
  t.equal(lists, 0, 'no block listed for the scrape')
})
