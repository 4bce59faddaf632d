// Kernel nexthop objects (Linux 5.3+) for felix's routes: one object per distinct gateway hop and one group
// per distinct ECMP set, owned by felix's route protocol. A route that names an object (`nhid N`) spares the
// kernel its per-route gateway check, which is much of a large table's time. Pure: it keeps the
// id <-> hop mapping and plans `ip -batch` lines; the reconciler runs them and reads the kernel's objects.

import { hopArgs, hopText, type KernelRoute, type NextHop } from './kernel-route.js'
import { RouteParseError } from './route-parse.js'
import { familyOfText, type Family } from '../net/index.js'

export interface NexthopObject {
  readonly id: number
  readonly protocol: number
  /** A single hop (with a gateway) ... */
  readonly hop?: NextHop
  /** ... or a group of other objects' ids. */
  readonly group?: readonly number[]
}

type Json = Record<string, unknown>

/** `ip -json nexthop show` (any protocol) → the objects; bad input raises RouteParseError naming the element. */
export function parseNexthopJson(text: string): NexthopObject[] {
  let doc: unknown
  try {
    doc = JSON.parse(text.trim() === '' ? '[]' : text)
  } catch (err) {
    throw new RouteParseError('nexthops', `not JSON: ${(err as Error).message}`)
  }
  if (!Array.isArray(doc)) throw new RouteParseError('nexthops', 'expected an array')
  return doc.map((o: unknown, i): NexthopObject => {
    if (typeof o !== 'object' || o === null) throw new RouteParseError(`nexthops[${i}]`, 'expected an object')
    const j = o as Json
    const id = j['id']
    if (typeof id !== 'number' || !Number.isInteger(id) || id <= 0) throw new RouteParseError(`nexthops[${i}].id`, `expected a positive integer, got ${JSON.stringify(id)}`)
    const protocol = Number(j['protocol'] ?? 0)
    const group = j['group']
    if (Array.isArray(group)) return { id, protocol: Number.isInteger(protocol) ? protocol : -1, group: group.map((m) => Number((m as Json)['id'])) }
    const gateway = typeof j['gateway'] === 'string' ? j['gateway'] : undefined
    const dev = typeof j['dev'] === 'string' ? j['dev'] : undefined
    const onlink = Array.isArray(j['flags']) && (j['flags'] as unknown[]).includes('onlink')
    return { id, protocol: Number.isInteger(protocol) ? protocol : -1, hop: { ...(gateway !== undefined ? { gateway } : {}), ...(dev !== undefined ? { dev } : {}), onlink } }
  })
}

/** One `ip monitor nexthop` line → the id and what it says, or undefined for anything else. */
export function parseNexthopMonitorLine(line: string): { deleted: boolean; id: number; key: string | undefined } | undefined {
  const m = /^(Deleted )?id (\d+) (.*)$/.exec(line.trim())
  if (m === null) return undefined
  const rest = (m[3] ?? '').split(/\s+/)
  const at = (w: string): string | undefined => {
    const i = rest.indexOf(w)
    return i >= 0 ? rest[i + 1] : undefined
  }
  const group = at('group')
  let key: string | undefined
  if (group !== undefined) key = groupKey(group.split('/').map((x) => Number(x.split(',')[0])))
  else {
    const gateway = at('via')
    if (gateway !== undefined) key = hopKey(familyOfText(gateway), { gateway, ...(at('dev') !== undefined ? { dev: at('dev') } : {}), onlink: rest.includes('onlink') })
  }
  return { deleted: m[1] !== undefined, id: Number(m[2]), key }
}

function hopKey(family: Family, h: NextHop): string {
  return `${family}|${hopText(h)}`
}

function groupKey(ids: readonly number[]): string {
  return `g|${[...ids].sort((a, b) => a - b).join('/')}`
}

function hopLine(id: number, h: NextHop, protocol: number): string {
  return `nexthop replace id ${id}${hopArgs(h)} proto ${protocol}`
}

/** Where felix's ids start: above the small ids routing daemons count up from ("87" in the top byte's place). */
export const NEXTHOP_ID_BASE = 0x57000000

export class NexthopRegistry {
  private readonly byKey = new Map<string, number>()
  /** Felix's objects: id -> key. */
  private readonly ours = new Map<number, string>()
  /** Every id in the kernel, any owner, so a new id never takes another's. */
  private readonly taken = new Set<number>()
  /** Single-hop ids by the hop object itself: rendering shares hop objects between routes. */
  private byHop = new WeakMap<NextHop, number>()
  private next = NEXTHOP_ID_BASE

