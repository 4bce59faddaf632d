// The agent's REST API as a factory: buildApi(deps) returns a fastify instance with every route mounted
// as an encapsulated plugin, one error catalogue (errors.ts) and the OpenAPI document at /docs/json.
// It also serves the status page (status-page.ts) at /. It listens nowhere itself (listen.ts does); tests drive it with app.inject().

import swagger from '@fastify/swagger'
import Fastify, { type FastifyError, type FastifyInstance, type FastifyPluginAsync } from 'fastify'
import { registerPintoMetrics } from '../metrics.js'
import type { ApiDeps } from './deps.js'
import { ApiError, fromValidation } from './errors.js'
import { answerClientError, answerConnect, answerExpectation, checkRequestLine, fromFrameworkError, holdContinue, inviteBody, RouteMethods, SERVER_OPTIONS } from './http-errors.js'
import { healthPlugin } from './health.js'
import { eventsPlugin } from './events.js'
import { ipamPlugin } from './ipam.js'
import { peersPlugin } from './peers.js'
import { bfdPlugin } from './bfd.js'
import { routesPlugin } from './routes.js'
import { statusPagePlugin } from './status-page.js'

export type { ApiDeps } from './deps.js'
export { ApiError, ERRORS, type ErrorCode, type ErrorBody } from './errors.js'
export { requireWrite } from './auth.js'
export { listenApi, type ApiListeners, type ListenOptions } from './listen.js'
export { speakerReads, ipamReads, FibApplyLog } from './adapters.js'
export { judgeReadiness, type Readiness } from './readiness.js'

export interface BuildOptions {
  /** More routes, e.g. the CNI IPAM service; guard mutations with `onRequest: requireWrite(deps.token)`. */
  readonly plugins?: readonly FastifyPluginAsync<{ deps: ApiDeps }>[]
  /** A pino logger for fastify's request log; off by default (the agent logs state changes itself). */
  readonly logger?: import('fastify').FastifyBaseLogger
  /** Where the status page's built files are (default dist/bundle/ui). */
  readonly uiDir?: string
}

export const API_VERSION = '1'

export async function buildApi(deps: ApiDeps, opts: BuildOptions = {}): Promise<FastifyInstance> {
  const app = Fastify({
    ...(opts.logger !== undefined ? { loggerInstance: opts.logger } : { logger: false }),
    // Unknown query parameters must fail with 400 naming them, not vanish (fastify's default removes them).
    ajv: { customOptions: { removeAdditional: false } },
    http: SERVER_OPTIONS,
    clientErrorHandler: answerClientError,
    frameworkErrors: (err, request, reply) => {
      const e = fromFrameworkError(err, request.raw.url ?? '')
      void (reply as unknown as { code(n: number): { send(b: unknown): unknown } }).code(e.status).send(e.toBody())
    },
  }) as unknown as FastifyInstance
  const methods = new RouteMethods()
  app.addHook('onRoute', (route) => methods.add(route.method, route.url))
  app.addHook('onRequest', async (request) => {
    const e = checkRequestLine(request.raw.url ?? '', request.raw.httpVersion, request.headers.host)
    if (e !== undefined) throw e
  })
  // Runs after every onRequest check, a route's requireWrite included: only an admitted request's body is invited.
  app.addHook('preParsing', async (request, reply, payload) => {
    inviteBody(request.raw, reply.raw)
    return payload
  })
  // What Node answers itself unless told (CONNECT closed unanswered, 100 Continue before any check, an empty
  // 417); listen.ts gives the unix listener the same handlers.
  app.server.on('connect', answerConnect((path) => methods.allowed(path)))
  app.server.on('checkContinue', holdContinue((req, res) => app.routing(req, res)))
  app.server.on('checkExpectation', answerExpectation)

  app.setErrorHandler((err: FastifyError | ApiError, request, reply) => {
    let e: ApiError
    if (err instanceof ApiError) e = err
    else if (err.validation !== undefined) e = fromValidation(err.validationContext, err.validation)
    else if (err.statusCode === 404) e = new ApiError('not-found', err.message)
    else if (err.statusCode === 405) e = new ApiError('method-not-allowed', err.message)
    else if (err.statusCode === 413) e = new ApiError('body-too-large', err.message)
    else if (err.statusCode === 415) e = new ApiError('unsupported-media-type', err.message)
    else if (err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500) e = new ApiError('invalid-parameter', err.message)
    else {
      request.log.error({ err }, 'request failed')
      e = new ApiError('internal', `internal error: ${err.message}`)
    }
    if (e.code === 'unauthenticated') void reply.header('www-authenticate', 'Bearer realm="pinto"')
    // Refused before its body was read: close rather than read (and discard) what the client still sends.
    if ((e.code === 'unauthenticated' || e.code === 'read-only' || e.code === 'bad-request') && request.body === undefined) void reply.header('connection', 'close')
    return reply.code(e.status).send(e.toBody())
  })
  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? ''
    const allow = methods.allowed(path)
    if (allow.length > 0) {
      const e = new ApiError('method-not-allowed', `${path} takes ${allow.join(', ')}, not ${request.method}`)
      return reply.code(e.status).header('allow', allow.join(', ')).send(e.toBody())
    }
    const e = new ApiError('not-found', `no route ${request.method} ${path}`)
    return reply.code(e.status).send(e.toBody())
  })

  await app.register(swagger, {
    openapi: {
      openapi: '3.0.3',
      info: {
        title: 'pinto-node',
        version: API_VERSION,
        description: 'Status, routes and IPAM of one pinto node. The TCP listener is read-only; changes need the unix socket or a bearer token.',
      },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    },
  })
  app.get('/docs/json', { schema: { hide: true } }, async () => app.swagger())

  for (const plugin of [peersPlugin, eventsPlugin, routesPlugin, ipamPlugin, healthPlugin, bfdPlugin, ...(opts.plugins ?? [])]) {
    await app.register(plugin, { deps })
  }
  await app.register(statusPagePlugin, opts.uiDir !== undefined ? { uiDir: opts.uiDir } : {})
  registerPintoMetrics(deps.metrics, deps)
  await app.ready()
  return app
}
