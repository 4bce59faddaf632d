// The plugins' hand-spoken HTTP/1.1 client: replies parsed from bytes (lengths, chunks, cuts), and real unix
// socket servers that misbehave (close without answering, never answer, answer 503) mapped to CNI errors.
import t, { type Test } from 'tap'
import net from 'node:net'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { IpamClient, parseHttpReply } from '../../cni/ipam-client.js'
import { ERR } from '../../cni/spec.js'

const reply = (s: string): Buffer => Buffer.from(s, 'latin1')

t.test('parseHttpReply', async (t) => {
  const rows: [string, string, { status: number; body: string } | RegExp][] = [
    ['content-length', 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}', { status: 200, body: '{}' }],
    ['content-length shorter than the bytes', 'HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}junk', { status: 200, body: '{}' }],
    ['close-delimited', 'HTTP/1.0 503 Service Unavailable\r\n\r\n{"a":1}', { status: 503, body: '{"a":1}' }],
    ['chunked', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{"a\r\n4;x=y\r\n":1}\r\n0\r\n\r\n', { status: 200, body: '{"a":1}' }],
    ['utf-8 body', 'HTTP/1.1 400 Bad\r\nContent-Length: 4\r\n\r\n\xc3\xa9\xc3\xa9', { status: 400, body: 'éé' }],
    ['nothing', '', /closed without an answer/],
    ['no end of headers', 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n', /no end of headers within 36 bytes/],
    ['bad status line', 'SPDY/3 200\r\n\r\n', /bad status line "SPDY\/3 200"/],
    ['cut body', 'HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n{}', /ended after 2 of 10 body bytes/],
    ['bad length', 'HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n{}', /bad content-length "-1"/],
    ['cut chunk', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n9\r\n{}', /chunked body cut at byte/],
    ['bad chunk size', 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n', /bad chunk size at byte 0/],
  ]
  for (const [name, raw, want] of rows) {
    if (want instanceof RegExp) t.throws(() => parseHttpReply(reply(raw)), want, name)
    else t.same(parseHttpReply(reply(raw)), want, name)
  }
})

async function server(t: Test, onConn: (s: net.Socket) => void): Promise<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pinto-client-'))
  const sock = path.join(dir, 's.sock')
  const srv = net.createServer(onConn)
  const open = new Set<net.Socket>()
  srv.on('connection', (s) => {
    open.add(s)
    s.on('close', () => open.delete(s))
  })
  await new Promise<void>((resolve) => srv.listen(sock, resolve))
  t.teardown(async () => {
    for (const s of open) s.destroy()
    await new Promise<void>((resolve) => srv.close(() => resolve()))
    fs.rmSync(dir, { recursive: true, force: true })
  })
  return sock
}

t.test('misbehaving servers give CNI errors, never a hang', async (t) => {
  const closes = await server(t, (s) => s.on('data', () => s.end()))
  await t.rejects(new IpamClient(closes).status(), { code: ERR.io, message: /GET \/v1\/status: the connection closed without an answer/ })

  const silent = await server(t, () => undefined)
  const started = Date.now()
  await t.rejects(new IpamClient(silent, 300).status(), { code: ERR.io, message: /no answer within 300 ms/ })
  t.ok(Date.now() - started < 3000)

  const busy = await server(t, (s) => s.on('data', () => s.end('HTTP/1.1 503 x\r\nContent-Length: 40\r\n\r\n{"code":"not-ready","message":"syncing"}')))
  await t.rejects(new IpamClient(busy).status(), { code: ERR.tryAgainLater, message: /syncing/ })

  const garbage = await server(t, (s) => s.on('data', () => s.end('HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc')))
  await t.rejects(new IpamClient(garbage).status(), { code: ERR.io, message: /answered 200 with non-JSON/ })

  const request: string[] = []
  const good = await server(t, (s) =>
    s.on('data', (d) => {
      request.push(d.toString())
      s.end('HTTP/1.1 200 OK\r\nContent-Length: 39\r\n\r\n{"released":[{"address":"198.18.0.1"}]}')
    }),
  )
  t.same(await new IpamClient(good).releaseByHandle('net.c1'), { released: [{ address: '198.18.0.1' }] })
  t.match(request.join(''), /^POST \/v1\/release HTTP\/1\.1\r\n[^]*Content-Length: 19\r\n\r\n\{"handle":"net\.c1"\}$/)

  await t.rejects(new IpamClient(path.join(os.tmpdir(), 'pinto-no-such.sock')).status(), { code: ERR.tryAgainLater, message: /pinto-node is not running/ })
})
