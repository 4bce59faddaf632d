// KubeHttp against a local HTTP server that answers as an apiserver does while a storage re-initialises: 429 with
// Retry-After. The request is asked again after it, a bounded number of times, and what the server finally says
// is what the caller gets. And against one that restarted behind the pool's kept-alive connections: a read goes
// on to the next connection until one answers, a write's outcome is unknown ('unavailable'). Within an operation's
// deadline a slow answer is waited for past the pool's timeout. Watch streams have connections of their own.
import t from 'tap'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { type AddressInfo, createServer as createTcpServer, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DatastoreError, withRequestDeadline } from '../../../config/index.js'
import { KubeHttp } from '../../../config/kubernetes/kube-http.js'

/** A server whose answers come from `answer`, given the request's number; its kubeconfig; the requests it saw. */
function kubeconfigFor(t: Tap.Test, port: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'pinto-kube-http-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const kubeconfig = join(dir, 'kubeconfig')
  writeFileSync(kubeconfig, `apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: "http://127.0.0.1:${port}", insecure-skip-tls-verify: true } }]
users: [{ name: u, user: { token: t0 } }]
contexts: [{ name: x, context: { cluster: c, user: u } }]
current-context: x
`)
  return kubeconfig
}

async function server(t: Tap.Test, answer: (n: number) => { status: number; retryAfter?: string }): Promise<{ kubeconfig: string; seen: string[] }> {
  const seen: string[] = []
  const srv = createServer((req: IncomingMessage, res: ServerResponse) => {
    seen.push(`${req.method} ${req.url}`)
    const a = answer(seen.length)
    res.writeHead(a.status, { 'content-type': 'application/json', ...(a.retryAfter !== undefined ? { 'retry-after': a.retryAfter } : {}) })
    res.end(JSON.stringify(a.status === 200 ? { kind: 'List', items: [] } : { kind: 'Status', message: 'storage is (re)initializing' }))
  })
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => srv.close(() => resolve())))
  return { kubeconfig: kubeconfigFor(t, (srv.address() as AddressInfo).port), seen }
}

/**
 * A server (plain TCP, HTTP by hand) that answers the first request on each connection with keep-alive and resets
 * the connection on any later one, as a restarted apiserver leaves the pool's connections; the connections made.
 */
