// The kubernetes datastore's way to the apiserver: credentials and server from the Kubernetes project's client
// (@kubernetes/client-node's KubeConfig: a kubeconfig file, or the in-cluster ServiceAccount), requests over one
// keep-alive connection pool, and watch streams read line by line. It knows HTTP, not the Datastore contract; every
// request is bounded in time. The client module is loaded only when this is opened.

import { AsyncLocalStorage } from 'node:async_hooks'
import http from 'node:http'
import https from 'node:https'
import type { KubeConfig } from '@kubernetes/client-node'
import { setTimeout as delay } from 'node:timers/promises'
import { DatastoreError } from '../datastore.js'

/** A 429 answer is asked again this many times at most, each after its Retry-After (capped). */
const TOO_MANY_RETRIES = 4
/** A read on a stale kept-alive connection is asked again this many times, each on another connection. */
const STALE_RETRIES = 8
const MAX_RETRY_AFTER_MS = 1000

export type KubeSource = { readonly kubeconfig: string } | { readonly inCluster: true }

/**
 * Where Kubernetes credentials come from in this environment: KUBECONFIG's file, else the in-cluster ServiceAccount
 * when KUBERNETES_SERVICE_HOST is set, else none. A KUBECONFIG list is refused, naming it.
 */
export function kubeSourceOf(env: Readonly<Record<string, string | undefined>>): KubeSource | undefined {
  const file = env['KUBECONFIG']
  if (file !== undefined && file !== '') {
    if (file.includes(':')) throw new DatastoreError('invalid', `KUBECONFIG=${JSON.stringify(file)}: pinto reads one kubeconfig file, not a list`)
    return { kubeconfig: file }
  }
  return env['KUBERNETES_SERVICE_HOST'] ? { inCluster: true } : undefined
}

export interface KubeResponse {
  readonly status: number
  /** The body parsed as JSON, or undefined when it is not JSON (e.g. "404 page not found"). */
  readonly body: unknown
  readonly text: string
}

export type Query = Readonly<Record<string, string | number | boolean | undefined>>

export interface KubeStream {
  close(): void
}

function withQuery(path: string, query: Query | undefined): string {
  const q = new URLSearchParams()
  for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) q.set(k, String(v))
  const s = q.toString()
  return s === '' ? path : `${path}?${s}`
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

class StaleSocket extends Error {}

/** Requests in flight at once per pool; more wait for a connection. */
const REQUEST_SOCKETS = 32

/** The deadline (ms since the epoch) of the operation a request is made for, where one was set. */
const operationDeadline = new AsyncLocalStorage<number>()

/**
 * Runs `fn` with each request it makes to an apiserver (through any KubeHttp) waited for until `deadline` (ms since
 * the epoch) where that is later than the pool's own timeout: one deadline for an operation of several requests
 * whose caller waits that long anyway (a pod's ADD), so a slow apiserver delays it rather than failing it. A
 * connection refused or reset still fails at once.
 */
export function withRequestDeadline<T>(deadline: number, fn: () => Promise<T>): Promise<T> {
  return operationDeadline.run(deadline, fn)
}

export class KubeHttp {
  /** The requests' connections, at most REQUEST_SOCKETS at once. */
  private readonly agent: http.Agent
  /** The watch streams' connections, one each for as long as it lasts: never taken from the requests. */
  private readonly streamAgent: http.Agent
  private readonly mod: typeof http | typeof https
  private closed = false
  /** Requests made and watch streams opened, for the request-rate figures. */
  readonly counts = { requests: 0, streams: 0 }

  private constructor(
    private readonly kc: KubeConfig,
    /** The apiserver's URL, as errors name it. */
    readonly server: string,
    private readonly url: URL,
    tls: https.AgentOptions,
    private readonly timeoutMs: number,
  ) {
    this.mod = url.protocol === 'https:' ? https : http
    const pool = (maxSockets: number): http.Agent => (url.protocol === 'https:' ? new https.Agent({ ...tls, keepAlive: true, maxSockets }) : new http.Agent({ keepAlive: true, maxSockets }))
    this.agent = pool(REQUEST_SOCKETS)
    this.streamAgent = pool(Number.POSITIVE_INFINITY)
  }