  constructor(private readonly protocol: number) {}

  get size(): number {
    return this.ours.size
  }

  has(id: number): boolean {
    return this.ours.has(id)
  }

  /** Whether a monitor event about `id` only repeats what the registry says (felix's own write). */
  isEcho(ev: { deleted: boolean; id: number; key: string | undefined }): boolean {
    const mine = this.ours.get(ev.id)
    if (ev.deleted) return mine === undefined
    return mine !== undefined && mine === ev.key
  }

  /** Starts again from the kernel's objects: felix's own (by protocol) are adopted, the rest only reserve their ids. */
  load(objects: readonly NexthopObject[]): void {
    this.byKey.clear()
    this.ours.clear()
    this.taken.clear()
    this.byHop = new WeakMap()
    for (const o of objects) {
      this.taken.add(o.id)
      if (o.protocol !== this.protocol) continue
      const key = o.group !== undefined ? groupKey(o.group) : o.hop?.gateway !== undefined ? hopKey(familyOfText(o.hop.gateway), o.hop) : undefined
      if (key === undefined || this.byKey.has(key)) {
        // Not one felix would make, or a duplicate: kept only until the unused sweep removes it.
        this.ours.set(o.id, `?${o.id}`)
        continue
      }
      this.byKey.set(key, o.id)
      this.ours.set(o.id, key)
    }
  }

  private allocate(key: string): number {
    while (this.taken.has(this.next)) this.next = this.next >= 0xffffffff ? NEXTHOP_ID_BASE : this.next + 1
    const id = this.next
    this.taken.add(id)
    this.byKey.set(key, id)
    this.ours.set(id, key)
    return id
  }

  private hopId(family: Family, h: NextHop, create: string[]): number {
    const seen = this.byHop.get(h)
    if (seen !== undefined && this.ours.has(seen)) return seen
    const key = hopKey(family, h)
    let id = this.byKey.get(key)
    if (id === undefined) {
      id = this.allocate(key)
      create.push(hopLine(id, h, this.protocol))
    }
    this.byHop.set(h, id)
    return id
  }

  /**
   * The object `r` goes through, adding the lines that create missing ones to `create` (members before
   * their group); undefined for a route without gateways (a blackhole, a device route), written without one.
   */
  idFor(r: KernelRoute, create: string[]): number | undefined {
    const hops = r.nexthops
    if (hops.length === 0 || r.type !== 'unicast') return undefined
    for (const h of hops) if (h.gateway === undefined) return undefined
    if (hops.length === 1) return this.hopId(r.family, hops[0] as NextHop, create)
    const members = hops.map((h) => this.hopId(r.family, h, create))
    const key = groupKey(members)
    let id = this.byKey.get(key)
    if (id === undefined) {
      id = this.allocate(key)
      // Members in the route's hop order (rendering sorts them by address), so the kernel lists them so too.
      create.push(`nexthop replace id ${id} group ${members.join('/')} proto ${this.protocol}`)
    }
    return id
  }

  /** The object `r` goes through now, without making one. */
  lookup(r: KernelRoute): number | undefined {
    const hops = r.nexthops
    if (hops.length === 0 || r.type !== 'unicast') return undefined
    const ids: number[] = []
    for (const h of hops) {
      if (h.gateway === undefined) return undefined
      const id = this.byHop.get(h) ?? this.byKey.get(hopKey(r.family, h))
      if (id === undefined || !this.ours.has(id)) return undefined
      ids.push(id)
    }
    return ids.length === 1 ? ids[0] : this.byKey.get(groupKey(ids))
  }

  /** Forgets an object whose creation failed (its routes are then written with their hops instead). */
  forget(id: number): void {
    const key = this.ours.get(id)
    if (key !== undefined && this.byKey.get(key) === id) this.byKey.delete(key)
    this.ours.delete(id)
  }

  /** `nexthop del` lines for felix's objects that no route in `inUse` names (groups first); forgets them. */
  sweep(inUse: ReadonlySet<number>): string[] {
    // A group in use keeps its members.
    const keep = new Set(inUse)
    for (const id of inUse) {
      const key = this.ours.get(id)
      if (key?.startsWith('g|')) for (const m of key.slice(2).split('/')) keep.add(Number(m))
    }
    const groups: string[] = []
    const singles: string[] = []
    for (const [id, key] of [...this.ours]) {
      if (keep.has(id)) continue
      ;(key.startsWith('g|') ? groups : singles).push(`nexthop del id ${id}`)
      this.forget(id)
      this.taken.delete(id)
    }
    return [...groups, ...singles]
  }
}
