// GET /v1/bfd: the node's BFD sessions (state, intervals agreed and in use, the last diagnostics).
// An encapsulated plugin reading ApiDeps; it never drives a session. An agent without BFD answers [].

import type { FastifyPluginAsync } from 'fastify'
import type { ApiDeps } from './deps.js'

const num = { type: 'number' } as const
const str = { type: 'string' } as const

export const bfdSessionSchema = {
  type: 'object',
  properties: {
    name: str,
    peerAddress: str,
    localAddress: str,
    sourcePort: { type: ['integer', 'null'] },
    state: { type: 'string', enum: ['AdminDown', 'Down', 'Init', 'Up'] },
    remoteState: { type: 'string', enum: ['AdminDown', 'Down', 'Init', 'Up'] },
    localDiscriminator: num,
    remoteDiscriminator: num,
    localDiag: str,
    remoteDiag: str,
    lastDownDiag: { type: ['string', 'null'] },
    desiredMinTxMs: num,
    requiredMinRxMs: num,
    detectMult: num,
    remoteMinRxMs: num,
    remoteDesiredMinTxMs: num,
    remoteDetectMult: num,
    txIntervalMs: num,
    detectTimeMs: num,
    since: str,
    reason: str,
    packetsSent: num,
    packetsReceived: num,
    upTransitions: num,
    sendErrors: num,
  },
} as const

export const bfdPlugin: FastifyPluginAsync<{ deps: ApiDeps }> = async (app, { deps }) => {
  app.get(
    '/v1/bfd',
    {
      schema: {
        summary: 'BFD sessions beside the BGP sessions (RFC 5880, single hop)',
        response: { 200: { type: 'object', properties: { sessions: { type: 'array', items: bfdSessionSchema } } } },
      },
    },
    async () => ({
      sessions: (deps.bfd?.sessions() ?? []).map((s) => ({ ...s, sourcePort: s.sourcePort ?? null, lastDownDiag: s.lastDownDiag ?? null, since: new Date(s.since).toISOString() })),
    }),
  )
}
