// GET /livez, /readyz (calico-node's BGP readiness, readiness.ts) and /metrics (Prometheus text from the
// registry in ApiDeps, collected on scrape). Probes answer fast and never touch the datastore.

import type { FastifyPluginAsync } from 'fastify'
import type { ApiDeps } from './deps.js'
import { readinessReply } from './readiness.js'

const verdict = {
  type: 'object',
  properties: { ready: { type: 'boolean' }, reason: { type: 'string' }, established: { type: 'integer' }, peers: { type: 'integer' } },
} as const

export const healthPlugin: FastifyPluginAsync<{ deps: ApiDeps }> = async (app, { deps }) => {
  app.get('/livez', { schema: { summary: 'The agent process answers', response: { 200: { type: 'object', properties: { live: { type: 'boolean' } } } } } }, async () => ({ live: true }))

  app.get(
    '/readyz',
    {
      schema: {
        summary: 'Ready to carry traffic (Calico bird-ready semantics)',
        description: 'During the start-up window all configured peers must be Established, afterwards at least one; no peers configured is ready. 503 when not ready.',
        response: { 200: verdict, 503: verdict },
      },
    },
    async (_request, reply) => {
      const r = readinessReply(deps)
      return reply.code(r.ready ? 200 : 503).send(r)
    },
  )

  app.get('/metrics', { schema: { summary: 'Prometheus metrics', produces: ['text/plain'] } }, async (_request, reply) => {
    const text = await deps.metrics.metrics()
    return reply.type(deps.metrics.contentType).send(text)
  })
}
