// BIRD 2 as a test peer: renders bird.conf from a SpeakerSpec, starts `bird` inside a namespace with its own
// control socket and pid file, and reads state back through birdc. It never signals a BIRD it did not start.

import { writeFile } from 'node:fs/promises'
import { connect, type Socket } from 'node:net'
import { join } from 'node:path'
import { execa } from 'execa'
import type { Topology, NetNode } from './netns.js'
import { establishedWaiter, familyOf, localAddressFor, neighborOf, validateSpec, type Daemon, type Family, type OriginRoute, type RibRoute, type SpeakerSpec } from './daemons.js'
import { stopPid, waitPidFile } from './pid.js'
import { waitFor } from './wait.js'

function staticRoute(r: OriginRoute): string {
  const sets: string[] = []
  for (const c of r.communities ?? []) sets.push(`bgp_community.add((${c.replace(':', ',')}));`)
  for (const c of r.largeCommunities ?? []) sets.push(`bgp_large_community.add((${c.split(':').join(',')}));`)
  for (const c of r.routeTargets ?? []) sets.push(`bgp_ext_community.add((rt,${c.replace(':', ',')}));`)
  if (r.localPref !== undefined) sets.push(`bgp_local_pref = ${r.localPref};`)
  // prepend() puts each AS in front, so feed them last-first to keep the listed order.
  for (const as of [...(r.prepend ?? [])].reverse()) sets.push(`bgp_path.prepend(${as});`)
  return `  route ${r.prefix} blackhole${sets.length > 0 ? ` { ${sets.join(' ')} }` : ''};`
}

/**
 * BIRD drops a MED on eBGP export unless the export filter itself set it (attrs.c: only "fresh" MEDs pass),
 * so the originated MEDs are set here rather than on the static routes.
 */
function exportFilter(spec: SpeakerSpec, family: Family): string {
  const meds = (spec.originate ?? []).filter((r) => r.med !== undefined && familyOf(r.prefix) === family)
  if (meds.length === 0) return 'export all;'
  return `export filter { ${meds.map((r) => `if net = ${r.prefix} then bgp_med = ${r.med};`).join(' ')} accept; };`
}

/** bird.conf for a spec. Pure, so it can be checked without starting anything. */
/** BFD beside every BGP session (`protocol bfd` and `bfd on`), for the BFD tests. */
export interface BirdBfd {
  readonly intervalMs: number
  readonly multiplier: number
}

export function renderBirdConfig(spec: SpeakerSpec, node: NetNode, dir: string, bfd?: BirdBfd): string {
  validateSpec(spec)
  if ((spec.aggregates ?? []).length > 0) throw new Error('spec.aggregates: only the FRR launcher supports aggregates')
  if (spec.neighbors.some((n) => n.noCapabilities === true)) throw new Error('spec.neighbors[].noCapabilities: only the FRR launcher supports it')
  const lines = [`log "${join(dir, 'bird.log')}" all;`, `router id ${spec.routerId};`, 'protocol device { scan time 10; }']
  for (const family of ['ipv4', 'ipv6'] as const) {
    const routes = (spec.originate ?? []).filter((r) => familyOf(r.prefix) === family)
    if (routes.length === 0) continue
    lines.push(`protocol static s_${family} {`, `  ${family};`, ...routes.map(staticRoute), '}')
  }
  for (const n of spec.neighbors) {
    const ibgp = n.as === spec.as
    lines.push(`protocol bgp ${n.name} {`)
    lines.push(`  local ${localAddressFor(node, n)} as ${spec.as};`, `  neighbor ${n.address} as ${n.as};`)
    // iBGP on a shared subnet would otherwise be treated as multihop with recursive next hops.
    if (ibgp) lines.push('  direct;')
    // BIRD's default connect delay is 5 s; 1 s keeps sessions where BIRD initiates quick.
    lines.push('  connect delay time 1;')
    if (n.passive === true) lines.push('  passive on;')
    if (n.password !== undefined) lines.push(`  password "${n.password}";`)
    if (n.ttlSecurityHops !== undefined) lines.push('  ttl security on;', `  multihop ${n.ttlSecurityHops};`)
    // BFD Down is an error to BIRD: without a short error wait it stays Idle for a minute afterwards.
    if (bfd !== undefined) lines.push('  bfd on;', '  error wait time 1, 5;')
    if (spec.holdTime !== undefined) lines.push(`  hold time ${spec.holdTime};`)
    lines.push(`  graceful restart ${spec.gracefulRestart === true ? 'on' : 'off'};`)
    if (spec.as4 === false) lines.push('  enable as4 off;')
    if (spec.routeRefresh === false) lines.push('  enable route refresh off;')
    if (n.rrClient === true) lines.push('  rr client;', `  rr cluster id ${spec.clusterId ?? spec.routerId};`)
    for (const family of n.families) {
      const opts = ['import all;', exportFilter(spec, family)]
      if (spec.addPath === true) opts.push('add paths on;')
      lines.push(`  ${family} { ${opts.join(' ')} };`)
    }
    lines.push('}')
  }
  if (bfd !== undefined) {
    lines.push('protocol bfd {', `  interface "*" { min rx interval ${bfd.intervalMs} ms; min tx interval ${bfd.intervalMs} ms; multiplier ${bfd.multiplier}; };`, '}')
  }
  return lines.join('\n') + '\n'
}

/**
 * One connection to BIRD's control socket, kept open: a query costs a round trip on the socket instead of
 * a birdc process (several milliseconds), so a benchmark can poll BIRD as often as it polls pinto.
 * Replies are BIRD's CLI lines ("CODE-text", " text" continuations, a last "CODE text"); query() returns
 * their text, one line each, without the codes.
 */
