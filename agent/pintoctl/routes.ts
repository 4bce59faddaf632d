// `pintoctl routes`: one of the agent's route tables (Loc-RIB, a peer's Adj-RIB-In/Out, the kernel FIB)
// as a table or JSON, following the API's cursor pages. It reads the API only; filters are the API's.

import { apiGet, apiTarget, type ApiTarget } from '../api/client.js'
import { parseFlags, renderTable } from './ipam.js'
import { withApi } from './node.js'
import { ROUTES_USAGE as USAGE } from './usage.js'

/** Rows asked per request; the API allows up to 5000. */
const PAGE = 1000

type Row = Record<string, unknown> & { prefix: string }

interface RoutesPage {
  table: string
  total: number
  nextCursor: string | null
  routes: Row[]
}

// eslint-disable-next-line @typescript-eslint/no-base-to-string -- a cell from one of a row's JSON scalars
const text = (v: unknown): string => (v === undefined || v === null ? '' : String(v))
const asPath = (a: Record<string, unknown> | undefined): string =>
  ((a?.['asPath'] as { type: string; asns: number[] }[] | undefined) ?? []).map((s) => (s.type === 'set' ? `{${s.asns.join(' ')}}` : s.asns.join(' '))).join(' ')
const hops = (r: Row): string => ((r['nextHop'] as unknown[] | undefined) ?? []).map((h) => (typeof h === 'string' ? h : text((h as { gateway?: string }).gateway) || 'direct')).join(',')

/** Columns per table: what an operator checks first (the BIRD `show route` essentials). */
export function routesTable(table: string, rows: readonly Row[]): string {
  const attrs = (r: Row) => r['attributes'] as Record<string, unknown> | undefined
  switch (table) {
    case 'loc-rib':
      return renderTable(['PREFIX', 'NEXT HOP', 'FROM', 'AS PATH', 'LOCAL PREF', 'WON ON'], rows.map((r) => [r.prefix, hops(r) || '-', text(r['source']), asPath(attrs(r)), text(attrs(r)?.['localPref']), text(r['reason'])]))
    case 'adj-rib-in':
      return renderTable(['PREFIX', 'NEXT HOP', 'AS PATH', 'LOCAL PREF', 'STALE'], rows.map((r) => [r.prefix, hops(r), asPath(attrs(r)), text(attrs(r)?.['localPref']), r['stale'] === true ? 'yes' : 'no']))
    case 'adj-rib-out':
      return renderTable(['PREFIX', 'NEXT HOP', 'AS PATH', 'LOCAL PREF'], rows.map((r) => [r.prefix, hops(r), asPath(attrs(r)), text(attrs(r)?.['localPref'])]))
    default: {
      const dev = (r: Row) => ((r['nextHop'] as { dev?: string }[] | undefined) ?? []).map((h) => text(h.dev)).filter((d) => d !== '').join(',')
      return renderTable(['PREFIX', 'TYPE', 'VIA', 'DEV', 'METRIC'], rows.map((r) => [r.prefix, text(r['type']), hops(r), dev(r), text(r['metric'])]))
    }
  }
}

async function fetchAll(target: ApiTarget, query: URLSearchParams, max: number): Promise<{ table: string; total: number; routes: Row[] }> {
  const routes: Row[] = []
  let cursor: string | null = null
  let table: string
  let total: number
  do {
    const q = new URLSearchParams(query)
    q.set('limit', String(Math.min(PAGE, max - routes.length)))
    if (cursor !== null) q.set('cursor', cursor)
    const page: RoutesPage = await apiGet<RoutesPage>(target, `/v1/routes?${q.toString()}`)
    table = page.table
    total = page.total
    routes.push(...page.routes)
    cursor = page.nextCursor
  } while (cursor !== null && routes.length < max)
  return { table, total, routes }
}

export async function routesCommand(args: readonly string[]): Promise<number> {
  if (args[0] === '-h' || args[0] === '--help') {
    process.stdout.write(USAGE)
    return 0
  }
  return withApi('routes', async () => {
    const { flags, rest } = parseFlags(args, ['--api', '--table', '--peer', '--prefix', '--max', '-o'])
    if (rest.length > 0) throw new Error(`unexpected argument ${JSON.stringify(rest[0])}\n${USAGE}`)
    for (const name of flags.keys()) {
      if (!['--api', '--table', '--peer', '--prefix', '--max', '-o'].includes(name)) throw new Error(`unknown option ${name}\n${USAGE}`)
    }
    const o = flags.get('-o') ?? 'table'
    if (o !== 'table' && o !== 'json') throw new Error(`-o ${o}: expected table or json`)
    const maxText = flags.get('--max')
    const max = maxText === undefined ? Infinity : Number(maxText)
    if (!(Number.isInteger(max) && max > 0) && max !== Infinity) throw new Error(`--max ${maxText}: expected a positive integer`)
    const query = new URLSearchParams()
    for (const name of ['table', 'peer', 'prefix']) {
      const v = flags.get(`--${name}`)
      if (v !== undefined) query.set(name, v)
    }
    const r = await fetchAll(apiTarget(flags.get('--api'), process.env), query, max)
    if (o === 'json') process.stdout.write(JSON.stringify(r, null, 2) + '\n')
    else process.stdout.write(`${r.table}: ${r.total} routes${r.routes.length < r.total ? `, ${r.routes.length} shown` : ''}\n${routesTable(r.table, r.routes)}`)
    return 0
  })
}
