// The JSON the pinto runner takes (one file per speaker process) and its translation into BgpSpeaker
// options, PeerConfigs and originated routes. Pure: no files or sockets; bad input names the field path.

import { parsePrefix, type LargeCommunity, type PathAttributes, type Prefix } from '../../bgp/codec/index.js'
import { ACCEPT_ALL, compileBgpFilters, parseCommunity, type Community } from '../../bgp/policy/index.js'
import type { Policy } from '../../bgp/rib/types.js'
import type { PeerConfig } from '../../bgp/session/peer-config.js'
import type { SpeakerOptions } from '../../bgp/speaker.js'
import type { BGPFilterSpec } from '../../config/resources/types.js'
import { parseIpv4 } from '../../net/index.js'

/** Attributes of an originated route, in the notations operators type. */
export interface RouteAttrsJson {
  readonly communities?: readonly string[]
  /** "GLOBAL:LOCAL1:LOCAL2" */
  readonly largeCommunities?: readonly string[]
  readonly med?: number
  readonly localPref?: number
  /** AS_SEQUENCE put in front of the path at origination. */
  readonly asPath?: readonly number[]
}

export interface OriginJson extends RouteAttrsJson {
  readonly prefix: string
}

/** A policy: "accept-all" (ACCEPT_ALL), or Calico BGPFilter specs compiled in order. */
export type PolicyJson = 'accept-all' | { readonly filters: readonly { readonly name: string; readonly spec: BGPFilterSpec }[] }

export interface PeerJson extends Omit<PeerConfig, 'importPolicy' | 'exportPolicy'> {
  readonly importPolicy?: PolicyJson
  readonly exportPolicy?: PolicyJson
}

export interface RunnerConfig {
  readonly speaker: Omit<SpeakerOptions, 'logger' | 'clock'>
  readonly peers?: readonly PeerJson[]
  readonly originate?: readonly OriginJson[]
  /** pino log file; default none. */
  readonly log?: string
  readonly logLevel?: string
}

function fail(field: string, why: string): never {
  throw new Error(`${field}: ${why}`)
}

function u32(v: unknown, field: string): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > 0xffffffff) fail(field, `${JSON.stringify(v)} is not a 32-bit unsigned integer`)
  return v
}

export function toPolicy(p: PolicyJson | undefined, direction: 'import' | 'export', field: string): Policy | undefined {
  if (p === undefined) return undefined
  if (p === 'accept-all') return ACCEPT_ALL
  if (typeof p !== 'object' || !Array.isArray(p.filters)) fail(field, 'must be "accept-all" or {filters: [{name, spec}]}')
  return compileBgpFilters(p.filters.map((f) => ({ metadata: { name: f.name }, spec: f.spec })), direction)
}

export function toPeerConfig(p: PeerJson, field: string): PeerConfig {
  if (typeof p.name !== 'string' || p.name === '') fail(`${field}.name`, 'missing')
  if (typeof p.address !== 'string') fail(`${field}.address`, 'missing')
  u32(p.peerAsn, `${field}.peerAsn`)
  const { importPolicy, exportPolicy, ...rest } = p
  const imp = toPolicy(importPolicy, 'import', `${field}.importPolicy`)
  const exp = toPolicy(exportPolicy, 'export', `${field}.exportPolicy`)
  return { ...rest, ...(imp ? { importPolicy: imp } : {}), ...(exp ? { exportPolicy: exp } : {}) }
}

export function toAttributes(a: RouteAttrsJson, field: string): Partial<PathAttributes> {
  const out: { -readonly [K in keyof PathAttributes]?: PathAttributes[K] } = {}
  const parse = (list: readonly string[], large: boolean, name: string): Community[] =>
    list.map((c, i) => {
      const v = parseCommunity(c, `${field}.${name}[${i}]`)
      if (v.large !== large) fail(`${field}.${name}[${i}]`, `"${c}" is ${large ? 'not ' : ''}a large community`)
      return v
    })
  if (a.communities !== undefined) out.communities = parse(a.communities, false, 'communities').map((c) => c.value as number)
  if (a.largeCommunities !== undefined) out.largeCommunities = parse(a.largeCommunities, true, 'largeCommunities').map((c) => c.value as LargeCommunity)
  if (a.med !== undefined) out.med = u32(a.med, `${field}.med`)
  if (a.localPref !== undefined) out.localPref = u32(a.localPref, `${field}.localPref`)
  if (a.asPath !== undefined && a.asPath.length > 0) out.asPath = [{ type: 2, asns: a.asPath.map((n, i) => u32(n, `${field}.asPath[${i}]`)) }]
  return out
}

export function toPrefix(text: unknown, field: string): Prefix {
  if (typeof text !== 'string') fail(field, 'must be a prefix string')
  try {
    return parsePrefix(text)
  } catch (err) {
    fail(field, (err as Error).message)
  }
}

export function checkConfig(c: RunnerConfig): void {
  if (typeof c !== 'object' || c === null || typeof c.speaker !== 'object') fail('config.speaker', 'missing')
  u32(c.speaker.asn, 'config.speaker.asn')
  if (parseIpv4(c.speaker.routerId) === undefined) fail('config.speaker.routerId', `${JSON.stringify(c.speaker.routerId)} is not an IPv4 address`)
  if (c.peers !== undefined && !Array.isArray(c.peers)) fail('config.peers', 'must be an array')
  if (c.originate !== undefined && !Array.isArray(c.originate)) fail('config.originate', 'must be an array')
}
