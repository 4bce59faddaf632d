// The table bench/node-path feeds its receivers: N prefixes in about N/20 attribute sets of skewed sizes
// (distinct AS paths, some MEDs and communities), each set's prefixes scattered over the address space,
// as a real table's UPDATEs carry a few prefixes each. Pure and deterministic: the sender and the bench
// build the same table from the same (family, count). Knows nothing of sockets or processes.
//
// IPv4 prefixes live in 10.0.0.0/8, routes that exist only inside the bench's namespaces (no traffic is
// ever sent to them): 5 % /32s (in 10.255.0.0/16), 3 % covering /16-/23s, the rest of one length, /24
// where the /8 has room for them (up to ~65k), else the shortest that fits (/25 at 100k, /28 at 1M).
// IPv6 prefixes are half /48s (2001:db8:0-7fff::/48), half /64s (under 2001:db8:8000::/33).
// Churn prefixes come from elsewhere: IPv4 /32s in 198.19.0.0/16, IPv6 /64s in 2001:db8:fffe::/48.

import { ipv4Prefix, ipv6Prefix, type PathAttributes, type Prefix } from '../bgp/codec/index.js'
import { Rng } from '../test/harness/random.js'

export type MixFamily = 'ipv4' | 'ipv6'

export interface AttributeSet {
  readonly attributes: PathAttributes
  readonly prefixes: readonly Prefix[]
}

export interface RouteMix {
  readonly sets: readonly AttributeSet[]
  /** One line describing the prefix lengths, for the bench's header. */
  readonly shape: string
}

/** Mean prefixes per attribute set: 1M prefixes in ~50k sets. */
const MEAN_PER_SET = 20
const MAX_PER_SET = 2000
const V4_BASE = 10 << 24
/** /16s of 10.0.0.0/8 below 10.255.0.0/16, which holds the /32s. */
const V4_SIXTEENS = 255

function v4Lengths(count: number): { n32: number; nShort: number; bulkLen: number } {
  const n32 = Math.min(Math.floor(count * 0.05), 65536)
  const nShort = Math.floor(count * 0.03)
  const nBulk = count - n32 - nShort
  let bulkLen = 24
  while (bulkLen < 32 && nBulk > V4_SIXTEENS * 2 ** (bulkLen - 16)) bulkLen++
  if (nBulk > V4_SIXTEENS * 2 ** (bulkLen - 16)) throw new RangeError(`count: ${count} IPv4 prefixes do not fit in 10.0.0.0/8`)
  return { n32, nShort, bulkLen }
}

/** Lengths of the covering prefixes, weighted toward the longer ones as in a real table. */
const SHORT_PATTERN = [16, 17, 18, 18, 19, 19, 19, 20, 20, 20, 20, 21, 21, 21, 21, 21, 22, 22, 22, 22, 22, 22, 22, 22, 23, 23, 23, 23, 23, 23, 23, 23, 23]

function ipv4Prefixes(count: number): Prefix[] {
  const { n32, nShort, bulkLen } = v4Lengths(count)
  const out = new Array<Prefix>(count)
  let i = 0
  for (let k = 0; k < n32; k++) out[i++] = ipv4Prefix((V4_BASE | (255 << 16) | k) >>> 0, 32)
  const used = new Map<number, number>()
  for (let k = 0; k < nShort; k++) {
    let len = SHORT_PATTERN[k % SHORT_PATTERN.length]!
    // A length whose prefixes are all taken gives way to the next longer one.
    while ((used.get(len) ?? 0) >= V4_SIXTEENS * 2 ** (len - 16)) {
      if (++len > 23) throw new RangeError(`count: ${count} leaves no room for ${nShort} covering prefixes`)
    }
    const c = used.get(len) ?? 0
    used.set(len, c + 1)
    out[i++] = ipv4Prefix((V4_BASE + c * 2 ** (32 - len)) >>> 0, len)
  }
  for (let k = 0; i < count; k++) out[i++] = ipv4Prefix((V4_BASE + k * 2 ** (32 - bulkLen)) >>> 0, bulkLen)
  return out
}

function v6(words: readonly number[]): Uint8Array {
  const b = new Uint8Array(16)
  words.forEach((w, k) => {
    b[2 * k] = w >> 8
    b[2 * k + 1] = w & 255
  })
  return b
}

