// Address and CIDR text into values: what people and other programs give us (resources, API queries,
// agent settings, IPAM requests) on ip-num, strict like Go's net package: no leading zeros in IPv4 octets,
// no zone index, host bits refused where a network is asked for, every error an AddrError naming the
// caller's field. Text pinto wrote itself is read back (readAddr, readCidr) by the numeric scanners of ip.ts
// where it is canonical, with exactly parseAddr's and parseCidr's results and errors.

import { IPv4, IPv6 } from 'ip-num'
import { type Family, familyBits } from './family.js'
import { formatIpv4, formatIpv6, ipv6BytesValue, parseIpv4, parseIpv6 } from './ip.js'
import { type Addr, type Cidr, type IfAddr, formatCidr, hostMask, maskCidr } from './prefix.js'

/** A bad address or CIDR: `field` is the path the caller gave (e.g. `spec.cidr`), `reason` says what is wrong. */
export class AddrError extends Error {
  constructor(
    readonly field: string,
    readonly reason: string,
  ) {
    super(`${field}: ${reason}`)
    this.name = 'AddrError'
  }
}

/** `parse()`'s value, or the AddrError it threw: for callers that collect problems instead of throwing. */
export function tryAddr<T>(parse: () => T): T | AddrError {
  try {
    return parse()
  } catch (e) {
    if (e instanceof AddrError) return e
    throw e
  }
}

export interface ParseOptions {
  /** Only this family is accepted. */
  readonly family?: Family
  /** A bare address is accepted as its whole-length prefix (/32, /128), as Calico's ParseCIDROrIP does. */
  readonly bare?: boolean
}

const PREFIX_LENGTH = /^(0|[1-9][0-9]{0,2})$/

/** Why `part` (the address in `whole`) is not an address, or its value. ip-num decides the grammar. */
function addrOrReason(part: string, whole: string, want: Family | undefined): Addr | string {
  const q = JSON.stringify(whole)
  const zone = part.indexOf('%')
  // ip-num takes a zone index ("fe80::1%eth0"); an address in a resource or a route has none.
  if (zone >= 0) return `${q} has a zone index (${part.slice(zone)}); a scoped address is not accepted here`
  const dotted = part.slice(part.lastIndexOf(':') + 1)
  const zeroed = dotted.includes('.') ? dotted.split('.').find((o) => /^0[0-9]/.test(o)) : undefined
  if (zeroed !== undefined) {
    return `${q} has an octet with a leading zero (${zeroed}), which some parsers read as octal; write ${Number.parseInt(zeroed, 10)}`
  }
  const kind = want === undefined ? 'an IPv4 or IPv6' : `an IPv${want}`
  const notAddr = part === whole ? `${q} is not ${kind} address` : `${q}: ${JSON.stringify(part)} is not ${kind} address`
  try {
    return part.includes(':') ? { family: 6, value: IPv6.fromString(part).value } : { family: 4, value: IPv4.fromString(part).value }
  } catch {
    return notAddr
  }
}

function wrongFamily(text: string, want: Family, noun: 'address' | 'network'): string {
  return `${JSON.stringify(text)} is not an IPv${want} ${noun}`
}

/** One address: `192.0.2.1`, `2001:db8::1`, `::ffff:192.0.2.1` (IPv6, IPv4-mapped). */
export function parseAddr(text: string, field = 'address', opts: Pick<ParseOptions, 'family'> = {}): Addr {
  const a = addrOrReason(text, text, opts.family)
  if (typeof a === 'string') throw new AddrError(field, a)
  if (opts.family !== undefined && a.family !== opts.family) throw new AddrError(field, wrongFamily(text, opts.family, 'address'))
  return a
}

