// The REST API's answers to requests wrong at the HTTP level, over real sockets (TCP and the unix socket) with
// raw HTTP written by hand: every one in the catalogue's {error: {code, message}} shape with its status, 405 with
// Allow for a known path and for CONNECT, a mutation refused over TCP before its body is sent, and with
// Expect: 100-continue, no 100 Continue before a refusal (and one before an admitted request's answer).
import t, { type Test } from 'tap'
import { Registry } from 'prom-client'
import { connect, type NetConnectOpts } from 'node:net'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildApi, listenApi } from '../../../agent/api/index.js'
import { fixture, TOKEN } from './fixture.js'

interface RawAnswer {
  status: number
  headers: Record<string, string>
  body: unknown
  /** The statuses of the interim (1xx) responses that came before this one, in order. */
  interim: number[]
}

/**
 * Writes `request` as it is and reads one response: complete once its Content-Length is in (the socket is then
 * closed by us), so an answer that comes before the request's own body is seen as such. Interim 1xx responses
 * are kept apart; on a 100 Continue, `afterContinue` (the body) is written.
 */
function exchange(where: NetConnectOpts, request: string, opts: { afterContinue?: string } = {}, timeoutMs = 5000): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(where)
    let buf = Buffer.alloc(0)
    const interim: number[] = []
    const timer = setTimeout(() => {
      socket.destroy()
      reject(new Error(`no complete answer within ${timeoutMs} ms; got ${JSON.stringify(buf.toString('latin1').slice(0, 300))}`))
    }, timeoutMs)
    const tryParse = (final: boolean): void => {
      // An interim response is a head alone: taken off the front, and the body sent after 100 Continue.
      for (let m = /^HTTP\/1\.1 (1\d\d)[^\r]*\r\n(?:[^\r]+\r\n)*\r\n/.exec(buf.toString('latin1')); m !== null; m = /^HTTP\/1\.1 (1\d\d)[^\r]*\r\n(?:[^\r]+\r\n)*\r\n/.exec(buf.toString('latin1'))) {
        interim.push(Number(m[1]))
        buf = buf.subarray(Buffer.byteLength(m[0], 'latin1'))
        if (m[1] === '100' && opts.afterContinue !== undefined) socket.write(opts.afterContinue)
      }
      const text = buf.toString('latin1')
      const end = text.indexOf('\r\n\r\n')
      if (end < 0) {
        if (final) fail(new Error(`connection closed before a response head: ${JSON.stringify(text)}`))
        return
      }
      const [line, ...rest] = text.slice(0, end).split('\r\n')
      const headers: Record<string, string> = {}
      for (const h of rest) headers[h.slice(0, h.indexOf(':')).toLowerCase()] = h.slice(h.indexOf(':') + 1).trim()
      const length = headers['content-length'] !== undefined ? Number(headers['content-length']) : undefined
      const bodyBytes = buf.subarray(Buffer.byteLength(text.slice(0, end + 4), 'latin1'))
      if (length === undefined ? !final : bodyBytes.length < length) return
      clearTimeout(timer)
      socket.destroy()
      const raw = bodyBytes.subarray(0, length ?? bodyBytes.length).toString('utf8')
      let body: unknown = raw
      try {
        body = JSON.parse(raw)
      } catch {
        // left as text; the assertion on the shape says what came
      }
      resolve({ status: Number(/^HTTP\/1\.[01] (\d{3})/.exec(line ?? '')?.[1] ?? 0), headers, body, interim })
    }
    const fail = (err: Error): void => {
      clearTimeout(timer)
      socket.destroy()
      reject(err)
    }
    socket.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk])
      tryParse(false)
    })
    socket.on('end', () => tryParse(true))
    socket.on('error', (err) => (buf.length > 0 ? tryParse(true) : fail(err)))
    socket.write(request)
  })
}

const f = await fixture(t)
const socketDir = mkdtempSync(join(tmpdir(), 'pinto-api-raw-'))
t.teardown(() => rmSync(socketDir, { recursive: true, force: true }))
const withToken = await listenApi(await buildApi(f.deps), { tcp: '127.0.0.1:0', socket: join(socketDir, 'api.sock') })
t.teardown(() => withToken.close())
const readOnly = await listenApi(await buildApi({ ...f.deps, token: undefined, metrics: new Registry() }), { tcp: '127.0.0.1:0' })
t.teardown(() => readOnly.close())

const transports: Array<[string, NetConnectOpts]> = [
  ['tcp', { host: '127.0.0.1', port: withToken.port }],
  ['unix', { path: withToken.socket! }],
]

