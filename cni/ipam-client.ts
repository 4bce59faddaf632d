// The plugins' side of the agent's IPAM service: JSON over HTTP/1.1 on the agent's unix socket, spoken over
// node:net (see parseHttpReply for why). It maps transport failures to CNI errors; it decides nothing else.

import { CniError, ERR } from './spec.js'
import type { Family } from '../net/index.js'

export interface ServiceAddress {
  readonly address: string
  readonly family: Family
  /** The block the address came from, e.g. 198.18.0.0/26. */
  readonly block: string
  readonly sequenceNumber: number
}

export interface AssignRequest {
  readonly handle: string
  readonly node?: string
  readonly num4: number
  readonly num6: number
  readonly attrs: Readonly<Record<string, string>>
  readonly pools?: readonly string[]
}

export interface AssignReply {
  readonly node: string
  readonly ipv4: readonly ServiceAddress[]
  readonly ipv6: readonly ServiceAddress[]
}

export interface Allocation {
  readonly handle: string
  readonly address: string
  readonly attrs: Readonly<Record<string, string>>
}

export interface StatusReply {
  readonly ready: boolean
  readonly node: string
  readonly reason?: string
}

/** How long one call may take: the agent answers in milliseconds; a hung agent must not hang the kubelet. */
const TIMEOUT_MS = 30_000

/** What the plugins ask of the agent's IPAM: over the socket (IpamClient), or in-process inside the agent. */
export type IpamPort = Pick<IpamClient, 'sent' | 'assign' | 'releaseByHandle' | 'allocations' | 'status'>

/** The CNI error for the service's answer with HTTP `status` and body {code, message}. */
export function serviceError(status: number, body: { code?: string; message?: string }): CniError {
  // 503 is the agent saying "not ready yet": the runtime should retry, as for an agent that is down.
  const code = status === 503 ? ERR.tryAgainLater : status === 400 ? ERR.invalidConfig : ERR.io
  return new CniError(code, `pinto-node IPAM service: ${body.message ?? `HTTP ${status}`}`, body.code ?? '')
}

export class IpamClient {
  private markSent: () => void = () => {}
  /**
   * Settles once a request is on the socket or has failed. ADD waits for it before spawning the veth's
   * `ip` (a spawn holds the thread), so the agent works on the addresses meanwhile.
   */
  readonly sent = new Promise<void>((resolve) => (this.markSent = resolve))

  constructor(readonly socket: string, private readonly timeoutMs = TIMEOUT_MS) {}

  assign(req: AssignRequest): Promise<AssignReply> {
    return this.call('POST', '/v1/assign', req) as Promise<AssignReply>
  }

  releaseByHandle(handle: string): Promise<{ released: readonly { address: string }[] }> {
    return this.call('POST', '/v1/release', { handle }) as Promise<{ released: readonly { address: string }[] }>
  }

  async allocations(handlePrefix: string): Promise<readonly Allocation[]> {
    const r = (await this.call('GET', `/v1/allocations?handlePrefix=${encodeURIComponent(handlePrefix)}`)) as { allocations: Allocation[] }
    return r.allocations
  }

  status(): Promise<StatusReply> {
    return this.call('GET', '/v1/status') as Promise<StatusReply>
  }

