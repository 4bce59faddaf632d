// GET /v1/routes: one table (Loc-RIB, a peer's Adj-RIB-In or Adj-RIB-Out, or felix's kernel routes),
// filtered by peer and prefix, served in pages ordered by prefix with an opaque cursor (paginate.ts).

import type { FastifyPluginAsync } from 'fastify'
import { parsePrefix, type Prefix } from '../../bgp/codec/index.js'
import type { ApiDeps } from './deps.js'
import { ApiError, errorSchema } from './errors.js'
import { decodeCursor, prefixWithin, selectPage, type Page, type RowKey } from './paginate.js'
import { adjRibInView, advertisedView, kernelRouteView, locRibView, routeSchema } from './views.js'

export const TABLES = ['loc-rib', 'adj-rib-in', 'adj-rib-out', 'fib'] as const
export type TableName = (typeof TABLES)[number]
export const DEFAULT_LIMIT = 100
export const MAX_LIMIT = 5000

interface RoutesQuery {
  table: TableName
  peer?: string
  prefix?: string
  limit: number
  cursor?: string
}

const NO_TIE: readonly number[] = []

function parseFilterPrefix(text: string): Prefix {
  try {
    return parsePrefix(text)
  } catch (err) {
    throw new ApiError('invalid-parameter', `query parameter prefix: ${(err as Error).message}`, 'prefix')
  }
}

function* filter<T>(rows: Iterable<T>, keep: (row: T) => boolean): Iterable<T> {
  for (const r of rows) if (keep(r)) yield r
}

/** One page of the asked table, as JSON rows. */
function page(deps: ApiDeps, q: RoutesQuery): Page<Record<string, unknown>> {
  const within = q.prefix !== undefined ? parseFilterPrefix(q.prefix) : undefined
  const after = q.cursor !== undefined ? decodeCursor(q.cursor) : undefined
  const inside = (p: Prefix): boolean => within === undefined || prefixWithin(p, within)
  const render = <T>(p: Page<T>, view: (row: T) => Record<string, unknown>): Page<Record<string, unknown>> => ({ ...p, items: p.items.map(view) })
  const needPeer = (): string => {
    if (q.peer === undefined) throw new ApiError('invalid-parameter', `query parameter peer: table ${q.table} needs a peer name`, 'peer')
    return q.peer
  }
  switch (q.table) {
    case 'loc-rib': {
      const peer = q.peer
      const rows = filter(deps.bgp.locRib(), ([p, best]) => inside(p) && (peer === undefined || best.path.peer?.name === peer || best.path.peer?.address === peer))
      return render(selectPage(rows, ([prefix]) => ({ prefix, tie: NO_TIE }), q.limit, after), ([p, best]) => locRibView(p, best))
    }
    case 'adj-rib-in': {
      const name = needPeer()
      const paths = deps.bgp.adjRibIn(name)
      if (paths === undefined) throw new ApiError('unknown-peer', `no peer named ${JSON.stringify(name)}`, 'peer')
      return render(selectPage(filter(paths, (path) => inside(path.prefix)), (path) => ({ prefix: path.prefix, tie: [path.prefix.pathId] }), q.limit, after), adjRibInView)
    }
    case 'adj-rib-out': {
      const name = needPeer()
      const routes = deps.bgp.adjRibOut(name)
      if (routes === undefined) throw new ApiError('unknown-peer', `no peer named ${JSON.stringify(name)}`, 'peer')
      return render(selectPage(filter(routes, (r) => inside(r.prefix)), (r) => ({ prefix: r.prefix, tie: NO_TIE }), q.limit, after), advertisedView)
    }
    case 'fib': {
      if (q.peer !== undefined) throw new ApiError('invalid-parameter', 'query parameter peer: the fib table has no peers', 'peer')
      if (deps.fib === undefined) throw new ApiError('no-dataplane', 'this agent runs without a dataplane (PINTO_DATAPLANE=none): there is no FIB')
      const keyed = [...deps.fib.routes()].map((r) => ({ r, key: { prefix: parsePrefix(r.dst), tie: [r.table, r.tos, r.metric] } as RowKey }))
      return render(selectPage(filter(keyed, (k) => inside(k.key.prefix)), (k) => k.key, q.limit, after), (k) => kernelRouteView(k.r))
    }
  }
}

export const routesPlugin: FastifyPluginAsync<{ deps: ApiDeps }> = async (app, { deps }) => {
  app.get<{ Querystring: RoutesQuery }>(
    '/v1/routes',
    {
      schema: {
        summary: 'Routes of one table, ordered by prefix, a page at a time',
        description:
          'Pass nextCursor back as cursor for the next page; a route present throughout is served exactly once. ' +
          'prefix keeps routes equal to or inside it. Loc-RIB rows carry reason: the best-path step that made the path win.',
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            table: { type: 'string', enum: [...TABLES], default: 'loc-rib' },
            peer: { type: 'string', minLength: 1, description: 'peer name (adj-rib-in/out, required); loc-rib: paths learned from this peer (name or address)' },
            prefix: { type: 'string', minLength: 1, description: 'e.g. 198.18.0.0/16' },
            limit: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT },
            cursor: { type: 'string', minLength: 1 },
          },
        },
        response: {
          200: {
            type: 'object',
            properties: {
              table: { type: 'string' },
              total: { type: 'integer', description: 'rows matching the filters' },
              nextCursor: { type: ['string', 'null'] },
              routes: { type: 'array', items: routeSchema },
            },
          },
          '4xx': errorSchema,
        },
      },
    },
    async (request) => {
      const p = page(deps, request.query)
      return { table: request.query.table, total: p.total, nextCursor: p.nextCursor ?? null, routes: p.items }
    },
  )
}
