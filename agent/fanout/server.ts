// pinto-fanout's HTTP: the view's listings and event streams for agents (config/datastore-fanout.ts is the other
// end), its health and its metrics. Reads only. With a token set, every request but the probes must carry it.
//   GET /v1/list?prefix=P                       -> { items, revision, epoch, seq }
//   GET /v1/watch?prefix=P&epoch=E&after=S      -> one JSON line per event after S (FanoutEvent), and a
//                                                   {"type":"tick","seq":N} line every TICK_MS while quiet
// A watch that cannot go on from S answers 410 with code 'compacted' (list again). An agent that does not read
// its stream is cut off once MAX_BUFFERED bytes wait for it; it goes on from its last event when it reconnects.

import { createHash, timingSafeEqual } from 'node:crypto'
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify'
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client'
import { DatastoreError } from '../../config/index.js'
import { mirrorCounter } from '../metrics.js'
import type { FanoutEvent, FanoutView } from './view.js'

export const TICK_MS = 15_000
const MAX_BUFFERED = 16 * 1024 * 1024

const STATUS: Record<string, number> = { invalid: 400, compacted: 410, unavailable: 503 }

function fail(reply: FastifyReply, err: unknown): { error: { code: string; message: string } } {
  const code = err instanceof DatastoreError ? err.code : 'internal'
  void reply.code(STATUS[code] ?? 500)
  return { error: { code, message: (err as Error).message } }
}

/** Each event's line, made once for all the agents it is sent to. */
const lines = new WeakMap<FanoutEvent, string>()
function lineOf(e: FanoutEvent): string {
  let line = lines.get(e)
  if (line === undefined) lines.set(e, (line = JSON.stringify(e) + '\n'))
  return line
}

const digest = (s: string): Buffer => createHash('sha256').update(s).digest()

function metricsOf(view: FanoutView): Registry {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry, prefix: 'pinto_fanout_process_' })
  const registers = [registry]
  const counter = (name: string, help: string, value: () => number): void =>
    void new Counter({ name, help, registers, collect() { mirrorCounter(this, [[{}, value()]]) } })
  new Gauge({ name: 'pinto_fanout_followers', help: 'agents\' event streams open now', registers, collect() { this.set(view.followers) } })
  counter('pinto_fanout_events_received_total', 'events received from the datastore\'s watches', () => view.received)
  counter('pinto_fanout_events_unchanged_total', 'puts of bytes the view held (a kubelet\'s Node status report), told to no agent', () => view.unchanged)
  counter('pinto_fanout_events_sent_total', 'events sent to agents, once per agent', () => view.told)
  return registry
}

export interface FanoutServerOptions {
  /** A bearer token every request but /healthz and /readyz must carry. */
  readonly token?: string | undefined
}

export function buildFanoutServer(view: FanoutView, options: FanoutServerOptions = {}): FastifyInstance {
  const app = Fastify({ logger: false, keepAliveTimeout: 75_000 })
  const want = options.token !== undefined && options.token !== '' ? digest(options.token) : undefined
  app.addHook('onRequest', async (request, reply) => {
    if (want === undefined || request.url === '/healthz' || request.url === '/readyz') return
    const m = /^Bearer\s+(\S+)\s*$/i.exec(request.headers.authorization ?? '')
    if (m === null || !timingSafeEqual(digest(m[1] as string), want)) {
      return reply.code(401).send({ error: { code: 'unauthenticated', message: m === null ? 'send Authorization: Bearer <token>' : 'the bearer token is not the configured one' } })
    }
  })
  const registry = metricsOf(view)
  app.get('/healthz', async () => ({ ok: true }))
  app.get('/readyz', async (_req, reply) => (view.ready ? { ok: true } : reply.code(503).send({ error: { code: 'unavailable', message: 'the datastore is not listed yet' } })))
  app.get('/metrics', async (_req, reply) => reply.type(registry.contentType).send(await registry.metrics()))

  const prefixQuery = { type: 'object', required: ['prefix'], additionalProperties: false, properties: { prefix: { type: 'string', minLength: 1 } } } as const
  // Agents starting together (a rollout, a restart of every node) ask for the same listing: it is made once per
  // state of the view, and sent as made while no event has come since.
  const listings = new Map<string, { readonly seq: number; readonly text: string }>()
  app.get<{ Querystring: { prefix: string } }>('/v1/list', { schema: { querystring: prefixQuery } }, async (request, reply) => {
    const { prefix } = request.query
    const seq = view.lastSeq
    let made = listings.get(prefix)
    if (made?.seq !== seq) {
      try {
        made = { seq, text: JSON.stringify(view.list(prefix)) }
      } catch (err) {
        return fail(reply, err)
      }
      if (listings.size >= 16) listings.clear()
      listings.set(prefix, made)
    }
    return reply.type('application/json; charset=utf-8').send(made.text)
  })

  const watchQuery = {
    type: 'object',
    required: ['prefix', 'epoch', 'after'],
    additionalProperties: false,
    properties: { prefix: { type: 'string', minLength: 1 }, epoch: { type: 'string', minLength: 1 }, after: { type: 'integer', minimum: 0 } },
  } as const
  app.get<{ Querystring: { prefix: string; epoch: string; after: number } }>('/v1/watch', { schema: { querystring: watchQuery } }, async (request, reply) => {
    const { prefix, epoch, after } = request.query
    const res = reply.raw
    let stop: () => void
    let last = after
    const send = (e: FanoutEvent): void => {
      last = e.seq
      if (res.writableLength > MAX_BUFFERED) {
        res.destroy()
        return
      }
      res.write(lineOf(e))
    }
    // The events still kept after `after` are told at once, before the head is written: held until it is.
    const backlog: FanoutEvent[] = []
    let out = (e: FanoutEvent): void => void backlog.push(e)
    try {
      stop = view.follow(prefix, epoch, after, (e) => out(e))
    } catch (err) {
      return fail(reply, err)
    }
    reply.hijack()
    res.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' })
    out = send
    for (const e of backlog) send(e)
    res.write(JSON.stringify({ type: 'tick', seq: last }) + '\n')
    const tick = setInterval(() => res.write(JSON.stringify({ type: 'tick', seq: last }) + '\n'), TICK_MS)
    res.once('close', () => {
      clearInterval(tick)
      stop()
    })
  })
  return app
}