  /** Reads the credentials (naming KUBECONFIG or the ServiceAccount files when they fail) and prepares the pool. */
  static async connect(source: KubeSource, timeoutMs: number): Promise<KubeHttp> {
    const { KubeConfig } = await import('@kubernetes/client-node')
    const kc = new KubeConfig()
    const from = 'kubeconfig' in source ? `KUBECONFIG=${source.kubeconfig}` : 'the in-cluster ServiceAccount (KUBERNETES_SERVICE_HOST/PORT, /var/run/secrets/kubernetes.io/serviceaccount)'
    let tls: https.RequestOptions = {}
    try {
      if ('kubeconfig' in source) kc.loadFromFile(source.kubeconfig)
      else kc.loadFromCluster()
      const cluster = kc.getCurrentCluster()
      if (cluster === null) throw new Error('it names no current cluster')
      if (kc.getCurrentUser() === null) throw new Error('it names no current user')
      await kc.applyToHTTPSOptions(tls)
      const url = new URL(cluster.server)
      if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new Error(`server ${cluster.server} is not an http(s) URL`)
      const { ca, cert, key, pfx, passphrase, rejectUnauthorized, servername } = tls as https.AgentOptions
      tls = { ca, cert, key, pfx, passphrase, ...(rejectUnauthorized !== undefined ? { rejectUnauthorized } : {}), ...(servername !== undefined ? { servername } : {}) }
      return new KubeHttp(kc, cluster.server.replace(/\/$/, ''), url, tls as https.AgentOptions, timeoutMs)
    } catch (err) {
      throw new DatastoreError('invalid', `kubernetes datastore: cannot use ${from}: ${(err as Error).message}`)
    }
  }

  /** The request headers the credentials give now (a token file is read again as it rotates). */
  private async authHeaders(): Promise<Record<string, string>> {
    const opts: https.RequestOptions = {}
    await this.kc.applyToHTTPSOptions(opts)
    const out: Record<string, string> = {}
    for (const [k, v] of Object.entries(opts.headers ?? {})) if (v !== undefined) out[k] = String(v)
    if (typeof opts.auth === 'string') out.authorization = `Basic ${Buffer.from(opts.auth).toString('base64')}`
    return out
  }

  private async open(method: string, path: string, body: string | undefined, contentType: string, agent = this.agent): Promise<http.ClientRequest> {
    if (this.closed) throw new DatastoreError('unavailable', `kubernetes datastore (${this.server}) is closed`)
    const headers: Record<string, string> = { ...(await this.authHeaders()), accept: 'application/json' }
    if (body !== undefined) {
      headers['content-type'] = contentType
      headers['content-length'] = String(Buffer.byteLength(body))
    }
    const basePath = this.url.pathname.replace(/\/$/, '')
    return this.mod.request({ protocol: this.url.protocol, hostname: this.url.hostname.replace(/^\[|\]$/g, ''), port: this.url.port, path: `${basePath}${path}`, method, agent, headers })
  }

  /** One request, answered within the timeout or failed 'unavailable' naming the server and what was asked. */
  async request(method: string, path: string, query?: Query, body?: unknown, contentType = 'application/json'): Promise<KubeResponse> {
    const target = withQuery(path, query)
    const text = body === undefined ? undefined : JSON.stringify(body)
    // 429 (a storage being initialised, or the apiserver's flow control) means the request was not served: asked
    // again after the Retry-After it names, a few times, as client-go does.
    for (let attempt = 1; ; attempt++) {
      const r = await this.withStaleRetry(method, target, text, contentType)
      if (r.status !== 429 || attempt > TOO_MANY_RETRIES) return r
      await delay(Math.min(MAX_RETRY_AFTER_MS, Math.max(100, (r.retryAfterSeconds ?? 1) * 1000)))
    }
  }

