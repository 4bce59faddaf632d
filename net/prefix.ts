// IP address and CIDR values and the arithmetic on them: masks, containment, overlap, the block an
// address falls in, the nth address, order, and canonical text (RFC 5952 for IPv6), on bigint where ip-num's
// objects would cost many times as much; containment also on the numeric forms felix and the RIB keep per
// route. No parsing here (parse.ts) and no I/O.

import { type Family, familyBits } from './family.js'
import { formatIpv6Value } from './ip.js'

export interface Addr {
  readonly family: Family
  readonly value: bigint
}

export interface Cidr {
  readonly family: Family
  /** The network address: host bits are always zero (parseCidr refuses anything else). */
  readonly base: bigint
  readonly prefix: number
}

/** An interface address with its subnet, as in `192.0.2.10/24`: host bits are expected. */
export interface IfAddr {
  readonly addr: Addr
  readonly cidr: Cidr
}

export function hostMask(family: Family, prefix: number): bigint {
  return (1n << BigInt(familyBits(family) - prefix)) - 1n
}

export function formatAddr(family: Family, value: bigint): string {
  if (family === 4) return `${(value >> 24n) & 0xffn}.${(value >> 16n) & 0xffn}.${(value >> 8n) & 0xffn}.${value & 0xffn}`
  return formatIpv6Value(value)
}

export function formatCidr(c: Cidr): string {
  return `${formatAddr(c.family, c.base)}/${c.prefix}`
}

/** The prefix of length `prefix` that holds the address: the block an address falls in. */
export function maskCidr(family: Family, value: bigint, prefix: number): Cidr {
  return { family, base: value & ~hostMask(family, prefix), prefix }
}

export function cidrSize(c: Cidr): bigint {
  return 1n << BigInt(familyBits(c.family) - c.prefix)
}

/** The last address inside the prefix. */
export function cidrLast(c: Cidr): bigint {
  return c.base | hostMask(c.family, c.prefix)
}

/** The address `n` places after the network address; a RangeError past the end of the prefix. */
export function nthAddr(c: Cidr, n: number | bigint): bigint {
  const i = BigInt(n)
  if (i < 0n || i >= cidrSize(c)) throw new RangeError(`address ${i} is outside ${formatCidr(c)} (${cidrSize(c)} addresses)`)
  return c.base + i
}

/** The address's place in the prefix (0 for the network address); undefined when it is outside. */
export function addrOrdinal(c: Cidr, family: Family, value: bigint): bigint | undefined {
  return cidrContains(c, family, value) ? value - c.base : undefined
}

/**
 * Containment, one helper per form a prefix travels in: `cidrContains` and `cidrCovers` on bigint values
 * (IPAM, the API, config), `ipv4Within` on a 32-bit network and `ipv6Within` on 16 network-order bytes
 * (per route in felix and the API's filters, where a bigint would cost).
 */
export function cidrContains(c: Cidr, family: Family, value: bigint): boolean {
  return family === c.family && (value & ~hostMask(c.family, c.prefix)) === c.base
}

/** Whether the first `bits` bits of the IPv4 addresses `net` and `addr` agree (either signed or unsigned). */
export function ipv4Within(net: number, bits: number, addr: number): boolean {
  return bits === 0 || addr >>> (32 - bits) === net >>> (32 - bits)
}

/** Whether the first `bits` bits of `net` (from 0) and `addr` (from `at`) agree. */
export function ipv6Within(net: Uint8Array, bits: number, addr: Uint8Array, at = 0): boolean {
  const whole = bits >> 3
  for (let i = 0; i < whole; i++) if (net[i] !== addr[at + i]) return false
  const rest = bits & 7
  if (rest === 0) return true
  const mask = (0xff << (8 - rest)) & 0xff
  return ((net[whole]! ^ addr[at + whole]!) & mask) === 0
}


/** True when `inner` lies wholly inside `outer` (or is it). */
export function cidrCovers(outer: Cidr, inner: Cidr): boolean {
  return inner.prefix >= outer.prefix && cidrContains(outer, inner.family, inner.base)
}

export function cidrsOverlap(a: Cidr, b: Cidr): boolean {
  return cidrCovers(a, b) || cidrCovers(b, a)
}

/** IPv4 before IPv6, then by value: a total order for sorting. */
export function compareAddr(a: Addr, b: Addr): number {
  return a.family - b.family || (a.value < b.value ? -1 : a.value > b.value ? 1 : 0)
}

/** IPv4 before IPv6, then by network address, then the shorter prefix first. */
export function compareCidr(a: Cidr, b: Cidr): number {
  return a.family - b.family || (a.base < b.base ? -1 : a.base > b.base ? 1 : 0) || a.prefix - b.prefix
}

/** Calico's resource-name form of a CIDR: `.`, `:` and `/` become `-` (10.0.0.0/26 -> 10-0-0-0-26). */
export function cidrName(c: Cidr): string {
  return formatCidr(c).replace(/[.:/]/g, '-')
}
