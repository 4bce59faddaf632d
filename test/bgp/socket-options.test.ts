// setsockopt through the FFI on real sockets: IP_MINTTL on a loopback listener keeps out a connect whose
// TTL is too low and lets one through when the bar is lowered; a failure names the option and errno.

import t from 'tap'
import net from 'node:net'
import { OPT, SOL, SocketOptionError, fdOf, setIntOption, socketOptionsAvailable } from '../../bgp/session/socket-options.js'

async function listener(): Promise<net.Server> {
  const srv = net.createServer((s) => s.end())
  await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve))
  return srv
}

/** Whether a connect to `port` completes within `ms` (a SYN dropped by the kernel leaves it pending). */
function connects(port: number, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ port, host: '127.0.0.1' })
    const timer = setTimeout(() => {
      s.destroy()
      resolve(false)
    }, ms)
    s.once('connect', () => {
      clearTimeout(timer)
      s.destroy()
      resolve(true)
    })
    s.once('error', () => {
      clearTimeout(timer)
      resolve(false)
    })
  })
}

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
