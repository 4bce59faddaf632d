// GET /v1/routes: one table (Loc-RIB, a peer's Adj-RIB-In or Adj-RIB-Out, or felix's kernel routes),
// filtered by peer and prefix, served in pages ordered by prefix with an opaque cursor (paginate.ts).

import type { FastifyPluginAsync } from 'fastify'
import { ipv4Prefix, ipv6Prefix, parsePrefix, SortedPrefixes, type Prefix } from '../../bgp/index.js'
import { AddrError, ipv6ValueBytes, parseCidr, tryAddr } from '../../net/index.js'
import type { ApiDeps } from './deps.js'
import { ApiError, errorSchema } from './errors.js'
import { decodeCursor, prefixPage, prefixWithin, selectPage, type Page } from './paginate.js'
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

/** The `prefix` filter: a network (host bits clear) or a bare address, validated like a resource's CIDR. */
function parseFilterPrefix(text: string): Prefix {
  const c = tryAddr(() => parseCidr(text, 'prefix', { bare: true }))
  if (c instanceof AddrError) throw new ApiError('invalid-parameter', `query parameter prefix: ${c.reason}`, 'prefix')
  return c.family === 4 ? ipv4Prefix(Number(c.base), c.prefix) : ipv6Prefix(ipv6ValueBytes(c.base), c.prefix)
}

/** The Loc-RIB sorted as of one version: reused by every page until the RIB changes. */
interface Snapshot {
  readonly version: number
  readonly sorted: SortedPrefixes
}

/** One page of the asked table, as JSON rows. */
function page(deps: ApiDeps, q: RoutesQuery, cache: { snapshot?: Snapshot }): Page<Record<string, unknown>> {
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
      const fromPeer = (p: Prefix): boolean => {
        const src = deps.bgp.best(p)?.path.peer
        return src !== undefined && (src.name === peer || src.address === peer)
      }
      let found: Page<Prefix>
      if (within !== undefined || peer !== undefined) {
        found = selectPage(deps.bgp.locRibPrefixes(), (p) => p, q.limit, after, (p) => inside(p) && (peer === undefined || fromPeer(p)))
      } else {
        // A RIB standing still (the common case while an operator pages through it) is sorted once;
        // while it changes, each page is one selection pass instead of a sort that goes stale at once.
        const version = deps.bgp.locRibVersion
        const snap = cache.snapshot
        const live = deps.bgp.locRibPage?.(q.limit, after)
        if (live !== undefined) found = prefixPage(live)
        else if (snap !== undefined && snap.version === version) found = prefixPage(snap.sorted.page(q.limit, after))
        else if (snap === undefined || after === undefined) {
          const sorted = new SortedPrefixes(deps.bgp.locRibPrefixes())
          cache.snapshot = { version, sorted }
          found = prefixPage(sorted.page(q.limit, after))
        } else found = selectPage(deps.bgp.locRibPrefixes(), (p) => p, q.limit, after)
      }
      // A prefix emptied since the RIB's last flush has no best path: it is left out of the page.
      const rows: Record<string, unknown>[] = []
      for (const p of found.items) {
        const best = deps.bgp.best(p)
        if (best !== undefined) rows.push(locRibView(p, best))
      }
      return { ...found, items: rows }
    }
    case 'adj-rib-in': {
      const name = needPeer()
      const paths = deps.bgp.adjRibIn(name)
      if (paths === undefined) throw new ApiError('unknown-peer', `no peer named ${JSON.stringify(name)}`, 'peer')
      return render(selectPage(paths, (path) => path.prefix, q.limit, after, within && ((path) => inside(path.prefix))), adjRibInView)
    }
    case 'adj-rib-out': {
      const name = needPeer()
      const routes = deps.bgp.adjRibOut(name)
      if (routes === undefined) throw new ApiError('unknown-peer', `no peer named ${JSON.stringify(name)}`, 'peer')
      return render(selectPage(routes, (r) => r.prefix, q.limit, after, within && ((r) => inside(r.prefix))), advertisedView)
    }
    case 'fib': {
      if (q.peer !== undefined) throw new ApiError('invalid-parameter', 'query parameter peer: the fib table has no peers', 'peer')
      if (deps.fib === undefined) throw new ApiError('no-dataplane', 'this agent runs without a dataplane (PINTO_DATAPLANE=none): there is no FIB')
      const keyed = [...deps.fib.routes()].map((r) => ({ r, key: { ...parsePrefix(r.dst), tie: [r.table, r.tos, r.metric] } }))
      return render(selectPage(keyed, (k) => k.key, q.limit, after, within && ((k) => inside(k.key))), (k) => kernelRouteView(k.r))
    }
  }
}

export const routesPlugin: FastifyPluginAsync<{ deps: ApiDeps }> = async (app, { deps }) => {
  const cache: { snapshot?: Snapshot } = {}
  app.get<{ Querystring: RoutesQuery }>(
    '/v1/routes',
    {
      // The schema documents the rows; plain JSON.stringify writes them. Attributes are free-form, and
      // fast-json-stringify's any-type path is slower than JSON.stringify on a large page.
      serializerCompiler: () => (data) => JSON.stringify(data),
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
      const p = page(deps, request.query, cache)
      return { table: request.query.table, total: p.total, nextCursor: p.nextCursor ?? null, routes: p.items }
    },
  )
}
