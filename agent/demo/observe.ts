// What the demo and the end-to-end tests look at in a running DemoCluster: felix's kernel routes per node,
// BGP peers (from the node's REST API), convergence (every remote pod covered by a pinto route) and the
// pod-to-pod ping matrix. Reads only; it changes nothing in the cluster.

import { execa } from 'execa'
import { cidrContains, parseAddr, readCidr } from '../../net/index.js'
import { API_PORT, type DemoCluster, type DemoNode, type DemoPod } from './cluster.js'

export const ROUTE_PROTOCOL = 87

export interface KernelRouteRow {
  readonly prefix: string
  readonly type: string
  /** "via 192.0.2.12 dev eth0", "blackhole", or several next hops joined by ", ". */
  readonly via: string
}

interface IpRouteJson {
  dst: string
  type?: string
  gateway?: string
  dev?: string
  flags?: string[]
  nexthops?: { gateway?: string; dev?: string }[]
}

/** felix's routes (protocol 87) in a node's kernel. */
export async function kernelRoutes(ns: string, protocol = ROUTE_PROTOCOL): Promise<KernelRouteRow[]> {
  const r = await execa('ip', ['-n', ns, '-j', 'route', 'show', 'proto', String(protocol)])
  const rows = JSON.parse(String(r.stdout) || '[]') as IpRouteJson[]
  const hop = (h: { gateway?: string; dev?: string }): string => [h.gateway ? `via ${h.gateway}` : '', h.dev ? `dev ${h.dev}` : ''].filter(Boolean).join(' ')
  return rows.map((x) => ({
    prefix: x.dst.includes('/') ? x.dst : `${x.dst}/32`,
    type: x.type ?? 'unicast',
    via: x.type === 'blackhole' ? 'blackhole' : x.nexthops ? x.nexthops.map(hop).join(', ') : hop(x),
  }))
}

/** Is `address` inside a forwarding (not blackhole) route of `routes`? */
export function covered(routes: readonly KernelRouteRow[], address: string): boolean {
  const a = parseAddr(address)
  return routes.some((r) => r.type === 'unicast' && cidrContains(readCidr(r.prefix), a.family, a.value))
}

export interface PeerRow {
  readonly name: string
  readonly address: string
  readonly type: string
  readonly state: string
  readonly since: string
}

/** GET a path of the node's REST API from inside its namespace; undefined when it does not answer. */
export async function apiGet(n: DemoNode, path: string): Promise<unknown> {
  const r = await execa('ip', ['netns', 'exec', n.ns, 'curl', '-sf', '--max-time', '3', `http://127.0.0.1:${API_PORT}${path}`], { reject: false })
  if (r.exitCode !== 0) return undefined
  try {
    return JSON.parse(String(r.stdout)) as unknown
  } catch {
    return undefined
  }
}

/**
 * The node's BGP peers from GET /v1/peers. When the API does not answer, the TCP sessions on port 179
 * (from `ss`) stand in, marked as such, so the demo still shows who talks to whom.
 */
export async function peers(n: DemoNode): Promise<{ rows: PeerRow[]; source: 'api' | 'tcp' }> {
  const body = (await apiGet(n, '/v1/peers')) as { peers?: { name: string; address: string; type: string; state: string; since: string }[] } | undefined
  if (body?.peers) return { rows: body.peers.map((p) => ({ name: p.name, address: p.address, type: p.type, state: p.state, since: p.since })), source: 'api' }
  const r = await execa('ip', ['netns', 'exec', n.ns, 'ss', '-Htn', 'state', 'established', '( sport = :179 or dport = :179 )'], { reject: false })
  const rows: PeerRow[] = []
  for (const line of String(r.stdout).split('\n')) {
    const f = line.trim().split(/\s+/)
    const remote = f[3]
    if (remote === undefined) continue
    rows.push({ name: '-', address: remote.replace(/:\d+$/, '').replace(/^\[(?:::ffff:)?|\]$/g, ''), type: '-', state: 'TCP up', since: '-' })
  }
  return { rows, source: 'tcp' }
}

/** Every node that should know a pod's address (all but its own) has a route covering it. */
export async function missingRoutes(cluster: DemoCluster, extra: readonly string[] = []): Promise<string[]> {
  const missing: string[] = []
  for (const n of cluster.nodes) {
    if (!cluster.agentRunning(n)) continue
    const routes = await kernelRoutes(n.ns)
    for (const p of cluster.pods) if (p.node !== n.name && !covered(routes, p.address)) missing.push(`${n.name} has no route to ${p.name} (${p.address})`)
    for (const a of extra) if (!covered(routes, a)) missing.push(`${n.name} has no route to ${a}`)
  }
  return missing
}

/** Waits until missingRoutes() is empty; the error lists what is still missing. */
export async function waitConverged(cluster: DemoCluster, timeoutMs: number, extra: readonly string[] = []): Promise<number> {
  const start = Date.now()
  let missing: string[] = []
  while (Date.now() - start < timeoutMs) {
    missing = await missingRoutes(cluster, extra)
    if (missing.length === 0) return Date.now() - start
    await new Promise((r) => setTimeout(r, 200))
  }
  throw new Error(`not converged after ${timeoutMs} ms: ${missing.slice(0, 5).join('; ')}${missing.length > 5 ? ` (and ${missing.length - 5} more)` : ''}`)
}

/** One ping (three tries, each waiting 1 s) from one pod to another. */
export async function ping(from: DemoPod, to: string): Promise<boolean> {
  const r = await execa('ip', ['netns', 'exec', from.ns, 'ping', '-n', '-q', '-c', '3', '-i', '0.2', '-W', '1', '-w', '3', to], { reject: false })
  // -c 3 -w 3 keeps going until 3 replies or 3 s: any reply counts as reached.
  return /\b([1-9]\d*) (packets )?received/.test(String(r.stdout))
}

export type PingMatrix = Map<string, Map<string, boolean>>

/** Every pod pings every other pod, a few at a time (the machine is small). */
export async function pingMatrix(pods: readonly DemoPod[], parallel = 6): Promise<PingMatrix> {
  const jobs: [DemoPod, DemoPod][] = []
  for (const a of pods) for (const b of pods) if (a !== b) jobs.push([a, b])
  const out: PingMatrix = new Map(pods.map((p) => [p.name, new Map<string, boolean>()]))
  let next = 0
  const worker = async (): Promise<void> => {
    for (let i = next++; i < jobs.length; i = next++) {
      const [a, b] = jobs[i]!
      out.get(a.name)!.set(b.name, await ping(a, b.address))
    }
  }
  await Promise.all(Array.from({ length: Math.min(parallel, jobs.length) }, worker))
  return out
}

export function matrixFailures(m: PingMatrix): string[] {
  const bad: string[] = []
  for (const [from, row] of m) for (const [to, ok] of row) if (!ok) bad.push(`${from} -> ${to}`)
  return bad
}
