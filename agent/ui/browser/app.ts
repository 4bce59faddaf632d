// The status page's browser code: polls this node's REST API every two seconds and renders the header,
// sessions, topology, session events, IPAM blocks and felix's kernel routes. Reads only (GETs); layout
// and wording come from the pure modules beside it (../topology.ts, ../format.ts).

import { clockTime, formatDuration, formatNextHops, since, stateTone, usePercent, type RouteNextHop } from '../format.js'
import { layoutTopology, type TopologyPeer } from '../topology.js'
import { byId, h, s } from './dom.js'

const POLL_MS = 2000
const ROUTES_PAGE = 50

interface Status {
  node: string
  asn: number
  routerId: string
  uptimeSeconds: number
  peers: { configured: number; established: number }
  routes: { locRib: number; fib: number | null }
  ipam: { blocks: number; localBlocks: number; addressesInUse: number; pools: number } | null
  datastore?: { state: 'up' | 'down'; since: string; cause?: string }
}
interface Peer extends TopologyPeer {
  since: string
  reason: string
  lastError: string | null
  prefixes: { received: number; accepted: number; advertised: number }
}
interface Event {
  seq: number
  at: string
  peer: string
  from: string
  to: string
  event: string
  reason: string
}
interface Block {
  cidr: string
  node: string | null
  pool: string | null
  size: number
  inUse: number
}
interface Route {
  prefix: string
  type: string
  nextHop: RouteNextHop[]
}
interface RoutesPage {
  total: number
  nextCursor: string | null
  routes: Route[]
}
class HttpError extends Error {}

async function get<T>(path: string): Promise<T> {
  const r = await fetch(path, { headers: { accept: 'application/json' }, cache: 'no-store' })
  const body = (await r.json().catch(() => undefined)) as { error?: { message?: string } } | undefined
  if (!r.ok) throw new HttpError(body?.error?.message ?? `${path}: HTTP ${r.status}`)
  return body as T
}

function shell(): void {
  byId('app').replaceChildren(
    h('header', { class: 'top' },
      h('div', { class: 'brand' }, 'pinto-node'),
      h('h1', { id: 'node-name' }, '…'),
      h('dl', { class: 'facts', id: 'facts' }),
      h('div', { id: 'live', class: 'live' }, 'connecting…'),
    ),
    h('main', {},
      h('section', { class: 'cards', id: 'cards' }),
      h('section', { class: 'panel' }, h('h2', {}, 'BGP sessions'), h('div', { class: 'scroll' }, h('table', { id: 'sessions' }))),
      h('div', { class: 'two' },
        h('section', { class: 'panel' }, h('h2', {}, 'Topology'), h('div', { id: 'topology', class: 'topology' })),
        h('section', { class: 'panel' }, h('h2', {}, 'Recent session events'), h('ol', { id: 'events', class: 'events' })),
      ),
      h('section', { class: 'panel' }, h('h2', {}, 'IPAM blocks'), h('div', { class: 'scroll' }, h('table', { id: 'blocks' }))),
      h('section', { class: 'panel' },
        h('h2', {}, 'Kernel routes (felix)'),
        h('form', { id: 'route-search', class: 'search' },
          h('input', { id: 'route-prefix', type: 'search', placeholder: 'prefix, e.g. 198.18.0.0/16', spellcheck: 'false', autocomplete: 'off' }),
          h('button', { type: 'submit' }, 'Search'),
          h('span', { id: 'route-summary', class: 'muted' }),
        ),
        h('div', { class: 'scroll' }, h('table', { id: 'routes' })),
        h('button', { id: 'routes-more', class: 'more', type: 'button', hidden: true }, 'More'),
      ),
    ),
  )
}

const pill = (state: string): HTMLElement => h('span', { class: `pill ${stateTone(state)}` }, state)
const head = (...cols: string[]): HTMLElement => h('thead', {}, h('tr', {}, ...cols.map((c) => h('th', {}, c))))

function renderHeader(st: Status): void {
  document.title = `${st.node} · pinto-node`
  byId('node-name').textContent = st.node
  const fact = (k: string, v: string, id: string): HTMLElement[] => [h('dt', {}, k), h('dd', { id }, v)]
  const ds = st.datastore
  byId('facts').replaceChildren(
    ...fact('AS', String(st.asn), 'fact-asn'),
    ...fact('router id', st.routerId, 'fact-router-id'),
    ...fact('uptime', formatDuration(st.uptimeSeconds), 'fact-uptime'),
    ...(ds !== undefined ? fact('datastore', ds.state === 'up' ? 'up' : `down: ${ds.cause ?? ''}`, 'fact-datastore') : []),
  )
  if (ds?.state === 'down') byId('fact-datastore').classList.add('bad')
}

