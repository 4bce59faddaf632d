// The semantic second pass over a decoded UPDATE section, the part that needs to know the peer
// (RFC 4271 §9 / §6.3, RFC 7606, RFC 4456 §8): AS loops, first AS, ORIGINATOR_ID / CLUSTER_LIST
// loops, attributes an eBGP peer may not set, next hop sanity. Pure; the codec did the syntax.

import { SegmentType } from '../codec/constants.js'
import { reconcileAs4 } from '../codec/as4.js'
import { parseIpv4, parseIpv6 } from '../../net/index.js'
import type { MutablePathAttributes, PathAttributes } from '../codec/attributes.js'
import type { RibPeer } from './types.js'

export interface LocalIdentity {
  readonly routerId: string
  /** Set when this speaker reflects routes (RFC 4456). */
  readonly clusterId: string | undefined
  /** Every address of this speaker (next hops pointing at us are refused). */
  readonly addresses: ReadonlySet<string>
}

/** What kind of rule refused an UPDATE section: the label of its counter in /metrics and /v1/peers. */
export type RefusalKind = 'as-loop' | 'first-as' | 'originator-id' | 'cluster-list' | 'next-hop' | 'rfc8212' | 'treat-as-withdraw' | 'afi-safi-disable'

/** Why an UPDATE section's routes are not accepted (they are then treated as withdrawn). */
export interface Refusal {
  readonly kind: RefusalKind
  readonly reason: string
}

/** Attributes cleaned for the RIB, or why the routes are not accepted. */
export type Verdict = { readonly ok: true; readonly attrs: PathAttributes } | ({ readonly ok: false } & Refusal)

const refuse = (kind: RefusalKind, reason: string): Verdict => ({ ok: false, kind, reason })

function countAs(attrs: PathAttributes, asn: number): number {
  let n = 0
  for (const seg of attrs.asPath ?? []) for (const a of seg.asns) if (a === asn) n++
  return n
}

/** Why a next hop cannot be used, or undefined when it can. */
export function badNextHop(text: string, mine: (a: string) => boolean): string | undefined {
  const v4 = parseIpv4(text)
  if (v4 !== undefined) {
    if (v4 === 0) return 'next hop 0.0.0.0'
    if (v4 >>> 24 === 127) return `loopback next hop ${text}`
    if (v4 >>> 28 >= 14) return `multicast or reserved next hop ${text}`
  } else {
    const v6 = parseIpv6(text)
    if (v6 === undefined) return `next hop ${JSON.stringify(text)} is not an address`
    if (v6.every((b) => b === 0)) return 'next hop ::'
    if (v6[0] === 0xff) return `multicast next hop ${text}`
    if (v6.subarray(0, 15).every((b) => b === 0) && v6[15] === 1) return 'loopback next hop ::1'
  }
  if (mine(text)) return `next hop ${text} is this speaker's own address`
  return undefined
}

/**
 * Checks attributes received from `peer` for one UPDATE section. `nextHop` holds the MP_REACH
 * next hops; without it the NEXT_HOP attribute is the next hop (IPv4 unicast).
 */
export function validateReceived(
  received: PathAttributes,
  peer: RibPeer,
  local: LocalIdentity,
  nextHop: readonly string[] | undefined,
): Verdict {
  const attrs = reconcileAs4(received)
  // RFC 4271 §9.1.2: a path holding our own AS is a loop (BIRD's `allow local as N` tolerates N).
  if (countAs(attrs, peer.localAsn) > peer.allowLocalAs) return refuse('as-loop', `AS loop: AS ${peer.localAsn} is in the AS_PATH`)
  let out: MutablePathAttributes | undefined
  if (peer.type === 'ebgp') {
    // RFC 4271 §6.3: the leftmost AS must be the peer's own.
    const first = attrs.asPath?.[0]
    if (first === undefined || first.type !== SegmentType.AS_SEQUENCE || first.asns[0] !== peer.asn) {
      return refuse('first-as', `first AS in AS_PATH is not the peer's AS ${peer.asn}`)
    }
    // RFC 4271 §5.1.5 and RFC 4456 §8: an external peer cannot set these for us.
    if (attrs.localPref !== undefined || attrs.originatorId !== undefined || attrs.clusterList !== undefined) {
      out = { ...attrs }
      delete out.localPref
      delete out.originatorId
      delete out.clusterList
    }
  } else {
    // RFC 4456 §8: our own route came back, or it went round our cluster.
    if (attrs.originatorId === local.routerId) return refuse('originator-id', `ORIGINATOR_ID ${attrs.originatorId} is our router id`)
    if (local.clusterId !== undefined && attrs.clusterList?.includes(local.clusterId) === true) {
      return refuse('cluster-list', `CLUSTER_LIST holds our cluster id ${local.clusterId}`)
    }
  }
  const hop = nextHop !== undefined && nextHop.length > 0 ? nextHop[0] : attrs.nextHop
  if (hop === undefined) return refuse('next-hop', 'no next hop')
  const mine = (a: string): boolean => local.addresses.has(a) || a === peer.localAddress || a === peer.localAddress6
  // The peer's own session address is always a usable next hop (loopback sessions included).
  const bad = hop === peer.address ? undefined : badNextHop(hop, mine)
  if (bad !== undefined) return refuse('next-hop', bad)
  return { ok: true, attrs: out ?? attrs }
}