function catalogueShape(t: Test, a: RawAnswer, status: number, code: string, message?: RegExp): void {
  t.equal(a.status, status, JSON.stringify(a.body))
  t.match(a.headers['content-type'] ?? '', /^application\/json/)
  t.same(Object.keys(a.body as object), ['error'], 'only {error}')
  const e = (a.body as { error: Record<string, unknown> }).error
  t.equal(e['code'], code)
  t.type(e['message'], 'string')
  t.same(Object.keys(e).filter((k) => k !== 'field'), ['code', 'message'])
  if (message) t.match(e['message'], message)
}

const big = `X-Big: ${'x'.repeat(8000)}\r\n`
const cases: Array<[string, string, number, string, RegExp | undefined]> = [
  ['headers too large', `GET /v1/status HTTP/1.1\r\nHost: a\r\n${big.repeat(3)}\r\n`, 431, 'headers-too-large', /larger than the server accepts/],
  ['a bad escape in the query', 'GET /v1/routes?prefix=%zz HTTP/1.1\r\nHost: a\r\n\r\n', 400, 'bad-request', /"%" at byte 18 does not start a %XX escape/],
  ['a bad escape in the path', 'GET /v1/%zz HTTP/1.1\r\nHost: a\r\n\r\n', 400, 'bad-request', /"%" at byte 4/],
  ['an unknown method', 'FROB /v1/status HTTP/1.1\r\nHost: a\r\n\r\n', 501, 'not-implemented', /method/],
  ['HTTP/1.1 without Host', 'GET /v1/status HTTP/1.1\r\n\r\n', 400, 'bad-request', /Host header/],
  ['a broken Content-Length', 'GET /v1/status HTTP/1.1\r\nHost: a\r\nContent-Length: abc\r\n\r\n', 400, 'bad-request', /Content-Length/i],
  ['an unknown path', 'GET /v1/nothing HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n', 404, 'not-found', /no route GET \/v1\/nothing/],
]

