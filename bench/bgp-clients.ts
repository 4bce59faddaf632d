// bench/bgp-clients: many minimal iBGP clients in one process, for the reflection bench. Not a BGP
// speaker: no RIB, no policy; it frames with pinto's codec and only reads the NLRI of what it receives.
//   node dist/bench/bgp-clients.js '{"clients":5000,"from":0,"to":1250,"servers":["192.0.2.1"],"asn":64512,"spares":25}'
// Client i (of the plan in reflect-plan.ts) connects from its address (reflect-plan) to every server once
// "go" arrives on stdin, announces its blocks and borrowed /32s once Established, and keeps one bit per
// route per session. Events are JSON lines on stdout, times in ns of the monotonic clock (shared by
// every process): "complete" when every session here to a server holds every route, "sent"/"reached"
// for a change ({"cmd":"change",...} on stdin) once every session here holds or has lost the route.
// It offers route refresh, as the BIRD and pinto-node it stands for do (a reflector then keeps no copy of
// a client's routes as received for a soft reset); a ROUTE-REFRESH it is sent is ignored.

import { connect, type Socket } from 'node:net'
import { createInterface } from 'node:readline'
import { Afi, Framer, KEEPALIVE, Safi, codecOptions, decodeMessage, encodeMessage, ipv4Prefix, makeOpen, packUpdates, type Prefix, type UpdateBatch } from '../bgp/codec/index.js'
import { clientAddress, formatIpv4, makePlan, ownRoutes, routeIndexer, routePrefix } from './reflect-plan.js'

interface Args {
  readonly clients: number
  readonly from: number
  readonly to: number
  readonly servers: readonly string[]
  readonly asn: number
  readonly spares: number
  /** Sessions of this process in Connect/OpenSent at once: a reflector's accept queue is finite. */
  readonly connecting?: number
}

const args = JSON.parse(process.argv[2] ?? '{}') as Args
const plan = makePlan(args.clients, args.spares)
const indexOf = routeIndexer(plan)
const opts = codecOptions({ as4: true })
const say = (o: Record<string, unknown>): void => void process.stdout.write(JSON.stringify(o) + '\n')
const now = (): string => process.hrtime.bigint().toString()
const words = (plan.universe + 31) >>> 5

interface Session {
  readonly client: number
  readonly server: number
  readonly bits: Uint32Array
  /** Routes of the cold start held (spares not counted). */
  held: number
  socket: Socket | undefined
  established: boolean
}

const servers = args.servers.length
const sessions: Session[] = []
/** Per server: sessions here not yet holding every route. */
const incomplete = new Array<number>(servers).fill(0)
const updateBytes = new Array<number>(servers).fill(0)
const prefixesIn = new Array<number>(servers).fill(0)

function set(s: Session, r: number, on: boolean): void {
  const w = r >>> 5
  const m = 1 << (r & 31)
  const was = (s.bits[w]! & m) !== 0
  if (was === on) return
  s.bits[w] = on ? s.bits[w]! | m : s.bits[w]! & ~m
  if (r < plan.blocks || r >= plan.blocks + plan.spares) s.held += on ? 1 : -1
  if (watch !== undefined && watch.route === r && on === watch.present && s.client !== watch.owner) reached(s)
}

// ---- one change at a time: the route, what "reached" means, and who has yet to see it ----------
let watch: { id: number; route: number; owner: number; present: boolean; left: number[]; at: string[] } | undefined

function reached(s: Session): void {
  const w = watch!
  if (--w.left[s.server]! === 0) w.at[s.server] = now()
  if (w.left.every((n) => n === 0)) {
    say({ event: 'reached', id: w.id, at: w.at })
    watch = undefined
  }
}

function startWatch(id: number, route: number, present: boolean, owner: number): void {
  const left = new Array<number>(servers).fill(0)
  for (const s of sessions) {
    if (s.client === owner) continue
    const has = (s.bits[route >>> 5]! & (1 << (route & 31))) !== 0
    if (has !== present) left[s.server]!++
  }
  const at = left.map((n) => (n === 0 ? now() : ''))
  watch = { id, route, owner, present, left, at }
  if (left.every((n) => n === 0)) {
    say({ event: 'reached', id, at })
    watch = undefined
  }
}

function prefixOf(r: number): Prefix {
  const [a, l] = routePrefix(plan, r)
  return ipv4Prefix(a, l)
}

function announce(s: Session, routes: readonly number[], withdraw: boolean): void {
  const local = formatIpv4(clientAddress(s.client))
  const prefixes = routes.map(prefixOf)
  const batch: UpdateBatch = withdraw ? { afi: Afi.IPV4, withdraw: prefixes } : { afi: Afi.IPV4, attributes: { origin: 0 as const, asPath: [], nextHop: local, localPref: 100 }, announce: prefixes }
  for (const u of packUpdates(batch, opts)) s.socket?.write(u)
  for (const r of routes) set(s, r, !withdraw)
}

/** The NLRI fields of an UPDATE (IPv4 unicast only: the reflectors send nothing else here). */
function scan(s: Session, frame: Uint8Array): void {
  const wlen = (frame[19]! << 8) | frame[20]!
  let pos = 21
  pos = scanNlri(s, frame, pos, pos + wlen, false)
  const alen = (frame[pos]! << 8) | frame[pos + 1]!
  scanNlri(s, frame, pos + 2 + alen, frame.length, true)
}

