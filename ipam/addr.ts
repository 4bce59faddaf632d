// IPv4/IPv6 address and CIDR arithmetic on bigint: parse, format (RFC 5952 for v6), mask, ordinals.
// Pure: no I/O. Every parse error names the field it was given, so callers pass their field path.

import { formatIpv6Value } from '../bgp/codec/ip.js'

export type Family = 4 | 6

export interface Cidr {
  readonly family: Family
  /** The network address (host bits are zero; parseCidr rejects anything else). */
  readonly base: bigint
  readonly prefix: number
}

export class AddrError extends Error {
  constructor(readonly field: string, message: string) {
    super(`${field}: ${message}`)
    this.name = 'AddrError'
  }
}

export function familyBits(family: Family): number {
  return family === 4 ? 32 : 128
}

function parseV4(text: string): bigint | undefined {
  const parts = text.split('.')
  if (parts.length !== 4) return undefined
  let v = 0n
  for (const p of parts) {
    // No leading zeros: "010" is octal to some parsers and decimal to others, so refuse it.
    if (!/^(0|[1-9][0-9]{0,2})$/.test(p)) return undefined
    const n = Number(p)
    if (n > 255) return undefined
    v = (v << 8n) | BigInt(n)
  }
  return v
}

function parseV6(text: string): bigint | undefined {
  let head = text
  let tail = ''
  let compressed = false
  const dbl = text.indexOf('::')
  if (dbl >= 0) {
    if (text.indexOf('::', dbl + 1) >= 0) return undefined
    head = text.slice(0, dbl)
    tail = text.slice(dbl + 2)
    compressed = true
  }
  const groups = (s: string): bigint[] | undefined => {
    if (s === '') return []
    const out: bigint[] = []
    const parts = s.split(':')
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i] as string
      if (i === parts.length - 1 && p.includes('.')) {
        // An embedded dotted quad (::ffff:192.0.2.1) is two groups.
        const v4 = parseV4(p)
        if (v4 === undefined) return undefined
        out.push(v4 >> 16n, v4 & 0xffffn)
      } else {
        if (!/^[0-9a-fA-F]{1,4}$/.test(p)) return undefined
        out.push(BigInt('0x' + p))
      }
    }
    return out
  }
  const h = groups(head)
  const t = groups(tail)
  if (h === undefined || t === undefined) return undefined
  const missing = 8 - h.length - t.length
  if (compressed ? missing < 1 : missing !== 0) return undefined
  let v = 0n
  for (const g of [...h, ...new Array<bigint>(missing).fill(0n), ...t]) v = (v << 16n) | g
  return v
}

/** Parses one address; `field` names where it came from for the error. */
export function parseAddr(text: string, field = 'address'): { family: Family; value: bigint } {
  if (text.includes(':')) {
    const v = parseV6(text)
    if (v !== undefined) return { family: 6, value: v }
  } else {
    const v = parseV4(text)
    if (v !== undefined) return { family: 4, value: v }
  }
  throw new AddrError(field, `${JSON.stringify(text)} is not an IPv4 or IPv6 address`)
}

export function formatAddr(family: Family, value: bigint): string {
  if (family === 4) return [24n, 16n, 8n, 0n].map((s) => String((value >> s) & 0xffn)).join('.')
  return formatIpv6Value(value)
}

function hostMask(family: Family, prefix: number): bigint {
  return (1n << BigInt(familyBits(family) - prefix)) - 1n
}

/** Parses `addr/len`; host bits must be zero (Calico: "must be strictly masked"). */
export function parseCidr(text: string, field = 'cidr'): Cidr {
  const slash = text.indexOf('/')
  if (slash < 0) throw new AddrError(field, `${JSON.stringify(text)} has no /prefix-length`)
  const { family, value } = parseAddr(text.slice(0, slash), field)
  const lenText = text.slice(slash + 1)
  const prefix = Number(lenText)
  if (!/^[0-9]{1,3}$/.test(lenText) || prefix > familyBits(family)) {
    throw new AddrError(field, `prefix length ${JSON.stringify(lenText)} is not 0..${familyBits(family)}`)
  }
  if ((value & hostMask(family, prefix)) !== 0n) {
    throw new AddrError(field, `${text} has host bits set (the network is ${formatCidr(maskCidr(family, value, prefix))})`)
  }
  return { family, base: value, prefix }
}

export function maskCidr(family: Family, value: bigint, prefix: number): Cidr {
  return { family, base: value & ~hostMask(family, prefix), prefix }
}

export function formatCidr(c: Cidr): string {
  return `${formatAddr(c.family, c.base)}/${c.prefix}`
}

export function cidrSize(c: Cidr): bigint {
  return 1n << BigInt(familyBits(c.family) - c.prefix)
}

export function cidrContains(c: Cidr, family: Family, value: bigint): boolean {
  return family === c.family && (value & ~hostMask(c.family, c.prefix)) === c.base
}

/** True when `inner` lies wholly inside `outer`. */
export function cidrCovers(outer: Cidr, inner: Cidr): boolean {
  return inner.prefix >= outer.prefix && cidrContains(outer, inner.family, inner.base)
}

export function cidrsOverlap(a: Cidr, b: Cidr): boolean {
  return cidrCovers(a, b) || cidrCovers(b, a)
}

/** Calico's resource-name form of a CIDR: `.`, `:` and `/` become `-` (10.0.0.0/26 -> 10-0-0-0-26). */
export function cidrName(c: Cidr): string {
  return formatCidr(c).replace(/[.:/]/g, '-')
}
