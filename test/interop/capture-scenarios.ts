// The sessions capture-fixtures.ts records: each builds its topology in the given namespaces, starts the
// daemons, drives the session through its story (routes, refresh, shutdown) while tcpdump records, and says
// what it did. Each waits on real state (daemon CLI or the capture itself), never on a fixed sleep.

import type { NetNode, Topology } from '../harness/netns.js'
import { startBird } from '../harness/bird.js'
import { startFrr } from '../harness/frr.js'
import { startGobgp } from '../harness/gobgp.js'
import { startCapture, type Capture } from '../harness/tcpdump.js'
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

const STEP_MS = 15000

function facts(spec: SpeakerSpec, peer: string): Record<string, unknown> {
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

function side(label: string, d: Daemon, peer: string): SideRecord {
  const address = d.spec.neighbors.find((n) => n.address === peer)?.localAddress ?? (peer.includes(':') ? d.node.v6 : d.node.v4) ?? ''
  return { label, address, software: d.kind, facts: facts(d.spec, peer) }
}

/** Waits until the messages `from` has sent to `to` satisfy `pred` (checked on the live capture). */
async function waitSent(cap: Capture, from: string, to: string, what: string, pred: (msgs: Buffer[]) => boolean): Promise<void> {
  await waitFor(
    async () => {
      const conn = connectionBetween(await cap.connections(), from, to)
      return pred(splitMessages(sentBy(conn, from)))
    },
    { timeoutMs: STEP_MS, intervalMs: 100, what: `${what} in the capture` },
  )
}

/** Waits until both directions of the session carried a FIN or RST: the session is over on the wire. */
async function waitClosed(cap: Capture, x: string, y: string): Promise<void> {
  await waitFor(
    async () => {
      const conn = connectionBetween(await cap.connections(), x, y)
      return (conn.a.finSeen || conn.a.rstSeen) && (conn.b.finSeen || conn.b.rstSeen)
    },
    { timeoutMs: STEP_MS, intervalMs: 100, what: `TCP close of ${x} <-> ${y} in the capture` },
  )
}

const isType = (t: number) => (m: Buffer) => m[18] === t
/** End-of-RIB: an empty UPDATE (IPv4) or one holding only an empty MP_UNREACH_NLRI (RFC 4724 §2). */
function isEndOfRib(m: Buffer, family: Family): boolean {
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
const isRefresh = (subtype: number) => (m: Buffer) => m[18] === 5 && m[21] === subtype

async function routesFrom(d: Daemon, family: Family, peer: string, prefixes: readonly string[], what: string): Promise<void> {
  await waitFor(
    async () => {
      const got = new Set((await d.routes(family)).filter((r) => r.fromPeer === peer).map((r) => r.prefix))
      return prefixes.every((p) => got.has(p))
    },
    { timeoutMs: STEP_MS, intervalMs: 100, what },
  )
}

async function established(pairs: readonly [Daemon, string][]): Promise<void> {
  const deadline = Date.now() + STEP_MS
  for (const [d, peer] of pairs) await d.waitEstablished(peer, deadline)
}

async function nodes(topo: Topology, specs: readonly { name: string; v4: string; v6?: string }[]): Promise<NetNode[]> {
  const out: NetNode[] = []
  for (const s of specs) out.push(await topo.addNode(s))
  return out
}

// ---------------------------------------------------------------------------------------------------------

const birdFrrEbgp: Scenario = {
  name: 'bird-frr-ebgp',
  async run(topo) {
    const [nb, nf] = await nodes(topo, [
      { name: 'bird', v4: '192.0.2.1/24', v6: '2001:db8::1/64' },
      { name: 'frr', v4: '192.0.2.2/24', v6: '2001:db8::2/64' },
    ])
    const cap = await startCapture(topo, nb!, 'bird-frr-ebgp')
    const bird = await startBird(topo, nb!, {
      routerId: '192.0.2.1',
      as: 65001,
      holdTime: 90,
      gracefulRestart: true,
      neighbors: [{ name: 'frr', address: '192.0.2.2', as: 65002, families: ['ipv4', 'ipv6'], passive: true }],
      originate: [
        { prefix: '198.18.1.0/24', communities: ['65001:100', '65001:200'], largeCommunities: ['65001:1:2'], routeTargets: ['65001:100'], med: 10, prepend: [65001, 65001] },
        { prefix: '198.18.11.0/24', communities: ['65535:65281'] },
        { prefix: '2001:db8:1::/48', communities: ['65001:600'], largeCommunities: ['65001:6:6'], med: 60 },
      ],
    })
    const frr = await startFrr(topo, nf!, {
      routerId: '192.0.2.2',
      as: 65002,
      holdTime: 90,
      gracefulRestart: true,
      neighbors: [{ name: 'bird', address: '192.0.2.1', as: 65001, families: ['ipv4', 'ipv6'] }],
      originate: [
        { prefix: '198.18.2.0/24', communities: ['65002:100'], largeCommunities: ['65002:3:4'], routeTargets: ['65002:7'], med: 20, prepend: [65002, 65002, 65002] },
        { prefix: '2001:db8:2::/48', largeCommunities: ['65002:9:9'], routeTargets: ['65002:8'] },
      ],
    }, { zebra: true })
    await established([[bird, '192.0.2.2'], [frr, '192.0.2.1']])
    await routesFrom(frr, 'ipv4', '192.0.2.1', ['198.18.1.0/24', '198.18.11.0/24'], 'FRR learning BIRD IPv4 routes')
    await routesFrom(frr, 'ipv6', '192.0.2.1', ['2001:db8:1::/48'], 'FRR learning BIRD IPv6 routes')
    await routesFrom(bird, 'ipv4', '192.0.2.2', ['198.18.2.0/24'], 'BIRD learning FRR IPv4 routes')
    await routesFrom(bird, 'ipv6', '192.0.2.2', ['2001:db8:2::/48'], 'BIRD learning FRR IPv6 routes')
    for (const [from, to] of [['192.0.2.1', '192.0.2.2'], ['192.0.2.2', '192.0.2.1']] as const) {
      await waitSent(cap, from, to, `End-of-RIB for both families from ${from}`, (ms) => ms.some((m) => isEndOfRib(m, 'ipv4')) && ms.some((m) => isEndOfRib(m, 'ipv6')))
    }
    await frr.vtysh('clear bgp ipv4 unicast 192.0.2.1 soft in')
    await waitSent(cap, '192.0.2.2', '192.0.2.1', 'ROUTE-REFRESH from FRR', (ms) => ms.some(isType(5)))
    await waitSent(cap, '192.0.2.1', '192.0.2.2', 'EoRR from BIRD', (ms) => ms.some(isRefresh(2)))
    await bird.birdc('disable', 'frr', '"pinto capture: planned maintenance"')
    await waitSent(cap, '192.0.2.1', '192.0.2.2', 'NOTIFICATION from BIRD', (ms) => ms.some(isType(3)))
    await waitClosed(cap, '192.0.2.1', '192.0.2.2')
    return {
      capture: cap,
      ends: ['192.0.2.1', '192.0.2.2'],
      record: {
        name: 'bird-frr-ebgp',
        description: 'eBGP BIRD (AS 65001) <-> FRR (AS 65002) over IPv4 transport carrying IPv4 and IPv6 unicast (MP-BGP), graceful restart on, communities, large communities, route targets, MED and AS path prepends; FRR asks for a route refresh, then BIRD shuts the session down with an RFC 9003 message.',
        sides: [side('bird', bird, '192.0.2.2'), side('frr', frr, '192.0.2.1')],
        trigger: [
          'FRR connects (BIRD is passive); both reach Established and exchange routes and End-of-RIB for IPv4 and IPv6',
          'vtysh: clear bgp ipv4 unicast 192.0.2.1 soft in  (FRR sends ROUTE-REFRESH; BIRD answers, with BoRR/EoRR if enhanced route refresh was negotiated)',
          'birdc: disable frr "pinto capture: planned maintenance"  (Cease / Administrative Shutdown with a shutdown communication)',
        ],
      },
    }
  },
}

export const SCENARIOS: readonly Scenario[] = [birdFrrEbgp]
