// The IPAM service's socket: JSON over HTTP on a unix socket (mode 0600, root only), its routes mapped to
// the service's calls, each error to the answer the plugins read, and the drain at close. An assign is
// recorded for recovery before its work and closed just before its answer goes.

import { chmod, mkdir, rm } from 'node:fs/promises'
import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http'
import { dirname } from 'node:path'
import { RequestError, errorReply, isString, readBody } from './ipam-service-requests.js'
import type { PodRecovery } from './recovery/index.js'

/** What the socket's routes call. */
export interface IpamRoutes {
  status(): Promise<unknown>
  assign(body: Record<string, unknown>): Promise<unknown>
  release(body: Record<string, unknown>): Promise<unknown>
  allocations(prefix: string): Promise<unknown>
  readonly recovery: Pick<PodRecovery, 'assignBegun' | 'assignAnswered'>
}

export class IpamHttp {
  private server: Server | undefined
  /** Requests taken and not yet answered, which close() lets finish. */
  private readonly answering = new Set<Promise<void>>()

  constructor(private readonly socket: string, private readonly routes: IpamRoutes) {}

  /** Listens on the socket (replacing a stale one), mode 0600. */
  async listen(): Promise<void> {
    const { socket } = this
    await mkdir(dirname(socket), { recursive: true, mode: 0o700 })
    await rm(socket, { force: true })
    const server = createServer((req, res) => {
      const p = this.handle(req, res)
      this.answering.add(p)
      void p.finally(() => this.answering.delete(p))
    })
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(socket, () => resolve())
    })
    await chmod(socket, 0o600)
    this.server = server
  }

  /**
   * Stops taking requests and answers those taken. The socket's path goes first, so a plugin that comes
   * now hears "pinto-node is not running" (try again later) rather than a connection cut in its request;
   * one that is mid-request gets its answer, for up to `drainMs`, before the last connections are cut.
   */
  async close(drainMs: number): Promise<void> {
    const s = this.server
    this.server = undefined
    if (s === undefined) return
    await rm(this.socket, { force: true })
    const closed = new Promise<void>((resolve) => s.close(() => resolve()))
    s.closeIdleConnections()
    let timer: NodeJS.Timeout | undefined
    await Promise.race([Promise.allSettled([...this.answering]), new Promise((r) => (timer = setTimeout(r, drainMs)))])
    clearTimeout(timer)
    s.closeAllConnections()
    await closed
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let status = 200
    let reply: unknown
    const entry: { id?: string | undefined } = {}
    try {
      reply = await this.route(req, entry)
    } catch (err) {
      ;[status, reply] = errorReply(err)
    }
    // Closed in the journal before the answer goes: once the plugin may have it, nothing may roll it back.
    try {
      if (entry.id !== undefined) this.routes.recovery.assignAnswered(entry.id)
    } catch (err) {
      ;[status, reply] = errorReply(err)
    }
    const text = JSON.stringify(reply)
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
    res.end(text)
  }

  private async route(req: IncomingMessage, entry: { id?: string | undefined }): Promise<unknown> {
    const url = new URL(req.url ?? '/', 'http://pinto')
    const key = `${req.method} ${url.pathname}`
    switch (key) {
      case 'GET /v1/status': return this.routes.status()
      case 'POST /v1/assign': {
        const body = await readBody(req)
        // An assign over the socket whose answer never goes out (the agent killed) is released at the next start.
        if (isString(body['handle'])) entry.id = this.routes.recovery.assignBegun(body['handle'])
        return this.routes.assign(body)
      }
      case 'POST /v1/release': return this.routes.release(await readBody(req))
      case 'GET /v1/allocations': return { allocations: await this.routes.allocations(url.searchParams.get('handlePrefix') ?? '') }
      default: throw new RequestError(404, 'not-found', `no route ${key}`)
    }
  }
}
