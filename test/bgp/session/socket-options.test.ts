// setsockopt through the FFI on real sockets: IP_MINTTL on a loopback listener keeps out a connect whose
// TTL is too low and lets one through when the bar is lowered; a failure names the option and errno.

import t from 'tap'
import net from 'node:net'
import { connected } from './connected.js'
import { OPT, SOL, SocketOptionError, fdOf, setIntOption, socketOptionsAvailable } from '../../../bgp/session/socket-options.js'

async function listener(): Promise<net.Server> {
  const srv = net.createServer((s) => s.end())
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve))
  return srv
}

const connects = (port: number, ms: number): Promise<boolean> => connected(net.connect({ port, host: '127.0.0.1' }), ms)

t.test('the FFI loads here', async (t) => {
  t.same(socketOptionsAvailable(), { ok: true })
})

t.test('IP_MINTTL on a listener', async (t) => {
  const srv = await listener()
  t.teardown(() => new Promise<void>((resolve) => srv.close(() => resolve())))
  const { port } = srv.address() as net.AddressInfo
  setIntOption(fdOf(srv), SOL.ip, OPT.ipMinTtl, 255, 'IP_MINTTL')
  t.equal(await connects(port, 1000), false, 'TTL 64 against a minimum of 255: the SYN is dropped')
  setIntOption(fdOf(srv), SOL.ip, OPT.ipMinTtl, 1, 'IP_MINTTL')
  t.equal(await connects(port, 5000), true, 'a minimum of 1 lets it in')
})

t.test('a failing setsockopt names the option and the errno', async (t) => {
  t.throws(() => setIntOption(987654, SOL.ip, OPT.ipMinTtl, 255, 'IP_MINTTL'), { constructor: SocketOptionError, errno: 9, message: /^IP_MINTTL: Bad file descriptor/ })
  t.throws(() => fdOf(new net.Socket()), /no file descriptor yet/)
})

t.test('a TTL-255 socket filter on a dgram socket (GTSM for BFD)', async (t) => {
  const { createSocket } = await import('node:dgram')
  const { attachSocketFilter, dgramFdOf, ttlFilter } = await import('../../../bgp/session/socket-options.js')
  for (const [family, type, host] of [['ipv4', 'udp4', '127.0.0.1'], ['ipv6', 'udp6', '::1']] as const) {
    const rx = createSocket({ type, ipv6Only: type === 'udp6' })
    const tx = createSocket({ type, ipv6Only: type === 'udp6' })
    t.teardown(() => {
      rx.close()
      tx.close()
    })
    t.throws(() => dgramFdOf(rx), /not bound/, 'no fd before bind')
    await new Promise<void>((resolve) => rx.bind(0, host, resolve))
    await new Promise<void>((resolve) => tx.bind(0, host, resolve))
    attachSocketFilter(dgramFdOf(rx), ttlFilter(family, 255), 'SO_ATTACH_FILTER')
    const got: string[] = []
    rx.on('message', (m) => got.push(m.toString()))
    const port = rx.address().port
    for (const ttl of [254, 64, 255]) {
      tx.setTTL(ttl)
      await new Promise<void>((resolve, reject) => tx.send(`ttl${ttl}`, port, host, (err) => (err ? reject(err) : resolve())))
    }
    const deadline = Date.now() + 2000
    while (got.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10))
    // A later datagram than the TTL-254 one arrived: had 254 passed, it would have come first.
    t.same(got, ['ttl255'], `${family}: only the TTL 255 datagram arrives`)
  }
  t.throws(() => dgramFdOf({}), /no dgram socket state/)
})