/** The address and prefix length of `addr/len` (or a bare address when allowed), host bits untouched. */
function splitCidr(text: string, field: string, opts: ParseOptions, noun: 'address' | 'network'): { addr: Addr; prefix: number; network: bigint } {
  const q = JSON.stringify(text)
  const slash = text.indexOf('/')
  if (slash < 0 && opts.bare !== true) throw new AddrError(field, `${q} is not a CIDR (expected <address>/<prefix length>)`)
  const a = addrOrReason(slash < 0 ? text : text.slice(0, slash), text, opts.family)
  if (typeof a === 'string') throw new AddrError(field, a)
  if (opts.family !== undefined && a.family !== opts.family) throw new AddrError(field, wrongFamily(text, opts.family, noun))
  const bits = familyBits(a.family)
  const lenText = slash < 0 ? String(bits) : text.slice(slash + 1)
  if (!PREFIX_LENGTH.test(lenText) || Number(lenText) > bits) {
    throw new AddrError(field, `${q} has an invalid prefix length (0-${bits} for IPv${a.family})`)
  }
  // The mask is bigint arithmetic: ip-num's range objects would triple the cost of a parse.
  const prefix = Number(lenText)
  return { addr: a, prefix, network: maskCidr(a.family, a.value, prefix).base }
}

/** A network, `addr/len` with the host bits clear; `10.0.0.1/8` is refused naming 10.0.0.0/8. */
export function parseCidr(text: string, field = 'cidr', opts: ParseOptions = {}): Cidr {
  const { addr, prefix, network } = splitCidr(text, field, opts, 'network')
  const cidr: Cidr = { family: addr.family, base: network, prefix }
  if (network !== addr.value) throw new AddrError(field, `${JSON.stringify(text)} has host bits set (the network is ${formatCidr(cidr)})`)
  return cidr
}

/** An interface address, `addr/len` with host bits (a node's `192.0.2.10/24`): the address and its subnet. */
export function parseIfAddr(text: string, field = 'address', opts: ParseOptions = {}): IfAddr {
  const { addr, prefix } = splitCidr(text, field, opts, 'address')
  return { addr, cidr: maskCidr(addr.family, addr.value, prefix) }
}

/** The value of canonical address text (what formatAddr writes), or undefined for any other text. */
function canonicalAddr(text: string, end: number): Addr | undefined {
  const addrText = end === text.length ? text : text.slice(0, end)
  if (addrText.includes(':')) {
    const bytes = parseIpv6(addrText)
    return bytes !== undefined && formatIpv6(bytes) === addrText ? { family: 6, value: ipv6BytesValue(bytes) } : undefined
  }
  const n = parseIpv4(addrText)
  return n !== undefined && formatIpv4(n) === addrText ? { family: 4, value: BigInt(n) } : undefined
}

/** parseAddr's result, faster for canonical text (IPAM records, routes from the RIB: text pinto wrote). */
export function readAddr(text: string, field = 'address'): Addr {
  return canonicalAddr(text, text.length) ?? parseAddr(text, field)
}

/** parseCidr's result (host bits refused), faster for canonical text. */
export function readCidr(text: string, field = 'cidr'): Cidr {
  const slash = text.indexOf('/')
  const a = slash > 0 ? canonicalAddr(text, slash) : undefined
  if (a !== undefined) {
    const lenText = text.slice(slash + 1)
    const len = Number(lenText)
    if (PREFIX_LENGTH.test(lenText) && len <= familyBits(a.family) && (a.value & hostMask(a.family, len)) === 0n) return { family: a.family, base: a.value, prefix: len }
  }
  return parseCidr(text, field)
}

/**
 * A canonical IPv4 prefix ("a.b.c.d/len", no leading zeros, host bits clear) as numbers, for a loop over
 * text pinto wrote; undefined for anything else, which then takes readCidr and its error messages.
 */
export function readIpv4Prefix(text: string): { addr: number; len: number } | undefined {
  const slash = text.indexOf('/')
  if (slash < 0) return undefined
  const addrText = text.slice(0, slash)
  const addr = parseIpv4(addrText)
  if (addr === undefined || formatIpv4(addr) !== addrText) return undefined
  // Digits only, as parseCidr takes them: Number() alone would read "+8", " 8", "8." and "-0" as lengths.
  const lenText = text.slice(slash + 1)
  if (!PREFIX_LENGTH.test(lenText)) return undefined
  const len = Number(lenText)
  if (len > 32) return undefined
  const mask = len === 0 ? 0 : (0xffffffff << (32 - len)) >>> 0
  if (((addr & mask) >>> 0) !== addr) return undefined
  return { addr, len }
}
