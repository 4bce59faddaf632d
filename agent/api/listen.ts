// Puts a built API on its listeners: TCP (read-only unless a token is set) and, optionally, the agent's
// unix socket (mode 0600, root only), whose connections are recorded so mutations may pass there.
// It owns the sockets and their cleanup; the routes stay in buildApi's app.

import { chmod, mkdir, rm } from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { dirname } from 'node:path'
import type { FastifyInstance } from 'fastify'
import { unixConnections } from './auth.js'
import { answerClientError, SERVER_OPTIONS } from './http-errors.js'

const HTTP_EDGE_EVENTS = ['connect', 'checkContinue', 'checkExpectation'] as const

export interface ListenOptions {
  /** `host:port` (`[::1]:9099` for IPv6); port 0 picks a free one. */
  readonly tcp: string
  readonly socket?: string
}

export interface ApiListeners {
  /** The TCP address actually bound, as `host:port`. */
  readonly tcp: string
  readonly port: number
  readonly socket: string | undefined
  close(): Promise<void>
}

/** Parses PINTO_API_LISTEN-style `host:port`; the error names the value. */
export function parseListen(text: string): { host: string; port: number } {
  const m = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(text)
  const port = Number(m?.[3])
  if (m === null || port > 65535) throw new Error(`listen address ${JSON.stringify(text)}: expected host:port (e.g. 127.0.0.1:9099 or [::1]:9099)`)
  return { host: m[1] ?? m[2] ?? '', port }
}

export async function listenApi(app: FastifyInstance, opts: ListenOptions): Promise<ApiListeners> {
  const { host, port } = parseListen(opts.tcp)
  await app.listen({ host, port })
  const bound = app.server.address() as AddressInfo
  let unix: Server | undefined
  if (opts.socket !== undefined) {
    const path = opts.socket
    try {
      await mkdir(dirname(path), { recursive: true })
      // A socket file left by a killed agent would make listen fail with EADDRINUSE.
      await rm(path, { force: true })
      unix = createServer(SERVER_OPTIONS, (req, res) => app.routing(req, res))
      unix.on('connection', (s) => unixConnections.add(s))
      unix.on('clientError', answerClientError)
      // CONNECT, Expect: 100-continue and other expectations as buildApi has the TCP listener answer them.
      for (const event of HTTP_EDGE_EVENTS) for (const listener of app.server.listeners(event)) unix.on(event, listener as (...args: unknown[]) => void)
      await new Promise<void>((resolve, reject) => {
        unix!.once('error', reject)
        unix!.listen(path, () => resolve())
      })
      await chmod(path, 0o600)
    } catch (err) {
      await app.close()
      throw err
    }
  }
  const tcp = bound.family === 'IPv6' ? `[${bound.address}]:${bound.port}` : `${bound.address}:${bound.port}`
  return {
    tcp,
    port: bound.port,
    socket: opts.socket,
    async close() {
      if (unix !== undefined) {
        const s = unix
        s.closeAllConnections()
        await new Promise<void>((resolve) => s.close(() => resolve()))
        await rm(opts.socket!, { force: true })
      }
      await app.close()
    },
  }
}
