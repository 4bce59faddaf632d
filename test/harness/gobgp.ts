// GoBGP as a test peer: renders gobgpd.toml from a SpeakerSpec, runs gobgpd in a namespace with its gRPC API
// on a unix socket in its own dir (no TCP port to collide on), originates routes through the gobgp CLI.

import { writeFile } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { execa } from 'execa'
import type { Topology, NetNode } from './netns.js'
import { establishedWaiter, familyOf, localAddressFor, neighborOf, validateSpec, type Daemon, type Family, type OriginRoute, type RibRoute, type SpeakerSpec } from './daemons.js'
import { stopPid } from './pid.js'
import { waitFor } from './wait.js'

/** gobgpd.toml for a spec. Pure. Originated routes are not in the file: GoBGP has no static routes there. */
export function renderGobgpConfig(spec: SpeakerSpec, node: NetNode): string {
  validateSpec(spec)
  if (spec.routeRefresh === false) throw new Error('spec.routeRefresh: only the BIRD launcher turns route refresh off')
  if ((spec.aggregates ?? []).length > 0) throw new Error('spec.aggregates: only the FRR launcher supports aggregates')
  if (spec.neighbors.some((n) => n.noCapabilities === true)) throw new Error('spec.neighbors[].noCapabilities: only the FRR launcher supports it')
  const locals = [node.v4, node.v6].filter((a): a is string => a !== undefined)
  const l = ['[global.config]', `  as = ${spec.as}`, `  router-id = "${spec.routerId}"`, '  port = 179', `  local-address-list = [${locals.map((a) => `"${a}"`).join(', ')}]`, '']
  for (const n of spec.neighbors) {
    l.push('[[neighbors]]', '  [neighbors.config]', `    neighbor-address = "${n.address}"`, `    peer-as = ${n.as}`)
    l.push('  [neighbors.transport.config]', `    local-address = "${localAddressFor(node, n)}"`)
    if (n.passive === true) l.push('    passive-mode = true')
    // connect-retry 1 s: GoBGP otherwise waits up to its default retry before the first attempt.
    l.push('  [neighbors.timers.config]', '    connect-retry = 1')
    if (spec.holdTime !== undefined) l.push(`    hold-time = ${spec.holdTime}`, `    keepalive-interval = ${Math.max(1, Math.floor(spec.holdTime / 3))}`)
    if (spec.gracefulRestart === true) l.push('  [neighbors.graceful-restart.config]', '    enabled = true', '    restart-time = 120')
    if (n.rrClient === true) {
      l.push('  [neighbors.route-reflector.config]', '    route-reflector-client = true', `    route-reflector-cluster-id = "${spec.clusterId ?? spec.routerId}"`)
    }
    for (const family of n.families) {
      l.push('  [[neighbors.afi-safis]]', '    [neighbors.afi-safis.config]', `      afi-safi-name = "${family}-unicast"`)
      if (spec.gracefulRestart === true) l.push('    [neighbors.afi-safis.mp-graceful-restart.config]', '      enabled = true')
      if (spec.addPath === true) l.push('    [neighbors.afi-safis.add-paths.config]', '      receive = true', '      send-max = 8')
    }
    l.push('')
  }
  return l.join('\n')
}

/** The `gobgp global rib add` arguments for one route. */
export function gobgpAddArgs(r: OriginRoute, node: NetNode): string[] {
  const family = familyOf(r.prefix)
  const nh = r.nextHop ?? (family === 'ipv4' ? node.v4 : node.v6)
  if (nh === undefined) throw new Error(`originate ${r.prefix}: no next hop and node ${node.name} has no ${family} address`)
  const args = ['global', 'rib', 'add', '-a', family, r.prefix, 'origin', 'igp', 'nexthop', nh]
  if ((r.prepend ?? []).length > 0) args.push('aspath', (r.prepend ?? []).join(' '))
  if (r.med !== undefined) args.push('med', String(r.med))
  if (r.localPref !== undefined) args.push('local-pref', String(r.localPref))
  if ((r.communities ?? []).length > 0) args.push('community', (r.communities ?? []).join(','))
  if ((r.largeCommunities ?? []).length > 0) args.push('large-community', (r.largeCommunities ?? []).join(','))
  if ((r.routeTargets ?? []).length > 0) args.push('rt', ...(r.routeTargets ?? []))
  return args
}

export interface GobgpDaemon extends Daemon {
  readonly kind: 'gobgp'
  readonly socket: string
  /** Runs the gobgp CLI against this daemon and returns stdout. */
  gobgp(...args: string[]): Promise<string>
}

