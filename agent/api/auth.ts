// Who may change things: requests that came over the agent's unix socket (root only, mode 0600), or over
// TCP with the configured bearer token. The TCP listener is otherwise read-only. Transport is known by
// the connection, recorded when the unix listener accepts it, never guessed from the request.

import { timingSafeEqual, createHash } from 'node:crypto'
import type { Socket } from 'node:net'
import type { FastifyRequest } from 'fastify'
import { ApiError } from './errors.js'

/** Connections accepted by a unix-socket listener of some app; listen.ts adds to it. */
export const unixConnections = new WeakSet<Socket>()

const digest = (s: string): Buffer => createHash('sha256').update(s).digest()

/** An onRequest hook for mutation routes: it refuses before the body is read (and the reply closes the connection). */
export function requireWrite(token: string | undefined) {
  const want = token !== undefined && token !== '' ? digest(token) : undefined
  return async (request: FastifyRequest): Promise<void> => {
    if (unixConnections.has(request.raw.socket)) return
    if (want === undefined) throw new ApiError('read-only', 'the TCP listener is read-only; use the unix socket, or configure a token and send it as a bearer token')
    const header = request.headers.authorization
    const m = header === undefined ? null : /^Bearer\s+(\S+)\s*$/i.exec(header)
    // Digests of equal length, so the comparison time says nothing about the token.
    if (m === null || !timingSafeEqual(digest(m[1] ?? ''), want)) {
      throw new ApiError('unauthenticated', header === undefined ? 'this request changes state: send Authorization: Bearer <token>' : 'the bearer token is not the configured one')
    }
  }
}