function renderCards(st: Status): void {
  const card = (id: string, label: string, value: string, tone = ''): HTMLElement => h('div', { class: `card ${tone}`, id }, h('div', { class: 'value' }, value), h('div', { class: 'label' }, label))
  const p = st.peers
  byId('cards').replaceChildren(
    card('card-sessions', 'sessions established', `${p.established}/${p.configured}`, p.established === p.configured ? 'good' : 'bad'),
    card('card-loc-rib', 'Loc-RIB prefixes', String(st.routes.locRib)),
    card('card-fib', 'kernel routes', st.routes.fib === null ? 'off' : String(st.routes.fib)),
    card('card-ipam', 'pod addresses in use', st.ipam === null ? '—' : String(st.ipam.addressesInUse), st.ipam === null ? 'bad' : ''),
    card('card-blocks', 'blocks (this node / all)', st.ipam === null ? '—' : `${st.ipam.localBlocks}/${st.ipam.blocks}`),
  )
}

function renderSessions(peers: readonly Peer[], now: number): void {
  const rows = peers.map((p) =>
    h('tr', { 'data-peer': p.name, class: stateTone(p.state) },
      h('td', {}, h('strong', {}, p.name)),
      h('td', { class: 'mono' }, p.address),
      h('td', {}, p.type, h('span', { class: 'muted' }, ` · ${p.session} AS ${p.peerAsn}`)),
      h('td', { class: 'state' }, pill(p.state)),
      h('td', { class: 'num', title: p.since }, since(p.since, now)),
      h('td', { class: 'num' }, p.prefixes.received),
      h('td', { class: 'num' }, p.prefixes.accepted),
      h('td', { class: 'num' }, p.prefixes.advertised),
      h('td', { class: 'error' }, p.lastError ?? ''),
    ),
  )
  const empty = peers.length === 0 ? [h('tr', {}, h('td', { colspan: 9, class: 'muted' }, 'no peers configured'))] : []
  byId('sessions').replaceChildren(head('peer', 'address', 'type', 'state', 'for', 'received', 'accepted', 'advertised', 'last error'), h('tbody', {}, ...rows, ...empty))
}

function renderTopology(st: Status, peers: readonly Peer[], blocks: readonly Block[]): void {
  const nodes = blocks.map((b) => b.node).filter((n): n is string => n !== null)
  const lay = layoutTopology({ self: { name: st.node, asn: st.asn, routerId: st.routerId }, peers, nodes })
  const at = new Map(lay.nodes.map((n) => [n.id, n]))
  // Drawn at a fixed scale (shrunk to fit, never blown up), so labels stay near the size of the page's text.
  const svg = s('svg', { viewBox: `0 0 ${lay.width} ${lay.height}`, width: Math.round(lay.width * 1.3), height: Math.round(lay.height * 1.3), role: 'img', 'aria-label': 'BGP topology' })
  for (const e of lay.edges) {
    const a = at.get(e.from)
    const b = at.get(e.to)
    if (a === undefined || b === undefined) continue
    svg.append(s('line', { x1: a.x, y1: a.y, x2: b.x, y2: b.y, class: `edge ${e.state === undefined ? 'inferred' : stateTone(e.state)}` }, s('title', {}, e.state ?? 'through the reflectors')))
  }
  for (const n of lay.nodes) {
    const tone = n.role === 'self' ? 'self' : n.state === undefined ? 'unknown' : stateTone(n.state)
    svg.append(
      s('g', { class: `box ${n.role} ${tone}`, transform: `translate(${n.x} ${n.y})`, 'data-node': n.label },
        s('rect', { x: -64, y: -22, width: 128, height: 44, rx: 8 }),
        s('text', { y: -3, class: 'label' }, n.label),
        s('text', { y: 13, class: 'detail' }, n.detail.length > 24 ? `${n.detail.slice(0, 23)}…` : n.detail),
        s('title', {}, `${n.label}\n${n.detail}${n.state !== undefined ? `\n${n.state}` : ''}`),
      ),
    )
  }
  for (const r of lay.rows) svg.append(s('text', { x: 6, y: r.y - 28, class: 'row-label' }, r.label))
  byId('topology').replaceChildren(svg)
}

function renderEvents(events: readonly Event[]): void {
  const items = events.map((e) =>
    h('li', { class: stateTone(e.to) },
      h('time', { datetime: e.at }, clockTime(e.at)),
      h('span', { class: 'peer' }, e.peer),
      h('span', { class: 'move' }, e.from, ' → ', pill(e.to)),
      h('span', { class: 'reason' }, e.reason, h('span', { class: 'muted' }, ` (${e.event})`)),
    ),
  )
  byId('events').replaceChildren(...(items.length > 0 ? items : [h('li', { class: 'muted' }, 'no transitions yet')]))
}