function scanNlri(s: Session, frame: Uint8Array, pos: number, end: number, on: boolean): number {
  while (pos < end) {
    const len = frame[pos++]!
    let a = 0
    for (let k = 0; k < 4; k++) a = (a << 8) | (k < (len + 7) >>> 3 ? frame[pos + k]! : 0)
    pos += (len + 7) >>> 3
    prefixesIn[s.server]!++
    const r = indexOf(a >>> 0, len)
    if (r >= 0) set(s, r, on)
  }
  return pos
}

function checkComplete(s: Session, wasComplete: boolean): void {
  const complete = s.held >= plan.routes
  if (complete === wasComplete) return
  incomplete[s.server]! += complete ? -1 : 1
  if (complete && incomplete[s.server] === 0) say({ event: 'complete', server: s.server, at: now() })
}

// ---- sessions --------------------------------------------------------------------------------
const queue: Session[] = []
let connecting = 0
let up = 0
let retries = 0
const limit = args.connecting ?? 64

function open(s: Session): void {
  connecting++
  const local = formatIpv4(clientAddress(s.client))
  const socket = connect({ host: args.servers[s.server]!, port: 179, localAddress: local })
  s.socket = socket
  socket.setNoDelay(true)
  const framer = new Framer()
  socket.on('connect', () => {
    const open = makeOpen({ asn: args.asn, holdTime: 240, bgpId: local, capabilities: [{ kind: 'multiprotocol', afi: Afi.IPV4, safi: Safi.UNICAST }, { kind: 'route-refresh' }, { kind: 'four-octet-as', asn: args.asn }] })
    socket.write(encodeMessage(open, codecOptions()))
  })
  socket.on('data', (chunk: Buffer) => {
    const wasComplete = s.held >= plan.routes
    for (const frame of framer.push(chunk)) {
      const type = frame[18]
      if (type === 2) {
        updateBytes[s.server]! += frame.length
        scan(s, frame)
        continue
      }
      const msg = decodeMessage(frame, opts)
      if (msg.type === 'open') socket.write(encodeMessage(KEEPALIVE, opts))
      else if (msg.type === 'keepalive' && !s.established) {
        s.established = true
        if (++up === sessions.length) say({ event: 'up', at: now() })
        connecting--
        next()
        announce(s, ownRoutes(plan, s.client), false)
      } else if (msg.type === 'notification') {
        say({ event: 'notification', client: local, server: args.servers[s.server], code: msg.code, subcode: msg.subcode })
        process.exit(1)
      }
    }
    checkComplete(s, wasComplete)
  })
  let failed = false
  const fail = (message: string): void => {
    if (failed) return
    failed = true
    if (s.established) {
      say({ event: 'error', client: local, server: args.servers[s.server], message })
      process.exit(1)
    }
    // Not yet Established (a reflector still starting its protocols resets some): try again, as a
    // speaker's ConnectRetry timer would.
    retries++
    connecting--
    setTimeout(() => {
      queue.unshift(s)
      next()
    }, 1000)
  }
  socket.on('error', (e) => fail(e.message))
  socket.on('close', () => fail('connection closed'))
}

function next(): void {
  while (connecting < limit && queue.length > 0) open(queue.shift()!)
}

for (let i = args.from; i < args.to; i++) {
  for (let k = 0; k < servers; k++) {
    const s: Session = { client: i, server: k, bits: new Uint32Array(words), held: 0, socket: undefined, established: false }
    sessions.push(s)
    queue.push(s)
    incomplete[k]!++
  }
}

// RFC 4271 §4.4: a KEEPALIVE well inside the negotiated hold time (at most 240 s, the reflectors' may be less).
setInterval(() => {
  const ka = encodeMessage(KEEPALIVE, opts)
  for (const s of sessions) if (s.established) s.socket?.write(ka)
}, 10_000).unref()

const spareRoute = (spare: number): number => plan.blocks + spare

createInterface({ input: process.stdin }).on('line', (line) => {
  const cmd = JSON.parse(line) as { cmd: 'go' } | { cmd: 'change'; id: number; spare: number; owner: number; op: 'announce' | 'withdraw' } | { cmd: 'counters' }
  if (cmd.cmd === 'go') {
    say({ event: 'going', at: now() })
    next()
  } else if (cmd.cmd === 'counters') {
    say({ event: 'counters', updateBytes, prefixesIn, retries, established: sessions.filter((s) => s.established).length })
  } else if (cmd.cmd === 'change') {
    const r = spareRoute(cmd.spare)
    startWatch(cmd.id, r, cmd.op === 'announce', cmd.owner)
    if (cmd.owner >= args.from && cmd.owner < args.to) {
      const at = now()
      for (const s of sessions) if (s.client === cmd.owner) announce(s, [r], cmd.op === 'withdraw')
      say({ event: 'sent', id: cmd.id, at })
    }
  }
}).on('close', () => process.exit(0))
process.on('SIGTERM', () => process.exit(0))
say({ event: 'ready', sessions: sessions.length })
if (process.env['BENCH_PROGRESS'] !== undefined) setInterval(() => process.stderr.write(`up ${up} connecting ${connecting} queued ${queue.length}\n`), 1000).unref()
