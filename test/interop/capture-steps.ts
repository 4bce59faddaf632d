// Building blocks of the captured scenarios: what a recorded side and session look like, and the waits a
// scenario uses (on daemon state or on the live capture itself), so no scenario ever sleeps a fixed time.

import type { NetNode, Topology } from '../harness/netns.js'
import type { Capture } from '../harness/tcpdump.js'
import { connectionBetween, sentBy } from '../harness/pcap.js'
import { splitMessages } from '../harness/bgp-hex.js'
import type { Daemon, Family, SpeakerSpec } from '../harness/daemons.js'
import { waitFor } from '../harness/wait.js'

export interface SideRecord {
  readonly label: string
  readonly address: string
  readonly software: string
  readonly facts: Record<string, unknown>
}

export interface SessionRecord {
  readonly name: string
  readonly description: string
  readonly sides: readonly SideRecord[]
  readonly trigger: readonly string[]
}

export interface ScenarioResult {
  readonly record: SessionRecord
  readonly capture: Capture
  /** The two addresses of the recorded session. */
  readonly ends: readonly [string, string]
}

export interface Scenario {
  readonly name: string
  run(topo: Topology): Promise<ScenarioResult>
}

export const STEP_MS = 15000

export function facts(spec: SpeakerSpec, peer: string): Record<string, unknown> {
  const n = spec.neighbors.find((x) => x.address === peer)
  return {
    as: spec.as,
    routerId: spec.routerId,
    holdTime: spec.holdTime ?? 'daemon default',
    gracefulRestart: spec.gracefulRestart === true,
    addPath: spec.addPath === true,
    ...(spec.as4 === false ? { as4: false } : {}),
    neighbor: n === undefined ? undefined : { as: n.as, passive: n.passive === true, families: n.families, rrClient: n.rrClient === true },
    originated: spec.originate ?? [],
  }
}

export function side(label: string, d: Daemon, peer: string): SideRecord {
  const address = d.spec.neighbors.find((n) => n.address === peer)?.localAddress ?? (peer.includes(':') ? d.node.v6 : d.node.v4) ?? ''
  return { label, address, software: d.kind, facts: facts(d.spec, peer) }
}

/** Waits until the messages `from` has sent to `to` satisfy `pred` (checked on the live capture). */
export async function waitSent(cap: Capture, from: string, to: string, what: string, pred: (msgs: Buffer[]) => boolean): Promise<void> {
  await waitFor(
    async () => {
      const conn = connectionBetween(await cap.connections(), from, to)
      return pred(splitMessages(sentBy(conn, from)))
    },
    { timeoutMs: STEP_MS, intervalMs: 100, what: `${what} in the capture` },
  )
}

/** Waits until both directions of the session carried a FIN or RST: the session is over on the wire. */
export async function waitClosed(cap: Capture, x: string, y: string): Promise<void> {
  await waitFor(
    async () => {
      const conn = connectionBetween(await cap.connections(), x, y)
      return (conn.a.finSeen || conn.a.rstSeen) && (conn.b.finSeen || conn.b.rstSeen)
    },
    { timeoutMs: STEP_MS, intervalMs: 100, what: `TCP close of ${x} <-> ${y} in the capture` },
  )
}

export const isType = (t: number) => (m: Buffer) => m[18] === t
/** End-of-RIB: an empty UPDATE (IPv4) or one holding only an empty MP_UNREACH_NLRI (RFC 4724 §2). */
export function isEndOfRib(m: Buffer, family: Family): boolean {
  if (m[18] !== 2) return false
  if (family === 'ipv4') return m.length === 23
  const body = m.subarray(19)
  if (body.readUInt16BE(0) !== 0) return false
  const attrLen = body.readUInt16BE(2)
  const a = body.subarray(4, 4 + attrLen)
  const ext = ((a[0] ?? 0) & 0x10) !== 0
  const len = ext ? a.readUInt16BE(2) : (a[2] ?? 0)
  return a[1] === 15 && len === 3 && a.length === (ext ? 4 : 3) + len && a.readUInt16BE(ext ? 4 : 3) === 2
}
/** ROUTE-REFRESH with the given RFC 7313 subtype (0 = plain request, 1 = BoRR, 2 = EoRR). */
export const isRefresh = (subtype: number) => (m: Buffer) => m[18] === 5 && m[21] === subtype

export async function routesFrom(d: Daemon, family: Family, peer: string, prefixes: readonly string[], what: string): Promise<void> {
  await waitFor(
    async () => {
      const got = new Set((await d.routes(family)).filter((r) => r.fromPeer === peer).map((r) => r.prefix))
      return prefixes.every((p) => got.has(p))
    },
    { timeoutMs: STEP_MS, intervalMs: 100, what },
  )
}

export async function established(pairs: readonly [Daemon, string][]): Promise<void> {
  const deadline = Date.now() + STEP_MS
  for (const [d, peer] of pairs) await d.waitEstablished(peer, deadline)
}

export async function nodes(topo: Topology, specs: readonly { name: string; v4: string; v6?: string }[]): Promise<NetNode[]> {
  const out: NetNode[] = []
  for (const s of specs) out.push(await topo.addNode(s))
  return out
}
