// KubeHttp against a local HTTP server that answers as an apiserver does while a storage re-initialises: 429 with
// Retry-After. The request is asked again after it, a bounded number of times, and what the server finally says
// is what the caller gets.
import t from 'tap'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { KubeHttp } from '../../../config/kubernetes/kube-http.js'

/** A server whose answers come from `answer`, given the request's number; its kubeconfig; the requests it saw. */
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
  const dir = mkdtempSync(join(tmpdir(), 'pinto-kube-http-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const kubeconfig = join(dir, 'kubeconfig')
  const port = (srv.address() as AddressInfo).port
  writeFileSync(kubeconfig, `apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: "http://127.0.0.1:${port}", insecure-skip-tls-verify: true } }]
users: [{ name: u, user: { token: t0 } }]
contexts: [{ name: x, context: { cluster: c, user: u } }]
current-context: x
`)
  return { kubeconfig, seen }
}

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
