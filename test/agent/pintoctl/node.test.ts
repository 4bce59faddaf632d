// `pintoctl node status` and `pintoctl routes` run as real processes against a real API server (over TCP
// and over the unix socket) built on live speakers: calicoctl's table, the route tables, JSON, filters,
// cursor pages followed to the end, and the one-line errors for an unreachable agent or a bad parameter.
import t from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildApi, listenApi } from '../../../agent/api/index.js'
import { peersTable, sinceText } from '../../../agent/pintoctl/node.js'
import { parsePrefix } from '../../../bgp/index.js'
import { fixture } from '../api/fixture.js'
import { runPintoctl } from './run.js'

t.test('against a running API', async (t) => {
  const f = await fixture(t)
  f.a.addPeer({ name: 'tor', kind: 'global', address: '127.0.0.9', port: 1, peerAsn: 65001, holdTime: 9 })
  const app = await buildApi(f.deps)
  const dir = mkdtempSync(join(tmpdir(), 'pinto-ctl-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const socket = join(dir, 'pinto.sock')
  const listeners = await listenApi(app, { tcp: '127.0.0.1:0', socket })
  t.teardown(() => listeners.close())
  const api = `http://${listeners.tcp}`

  t.test('node status: calicoctl-like table', async (t) => {
    const r = await runPintoctl(['node', 'status', '--api', api])
    t.equal(r.status, 0, r.stderr)
    t.match(r.stdout, /^pinto-node is running \(node node-a, AS 64512, router id 192\.0\.2\.1, up \d+m\d+s\)\.\n\nIPv4 BGP status\n\+-+\+/)
    t.match(r.stdout, /\| PEER ADDRESS \|\s+PEER TYPE\s+\| STATE \|\s+SINCE\s+\|\s+INFO\s+\|/)
    t.match(r.stdout, /\| 127\.0\.0\.2\s+\| node-to-node mesh \| up\s+\| \d\d:\d\d:\d\d \| Established\s+\|/)
    t.match(r.stdout, /\| 127\.0\.0\.9\s+\| global\s+\| start \| \d\d:\d\d:\d\d \| (Connect|Active|Idle)/)
    t.match(r.stdout, /IPv6 BGP status\nNo IPv6 peers found\.\n$/)
  })

  t.test('PINTO_API, the unix socket, and -o json', async (t) => {
    const viaEnv = await runPintoctl(['node', 'status'], { env: { PINTO_API: api } })
    t.equal(viaEnv.status, 0, viaEnv.stderr)
    const viaSocket = await runPintoctl(['node', 'status', '-o', 'json', '--api', `unix:${socket}`])
    t.equal(viaSocket.status, 0, viaSocket.stderr)
    const j = JSON.parse(viaSocket.stdout)
    t.equal(j.status.node, 'node-a')
    t.same(j.peers.map((p: { name: string }) => p.name), ['node-b', 'tor'])
  })

  t.test('routes: Loc-RIB table with why each path won', async (t) => {
    const r = await runPintoctl(['routes', '--api', api])
    t.equal(r.status, 0, r.stderr)
    t.match(r.stdout, /^loc-rib: 6 routes\n/)
    t.match(r.stdout, /\|\s+PREFIX\s+\|\s+NEXT HOP\s+\|\s+FROM\s+\|\s+AS PATH\s+\|\s+LOCAL PREF\s+\|\s+WON ON\s+\|/)
    t.match(r.stdout, /\| 198\.18\.1\.0\/26\s+\| 127\.0\.0\.2\s+\| node-b\s+\|\s+\| 100\s+\| only path\s+\|/)
    t.match(r.stdout, /\| 198\.18\.9\.0\/24\s+\| -\s+\| local\s+\|\s+\| 50\s+\| local-origin\s+\|/)
  })

  t.test('routes: other tables, filters, JSON', async (t) => {
    const out = await runPintoctl(['routes', '--table', 'adj-rib-out', '--peer', 'node-b', '-o', 'json', '--api', api])
    t.equal(out.status, 0, out.stderr)
    t.same(JSON.parse(out.stdout).routes.map((r: { prefix: string }) => r.prefix), ['198.18.0.0/26', '198.18.0.64/26', '198.18.9.0/24'])
    const fib = await runPintoctl(['routes', '--table', 'fib', '--prefix', '198.18.1.0/24', '--api', api])
    t.equal(fib.status, 0, fib.stderr)
    t.match(fib.stdout, /^fib: 2 routes\n/)
    t.match(fib.stdout, /\| 198\.18\.1\.64\/26 \| unicast \| 127\.0\.0\.2 \|/)
  })

  t.test('routes: cursor pages are followed to the end', async (t) => {
    for (let i = 0; i < 2500; i++) f.a.rib.originate(parsePrefix(`198.19.${i >> 8}.${i & 255}/32`))
    f.a.rib.flush()
    t.teardown(() => {
      for (let i = 0; i < 2500; i++) f.a.rib.withdrawOrigin(parsePrefix(`198.19.${i >> 8}.${i & 255}/32`))
      f.a.rib.flush()
    })
    const r = await runPintoctl(['routes', '--prefix', '198.19.0.0/16', '-o', 'json', '--api', api])
    t.equal(r.status, 0, r.stderr)
    const routes = JSON.parse(r.stdout).routes as { prefix: string }[]
    t.equal(routes.length, 2501, 'three pages of 1000, plus the /24 already there')
    t.equal(new Set(routes.map((x) => x.prefix)).size, 2501)
    const capped = await runPintoctl(['routes', '--prefix', '198.19.0.0/16', '--max', '10', '--api', api])
    t.match(capped.stdout, /^loc-rib: 2501 routes, 10 shown\n/)
  })

  t.test('errors: one line each', async (t) => {
    const bad = await runPintoctl(['routes', '--table', 'rib', '--api', api])
    t.equal(bad.status, 2)
    t.match(bad.stderr, /^pintoctl routes: invalid-parameter: query parameter table: must be one of loc-rib, adj-rib-in, adj-rib-out, fib\n$/)
    const nobody = await runPintoctl(['routes', '--table', 'adj-rib-in', '--peer', 'nobody', '--api', api])
    t.match(nobody.stderr, /unknown-peer: no peer named "nobody"/)
    const badApi = await runPintoctl(['node', 'status', '--api', 'ftp://x'])
    t.equal(badApi.status, 1)
    t.match(badApi.stderr, /--api="ftp:\/\/x": expected http:\/\/host:port/)
  })
})

t.test('an agent that is not running', async (t) => {
  const r = await runPintoctl(['node', 'status', '--api', 'http://127.0.0.1:1'])
  t.equal(r.status, 1)
  t.match(r.stderr, /^pinto-node is not running or not reachable: cannot reach the pinto-node API at http:\/\/127\.0\.0\.1:1: ECONNREFUSED\n$/)
})

t.test('table formatting without a server', async (t) => {
  const now = new Date('2024-05-01T12:00:00')
  t.equal(sinceText(new Date('2024-05-01T09:08:07').toISOString(), now), '09:08:07')
  t.equal(sinceText(new Date('2024-04-30T09:08:07').toISOString(), now), '2024-04-30')
  const table = peersTable([{ name: 'x', address: '2001:db8::2', type: 'reflector-client', state: 'Active', since: now.toISOString(), lastError: 'Socket: Connection refused' }], 6, now)
  t.match(table, /\| 2001:db8::2  \| route reflector client \| start \| 12:00:00 \| Active Socket: Connection refused \|/)
  t.equal(peersTable([], 4, now), 'No IPv4 peers found.\n')
})
