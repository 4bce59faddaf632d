// The plugins' side of the agent's IPAM service: JSON over HTTP on the agent's unix socket (node:http only,
// so the bundled plugins stay small). It maps transport failures to CNI errors; it decides nothing else.

import { CniError, ERR } from './spec.js'

export interface ServiceAddress {
  readonly address: string
  readonly family: 4 | 6
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

export class IpamClient {
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
    const payload = body === undefined ? undefined : JSON.stringify(body)
    // Loaded on first use: node:http pulls in net and streams, which VERSION and errors never need.
    const { request } = await import('node:http')
    return new Promise((resolve, reject) => {
      const req = request({ socketPath: this.socket, method, path, headers: payload ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {} }, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('error', reject)
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8')
          let parsed: unknown
          try {
            parsed = JSON.parse(text)
          } catch {
            reject(new CniError(ERR.io, `pinto-node IPAM service: ${method} ${path} answered ${res.statusCode} with non-JSON`, text.slice(0, 200)))
            return
          }
          if (res.statusCode === 200) resolve(parsed)
          else {
            const e = parsed as { code?: string; message?: string }
            // 503 is the agent saying "not ready yet": the runtime should retry, as for an agent that is down.
            const code = res.statusCode === 503 ? ERR.tryAgainLater : res.statusCode === 400 ? ERR.invalidConfig : ERR.io
            reject(new CniError(code, `pinto-node IPAM service: ${e.message ?? `HTTP ${res.statusCode}`}`, e.code ?? ''))
          }
        })
      })
      req.setTimeout(this.timeoutMs, () => req.destroy(new Error(`no answer within ${this.timeoutMs} ms`)))
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT' || err.code === 'ECONNREFUSED') {
          reject(new CniError(ERR.tryAgainLater, `pinto-node is not running: cannot connect to its IPAM socket ${this.socket} (${err.code})`, 'start pinto-node on this node, or set "socket" in the network config'))
        } else reject(new CniError(ERR.io, `pinto-node IPAM service at ${this.socket}: ${err.message}`))
      })
      req.end(payload)
    })
  }
}