  private async withStaleRetry(method: string, target: string, text: string | undefined, contentType: string): Promise<KubeResponse & { readonly retryAfterSeconds?: number }> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.once(method, target, text, contentType)
      } catch (err) {
        // A kept-alive connection the server closed as it was reused. A read is asked again, on the next pooled
        // connection (after a restart of the server every one of them may be stale); a write is not, as a reset may
        // also come after the server took it: its outcome is unknown ('unavailable'), which writers handle.
        if (!(err instanceof StaleSocket)) throw err
        if (method !== 'GET' || attempt > STALE_RETRIES) throw new DatastoreError('unavailable', `kubernetes apiserver ${this.server}: ${method} ${target}: the connection was reset`)
      }
    }
  }

  private async once(method: string, target: string, text: string | undefined, contentType: string): Promise<KubeResponse & { readonly retryAfterSeconds?: number }> {
    const what = `${method} ${target}`
    this.counts.requests++
    const req = await this.open(method, target, text, contentType)
    const deadline = operationDeadline.getStore()
    const timeoutMs = deadline === undefined ? this.timeoutMs : Math.max(this.timeoutMs, deadline - Date.now())
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => req.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs)
      req.on('response', (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => {
          clearTimeout(timer)
          const t = Buffer.concat(chunks).toString('utf8')
          const retryAfter = Number(res.headers['retry-after'])
          resolve({ status: res.statusCode ?? 0, body: parseJson(t), text: t, ...(Number.isFinite(retryAfter) && retryAfter >= 0 ? { retryAfterSeconds: retryAfter } : {}) })
        })
        res.on('error', (err) => {
          clearTimeout(timer)
          reject(new DatastoreError('unavailable', `kubernetes apiserver ${this.server}: ${what}: ${err.message}`))
        })
      })
      req.on('error', (err: NodeJS.ErrnoException) => {
        clearTimeout(timer)
        if (req.reusedSocket && err.code === 'ECONNRESET') return reject(new StaleSocket())
        reject(new DatastoreError('unavailable', `kubernetes apiserver ${this.server}: ${what}: ${err.message}`))
      })
      req.end(text)
    })
  }

  /**
   * A streamed GET (a watch): `onLine` for each line of a 200 answer; `onEnd` once, with the status and body of
   * any other answer, or the error that broke the stream, or nothing when the server ended it. A stream that
   * carries nothing for `idleMs` is taken for broken. `onOpen` when a 200 answer's headers come (the apiserver
   * sends them as the watch starts, before any event).
   */
  stream(path: string, query: Query, idleMs: number, onLine: (line: string) => void, onEnd: (end: { status?: number; body?: unknown; error?: Error }) => void, onOpen?: () => void): KubeStream {
    let req: http.ClientRequest | undefined
    let ended = false
    let idle: NodeJS.Timeout | undefined
    const end = (e: { status?: number; body?: unknown; error?: Error }): void => {
      if (ended) return
      ended = true
      clearTimeout(idle)
      req?.destroy()
      onEnd(e)
    }
    const alive = (): void => {
      clearTimeout(idle)
      idle = setTimeout(() => end({ error: new Error(`the watch carried nothing for ${idleMs} ms`) }), idleMs)
    }
    alive()
    this.counts.streams++
    this.open('GET', withQuery(path, query), undefined, '', this.streamAgent).then(
      (r) => {
        req = r
        if (ended) return void r.destroy()
        r.on('error', (error) => end({ error }))
        r.on('response', (res) => {
          if (res.statusCode !== 200) {
            const chunks: Buffer[] = []
            res.on('data', (c: Buffer) => chunks.push(c))
            res.on('end', () => end({ status: res.statusCode ?? 0, body: parseJson(Buffer.concat(chunks).toString('utf8')) }))
            return
          }
          onOpen?.()
          let rest = ''
          res.setEncoding('utf8')
          res.on('data', (chunk: string) => {
            alive()
            rest += chunk
            let nl: number
            while (!ended && (nl = rest.indexOf('\n')) >= 0) {
              const line = rest.slice(0, nl)
              rest = rest.slice(nl + 1)
              if (line.trim() !== '') onLine(line)
            }
          })
          res.on('end', () => end({}))
          res.on('error', (error) => end({ error }))
        })
        r.end()
      },
      (error: Error) => end({ error }),
    )
    return { close: () => { ended = true; clearTimeout(idle); req?.destroy() } }
  }

  close(): void {
    this.closed = true
    this.agent.destroy()
    this.streamAgent.destroy()
  }
}
