// The IPAM service's stop: a plugin that comes once it began hears "not running" (the socket is gone), and
// one mid-request gets its answer, for up to the drain time, instead of a connection cut in its assign.

import t, { type Test } from 'tap'
import net from 'node:net'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { IpamService } from '../../agent/ipam-service.js'
import { openDatastore } from '../../config/datastore-open.js'
import { encodeResource, resourceKey } from '../../config/resources/index.js'
import { IpamClient } from '../../cni/ipam-client.js'
import { ERR } from '../../cni/spec.js'
import { waitFor } from '../harness/wait.js'

async function listening(t: Test): Promise<{ svc: IpamService; socket: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'pinto-ipamclose-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const store = await openDatastore(join(dir, 'store'))
  t.teardown(() => store.close())
  const pool = { apiVersion: 'projectcalico.org/v3', kind: 'IPPool', metadata: { name: 'p4' }, spec: { cidr: '198.18.0.0/24', blockSize: 26 } }
  await store.create(resourceKey('IPPool', 'p4'), encodeResource(pool as never))
  const socket = join(dir, 'pinto.sock')
  const svc = new IpamService({ store, node: 'n1', socket })
  await svc.listen()
  t.teardown(() => svc.close())
  return { svc, socket }
}

/** An assign whose headers are taken (the server said 100 Continue) and whose body is not yet sent. */
async function halfSent(socket: string, body: string): Promise<{ finish: () => Promise<string> }> {
  const s = net.connect(socket)
  let got = ''
  const ended = new Promise<string>((resolve) => {
    s.on('data', (d: Buffer) => (got += d.toString()))
    s.on('close', () => resolve(got))
  })
  s.write(`POST /v1/assign HTTP/1.1\r\nHost: pinto\r\nConnection: close\r\nExpect: 100-continue\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`)
  await waitFor(() => (got.includes('100 Continue') ? true : undefined), { timeoutMs: 5000, what: '100 Continue' })
  return {
    finish: () => {
      s.write(body)
      return ended
    },
  }
}

t.test('a request taken before the stop is answered; one after it hears "not running"', async (t) => {
  const { svc, socket } = await listening(t)
  const body = JSON.stringify({ handle: 'net.c1', num4: 1, num6: 0, attrs: {} })
  const pending = await halfSent(socket, body)
  const closed = svc.close()
  await waitFor(() => (existsSync(socket) ? undefined : true), { timeoutMs: 5000, what: 'the socket path gone' })
  await t.rejects(new IpamClient(socket).status(), { code: ERR.tryAgainLater, message: /pinto-node is not running/ }, 'a new request is told to try again')
  const reply = await pending.finish()
  t.match(reply, /HTTP\/1\.1 200 OK[^]*"ipv4":\[\{"address":"198\.18\.0\.\d+"/, 'the taken assign got its addresses')
  await closed
  t.same((await svc.allocations('net.c1')).map((a) => a.handle), ['net.c1'], 'and holds them')
})

t.test('a request that does not finish within the drain time is cut, and the stop ends', async (t) => {
  const { svc, socket } = await listening(t)
  await halfSent(socket, JSON.stringify({ handle: 'net.c2', num4: 1, num6: 0, attrs: {} }))
  const started = Date.now()
  await svc.close(300)
  const took = Date.now() - started
  t.ok(took >= 290 && took < 5000, `close waited out its 300 ms drain (${took} ms)`)
  t.same(await svc.allocations('net.c2'), [], 'nothing assigned for it')
})