function ipv6Prefixes(count: number): Prefix[] {
  const n48 = Math.min(Math.floor(count / 2), 0x8000)
  const out = new Array<Prefix>(count)
  for (let k = 0; k < n48; k++) out[k] = ipv6Prefix(v6([0x2001, 0xdb8, k]), 48)
  for (let k = 0; k < count - n48; k++) out[n48 + k] = ipv6Prefix(v6([0x2001, 0xdb8, 0x8000 + (k >>> 16), k & 0xffff]), 64)
  return out
}

/**
 * Set s's attributes: an AS path of 1-5 hops ending in an origin AS of its own (so every set is
 * distinct), a MED on a third of them, 0-3 communities. No AS of 64512-65000 (the receivers' and the
 * sender's), so no receiver drops a path as a loop.
 */
function attributesOf(s: number, nextHop: string | undefined): PathAttributes {
  const hops = 1 + (s % 5)
  const asns: number[] = []
  for (let h = 1; h < hops; h++) asns.push(65001 + ((s * 7 + h * 13) % 500))
  asns.push(4200000000 + s)
  const communities: number[] = []
  for (let c = 0; c < s % 4; c++) communities.push(((65001 + c) << 16 | (s + c * 101) % 65536) >>> 0)
  return {
    origin: s % 10 === 0 ? 2 : 0,
    asPath: [{ type: 2, asns }],
    ...(nextHop !== undefined ? { nextHop } : {}),
    ...(s % 3 === 0 ? { med: s % 1000 } : {}),
    localPref: 100,
    ...(communities.length > 0 ? { communities } : {}),
  }
}

/** The table: `count` prefixes of `family` in attribute sets; `nextHop` is the IPv4 NEXT_HOP (IPv4 only). */
export function routeMix(family: MixFamily, count: number, nextHop?: string): RouteMix {
  if (!Number.isInteger(count) || count < 1) throw new RangeError(`count: ${count} is not a positive integer`)
  const all = family === 'ipv4' ? ipv4Prefixes(count) : ipv6Prefixes(count)
  const rng = new Rng(0x5eed + count)
  // A random order, so a set's prefixes are scattered over the address space.
  const order = new Uint32Array(count)
  for (let k = 0; k < count; k++) order[k] = k
  for (let k = count - 1; k > 0; k--) {
    const j = rng.int(k + 1)
    const t = order[k]!
    order[k] = order[j]!
    order[j] = t
  }
  const sets: AttributeSet[] = []
  for (let at = 0; at < count; ) {
    // Exponential sizes with the mean MEAN_PER_SET: most sets hold a few prefixes, a few hold hundreds.
    const size = Math.min(count - at, MAX_PER_SET, 1 + Math.floor(-Math.log(1 - rng.float()) * (MEAN_PER_SET - 1)))
    const prefixes = new Array<Prefix>(size)
    for (let k = 0; k < size; k++) prefixes[k] = all[order[at + k]!]!
    sets.push({ attributes: attributesOf(sets.length, family === 'ipv4' ? nextHop : undefined), prefixes })
    at += size
  }
  let shape: string
  if (family === 'ipv4') {
    const { n32, nShort, bulkLen } = v4Lengths(count)
    shape = `${count - n32 - nShort} /${bulkLen}s, ${nShort} /16-/23s, ${n32} /32s in 10.0.0.0/8 (namespace-only routes)`
  } else {
    const n48 = Math.min(Math.floor(count / 2), 0x8000)
    shape = `${n48} /48s and ${count - n48} /64s in 2001:db8::/32`
  }
  return { sets, shape: `${shape}, ${sets.length} attribute sets (AS paths, MEDs, communities)` }
}

/** The k-th prefix the churn announces and withdraws; never one of the table's. */
export function churnPrefix(family: MixFamily, k: number): Prefix {
  if (k < 0 || k > 0xffff) throw new RangeError(`churn prefix ${k}: at most 65536 of them`)
  return family === 'ipv4' ? ipv4Prefix((198 << 24 | 19 << 16 | k) >>> 0, 32) : ipv6Prefix(v6([0x2001, 0xdb8, 0xfffe, k]), 64)
}

/** The attributes churn announcements carry: those of the table's first set. */
export function churnAttributes(family: MixFamily, nextHop?: string): PathAttributes {
  return attributesOf(0, family === 'ipv4' ? nextHop : undefined)
}
