// The typed description of a BGP speaker that every real-daemon launcher (bird.ts, frr.ts, gobgp.ts)
// renders into its own config, and the common shape of a running daemon and of the routes it reports.
// No processes here: only types, validation and small helpers shared by the launchers.

import type { NetNode } from './netns.js'
import { remaining, waitFor } from './wait.js'

export type Family = 'ipv4' | 'ipv6'

/** A route the speaker originates itself, with the attributes it should carry. */
export interface OriginRoute {
  readonly prefix: string
  /** Only GoBGP needs one (BIRD and FRR use their own address); default: the speaker's address. */
  readonly nextHop?: string
  /** "ASN:VALUE" */
  readonly communities?: readonly string[]
  /** "GLOBAL:LOCAL1:LOCAL2" */
  readonly largeCommunities?: readonly string[]
  /** Route targets, "ASN:VALUE". */
  readonly routeTargets?: readonly string[]
  readonly med?: number
  readonly localPref?: number
  /** ASes put in front of the path at origination (the speaker adds its own AS on eBGP). */
  readonly prepend?: readonly number[]
}

export interface NeighborSpec {
  /** Protocol name (BIRD) and label in reports; [a-z0-9_]. */
  readonly name: string
  readonly address: string
  readonly as: number
  /** Source address for the session; default: the speaker's own address of the same family. */
  readonly localAddress?: string
  /** Never connect out, only accept. */
  readonly passive?: boolean
  readonly families: readonly Family[]
  /** This speaker reflects routes to the neighbor (RFC 4456). */
  readonly rrClient?: boolean
  /** FRR only: send an OPEN without optional parameters (no capabilities at all). */
  readonly noCapabilities?: boolean
  /** TCP-MD5 key for the session (FRR `neighbor X password`, BIRD `password`). */
  readonly password?: string
  /** GTSM: the neighbor is at most this many hops away (FRR `ttl-security hops`, BIRD `ttl security` with `multihop`). */
  readonly ttlSecurityHops?: number
}

export interface SpeakerSpec {
  readonly routerId: string
  readonly as: number
  readonly neighbors: readonly NeighborSpec[]
  readonly originate?: readonly OriginRoute[]
  /** Hold time offered in OPEN, seconds. */
  readonly holdTime?: number
  readonly gracefulRestart?: boolean
  /** Add-path send and receive on every family of every neighbor. */
  readonly addPath?: boolean
  /** BIRD only: `enable as4 off` makes it a 2-octet-AS speaker (no capability 65). */
  readonly as4?: boolean
  /** BIRD only: false renders `enable route refresh off` (no capability 2: the peer cannot be asked to re-send). */
  readonly routeRefresh?: boolean
  /** FRR only: aggregate-address prefixes (they carry AGGREGATOR, and AS4_AGGREGATOR to 2-octet peers). */
  readonly aggregates?: readonly string[]
  /** Route reflector cluster id; default the router id. */
  readonly clusterId?: string
}

/** A route as a daemon reports it; attributes are filled where the daemon's output gives them cheaply. */
export interface RibRoute {
  readonly prefix: string
  /** Neighbor address the route came from; undefined for a locally originated route. */
  readonly fromPeer: string | undefined
  readonly nextHop: string | undefined
  readonly asPath: readonly number[]
  readonly communities: readonly string[]
  readonly largeCommunities: readonly string[]
  readonly med: number | undefined
  readonly localPref: number | undefined
}

export type DaemonKind = 'bird' | 'frr' | 'gobgp'

export interface Daemon {
  readonly kind: DaemonKind
  readonly node: NetNode
  readonly spec: SpeakerSpec
  /** Private directory holding config, control socket, pid file and log. */
  readonly dir: string
  readonly pid: number
  /** The session state with a neighbor (by address), in the daemon's own words. */
  sessionState(neighbor: string): Promise<string>
  /** Resolves when the session with `neighbor` is Established; rejects at the deadline (ms since epoch). */
  waitEstablished(neighbor: string, deadline: number): Promise<void>
  /** The daemon's view of the table for a family (all paths, best first where the daemon says). */
  routes(family: Family): Promise<RibRoute[]>
  /** Stops the daemon by its PID and waits for it to exit. */
  stop(): Promise<void>
}

