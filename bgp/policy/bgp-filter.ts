// Compiles Calico BGPFilter resources into the Policy the RIB applies for one direction (import or
// export) of one peer. Semantics follow confd's BIRD rendering: the filters run in the peer's order,
// the first rule that matches accepts or rejects, and a route no rule matches is accepted.

import type { BGPFilter, BGPFilterOperation, BGPFilterRule } from '../../config/index.js'
import type { PathAttributes } from '../codec/attributes.js'
import type { Prefix } from '../codec/nlri.js'
import type { Policy, RibPeer, RouteContext } from '../rib/types.js'
import {
  addCommunity,
  globMatcher,
  hasCommunity,
  parseCommunity,
  prefixMatcher,
  prependAsns,
  priorityOf,
  priorityToLocalPref,
  startsWithAsns,
  PRIORITY_BASE,
} from './match.js'

export type Direction = 'import' | 'export'

type Condition = (prefix: Prefix, attrs: PathAttributes, peer: RibPeer, route: RouteContext | undefined) => boolean
type Operation = (attrs: PathAttributes) => PathAttributes

interface CompiledRule {
  readonly conditions: readonly Condition[]
  readonly accept: boolean
  readonly operations: readonly Operation[]
}

function checkAsn(asn: number, field: string): number {
  if (!Number.isInteger(asn) || asn < 1 || asn > 0xffffffff) throw new Error(`${field}: ${asn} is not an AS number (1-4294967295)`)
  return asn
}

function compileOperation(op: BGPFilterOperation, field: string): Operation {
  const set = [op.addCommunity, op.prependASPath, op.setPriority].filter((x) => x !== undefined).length
  if (set !== 1) throw new Error(`${field}: exactly one of addCommunity, prependASPath, setPriority must be set`)
  if (op.addCommunity !== undefined) {
    const c = parseCommunity(op.addCommunity.value, `${field}.addCommunity.value`)
    return (a) => addCommunity(a, c)
  }
  if (op.prependASPath !== undefined) {
    const asns = op.prependASPath.prefix.map((n, i) => checkAsn(n, `${field}.prependASPath.prefix[${i}]`))
    return (a) => prependAsns(a, asns)
  }
  const v = op.setPriority!.value
  if (!Number.isInteger(v) || v < 0 || v > PRIORITY_BASE) throw new Error(`${field}.setPriority.value: ${v} is not a priority (0-${PRIORITY_BASE})`)
  const localPref = priorityToLocalPref(v)
  return (a) => (a.localPref === localPref ? a : { ...a, localPref })
}

function compileRule(rule: BGPFilterRule, afi: 1 | 2, field: string): CompiledRule {
  const conditions: Condition[] = []
  if (rule.action !== 'Accept' && rule.action !== 'Reject') throw new Error(`${field}.action: must be Accept or Reject, not ${JSON.stringify(rule.action)}`)
  if (rule.cidr !== undefined || rule.matchOperator !== undefined) {
    if (rule.cidr === undefined || rule.matchOperator === undefined) throw new Error(`${field}: cidr and matchOperator must be set together`)
    const match = prefixMatcher(rule.cidr, rule.matchOperator, afi, rule.prefixLength, field)
    conditions.push((p) => match(p))
  } else if (rule.prefixLength !== undefined) {
    throw new Error(`${field}.prefixLength: needs cidr and matchOperator`)
  }
  if (rule.source !== undefined) {
    if (rule.source !== 'RemotePeers') throw new Error(`${field}.source: only RemotePeers is known, not ${JSON.stringify(rule.source)}`)
    // Import sees only routes from peers; export sees ours too.
    conditions.push((_p, _a, _peer, route) => route?.fromPeer ?? true)
  }
  if (rule.interface !== undefined) {
    const glob = globMatcher(rule.interface)
    conditions.push((_p, _a, _peer, route) => route?.interface !== undefined && glob(route.interface))
  }
  if (rule.peerType !== undefined) {
    if (rule.peerType !== 'eBGP' && rule.peerType !== 'iBGP') throw new Error(`${field}.peerType: must be eBGP or iBGP`)
    const want = rule.peerType === 'eBGP' ? 'ebgp' : 'ibgp'
    conditions.push((_p, _a, peer) => peer.type === want)
  }
  if (rule.communities !== undefined) {
    const values = rule.communities.values
    if (values.length !== 1) throw new Error(`${field}.communities.values: exactly one value is supported (Calico allows one)`)
    const c = parseCommunity(values[0]!, `${field}.communities.values[0]`)
    conditions.push((_p, a) => hasCommunity(a, c))
  }
  if (rule.asPathPrefix !== undefined) {
    if (rule.asPathPrefix.length === 0) throw new Error(`${field}.asPathPrefix: empty`)
    const asns = rule.asPathPrefix.map((n, i) => checkAsn(n, `${field}.asPathPrefix[${i}]`))
    conditions.push((_p, a) => startsWithAsns(a, asns))
  }
  if (rule.priority !== undefined) {
    const want = rule.priority
    conditions.push((_p, a) => priorityOf(a) === want)
  }
  const operations = (rule.operations ?? []).map((op, i) => compileOperation(op, `${field}.operations[${i}]`))
  if (operations.length > 0 && rule.action === 'Reject') throw new Error(`${field}.operations: only allowed with action Accept`)
  return { conditions, accept: rule.action === 'Accept', operations }
}

class FilterPolicy implements Policy {
  constructor(
    private readonly v4: readonly CompiledRule[],
    private readonly v6: readonly CompiledRule[],
  ) {}

  get empty(): boolean {
    return this.v4.length === 0 && this.v6.length === 0
  }

  apply(prefix: Prefix, attrs: PathAttributes, peer: RibPeer, route?: RouteContext): PathAttributes | undefined {
    const rules = prefix.afi === 1 ? this.v4 : this.v6
    for (const rule of rules) {
      if (!rule.conditions.every((c) => c(prefix, attrs, peer, route))) continue
      if (!rule.accept) return undefined
      let out = attrs
      for (const op of rule.operations) out = op(out)
      return out
    }
    return attrs
  }
}

/**
 * One Policy from the BGPFilters a peer names, in that order. Throws an Error naming the filter and
 * the field path when a rule cannot be compiled.
 */
export function compileBgpFilters(filters: readonly Pick<BGPFilter, 'metadata' | 'spec'>[], direction: Direction): Policy {
  const v4: CompiledRule[] = []
  const v6: CompiledRule[] = []
  for (const f of filters) {
    // First match across the filters in order is the same as running each filter in turn: a
    // filter with no matching rule falls through to the next.
    const lists = direction === 'import' ? (['importV4', 'importV6'] as const) : (['exportV4', 'exportV6'] as const)
    f.spec[lists[0]]?.forEach((r, i) => v4.push(compileRule(r, 1, `BGPFilter ${f.metadata.name}: spec.${lists[0]}[${i}]`)))
    f.spec[lists[1]]?.forEach((r, i) => v6.push(compileRule(r, 2, `BGPFilter ${f.metadata.name}: spec.${lists[1]}[${i}]`)))
  }
  return new FilterPolicy(v4, v6)
}

/** A policy that accepts everything unchanged but counts as a policy for RFC 8212. */
export const ACCEPT_ALL: Policy = { empty: false, passesAll: true, apply: (_prefix, attrs) => attrs }