export class BirdControl {
  private buf = ''
  private waiting: ((reply: string) => void) | undefined
  private failed: Error | undefined
  private lines: string[] = []

  private constructor(private readonly socket: Socket) {
    socket.setEncoding('utf8')
    socket.on('data', (chunk: string) => this.onData(chunk))
    socket.on('error', (err) => (this.failed = err))
  }

  static async open(path: string): Promise<BirdControl> {
    const socket = connect(path)
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve)
      socket.once('error', reject)
    })
    const c = new BirdControl(socket)
    // The greeting ("0001 BIRD 2.x ready.") is a reply of its own.
    await new Promise<string>((resolve) => (c.waiting = resolve))
    return c
  }

  private onData(chunk: string): void {
    this.buf += chunk
    for (let nl = this.buf.indexOf('\n'); nl >= 0; nl = this.buf.indexOf('\n')) {
      const line = this.buf.slice(0, nl)
      this.buf = this.buf.slice(nl + 1)
      const coded = /^(\d{4})([ -])(.*)$/.exec(line)
      this.lines.push(coded === null ? line.slice(1) : coded[3]!)
      if (coded !== null && coded[2] === ' ') {
        const reply = this.lines.join('\n')
        this.lines = []
        const w = this.waiting
        this.waiting = undefined
        w?.(reply)
      }
    }
  }

  query(command: string): Promise<string> {
    if (this.failed !== undefined) return Promise.reject(this.failed)
    if (this.waiting !== undefined) return Promise.reject(new Error('BirdControl: one query at a time'))
    return new Promise((resolve) => {
      this.waiting = resolve
      this.socket.write(command + '\n')
    })
  }

  close(): void {
    this.socket.destroy()
  }
}

export interface BirdDaemon extends Daemon {
  readonly kind: 'bird'
  readonly socket: string
  /** Runs one birdc command and returns its output. */
  birdc(...args: string[]): Promise<string>
}

export async function startBird(topo: Topology, node: NetNode, spec: SpeakerSpec, opts: { timeoutMs?: number; bfd?: BirdBfd } = {}): Promise<BirdDaemon> {
  const dir = await topo.tempDir('bird')
  const conf = join(dir, 'bird.conf')
  const socket = join(dir, 'bird.ctl')
  const pidFile = join(dir, 'bird.pid')
  await writeFile(conf, renderBirdConfig(spec, node, dir, opts.bfd))
  await topo.exec(node.ns, 'bird', ['-c', conf, '-s', socket, '-P', pidFile])
  const pid = await waitPidFile(pidFile, opts.timeoutMs ?? 5000)
  topo.trackPid(pid)

  const birdc = async (...args: string[]): Promise<string> => (await execa('birdc', ['-s', socket, ...args])).stdout
  await waitFor(async () => (await birdc('show', 'status')).includes('Daemon is up'), { timeoutMs: 5000, what: 'BIRD control socket' })

  const sessionState = async (address: string): Promise<string> => {
    const n = neighborOf(spec, address)
    const out = await birdc('show', 'protocols', n.name)
    // name proto table state since info: the BGP state is the first word of "info".
    const row = out.split('\n').find((l) => l.startsWith(`${n.name} `))
    return row?.trim().split(/\s+/)[5] ?? 'unknown'
  }

  return {
    kind: 'bird',
    node,
    spec,
    dir,
    pid,
    socket,
    birdc,
    sessionState,
    waitEstablished: establishedWaiter(`BIRD in ${node.name}`, sessionState),
    async routes(family: Family) {
      const table = family === 'ipv4' ? 'master4' : 'master6'
      return parseBirdRoutes(await birdc('show', 'route', 'table', table, 'all'), spec)
    },
    stop: () => stopPid(pid),
  }
}

/** Parses `birdc show route all` text. Routes from static protocols are local (fromPeer undefined). */
export function parseBirdRoutes(text: string, spec: SpeakerSpec): RibRoute[] {
  const out: RibRoute[] = []
  let prefix = ''
  let cur: { -readonly [K in keyof RibRoute]: RibRoute[K] } | undefined
  const flush = (): void => {
    if (cur !== undefined) out.push(cur)
    cur = undefined
  }
  for (const raw of text.split('\n')) {
    // "198.18.1.0/24  unicast [frr 10:00:00.000] * (100) [AS65002i]" (continuation rows start with spaces)
    const head = /^(\S+)?\s+\w+ \[(\S+) [^\]]*\]/.exec(raw)
    if (head !== null && !raw.startsWith('\t')) {
      flush()
      if (head[1] !== undefined) prefix = head[1]
      const proto = head[2] ?? ''
      const peer = spec.neighbors.find((n) => n.name === proto)
      cur = { prefix, fromPeer: peer?.address, nextHop: undefined, asPath: [], communities: [], largeCommunities: [], med: undefined, localPref: undefined }
      continue
    }
    const attr = /^\s+BGP\.(\w+): ?(.*)$/.exec(raw)
    if (cur === undefined || attr === null) continue
    const [, key, value = ''] = attr
    if (key === 'as_path') cur.asPath = value.split(/\s+/).filter((x) => /^\d+$/.test(x)).map(Number)
    else if (key === 'next_hop') cur.nextHop = value.split(/\s+/)[0]
    else if (key === 'med') cur.med = Number(value)
    else if (key === 'local_pref') cur.localPref = Number(value)
    else if (key === 'community') cur.communities = [...value.matchAll(/\((\d+),\s*(\d+)\)/g)].map((m) => `${m[1]}:${m[2]}`)
    else if (key === 'large_community') cur.largeCommunities = [...value.matchAll(/\((\d+),\s*(\d+),\s*(\d+)\)/g)].map((m) => `${m[1]}:${m[2]}:${m[3]}`)
  }
  flush()
  return out
}
