// A small client for a running agent's API, for pintoctl: where to find it (--api, PINTO_API, default
// http://127.0.0.1:9099, or unix:/path for the agent's socket) and GET with the catalogue's errors.
// It never retries and never changes anything on the agent.

import { request } from 'node:http'

export const DEFAULT_API = 'http://127.0.0.1:9099'

export interface ApiTarget {
  /** As the user gave it, for messages. */
  readonly text: string
  readonly host?: string
  readonly port?: number
  readonly socketPath?: string
}

/** `http://host:port` or `unix:/path/to.sock`; the error names where the value came from. */
export function parseApiTarget(text: string, from: string): ApiTarget {
  if (text.startsWith('unix:')) {
    const path = text.slice('unix:'.length).replace(/^\/\/(?=\/)/, '')
    if (!path.startsWith('/')) throw new Error(`${from}=${JSON.stringify(text)}: expected unix:/absolute/path.sock`)
    return { text, socketPath: path }
  }
  let url: URL
  try {
    url = new URL(text)
  } catch {
    throw new Error(`${from}=${JSON.stringify(text)}: expected http://host:port or unix:/path.sock`)
  }
  if (url.protocol !== 'http:' || (url.pathname !== '/' && url.pathname !== '')) throw new Error(`${from}=${JSON.stringify(text)}: expected http://host:port (no path) or unix:/path.sock`)
  return { text, host: url.hostname.replace(/^\[|\]$/g, ''), port: Number(url.port || 80) }
}

/** `--api URL` from the flags, else PINTO_API, else the default. */
export function apiTarget(flag: string | undefined, env: Readonly<Record<string, string | undefined>>): ApiTarget {
  if (flag !== undefined) return parseApiTarget(flag, '--api')
  const e = env['PINTO_API']
  if (e !== undefined && e !== '') return parseApiTarget(e, 'PINTO_API')
  return parseApiTarget(DEFAULT_API, 'default')
}

export class ApiUnreachable extends Error {}

/** An error answer from the API, with its stable code. */
export class ApiAnswerError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message)
  }
}

export async function apiGet<T>(target: ApiTarget, path: string, timeoutMs = 10_000): Promise<T> {
  const { status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = request(
      { ...(target.socketPath !== undefined ? { socketPath: target.socketPath } : { host: target.host, port: target.port }), path, method: 'GET', timeout: timeoutMs },
      (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }))
        res.on('error', reject)
      },
    )
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)))
    req.on('error', (err: NodeJS.ErrnoException) => reject(new ApiUnreachable(`cannot reach the pinto-node API at ${target.text}: ${err.code ?? err.message}`)))
    req.end()
  })
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    throw new ApiAnswerError(status, 'bad-answer', `${path}: the agent answered ${status} with something that is not JSON`)
  }
  if (status >= 400) {
    const e = (body as { error?: { code?: string; message?: string } }).error
    throw new ApiAnswerError(status, e?.code ?? 'unknown', e?.message ?? `HTTP ${status}`)
  }
  return body as T
}