/** `unavailable`: why the blocks could not be read (the datastore may be away); the table says so instead of "no blocks". */
function renderBlocks(blocks: readonly Block[], self: string, unavailable: string | undefined): void {
  const rows = blocks.map((b) => {
    const pct = usePercent(b.inUse, b.size)
    return h('tr', { class: b.node === self ? 'mine' : '' },
      h('td', { class: 'mono' }, b.cidr),
      h('td', {}, b.node ?? '—', b.node === self ? h('span', { class: 'tag' }, 'this node') : null),
      h('td', {}, b.pool ?? '—'),
      h('td', { class: 'num' }, `${b.inUse} / ${b.size}`),
      h('td', { class: 'use' }, s('svg', { viewBox: '0 0 100 8', preserveAspectRatio: 'none', class: 'bar' }, s('rect', { width: 100, height: 8, class: 'track' }), s('rect', { width: Math.max(pct, b.inUse > 0 ? 1 : 0), height: 8, class: 'fill' }))),
    )
  })
  byId('blocks').replaceChildren(head('block', 'node', 'pool', 'in use', ''), h('tbody', {}, ...rows, ...(rows.length === 0 ? [h('tr', {}, h('td', { colspan: 5, class: unavailable !== undefined ? 'bad' : 'muted' }, unavailable ?? 'no blocks'))] : [])))
}

/** The routes table: the first page refreshes with each poll until the reader pages on with More. */
const routes = { query: '', rows: [] as Route[], next: null as string | null, total: 0, paged: false, error: '' }

async function loadRoutes(more: boolean): Promise<void> {
  const q = new URLSearchParams({ table: 'fib', limit: String(ROUTES_PAGE) })
  if (routes.query !== '') q.set('prefix', routes.query)
  if (more && routes.next !== null) q.set('cursor', routes.next)
  try {
    const page = await get<RoutesPage>(`/v1/routes?${q}`)
    routes.rows = more ? [...routes.rows, ...page.routes] : page.routes
    routes.next = page.nextCursor
    routes.total = page.total
    routes.paged = more
    routes.error = ''
  } catch (err) {
    if (!(err instanceof HttpError)) throw err
    routes.rows = []
    routes.next = null
    routes.total = 0
    routes.error = err.message
  }
  renderRoutes()
}

function renderRoutes(): void {
  const rows = routes.rows.map((r) => h('tr', {}, h('td', { class: 'mono' }, r.prefix), h('td', {}, r.type), h('td', { class: 'mono' }, formatNextHops(r.nextHop))))
  byId('routes').replaceChildren(head('prefix', 'type', 'next hop'), h('tbody', {}, ...rows))
  const summary = byId('route-summary')
  summary.textContent = routes.error !== '' ? routes.error : `${routes.rows.length} of ${routes.total}${routes.query !== '' ? ` inside ${routes.query}` : ''}`
  summary.classList.toggle('bad', routes.error !== '')
  byId('routes-more').hidden = routes.next === null
}

let lastOk = 0

async function poll(): Promise<void> {
  const now = Date.now()
  const [st, peers, events, blocks] = await Promise.allSettled([
    get<Status>('/v1/status'),
    get<{ peers: Peer[] }>('/v1/peers'),
    get<{ events: Event[] }>('/v1/events?limit=50'),
    get<{ blocks: Block[] }>('/v1/ipam/blocks'),
  ])
  const live = byId('live')
  if (st.status === 'rejected' || peers.status === 'rejected') {
    live.className = 'live bad'
    live.textContent = lastOk === 0 ? 'the agent does not answer' : `no answer since ${clockTime(new Date(lastOk).toISOString())}`
    return
  }
  lastOk = now
  live.className = 'live ok'
  live.textContent = `live · ${clockTime(new Date(now).toISOString())} UTC`
  const blockRows = blocks.status === 'fulfilled' ? blocks.value.blocks : []
  renderHeader(st.value)
  renderCards(st.value)
  renderSessions(peers.value.peers, now)
  renderTopology(st.value, peers.value.peers, blockRows)
  renderEvents(events.status === 'fulfilled' ? events.value.events : [])
  renderBlocks(blockRows, st.value.node, blocks.status === 'rejected' ? `IPAM blocks unavailable: ${(blocks.reason as Error).message}` : undefined)
  if (!routes.paged) await loadRoutes(false)
  document.body.dataset['updated'] = String(now)
}

function start(): void {
  shell()
  byId('route-search').addEventListener('submit', (e) => {
    e.preventDefault()
    routes.query = byId<HTMLInputElement>('route-prefix').value.trim()
    void loadRoutes(false)
  })
  byId('routes-more').addEventListener('click', () => void loadRoutes(true))
  const loop = async (): Promise<void> => {
    try {
      await poll()
    } catch (err) {
      byId('live').className = 'live bad'
      byId('live').textContent = `error: ${(err as Error).message}`
    }
    setTimeout(() => void loop(), POLL_MS)
  }
  void loop()
}

start()
