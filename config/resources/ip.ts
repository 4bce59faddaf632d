// IP addresses and CIDRs as the resource model needs them: strict parsing, network-address checks,
// containment and overlap. Pure value code over bigints; it knows nothing about pools or blocks
// beyond prefix arithmetic (the allocator in ipam/ owns block maths).

import { formatIpv6Value } from '../../bgp/codec/ip.js'

export type IPVersion = 4 | 6

export interface IPAddr {
  readonly version: IPVersion
  readonly value: bigint
}

export interface CIDR {
  readonly version: IPVersion
  /** The address as written (may have host bits set). */
  readonly addr: bigint
  readonly prefixLength: number
  /** The address with the host bits cleared. */
  readonly network: bigint
}

export function bitsOf(version: IPVersion): number {
  return version === 4 ? 32 : 128
}

const V4_OCTET = /^(0|[1-9][0-9]{0,2})$/

/** Dotted-quad IPv4 only; leading zeros are refused like Go's net.ParseIP (they read as octal elsewhere). */
export function parseIPv4(text: string): bigint | undefined {
  const parts = text.split('.')
  if (parts.length !== 4) return undefined
  let value = 0n
  for (const part of parts) {
    if (!V4_OCTET.test(part)) return undefined
    const n = Number(part)
    if (n > 255) return undefined
    value = (value << 8n) | BigInt(n)
  }
  return value
}

function parseIPv6(text: string): bigint | undefined {
  if (!/^[0-9a-fA-F:.]+$/.test(text)) return undefined
  const halves = text.split('::')
  if (halves.length > 2) return undefined
  const groups = (half: string): number[] | undefined => {
    if (half === '') return []
    const out: number[] = []
    const parts = half.split(':')
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i] ?? ''
      if (i === parts.length - 1 && p.includes('.')) {
        const v4 = parseIPv4(p)
        if (v4 === undefined) return undefined
        out.push(Number(v4 >> 16n), Number(v4 & 0xffffn))
      } else {
        if (!/^[0-9a-fA-F]{1,4}$/.test(p)) return undefined
        out.push(parseInt(p, 16))
      }
    }
    return out
  }
  const head = groups(halves[0] ?? '')
  const tail = halves.length === 2 ? groups(halves[1] ?? '') : []
  if (head === undefined || tail === undefined) return undefined
  // An embedded IPv4 part is only allowed at the very end.
  if (halves.length === 2 && (halves[0] ?? '').includes('.')) return undefined
  const total = head.length + tail.length
  if (halves.length === 1 ? total !== 8 : total > 7) return undefined
  const all = [...head, ...new Array<number>(8 - total).fill(0), ...tail]
  return all.reduce((acc, g) => (acc << 16n) | BigInt(g), 0n)
}

export function parseIP(text: string): IPAddr | undefined {
  const v4 = parseIPv4(text)
  if (v4 !== undefined) return { version: 4, value: v4 }
  const v6 = parseIPv6(text)
  if (v6 !== undefined) return { version: 6, value: v6 }
  return undefined
}

export function maskOf(version: IPVersion, prefixLength: number): bigint {
  const bits = BigInt(bitsOf(version))
  const host = bits - BigInt(prefixLength)
  return ((1n << bits) - 1n) ^ ((1n << host) - 1n)
}

/**
 * Parses "addr/len" (and a bare address as a full-length prefix when `allowBareIP`, as Calico's
 * ParseCIDROrIP does). Returns a reason string on failure so callers can attach their field path.
 */
export function parseCIDR(text: string, allowBareIP = false): CIDR | string {
  const slash = text.indexOf('/')
  if (slash < 0) {
    if (!allowBareIP) return `${JSON.stringify(text)} is not a CIDR (expected <address>/<prefix length>)`
    const ip = parseIP(text)
    if (ip === undefined) return `${JSON.stringify(text)} is not an IP address or CIDR`
    return { version: ip.version, addr: ip.value, prefixLength: bitsOf(ip.version), network: ip.value }
  }
  const ip = parseIP(text.slice(0, slash))
  if (ip === undefined) return `${JSON.stringify(text)} has an invalid address part`
  const lenText = text.slice(slash + 1)
  if (!/^(0|[1-9][0-9]{0,2})$/.test(lenText) || Number(lenText) > bitsOf(ip.version)) {
    return `${JSON.stringify(text)} has an invalid prefix length (0-${bitsOf(ip.version)} for IPv${ip.version})`
  }
  const prefixLength = Number(lenText)
  return { version: ip.version, addr: ip.value, prefixLength, network: ip.value & maskOf(ip.version, prefixLength) }
}

export function formatIP(version: IPVersion, value: bigint): string {
  if (version === 4) return [24n, 16n, 8n, 0n].map((s) => String((value >> s) & 0xffn)).join('.')
  return formatIpv6Value(value)
}

export function formatCIDR(c: CIDR): string {
  return `${formatIP(c.version, c.network)}/${c.prefixLength}`
}

/** The last address inside a prefix. */
export function lastAddress(c: CIDR): bigint {
  return c.network | (((1n << BigInt(bitsOf(c.version))) - 1n) ^ maskOf(c.version, c.prefixLength))
}

export function cidrsOverlap(a: CIDR, b: CIDR): boolean {
  if (a.version !== b.version) return false
  return a.network <= lastAddress(b) && b.network <= lastAddress(a)
}

export function cidrContainsIP(c: CIDR, ip: IPAddr): boolean {
  return c.version === ip.version && (ip.value & maskOf(c.version, c.prefixLength)) === c.network
}

export const IPV4_LINK_LOCAL = parseCIDR('169.254.0.0/16') as CIDR
export const IPV6_LINK_LOCAL = parseCIDR('fe80::/10') as CIDR
