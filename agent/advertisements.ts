// What this node advertises besides its blocks, and how: the communities BGPConfiguration's
// prefixAdvertisements put on originated routes, the service CIDRs every node originates, and the export
// allow-list (pools, disableBGPExport, service CIDRs) toward one peer. Pure: resources in, plans out.

import type { BGPConfigurationSpec, BGPFilter, BGPFilterRule, IPPool } from '../config/index.js'
import { type LargeCommunity, type PathAttributes, parsePrefix, type Prefix, parseCommunity, prefixMatcher, type Community } from '../bgp/index.js'

export interface CommunityRule {
  /** The advertisement's cidr, for logs. */
  readonly cidr: string
  readonly inside: (p: Prefix) => boolean
  readonly communities: readonly Community[]
}

/**
 * prefixAdvertisements compiled: names resolved through spec.communities, literals parsed. As Calico's
 * apply_communities(), every advertisement whose cidr holds the route (`net ~ cidr`) adds its communities,
 * in order, each once. Throws an Error naming the field path of a value that cannot be used.
 */
export function compileCommunityRules(config: BGPConfigurationSpec): CommunityRule[] {
  const named = new Map((config.communities ?? []).map((c) => [c.name, c.value]))
  return (config.prefixAdvertisements ?? []).map((pa, i) => {
    const field = `spec.prefixAdvertisements[${i}]`
    let afi: 1 | 2
    try {
      afi = parsePrefix(pa.cidr).afi
    } catch (e) {
      throw new Error(`${field}.cidr: ${(e as Error).message}`)
    }
    const communities = pa.communities.map((c, j) => {
      const value = named.get(c) ?? c
      return parseCommunity(value, `${field}.communities[${j}]${named.has(c) ? ` (${c} = ${value})` : ''}`)
    })
    return { cidr: pa.cidr, inside: prefixMatcher(pa.cidr, 'In', afi, undefined, field), communities }
  })
}

/** The community attributes an originated route gets; empty when no advertisement holds it. */
export function communitiesFor(prefix: Prefix, rules: readonly CommunityRule[]): Partial<Pick<PathAttributes, 'communities' | 'largeCommunities'>> {
  const standard: number[] = []
  const large: LargeCommunity[] = []
  for (const rule of rules) {
    if (!rule.inside(prefix)) continue
    for (const c of rule.communities) {
      if (!c.large) {
        if (!standard.includes(c.value)) standard.push(c.value)
      } else if (!large.some((x) => x[0] === c.value[0] && x[1] === c.value[1] && x[2] === c.value[2])) large.push(c.value)
    }
  }
  return { ...(standard.length > 0 ? { communities: standard } : {}), ...(large.length > 0 ? { largeCommunities: large } : {}) }
}

/**
 * The service ranges every node originates (Calico's static routes for serviceClusterIPs,
 * serviceExternalIPs and serviceLoadBalancerIPs), deduplicated, in the order written.
 */
export function serviceCidrs(config: BGPConfigurationSpec): string[] {
  const out: string[] = []
  for (const field of ['serviceClusterIPs', 'serviceExternalIPs', 'serviceLoadBalancerIPs'] as const) {
    for (const { cidr } of config[field] ?? []) if (!out.includes(cidr)) out.push(cidr)
  }
  return out
}

const isV6 = (cidr: string): boolean => cidr.includes(':')

/**
 * The allow-list appended after a peer's own export filters (Calico's calico_export_to_bgp_peers):
 * a disableBGPExport pool is rejected first, then service CIDRs and pools are accepted, and anything
 * else is rejected. `toNode`: the peer is a cluster node, which still gets a disableBGPExport pool's
 * blocks, since pinto's nodes route to each other's pods from BGP alone. Toward any other peer, a route
 * inside a service CIDR learned from a peer (another node's Service address) is not passed on: each node
 * speaks for its own endpoints, so a router peered with every node of a mesh learns a Local Service's
 * address only from the nodes that hold its endpoints. The CIDRs themselves every node originates.
 */
export function exportAllowList(pools: readonly IPPool[], services: readonly string[], toNode: boolean): Pick<BGPFilter, 'metadata' | 'spec'> {
  const rules = (v6: boolean): BGPFilterRule[] => {
    const mine = pools.filter((p) => isV6(p.spec.cidr) === v6)
    const width = v6 ? 128 : 32
    const learnedInside = (cidr: string): BGPFilterRule => {
      const len = Number(cidr.split('/')[1] ?? width)
      return len < width
        ? { action: 'Reject', source: 'RemotePeers', matchOperator: 'In', cidr, prefixLength: { min: len + 1 } }
        : { action: 'Reject', source: 'RemotePeers', matchOperator: 'Equal', cidr }
    }
    return [
      ...(toNode ? [] : mine.filter((p) => p.spec.disableBGPExport === true).map((p) => ({ action: 'Reject' as const, matchOperator: 'In' as const, cidr: p.spec.cidr }))),
      ...(toNode ? [] : services.filter((c) => isV6(c) === v6).map(learnedInside)),
      ...services.filter((c) => isV6(c) === v6).map((cidr) => ({ action: 'Accept' as const, matchOperator: 'In' as const, cidr })),
      ...mine.filter((p) => toNode || p.spec.disableBGPExport !== true).map((p) => ({ action: 'Accept' as const, matchOperator: 'In' as const, cidr: p.spec.cidr })),
      { action: 'Reject' as const, matchOperator: 'In' as const, cidr: v6 ? '::/0' : '0.0.0.0/0' },
    ]
  }
  return { metadata: { name: toNode ? 'pinto-export-nodes' : 'pinto-export' }, spec: { exportV4: rules(false), exportV6: rules(true) } }
}