async function restartedServer(t: Tap.Test): Promise<{ kubeconfig: string; connections: () => number }> {
  let connections = 0
  const sockets = new Set<Socket>()
  const srv = createTcpServer((sock) => {
    connections++
    sockets.add(sock)
    let requests = 0
    sock.on('data', (chunk: Buffer) => {
      if (!chunk.toString('latin1').includes('\r\n\r\n')) return
      if (++requests > 1) return sock.resetAndDestroy()
      const body = JSON.stringify({ kind: 'List', items: [] })
      sock.write(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: keep-alive\r\n\r\n${body}`)
    })
    sock.on('error', () => undefined)
    sock.on('close', () => sockets.delete(sock))
  })
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => {
    for (const s of sockets) s.destroy()
    srv.close(() => resolve())
  }))
  return { kubeconfig: kubeconfigFor(t, (srv.address() as AddressInfo).port), connections: () => connections }
}

t.test('a read on stale kept-alive connections goes on to the next one until one answers; a write is unavailable', async (t) => {
  const s = await restartedServer(t)
  const http = await KubeHttp.connect({ kubeconfig: s.kubeconfig }, 2000)
  t.teardown(() => http.close())
  // Four reads at once leave four kept-alive connections in the pool, each of which the server now resets.
  const first = await Promise.all(Array.from({ length: 4 }, () => http.request('GET', '/api/v1/nodes')))
  t.same(first.map((r) => r.status), [200, 200, 200, 200])
  t.equal(s.connections(), 4, 'four connections kept')
  const r = await http.request('GET', '/api/v1/nodes')
  t.equal(r.status, 200, 'the read is answered after every stale connection')
  t.equal(s.connections(), 5, 'on a new connection, once the stale ones are spent')
  await Promise.all(Array.from({ length: 2 }, () => http.request('GET', '/api/v1/nodes')))
  const write = await http.request('PUT', '/apis/crd.projectcalico.org/v1/ipamblocks/b', undefined, { kind: 'IPAMBlock' }).then(() => undefined, (err: unknown) => err)
  t.ok(write instanceof DatastoreError && write.code === 'unavailable', `a write on a reset connection: its outcome unknown (${(write as Error | undefined)?.message ?? 'answered'})`)
})

t.test('a 429 is asked again after its Retry-After, and the answer that follows is returned', async (t) => {
  const s = await server(t, (n) => (n <= 2 ? { status: 429, retryAfter: '0' } : { status: 200 }))
  const http = await KubeHttp.connect({ kubeconfig: s.kubeconfig }, 2000)
  t.teardown(() => http.close())
  const r = await http.request('GET', '/apis/crd.projectcalico.org/v1/blockaffinities', { labelSelector: '!projectcalico.org/hostname-hash' })
  t.equal(r.status, 200)
  t.equal(s.seen.length, 3, 'two 429s, then the answer')
  t.equal(s.seen[0], 'GET /apis/crd.projectcalico.org/v1/blockaffinities?labelSelector=%21projectcalico.org%2Fhostname-hash', 'the request as asked')
  t.equal(new Set(s.seen).size, 1, 'the same request each time')
  t.equal(http.counts.requests, 3, 'each attempt counted')
})

t.test('a server that keeps answering 429 gets a bounded number of attempts, and the caller its 429', async (t) => {
  const s = await server(t, () => ({ status: 429, retryAfter: '0' }))
  const http = await KubeHttp.connect({ kubeconfig: s.kubeconfig }, 2000)
  t.teardown(() => http.close())
  const r = await http.request('PUT', '/apis/crd.projectcalico.org/v1/ipamblocks/b', undefined, { kind: 'IPAMBlock' })
  t.equal(r.status, 429)
  t.equal(s.seen.length, 5, 'the first try and four more')
})

t.test("within an operation's deadline a slow answer is waited for past the pool's timeout; a refused connection still fails at once", async (t) => {
  const slowMs = 800
  const srv = createServer((_req: IncomingMessage, res: ServerResponse) => {
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.end(JSON.stringify({ kind: 'List', items: [] }))
    }, slowMs)
  })
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => srv.close(() => resolve())))
  const http = await KubeHttp.connect({ kubeconfig: kubeconfigFor(t, (srv.address() as AddressInfo).port) }, 200)
  t.teardown(() => http.close())
  await t.rejects(http.request('GET', '/api/v1/pods'), /no answer within 200 ms/, "alone, the pool's 200 ms")
  const r = await withRequestDeadline(Date.now() + 5000, () => http.request('GET', '/api/v1/pods'))
  t.equal(r.status, 200, `answered after ${slowMs} ms within a 5 s deadline`)
  await t.rejects(withRequestDeadline(Date.now() + 300, () => http.request('GET', '/api/v1/pods')), /no answer within (2\d\d|300) ms/, 'a deadline shorter than the answer still fails')

  // Nothing listens on the port any more: refused at once, whatever the deadline.
  const port = (srv.address() as AddressInfo).port
  await new Promise<void>((resolve) => srv.close(() => resolve()))
  http.close()
  const again = await KubeHttp.connect({ kubeconfig: kubeconfigFor(t, port) }, 200)
  t.teardown(() => again.close())
  const started = Date.now()
  await t.rejects(withRequestDeadline(Date.now() + 20_000, () => again.request('GET', '/api/v1/pods')), DatastoreError)
  t.ok(Date.now() - started < 2000, `refused in ${Date.now() - started} ms, not at the deadline`)
})

t.test('watch streams never take the connections requests are made on: with 40 streams open a request is answered at once', async (t) => {
  const held = new Set<ServerResponse>()
  const srv = createServer((req: IncomingMessage, res: ServerResponse) => {
    res.writeHead(200, { 'content-type': 'application/json' })
    if (req.url?.includes('watch=1') === true) {
      held.add(res)
      return void res.write('')
    }
    res.end(JSON.stringify({ kind: 'List', items: [] }))
  })
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve))
  t.teardown(() => {
    for (const r of held) r.destroy()
    return new Promise<void>((resolve) => srv.close(() => resolve()))
  })
  const http = await KubeHttp.connect({ kubeconfig: kubeconfigFor(t, (srv.address() as AddressInfo).port) }, 2000)
  t.teardown(() => http.close())
  let opened = 0
  const streams = Array.from({ length: 40 }, () => http.stream('/api/v1/pods', { watch: 1 }, 60_000, () => undefined, () => undefined, () => opened++))
  t.teardown(() => streams.forEach((s) => s.close()))
  const deadline = Date.now() + 10_000
  while (opened < 40 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20))
  t.equal(opened, 40, 'forty streams open at once')
  const r = await http.request('GET', '/api/v1/pods')
  t.equal(r.status, 200, 'and a request answered beside them')
})