for (const [transport, where] of transports) {
  t.test(`${transport}: malformed requests answer in the catalogue's shape`, async (t) => {
    for (const [name, request, status, code, message] of cases) {
      t.test(name, async (t) => catalogueShape(t, await exchange(where, request), status, code, message))
    }
  })

  t.test(`${transport}: a known path with another method is 405 with Allow`, async (t) => {
    const del = await exchange(where, 'DELETE /v1/status HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n')
    catalogueShape(t, del, 405, 'method-not-allowed', /\/v1\/status takes GET, HEAD, not DELETE/)
    t.equal(del.headers['allow'], 'GET, HEAD')
    const get = await exchange(where, 'GET /v1/peers/node-b/refresh HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n')
    catalogueShape(t, get, 405, 'method-not-allowed')
    t.equal(get.headers['allow'], 'POST')
    const propfind = await exchange(where, 'PROPFIND /v1/routes?table=fib HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n')
    t.equal(propfind.status, 405)
    t.equal(propfind.headers['allow'], 'GET, HEAD')
  })

  t.test(`${transport}: CONNECT is answered 405 in the catalogue's shape, not cut off`, async (t) => {
    const proxy = await exchange(where, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n')
    catalogueShape(t, proxy, 405, 'method-not-allowed', /^CONNECT "example\.com:443": this server is no proxy and tunnels nothing; this API takes GET, HEAD and POST$/)
    t.equal(proxy.headers['allow'], '', 'an empty Allow: the target is no resource of ours')
    t.equal(proxy.headers['connection'], 'close')
    const path = await exchange(where, 'CONNECT /v1/status HTTP/1.1\r\nHost: a\r\n\r\n')
    catalogueShape(t, path, 405, 'method-not-allowed', /\/v1\/status takes GET, HEAD$/)
    t.equal(path.headers['allow'], 'GET, HEAD')
  })

  t.test(`${transport}: an Expect other than 100-continue is 417 in the catalogue's shape`, async (t) => {
    const a = await exchange(where, 'GET /v1/status HTTP/1.1\r\nHost: a\r\nExpect: 200-ok\r\n\r\n')
    catalogueShape(t, a, 417, 'expectation-failed', /Expect: "200-ok"/)
    t.same(a.interim, [])
  })

  t.test(`${transport}: HTTP/1.0 needs no Host`, async (t) => {
    const a = await exchange(where, 'GET /v1/status HTTP/1.0\r\n\r\n')
    t.equal(a.status, 200)
    t.match(a.body, { node: 'node-a' })
  })
}

t.test('over TCP a mutation is refused before its body is read', async (t) => {
  // 1 MB announced, nothing sent: the answer must come anyway, and the server closes rather than wait.
  const head = (auth: string): string => `POST /v1/peers/node-b/refresh HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n${auth}Content-Length: 1048576\r\n\r\n`
  const noToken = await exchange({ host: '127.0.0.1', port: withToken.port }, head(''))
  catalogueShape(t, noToken, 401, 'unauthenticated', /Authorization: Bearer/)
  t.equal(noToken.headers['connection'], 'close')
  t.match(noToken.headers['www-authenticate'], /^Bearer/)
  const wrong = await exchange({ host: '127.0.0.1', port: withToken.port }, head('Authorization: Bearer not-it\r\n'))
  catalogueShape(t, wrong, 401, 'unauthenticated', /not the configured one/)
  const readOnlyAnswer = await exchange({ host: '127.0.0.1', port: readOnly.port }, head(''))
  catalogueShape(t, readOnlyAnswer, 403, 'read-only')
  t.equal(readOnlyAnswer.headers['connection'], 'close')
})

t.test('over TCP a mutation with Expect: 100-continue is refused without 100 Continue', async (t) => {
  const head = (auth: string): string => `POST /v1/peers/node-b/refresh?direction=out HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n${auth}Expect: 100-continue\r\nContent-Length: 2\r\n\r\n`
  // The body is written only if the server asks for it; a refusal must come without the asking.
  const noToken = await exchange({ host: '127.0.0.1', port: withToken.port }, head(''), { afterContinue: '{}' })
  t.same(noToken.interim, [], 'no 100 Continue before the 401')
  catalogueShape(t, noToken, 401, 'unauthenticated', /Authorization: Bearer/)
  t.equal(noToken.headers['connection'], 'close')
  const wrong = await exchange({ host: '127.0.0.1', port: withToken.port }, head('Authorization: Bearer not-it\r\n'), { afterContinue: '{}' })
  t.same(wrong.interim, [], 'no 100 Continue before the 401 for a wrong token')
  catalogueShape(t, wrong, 401, 'unauthenticated', /not the configured one/)
  const readOnlyAnswer = await exchange({ host: '127.0.0.1', port: readOnly.port }, head(''), { afterContinue: '{}' })
  t.same(readOnlyAnswer.interim, [], 'no 100 Continue before the 403')
  catalogueShape(t, readOnlyAnswer, 403, 'read-only')
})

t.test('an admitted mutation with Expect: 100-continue gets 100 Continue, then its answer', async (t) => {
  const head = (auth: string): string => `POST /v1/peers/node-b/refresh?direction=out HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n${auth}Expect: 100-continue\r\nContent-Length: 2\r\nConnection: close\r\n\r\n`
  const tcp = await exchange({ host: '127.0.0.1', port: withToken.port }, head(`Authorization: Bearer ${TOKEN}\r\n`), { afterContinue: '{}' })
  t.same(tcp.interim, [100], 'one 100 Continue: the body is invited')
  t.equal(tcp.status, 200, JSON.stringify(tcp.body))
  t.match(tcp.body, { peer: 'node-b', direction: 'out' })
  const unix = await exchange({ path: withToken.socket! }, head(''), { afterContinue: '{}' })
  t.same(unix.interim, [100], 'the unix socket alike')
  t.equal(unix.status, 200, JSON.stringify(unix.body))
  // A request whose framing says it has no body is not asked for one.
  const get = await exchange({ host: '127.0.0.1', port: withToken.port }, 'GET /v1/status HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n')
  t.same(get.interim, [], 'no 100 Continue for a GET without content')
  t.equal(get.status, 200)
})

t.test('the same mutation with the token, and over the unix socket, is done', async (t) => {
  const post = (auth: string): string => `POST /v1/peers/node-b/refresh?direction=out HTTP/1.1\r\nHost: a\r\n${auth}Content-Length: 0\r\nConnection: close\r\n\r\n`
  const tcp = await exchange({ host: '127.0.0.1', port: withToken.port }, post(`Authorization: Bearer ${TOKEN}\r\n`))
  t.equal(tcp.status, 200, JSON.stringify(tcp.body))
  const unix = await exchange({ path: withToken.socket! }, post(''))
  t.equal(unix.status, 200, JSON.stringify(unix.body))
  t.match(unix.body, { peer: 'node-b', direction: 'out' })
})
