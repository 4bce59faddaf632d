// Parsing what `ip` prints about routes: the JSON of `ip -N -json route show table T` (numeric protocol,
// type and table) and the text lines of `ip monitor route`. Pure; bad input raises RouteParseError naming
// the element and field (`[12].nexthops[0].gateway`).

import { type KernelRoute, type NextHop, type RouteType } from './kernel-route.js'
import { familyOfText, type Family } from '../net/index.js'

export class RouteParseError extends Error {
  constructor(
    readonly path: string,
    detail: string,
  ) {
    super(`ip route JSON ${path}: ${detail}`)
    this.name = 'RouteParseError'
  }
}

// RTN_* (linux/rtnetlink.h); with -N ip prints them as numbers, without it as these words.
const RTN: Record<string, RouteType> = {
  '1': 'unicast', unicast: 'unicast',
  '2': 'local', local: 'local',
  '3': 'broadcast', broadcast: 'broadcast',
  '6': 'blackhole', blackhole: 'blackhole',
  '7': 'unreachable', unreachable: 'unreachable',
  '8': 'prohibit', prohibit: 'prohibit',
  '9': 'throw', throw: 'throw',
}

// /etc/iproute2/rt_protos' reserved names, for output produced without -N (ip monitor).
const PROTO_NAMES: Record<string, number> = {
  unspec: 0, redirect: 1, kernel: 2, boot: 3, static: 4, gated: 8, ra: 9, mrt: 10, zebra: 11, bird: 12,
  dnrouted: 13, xorp: 14, ntk: 15, dhcp: 16, keepalived: 18, babel: 42, openr: 99, bgp: 186, isis: 187,
  ospf: 188, rip: 189, eigrp: 192,
}
const TABLE_NAMES: Record<string, number> = { default: 253, main: 254, local: 255 }

export function parseProtocol(v: string): number | undefined {
  if (/^\d+$/.test(v)) return Number(v)
  return PROTO_NAMES[v]
}

export function parseTable(v: string): number | undefined {
  if (/^\d+$/.test(v)) return Number(v)
  return TABLE_NAMES[v]
}

/** ip leaves the length off host routes and writes `default`; felix always keys by `addr/len`. */
export function canonicalDst(dst: string, family: Family): string {
  if (dst === 'default') return family === 4 ? '0.0.0.0/0' : '::/0'
  if (dst.includes('/')) return dst
  return `${dst}/${family === 4 ? 32 : 128}`
}

type Json = Record<string, unknown>

function str(o: Json, field: string, path: string): string | undefined {
  const v = o[field]
  if (v === undefined) return undefined
  if (typeof v !== 'string') throw new RouteParseError(`${path}.${field}`, `expected a string, got ${JSON.stringify(v)}`)
  return v
}

function viaHost(v: unknown, path: string): string | undefined {
  if (v === undefined) return undefined
  const host = typeof v === 'object' && v !== null ? (v as Json)['host'] : undefined
  if (typeof host !== 'string') throw new RouteParseError(path, `expected {family, host}, got ${JSON.stringify(v)}`)
  return host
}

function hopOf(o: Json, path: string): NextHop {
  const flags = o['flags']
  if (flags !== undefined && !Array.isArray(flags)) throw new RouteParseError(`${path}.flags`, 'expected an array')
  // A gateway of the other family (`via inet6 ...`: RTA_VIA) comes as an object.
  const gateway = str(o, 'gateway', path) ?? viaHost(o['via'], `${path}.via`)
  const dev = str(o, 'dev', path)
  const onlink = Array.isArray(flags) && flags.includes('onlink')
  // Plain literals rather than spreads: this runs for every route of a full table on each resync.
  if (gateway !== undefined && dev !== undefined) return { gateway, dev, onlink }
  if (dev !== undefined) return { dev, onlink }
  if (gateway !== undefined) return { gateway, onlink }
  return { onlink }
}

/**
 * Parses `ip -N -json [-4|-6] route show table T`. `table` is the table that was asked for (ip omits the
 * field for main); `family` decides what `default` means.
 */
