// Requests that are wrong at the HTTP level, answered in the catalogue's `{error: {code, message}}` shape: what
// Node's parser refuses before fastify sees a request (headers too large, unknown method, broken framing), bad
// percent-escapes, HTTP/1.1 without Host, a known path asked with a method it lacks (405 with Allow), CONNECT
// (which Node hands to no route), and an Expect other than 100-continue. With Expect: 100-continue the body is
// invited only once the route has admitted the request, so a refused mutation gets its 401/403 without 100
// Continue. It owns those answers only; routes and who may mutate live elsewhere.

import { maxHeaderSize, STATUS_CODES, type IncomingMessage, type ServerOptions, type ServerResponse } from 'node:http'
import type { Duplex } from 'node:stream'
import { ApiError } from './errors.js'

/** Both listeners' server options: a missing Host is answered in our shape (checkRequestLine), not Node's empty 400. */
export const SERVER_OPTIONS: ServerOptions = { requireHostHeader: false }

/** Node's llhttp error codes for what a client sent, and what that means to it. */
function fromParser(err: NodeJS.ErrnoException & { bytesParsed?: number }): ApiError {
  const at = err.bytesParsed !== undefined ? ` at byte ${err.bytesParsed}` : ''
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return new ApiError('headers-too-large', `the request line and headers are larger than the server accepts (${maxHeaderSize} bytes)`)
    case 'HPE_INVALID_METHOD':
      return new ApiError('not-implemented', 'the request method is not one this server knows; this API uses GET and POST')
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new ApiError('request-timeout', 'the request was not received in time')
    default:
      return new ApiError('bad-request', `malformed HTTP request${at} (${err.code ?? 'parse error'}${err.message && err.message !== err.code ? `: ${err.message.replace(/\s+/g, ' ')}` : ''})`)
  }
}

/** Writes `e` as a whole response on a raw socket and closes it: for streams no ServerResponse serves. */
function answerRaw(socket: Duplex, e: ApiError, headers: Readonly<Record<string, string>> = {}): void {
  const body = JSON.stringify(e.toBody())
  const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')
  socket.end(
    `HTTP/1.1 ${e.status} ${STATUS_CODES[e.status] ?? 'Error'}\r\nContent-Type: application/json; charset=utf-8\r\n${extra}` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  )
}

/**
 * A server's `clientError` handler: writes the catalogue's answer on the raw socket and closes it (the stream
 * is unusable once the parser has failed). Connections that are already gone are just destroyed.
 */
export function answerClientError(err: Error, socket: Duplex): void {
  const code = (err as NodeJS.ErrnoException).code
  if (code === 'ECONNRESET' || code === 'EPIPE' || !socket.writable || socket.destroyed) {
    socket.destroy()
    return
  }
  answerRaw(socket, fromParser(err))
}

/**
 * A server's `connect` handler. Node hands a CONNECT request to this event, not to the routes, and closes the
 * connection unanswered when nothing listens: this API tunnels nothing, so it is 405, with the methods the
 * target takes when it names a path of ours (an empty Allow otherwise, RFC 9110 §10.2.1).
 */
export function answerConnect(allowed: (path: string) => readonly string[]) {
  return (req: IncomingMessage, socket: Duplex): void => {
    if (!socket.writable || socket.destroyed) {
      socket.destroy()
      return
    }
    const target = req.url ?? ''
    const path = target.split('?')[0] ?? ''
    const allow = path.startsWith('/') ? allowed(path) : []
    const takes = allow.length > 0 ? `${path} takes ${allow.join(', ')}` : 'this API takes GET, HEAD and POST'
    answerRaw(socket, new ApiError('method-not-allowed', `CONNECT ${JSON.stringify(target)}: this server is no proxy and tunnels nothing; ${takes}`), { Allow: allow.join(', ') })
  }
}

/** Requests whose client waits for 100 Continue before it sends the body (see inviteBody). */
const awaitingContinue = new WeakSet<IncomingMessage>()

