// The building blocks of Calico BGPFilter rules as pinto evaluates them: prefix matching with
// Calico's matchOperator / prefixLength semantics, communities "a:b" and large "a:b:c", AS-path
// prefixes, interface globs, and Calico's priority <-> LOCAL_PREF mapping. Pure functions only.

import { SegmentType } from '../codec/constants.js'
import { parsePrefix, type Prefix } from '../codec/nlri.js'
import type { LargeCommunity, PathAttributes } from '../codec/attributes.js'
import { ipv4Within, ipv6Within } from '../../net/index.js'

/** Calico (v3.32+) carries a route's priority (kernel metric) as LOCAL_PREF = 2^31 - 1 - priority. */
export const PRIORITY_BASE = 2147483647
/** The priority Calico gives a route that has none (krt_metric 1024). */
export const DEFAULT_PRIORITY = 1024

export function priorityToLocalPref(priority: number): number {
  return PRIORITY_BASE - priority
}

export function priorityOf(attrs: PathAttributes): number {
  return attrs.localPref === undefined ? DEFAULT_PRIORITY : PRIORITY_BASE - attrs.localPref
}

/**
 * The kernel metric of a route learned with this LOCAL_PREF, as Calico's BIRD kernel export sets
 * krt_metric = 2^31 - 1 - bgp_local_pref. Undefined (the kernel's default metric) for no LOCAL_PREF,
 * for the plain default 100 (an ordinary iBGP route, not a priority), and outside 1..2^31-2.
 */
export function kernelMetricOf(localPref: number | undefined): number | undefined {
  if (localPref === undefined || localPref === PLAIN_LOCAL_PREF) return undefined
  const metric = PRIORITY_BASE - localPref
  return metric >= 1 && metric <= PRIORITY_BASE - 1 ? metric : undefined
}

/** RFC 4271's customary LOCAL_PREF, which speakers send when no policy set one. */
const PLAIN_LOCAL_PREF = 100

export type MatchOperator = 'Equal' | 'NotEqual' | 'In' | 'NotIn'

function networkEquals(a: Prefix, b: Prefix, bits: number): boolean {
  if (a.afi === 1 && b.afi === 1) return ipv4Within(b.addr, bits, a.addr)
  if (a.afi === 2 && b.afi === 2) return ipv6Within(b.addr, bits, a.addr)
  return false
}

/**
 * The prefix test of one rule. As Calico renders it for BIRD: `Equal` is `net = cidr`, `In` is
 * `net ~ [cidr{lo,hi}]` where lo = max(cidr length, min) and hi = min(family width, max), i.e.
 * inside cidr with a length in range; NotEqual and NotIn are the negations.
 */
export function prefixMatcher(
  cidr: string,
  op: MatchOperator,
  afi: 1 | 2,
  range: { min?: number; max?: number } | undefined,
  field: string,
): (p: Prefix) => boolean {
  let net: Prefix
  try {
    net = parsePrefix(cidr)
  } catch (e) {
    throw new Error(`${field}.cidr: ${(e as Error).message}`)
  }
  if (net.afi !== afi) throw new Error(`${field}.cidr: ${cidr} is not an IPv${afi === 1 ? 4 : 6} prefix`)
  const width = afi === 1 ? 32 : 128
  if (range !== undefined && (op === 'Equal' || op === 'NotEqual')) {
    // BIRD compares a prefix with a prefix set by type and never finds them equal.
    throw new Error(`${field}.prefixLength: only meaningful with matchOperator In or NotIn, not ${op}`)
  }
  const lo = Math.max(net.len, range?.min ?? 0)
  const hi = Math.min(width, range?.max ?? width)
  const inside = (p: Prefix): boolean => p.afi === net.afi && p.len >= lo && p.len <= hi && networkEquals(p, net, net.len)
  const equal = (p: Prefix): boolean => p.afi === net.afi && p.len === net.len && networkEquals(p, net, net.len)
  switch (op) {
    case 'Equal':
      return equal
    case 'NotEqual':
      return (p) => !equal(p)
    case 'In':
      return inside
    case 'NotIn':
      return (p) => !inside(p)
    default: {
      const never: never = op
      throw new Error(`${field}.matchOperator: unknown operator ${JSON.stringify(never)}`)
    }
  }
}

export type Community = { readonly large: false; readonly value: number } | { readonly large: true; readonly value: LargeCommunity }

/** "a:b" (RFC 1997, each part 0-65535) or "a:b:c" (RFC 8092, each part 0-4294967295). */
export function parseCommunity(text: string, field: string): Community {
  const parts = text.split(':')
  const nums = parts.map((s) => (/^\d+$/.test(s) ? Number(s) : NaN))
  if (parts.length === 2) {
    if (nums.some((n) => !(n >= 0 && n <= 0xffff))) throw new Error(`${field}: ${JSON.stringify(text)} is not a community a:b with parts 0-65535`)
    return { large: false, value: ((nums[0]! << 16) | nums[1]!) >>> 0 }
  }
  if (parts.length === 3) {
    if (nums.some((n) => !(n >= 0 && n <= 0xffffffff))) throw new Error(`${field}: ${JSON.stringify(text)} is not a large community a:b:c with parts 0-4294967295`)
    return { large: true, value: [nums[0]!, nums[1]!, nums[2]!] }
  }
  throw new Error(`${field}: ${JSON.stringify(text)} is neither a community a:b nor a large community a:b:c`)
}

export function hasCommunity(attrs: PathAttributes, c: Community): boolean {
  if (!c.large) return attrs.communities?.includes(c.value) ?? false
  const [a, b, d] = c.value
  return attrs.largeCommunities?.some((x) => x[0] === a && x[1] === b && x[2] === d) ?? false
}

/** The path with the community added, unchanged when already there (like BIRD's clist add). */
export function addCommunity(attrs: PathAttributes, c: Community): PathAttributes {
  if (hasCommunity(attrs, c)) return attrs
  if (!c.large) return { ...attrs, communities: [...(attrs.communities ?? []), c.value] }
  return { ...attrs, largeCommunities: [...(attrs.largeCommunities ?? []), c.value] }
}

/** The leading ASes of AS_SEQUENCE segments, as BIRD's `bgp_path ~ [= a b * =]` reads them. */
export function startsWithAsns(attrs: PathAttributes, asns: readonly number[]): boolean {
  let i = 0
  for (const seg of attrs.asPath ?? []) {
    if (i >= asns.length) break
    if (seg.type !== SegmentType.AS_SEQUENCE) return false
    for (const a of seg.asns) {
      if (i >= asns.length) break
      if (a !== asns[i]) return false
      i++
    }
  }
  return i >= asns.length
}

export function prependAsns(attrs: PathAttributes, asns: readonly number[]): PathAttributes {
  if (asns.length === 0) return attrs
  const segs = attrs.asPath ?? []
  const first = segs[0]
  const asPath =
    first !== undefined && first.type === SegmentType.AS_SEQUENCE
      ? [{ type: SegmentType.AS_SEQUENCE, asns: [...asns, ...first.asns] }, ...segs.slice(1)]
      : [{ type: SegmentType.AS_SEQUENCE, asns: [...asns] }, ...segs]
  return { ...attrs, asPath }
}

/** BIRD's `ifname ~ "pattern"`: `*` any run, `?` any one character, the rest literal. */
export function globMatcher(pattern: string): (name: string) => boolean {
  const re = new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*').replace(/\?/g, '.')}$`)
  return (name) => re.test(name)
}