interface GobgpNeighbor {
  state?: { session_state?: number | string; neighbor_address?: string }
  conf?: { neighbor_address?: string }
}

// gRPC SessionState enum: 1 IDLE .. 6 ESTABLISHED
const SESSION = ['unknown', 'Idle', 'Connect', 'Active', 'OpenSent', 'OpenConfirm', 'Established']

export async function startGobgp(topo: Topology, node: NetNode, spec: SpeakerSpec, opts: { timeoutMs?: number } = {}): Promise<GobgpDaemon> {
  const dir = await topo.tempDir('gobgp')
  const conf = join(dir, 'gobgpd.toml')
  const socket = join(dir, 'gobgp.sock')
  await writeFile(conf, renderGobgpConfig(spec, node))
  const child = topo.spawn(node.ns, 'gobgpd', ['-f', conf, '--api-hosts', `unix://${socket}`, '--pprof-disable', '-p', '-l', 'info'], {
    stdout: { file: join(dir, 'gobgpd.log') },
    stderr: { file: join(dir, 'gobgpd.err') },
  })
  const pid = child.pid
  if (pid === undefined) throw new Error(`gobgpd in ${node.name} did not start`)
  await waitFor(() => existsSync(socket) || child.exitCode !== null, { timeoutMs: opts.timeoutMs ?? 5000, what: 'gobgpd API socket' })
  if (child.exitCode !== null) throw new Error(`gobgpd in ${node.name} exited with ${child.exitCode}; see ${dir}/gobgpd.err`)

  const gobgp = async (...args: string[]): Promise<string> => (await execa('gobgp', ['--target', `unix://${socket}`, ...args])).stdout
  await waitFor(async () => (await gobgp('global')).includes(spec.routerId), { timeoutMs: 5000, what: 'gobgpd API answering' })
  for (const r of spec.originate ?? []) await gobgp(...gobgpAddArgs(r, node))

  const sessionState = async (address: string): Promise<string> => {
    neighborOf(spec, address)
    const n = JSON.parse(await gobgp('neighbor', address, '-j')) as GobgpNeighbor
    const s = n.state?.session_state
    return typeof s === 'number' ? (SESSION[s] ?? String(s)) : String(s ?? 'unknown')
  }

  return {
    kind: 'gobgp',
    node,
    spec,
    dir,
    pid,
    socket,
    gobgp,
    sessionState,
    waitEstablished: establishedWaiter(`GoBGP in ${node.name}`, sessionState),
    async routes(family: Family) {
      return parseGobgpRoutes(await gobgp('global', 'rib', '-a', family, '-j'))
    },
    stop: () => stopPid(pid),
  }
}

interface GobgpAttr {
  type?: number
  value?: unknown
  nexthop?: string
  metric?: number
  as_paths?: { asns?: number[] }[]
  communities?: number[]
}

interface GobgpPath {
  attrs?: GobgpAttr[]
  'neighbor-ip'?: string
  'source-id'?: string
}

/** Parses `gobgp global rib -a FAMILY -j`: an object keyed by prefix, each an array of paths. */
export function parseGobgpRoutes(json: string): RibRoute[] {
  const doc = (json.trim() === '' ? {} : JSON.parse(json)) as Record<string, GobgpPath[]>
  const out: RibRoute[] = []
  for (const [prefix, paths] of Object.entries(doc)) {
    for (const p of paths) {
      const attrs = p.attrs ?? []
      const byType = (t: number): GobgpAttr | undefined => attrs.find((a) => a.type === t)
      const mpReach = byType(14)
      const large = byType(32)?.value
      const peer = p['neighbor-ip']
      out.push({
        prefix,
        fromPeer: peer === undefined || peer === '<nil>' || peer === '0.0.0.0' || peer === '::' ? undefined : peer,
        nextHop: byType(3)?.nexthop ?? mpReach?.nexthop,
        asPath: (byType(2)?.as_paths ?? []).flatMap((s) => s.asns ?? []),
        communities: (byType(8)?.communities ?? []).map((c) => `${c >>> 16}:${c & 0xffff}`),
        largeCommunities: Array.isArray(large)
          ? large.map((x: { ASN?: number; LocalData1?: number; LocalData2?: number }) => `${x.ASN}:${x.LocalData1}:${x.LocalData2}`)
          : [],
        med: byType(4)?.metric,
        localPref: typeof byType(5)?.value === 'number' ? (byType(5)?.value as number) : undefined,
      })
    }
  }
  return out
}