/**
 * A server's `checkContinue` handler: the request goes to the routes without the 100 Continue Node would
 * otherwise send at once; inviteBody sends it once a route has admitted the request.
 */
export function holdContinue(route: (req: IncomingMessage, res: ServerResponse) => void) {
  return (req: IncomingMessage, res: ServerResponse): void => {
    awaitingContinue.add(req)
    route(req, res)
  }
}

/**
 * For a preParsing hook (after the route's onRequest checks, before the body is read): 100 Continue to a
 * client that waits for it. A request refused earlier never gets here, so its client is not asked for a body;
 * one whose framing says it has none is not asked either (RFC 9110 §10.1.1).
 */
export function inviteBody(req: IncomingMessage, res: ServerResponse): void {
  if (!awaitingContinue.delete(req)) return
  const hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? '0') > 0
  if (hasBody && !res.headersSent && !res.writableEnded) res.writeContinue()
}

/** A server's `checkExpectation` handler: an Expect other than 100-continue is 417 (RFC 9110 §10.1.1). */
export function answerExpectation(req: IncomingMessage, res: ServerResponse): void {
  const e = new ApiError('expectation-failed', `Expect: ${JSON.stringify(req.headers.expect ?? '')} is not one this server meets; only 100-continue is`)
  const body = JSON.stringify(e.toBody())
  res.writeHead(e.status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body), connection: 'close' })
  res.end(body)
}

/** The first percent sign not followed by two hex digits, as a byte offset into the request target. */
export function badEscape(target: string): number | undefined {
  const m = /%(?![0-9A-Fa-f]{2})/.exec(target)
  return m === null ? undefined : m.index
}

/** Checks fastify's router does not make: escapes in the query string, and the Host header HTTP/1.1 requires. */
export function checkRequestLine(target: string, httpVersion: string, host: string | undefined): ApiError | undefined {
  const at = badEscape(target)
  if (at !== undefined) return new ApiError('bad-request', `request target ${JSON.stringify(target)}: "%" at byte ${at} does not start a %XX escape`)
  if (httpVersion === '1.1' && (host === undefined || host === '')) return new ApiError('bad-request', 'an HTTP/1.1 request needs a Host header (RFC 9112 §3.2)')
  return undefined
}

/** fastify's own failures before routing (FST_ERR_BAD_URL and the like) in the catalogue's shape. */
export function fromFrameworkError(err: Error & { code?: string }, url: string): ApiError {
  if (err.code === 'FST_ERR_BAD_URL') {
    const at = badEscape(url)
    return new ApiError('bad-request', `request target ${JSON.stringify(url)}: ${at !== undefined ? `"%" at byte ${at} does not start a %XX escape` : 'not a valid URL'}`)
  }
  return new ApiError('bad-request', err.message)
}

/** The methods routed for each path pattern, so a known path asked with another method answers 405 with Allow. */
export class RouteMethods {
  private readonly routes: { readonly pattern: RegExp; readonly methods: Set<string> }[] = []
  private readonly byUrl = new Map<string, Set<string>>()

  add(method: string | readonly string[], url: string): void {
    let methods = this.byUrl.get(url)
    if (methods === undefined) {
      methods = new Set()
      this.byUrl.set(url, methods)
      this.routes.push({ pattern: patternOf(url), methods })
    }
    for (const m of typeof method === 'string' ? [method] : method) methods.add(m.toUpperCase())
  }

  /** Methods some route takes for this path (sorted); empty when no route has the path. */
  allowed(path: string): string[] {
    const all = new Set<string>()
    for (const r of this.routes) if (r.pattern.test(path)) for (const m of r.methods) all.add(m)
    return [...all].sort()
  }
}

/** fastify's route syntax: `:param` one segment, `*` the rest. */
function patternOf(url: string): RegExp {
  const parts = url.split(/(:[A-Za-z0-9_]+|\*)/).map((p) => (p === '*' ? '.*' : p.startsWith(':') ? '[^/]+' : p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
  return new RegExp(`^${parts.join('')}$`)
}