  private async call(method: string, path: string, body?: unknown): Promise<unknown> {
    const payload = body === undefined ? '' : JSON.stringify(body)
    // Loaded on first use, so VERSION and config errors never pay for it.
    const { connect } = await import('node:net')
    const what = `pinto-node IPAM service: ${method} ${path}`
    return new Promise((resolve, reject) => {
      const sock = connect(this.socket)
      const chunks: Buffer[] = []
      const timer = setTimeout(() => sock.destroy(new Error(`no answer within ${this.timeoutMs} ms`)), this.timeoutMs)
      let written = false
      const fail = (err: CniError): void => {
        clearTimeout(timer)
        sock.destroy()
        this.markSent()
        // Sent, and no whole answer: the service may have done it (an agent killed mid-request).
        reject(written && !(err instanceof OutcomeUnknown) ? new OutcomeUnknown(err) : err)
      }
      sock.on('connect', () => {
        const head = `${method} ${path} HTTP/1.1\r\nHost: pinto\r\nConnection: close\r\n${payload === '' ? '' : `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(payload)}\r\n`}\r\n`
        sock.write(head + payload)
        written = true
        this.markSent()
      })
      sock.on('data', (c: Buffer) => chunks.push(c))
      sock.on('end', () => {
        clearTimeout(timer)
        sock.destroy()
        let reply: HttpReply
        try {
          reply = parseHttpReply(Buffer.concat(chunks))
        } catch (err) {
          reject(new OutcomeUnknown(new CniError(ERR.io, `${what}: ${(err as Error).message}`)))
          return
        }
        let parsed: unknown
        try {
          parsed = JSON.parse(reply.body)
        } catch {
          reject(new CniError(ERR.io, `${what} answered ${reply.status} with non-JSON`, reply.body.slice(0, 200)))
          return
        }
        if (reply.status === 200) {
          resolve(parsed)
          return
        }
        reject(serviceError(reply.status, parsed as { code?: string; message?: string }))
      })
      sock.on('error', (err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT' || err.code === 'ECONNREFUSED') {
          fail(new CniError(ERR.tryAgainLater, `pinto-node is not running: cannot connect to its IPAM socket ${this.socket} (${err.code})`, 'start pinto-node on this node, or set "socket" in the network config'))
        } else fail(new CniError(ERR.io, `pinto-node IPAM service at ${this.socket}: ${err.message}`))
      })
    })
  }
}

/** A request that went out and got no whole answer: whether the service acted on it is not known. */
export class OutcomeUnknown extends CniError {
  constructor(cause: CniError) {
    super(cause.code, cause.message, cause.details)
  }
}

export interface HttpReply {
  readonly status: number
  readonly body: string
}

/**
 * One whole HTTP/1.1 response read until the server closed (the request said `Connection: close`). The
 * plugins speak HTTP by hand: loading node:http's client would cost every pod start more than the request.
 */
export function parseHttpReply(raw: Buffer): HttpReply {
  const text = raw.toString('latin1')
  const end = text.indexOf('\r\n\r\n')
  if (end < 0) throw new Error(raw.length === 0 ? 'the connection closed without an answer' : `the answer has no end of headers within ${raw.length} bytes`)
  const lines = text.slice(0, end).split('\r\n')
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(lines[0] ?? '')
  if (m === null) throw new Error(`bad status line ${JSON.stringify((lines[0] ?? '').slice(0, 60))}`)
  const headers = new Map<string, string>()
  for (const l of lines.slice(1)) {
    const colon = l.indexOf(':')
    if (colon > 0) headers.set(l.slice(0, colon).trim().toLowerCase(), l.slice(colon + 1).trim())
  }
  let body = raw.subarray(end + 4)
  if (/chunked/i.test(headers.get('transfer-encoding') ?? '')) body = dechunk(body)
  else if (headers.has('content-length')) {
    const n = Number(headers.get('content-length'))
    if (!Number.isInteger(n) || n < 0) throw new Error(`bad content-length ${JSON.stringify(headers.get('content-length'))}`)
    if (body.length < n) throw new Error(`the answer ended after ${body.length} of ${n} body bytes`)
    body = body.subarray(0, n)
  }
  return { status: Number(m[1]), body: body.toString('utf8') }
}

function dechunk(b: Buffer): Buffer {
  const parts: Buffer[] = []
  let at = 0
  for (;;) {
    const eol = b.indexOf('\r\n', at, 'latin1')
    if (eol < 0) throw new Error(`chunked body cut at byte ${at}`)
    const size = parseInt(b.subarray(at, eol).toString('latin1').split(';')[0] ?? '', 16)
    if (!Number.isInteger(size) || size < 0) throw new Error(`bad chunk size at byte ${at}`)
    if (size === 0) return Buffer.concat(parts)
    if (eol + 2 + size > b.length) throw new Error(`chunked body cut at byte ${b.length}`)
    parts.push(b.subarray(eol + 2, eol + 2 + size))
    at = eol + 2 + size + 2
  }
}
