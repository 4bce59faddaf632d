// The IPAM service's requests and answers as JSON: each body field checked (a bad one answered 400 naming
// it), bodies bounded, and every error mapped to the HTTP status and body the plugins read. No IPAM logic.

import type { IncomingMessage } from 'node:http'
import { AddrError } from '../net/index.js'
import { IpamError, IpamRecordError } from '../ipam/index.js'

export class RequestError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message)
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/** `body[key]`, checked by `check` (described as `what` in the error), or `fallback` when absent. */
export function field<T>(body: Record<string, unknown>, key: string, check: (v: unknown) => v is T, what: string, fallback?: T): T {
  const v = body[key]
  if (v === undefined && fallback !== undefined) return fallback
  if (!check(v)) throw new RequestError(400, 'invalid', `${key}: expected ${what}, got ${JSON.stringify(v)}`)
  return v
}
export const isString = (v: unknown): v is string => typeof v === 'string' && v !== ''
export const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0 && v <= 256
export const isStringMap = (v: unknown): v is Record<string, string> => isObject(v) && Object.values(v).every((x) => typeof x === 'string')
export const isStringList = (v: unknown): v is string[] => Array.isArray(v) && v.every(isString)

/** The HTTP status and body the service answers `err` with. */
export function errorReply(err: unknown): [number, { code: string; message: string }] {
  if (err instanceof RequestError) return [err.status, { code: err.code, message: err.message }]
  if (err instanceof IpamError) return [err.code === 'invalid' ? 400 : 409, { code: err.code, message: err.message }]
  if (err instanceof AddrError || err instanceof IpamRecordError) return [400, { code: 'invalid', message: err.message }]
  const e = err as { code?: unknown; message?: unknown }
  // The datastore being unreachable is transient: 503 makes the plugin answer "try again later".
  if (e.code === 'unavailable') return [503, { code: 'unavailable', message: String(e.message) }]
  return [500, { code: 'internal', message: String(e.message ?? err) }]
}

/** A request's body: a JSON object of at most 64 KiB. */
export async function readBody(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const c of req as AsyncIterable<Buffer>) {
    size += c.length
    if (size > 65536) throw new RequestError(413, 'too-large', 'request body over 64 KiB')
    chunks.push(c)
  }
  let body: unknown
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8'))
  } catch (e) {
    throw new RequestError(400, 'invalid', `body is not JSON: ${(e as Error).message}`)
  }
  if (!isObject(body)) throw new RequestError(400, 'invalid', 'body: expected a JSON object')
  return body
}
