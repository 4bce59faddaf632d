// GET /v1/events: the recent BGP session transitions of this node (the speaker's bounded ring per peer),
// newest first, each with the FSM event and reason. Reads only; an empty list when nothing keeps them.

import type { FastifyPluginAsync } from 'fastify'
import type { ApiDeps } from './deps.js'
import { errorSchema } from './errors.js'

export const EVENTS_MAX_LIMIT = 1000

const str = { type: 'string' } as const
const states = { type: 'string', enum: ['Idle', 'Connect', 'Active', 'OpenSent', 'OpenConfirm', 'Established'] } as const

export const transitionSchema = {
  type: 'object',
  properties: {
    seq: { type: 'integer', description: 'grows by one per transition on this node; pass the largest seen as `after`' },
    at: { type: 'string', format: 'date-time' },
    peer: str,
    from: states,
    to: states,
    event: { type: 'string', description: 'the RFC 4271 §8 event (ManualStart, TcpConnectionFails, HoldTimer_Expires, ...)' },
    reason: str,
  },
} as const

interface EventsQuery {
  peer?: string
  after?: number
  limit: number
}

export const eventsPlugin: FastifyPluginAsync<{ deps: ApiDeps }> = async (app, { deps }) => {
  app.get<{ Querystring: EventsQuery }>(
    '/v1/events',
    {
      schema: {
        summary: 'Recent BGP session state changes, newest first, with the event and reason',
        description: 'The agent keeps the last 32 transitions of each configured peer; a peer removed from the configuration takes its history with it.',
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            peer: { type: 'string', minLength: 1, description: 'only this peer' },
            after: { type: 'integer', minimum: 0, description: 'only transitions with a larger seq' },
            limit: { type: 'integer', minimum: 1, maximum: EVENTS_MAX_LIMIT, default: 100 },
          },
        },
        response: { 200: { type: 'object', properties: { events: { type: 'array', items: transitionSchema } } }, '4xx': errorSchema },
      },
    },
    async (request) => {
      const { peer, after, limit } = request.query
      const rows = deps.bgp.transitions?.({ ...(peer !== undefined ? { peer } : {}), ...(after !== undefined ? { after } : {}), limit }) ?? []
      return { events: rows.map((t) => ({ ...t, at: new Date(t.at).toISOString() })) }
    },
  )
}