export function familyOf(prefix: string): Family {
  return prefix.includes(':') ? 'ipv6' : 'ipv4'
}

/** Checks a spec before any launcher renders it, naming the offending field. */
export function validateSpec(spec: SpeakerSpec): void {
  if (!/^\d+\.\d+\.\d+\.\d+$/.test(spec.routerId)) throw new Error(`spec.routerId: "${spec.routerId}" is not a dotted quad`)
  checkAs('spec.as', spec.as)
  spec.neighbors.forEach((n, i) => {
    if (!/^[a-z][a-z0-9_]*$/.test(n.name)) throw new Error(`spec.neighbors[${i}].name: "${n.name}" must match [a-z][a-z0-9_]*`)
    checkAs(`spec.neighbors[${i}].as`, n.as)
    if (n.families.length === 0) throw new Error(`spec.neighbors[${i}].families: empty`)
  })
  ;(spec.originate ?? []).forEach((r, i) => {
    if (!/^[0-9a-f.:]+\/\d+$/i.test(r.prefix)) throw new Error(`spec.originate[${i}].prefix: "${r.prefix}" is not a prefix`)
    for (const c of r.communities ?? []) if (!/^\d+:\d+$/.test(c)) throw new Error(`spec.originate[${i}].communities: "${c}"`)
    for (const c of r.largeCommunities ?? []) if (!/^\d+:\d+:\d+$/.test(c)) throw new Error(`spec.originate[${i}].largeCommunities: "${c}"`)
    for (const c of r.routeTargets ?? []) if (!/^\d+:\d+$/.test(c)) throw new Error(`spec.originate[${i}].routeTargets: "${c}"`)
  })
  if (spec.holdTime !== undefined && spec.holdTime !== 0 && (spec.holdTime < 3 || spec.holdTime > 65535)) {
    throw new Error(`spec.holdTime: ${spec.holdTime} must be 0 or 3..65535`)
  }
}

function checkAs(field: string, as: number): void {
  if (!Number.isInteger(as) || as < 1 || as > 0xffffffff) throw new Error(`${field}: ${as} is not an AS number`)
}

/** The neighbor entry for an address, or a clear error. */
export function neighborOf(spec: SpeakerSpec, address: string): NeighborSpec {
  const n = spec.neighbors.find((x) => x.address === address)
  if (n === undefined) throw new Error(`no neighbor ${address} in this speaker's spec`)
  return n
}

/** The speaker's own source address for a neighbor: explicit, or the node address of the same family. */
export function localAddressFor(node: NetNode, n: NeighborSpec): string {
  if (n.localAddress !== undefined) return n.localAddress
  const own = n.address.includes(':') ? node.v6 : node.v4
  if (own === undefined) throw new Error(`neighbor ${n.name}: node ${node.name} has no address of the neighbor's family`)
  return own
}

/** Reads a pid file a daemon writes after forking. */
export function parsePid(text: string, file: string): number {
  const pid = Number(text.trim())
  if (!Number.isInteger(pid) || pid <= 1) throw new Error(`${file}: "${text.trim()}" is not a PID`)
  return pid
}

/** The waitEstablished of every launcher: polls the daemon's own state until it reads Established. */
export function establishedWaiter(label: string, sessionState: (address: string) => Promise<string>) {
  return async (address: string, deadline: number): Promise<void> => {
    await waitFor(async () => /^established$/i.test(await sessionState(address)), {
      timeoutMs: remaining(deadline),
      intervalMs: 100,
      what: `${label}: session with ${address} Established`,
    })
  }
}
