// Who may announce pod addresses: an import policy for a peer that is not a cluster node, refusing every
// prefix inside an IP pool (the pool itself, a block, a /32) unless one of the peer's BGPFilters accepts it
// by an explicit import rule (action Accept, cidr with In or Equal). Pure; the refusal is reported to a callback.

import type { BGPFilter, BGPFilterRule } from '../../config/index.js'
import type { PathAttributes } from '../codec/attributes.js'
import { parsePrefix, type Ipv6Prefix, type Prefix } from '../codec/nlri.js'
import { ipv6Within } from '../../net/index.js'
import type { Policy, RibPeer, RouteContext } from '../rib/types.js'
import { compileBgpFilters } from './bgp-filter.js'
import { prefixMatcher } from './match.js'

export type PoolPrefixVerdict = 'outside' | 'accepted' | 'refused'

export interface PoolGuard {
  /** Whether `prefix` (with these attributes, from this peer) may be installed as far as pools go. */
  verdict(prefix: Prefix, attrs: PathAttributes, peer: RibPeer, route?: RouteContext): PoolPrefixVerdict
  /** Whether the IPv4 network `addr`/`len` (host bits clear) lies outside every pool: verdict 'outside'. */
  outsideIpv4(addr: number, len: number): boolean
  /** outsideIpv4() for the IPv6 network of bytes addr[at, at + 16) and length `len` (host bits clear). */
  outsideIpv6(addr: Uint8Array, at: number, len: number): boolean
}

const REJECT_REST: BGPFilterRule = { action: 'Reject' }

/** Whether the address at addr[at, at + 16) lies in the network `net`/`len`. */
/**
 * The guard for these pool CIDRs and the peer's import filters. Each explicit Accept rule is compiled
 * alone, followed by a catch-all Reject, so it answers "did this very rule match" with every condition
 * it has (cidr, prefixLength, communities, ...), not only its cidr.
 */
export function compilePoolGuard(poolCidrs: readonly string[], filters: readonly Pick<BGPFilter, 'metadata' | 'spec'>[]): PoolGuard {
  const pools = poolCidrs.map((c) => {
    const net = parsePrefix(c)
    return prefixMatcher(c, 'In', net.afi, undefined, `IPPool ${c}`)
  })
  // The IPv4 pools as numbers, for a table's sections checked without a Prefix object per network.
  const v4 = poolCidrs.map((c) => parsePrefix(c)).filter((n) => n.afi === 1)
  const v4Len = Int32Array.from(v4, (n) => n.len)
  const v4Addr = Int32Array.from(v4, (n) => n.addr | 0)
  const v4Mask = Int32Array.from(v4, (n) => (n.len === 0 ? 0 : -1 << (32 - n.len)))
  const v6 = poolCidrs.map((c) => parsePrefix(c)).filter((n): n is Ipv6Prefix => n.afi === 2)
  const explicit: Policy[] = []
  for (const f of filters) {
    for (const list of ['importV4', 'importV6'] as const) {
      for (const rule of f.spec[list] ?? []) {
        if (rule.action !== 'Accept' || rule.cidr === undefined || (rule.matchOperator !== 'In' && rule.matchOperator !== 'Equal')) continue
        explicit.push(compileBgpFilters([{ metadata: f.metadata, spec: { [list]: [rule, REJECT_REST] } }], 'import'))
      }
    }
  }
  return {
    verdict(prefix, attrs, peer, route) {
      if (!pools.some((inPool) => inPool(prefix))) return 'outside'
      return explicit.some((p) => p.apply(prefix, attrs, peer, route) !== undefined) ? 'accepted' : 'refused'
    },
    outsideIpv4(addr, len) {
      for (let i = 0; i < v4Len.length; i++) if (len >= v4Len[i]! && (addr & v4Mask[i]!) === v4Addr[i]) return false
      return true
    },
    outsideIpv6(addr, at, len) {
      for (const pool of v6) if (len >= pool.len && ipv6Within(pool.addr, pool.len, addr, at)) return false
      return true
    },
  }
}

/** `inner` behind the guard: a refused prefix is rejected and reported, the rest goes through `inner`. */
export function guardPoolPrefixes(inner: Policy, guard: PoolGuard, onRefused: (prefix: Prefix, peer: RibPeer) => void): Policy {
  // A network outside every pool meets only `inner`: when that passes all, so does the guard for it.
  const all = inner.passesAll === true
  return {
    empty: inner.empty,
    ...(all ? { passesIpv4: (addr: number, len: number) => guard.outsideIpv4(addr, len), passesIpv6: (addr: Uint8Array, at: number, len: number) => guard.outsideIpv6(addr, at, len) } : {}),
    apply(prefix, attrs, peer, route) {
      if (guard.verdict(prefix, attrs, peer, route) === 'refused') {
        onRefused(prefix, peer)
        return undefined
      }
      return inner.apply(prefix, attrs, peer, route)
    },
  }
}