export function parseRouteJson(text: string, family: Family, table: number): KernelRoute[] {
  let doc: unknown
  try {
    // An empty table prints nothing at all on some iproute2 versions.
    doc = text.trim() === '' ? [] : JSON.parse(text)
  } catch (err) {
    throw new RouteParseError('(document)', `not JSON: ${(err as Error).message}`)
  }
  if (!Array.isArray(doc)) throw new RouteParseError('(document)', 'expected an array of routes')
  const out: KernelRoute[] = new Array<KernelRoute>(doc.length)
  for (let i = 0; i < doc.length; i++) {
    const path = `[${i}]`
    const o = doc[i] as unknown
    if (typeof o !== 'object' || o === null || Array.isArray(o)) throw new RouteParseError(path, 'expected an object')
    const r = o as Json
    const dst = str(r, 'dst', path)
    if (dst === undefined) throw new RouteParseError(`${path}.dst`, 'missing')
    const typeText = str(r, 'type', path) ?? 'unicast'
    // ip leaves out the protocol of a route made without one (boot), and only that.
    const protoText = str(r, 'protocol', path) ?? '3'
    const protocol = parseProtocol(protoText)
    if (protocol === undefined) throw new RouteParseError(`${path}.protocol`, `unknown protocol ${JSON.stringify(protoText)} (run ip with -N)`)
    const tableText = str(r, 'table', path)
    const t = tableText === undefined ? table : parseTable(tableText)
    if (t === undefined) throw new RouteParseError(`${path}.table`, `unknown table ${JSON.stringify(tableText)}`)
    const metric = r['metric'] ?? 0
    if (typeof metric !== 'number') throw new RouteParseError(`${path}.metric`, `expected a number, got ${JSON.stringify(metric)}`)
    const tosRaw = r['tos'] ?? 0
    const tos = typeof tosRaw === 'number' ? tosRaw : Number(tosRaw)
    if (!Number.isInteger(tos)) throw new RouteParseError(`${path}.tos`, `not a number: ${JSON.stringify(tosRaw)}`)
    const type = RTN[typeText] ?? 'other'
    let nexthops: NextHop[]
    const hops = r['nexthops']
    if (hops !== undefined) {
      if (!Array.isArray(hops)) throw new RouteParseError(`${path}.nexthops`, 'expected an array')
      nexthops = hops.map((h, j) => {
        if (typeof h !== 'object' || h === null) throw new RouteParseError(`${path}.nexthops[${j}]`, 'expected an object')
        return hopOf(h as Json, `${path}.nexthops[${j}]`)
      })
    } else if (type === 'blackhole' || type === 'unreachable' || type === 'prohibit') {
      // IPv6 shows these on `lo`; that device is the kernel's, not part of the route's identity.
      nexthops = []
    } else {
      nexthops = [hopOf(r, path)]
    }
    const nhid = r['nhid']
    out[i] = { family, table: t, dst: canonicalDst(dst, family), tos, metric, type, protocol, nexthops, ...(typeof nhid === 'number' ? { nhid } : {}) }
  }
  return out
}

export interface MonitorEvent {
  readonly deleted: boolean
  readonly dst: string
  readonly table: number
  readonly protocol: number
  readonly metric: number | undefined
  readonly dev: string | undefined
  /** `unicast` unless the line starts with a type word. */
  readonly type: string
  /** The `via` address of a single-hop route (multipath hops come on continuation lines, not parsed). */
  readonly gateway: string | undefined
}

const TYPE_WORDS = new Set(['unicast', 'blackhole', 'unreachable', 'prohibit', 'local', 'broadcast', 'throw', 'multicast', 'anycast', 'nat'])

/**
 * The device of an `ip monitor link` line (`3: eth0@if2: <...>`, `Deleted 3: ...`) or of an address
 * deletion (`Deleted 2: eth0    inet 192.0.2.1/24 ...`): the events after which the kernel may have
 * dropped routes without a route notification. Undefined for anything else, address additions included.
 */
export function monitorDeviceEvent(line: string): string | undefined {
  // `\d+: ` then a name: no route line starts so (an IPv6 prefix has no space after its colons).
  const m = /^(Deleted )?\d+: ([^\s:@]+)(@[^\s:]+)?(:?)/.exec(line)
  if (m === null) return undefined
  const isLink = m[4] === ':'
  return isLink || m[1] !== undefined ? m[2] : undefined
}

/**
 * One hop of a multipath route from `ip monitor` (`\tnexthop via 192.0.2.12 dev eth0 weight 1 onlink`),
 * the continuation lines after its head line; undefined for any other line.
 */
export function parseMonitorHopLine(line: string): NextHop | undefined {
  const m = /^\s+nexthop\s+(?:via\s+(\S+)\s+)?dev\s+(\S+)/.exec(line)
  if (m === null) return undefined
  return { ...(m[1] !== undefined ? { gateway: m[1] } : {}), dev: m[2] as string, onlink: /\sonlink\b/.test(line) }
}

/** Whether an `ip monitor` line is a link or address event (head line) rather than a route. */
export function isDeviceLine(line: string): boolean {
  return /^(Deleted )?\d+: [^\s:@]+/.test(line)
}

/**
 * One `ip monitor route` line → the fields felix filters on, or undefined for continuation lines
 * (`\tnexthop ...`) and anything that is not a route. Family is taken from the address (`default` as v4).
 */
export function parseMonitorLine(line: string): MonitorEvent | undefined {
  if (line === '' || line.startsWith('\t') || line.startsWith(' ')) return undefined
  const words = line.trim().split(/\s+/)
  let i = 0
  const deleted = words[0] === 'Deleted'
  if (deleted) i++
  let type = 'unicast'
  if (TYPE_WORDS.has(words[i] ?? '')) type = words[i++] as string
  const rawDst = words[i++]
  if (rawDst === undefined || !/^(default|[0-9a-fA-F:.]+(\/\d+)?)$/.test(rawDst)) return undefined
  let table = 254
  let protocol = 0
  let metric: number | undefined
  let dev: string | undefined
  let gateway: string | undefined
  for (; i < words.length - 1; i++) {
    const w = words[i]
    const v = words[i + 1] ?? ''
    if (w === 'table') table = parseTable(v) ?? -1
    else if (w === 'proto') protocol = parseProtocol(v) ?? -1
    else if (w === 'metric') metric = Number(v)
    else if (w === 'dev') dev = v
    else if (w === 'via') gateway = v
    else continue
    i++
  }
  return { deleted, dst: canonicalDst(rawDst, familyOfText(rawDst)), table, protocol, metric, dev, type, gateway }
}
