// Text forms of IPv4 and IPv6 addresses: IPv4 as an unsigned 32-bit number, IPv6 as 16 bytes.
// RFC 5952 canonical text for IPv6 so logs, JSON and tests agree with `ip` and the daemons.

export function formatIpv4(addr: number): string {
  return `${addr >>> 24}.${(addr >>> 16) & 255}.${(addr >>> 8) & 255}.${addr & 255}`
}

/**
 * Parses dotted-quad text (the first `end` characters, e.g. the address part of `198.18.0.0/26`);
 * undefined when it is not exactly four decimal octets.
 */
export function parseIpv4(text: string, end = text.length): number | undefined {
  let addr = 0
  let part = 0
  let digits = 0
  let dots = 0
  for (let i = 0; i < end; i++) {
    const c = text.charCodeAt(i)
    if (c === 46) {
      if (digits === 0 || dots === 3) return undefined
      addr = addr * 256 + part
      part = 0
      digits = 0
      dots++
    } else if (c >= 48 && c <= 57) {
      if (++digits > 3) return undefined
      part = part * 10 + (c - 48)
      if (part > 255) return undefined
    } else return undefined
  }
  if (dots !== 3 || digits === 0) return undefined
  return addr * 256 + part
}

export function ipv4Bytes(text: string): Uint8Array | undefined {
  const n = parseIpv4(text)
  if (n === undefined) return undefined
  return Uint8Array.of(n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255)
}

/** Lower-case hex of 0..255 without leading zeros, and padded to two digits: a group's text from its two bytes. */
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16))
const HEX2 = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'))
/** One address's groups while it is formatted (the call is synchronous, so one scratch serves every call). */
const groups = new Uint16Array(8)

const groupText = (g: number): string => (g < 256 ? HEX[g]! : HEX[g >>> 8]! + HEX2[g & 255]!)

/**
 * RFC 5952 text of the 16 bytes at `offset`. On the hot path of every IPv6 route (felix renders and keys
 * its routes by this text), so it reads the bytes once and builds the text by concatenation, with no array.
 */
export function formatIpv6(bytes: Uint8Array, offset = 0): string {
  for (let i = 0; i < 8; i++) groups[i] = ((bytes[offset + 2 * i] ?? 0) << 8) | (bytes[offset + 2 * i + 1] ?? 0)
  // RFC 5952 §4.2: compress the longest run of two or more zero groups, the first on a tie.
  let bestStart = -1
  let bestLen = 1
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++
      continue
    }
    let j = i
    while (j < 8 && groups[j] === 0) j++
    if (j - i > bestLen) {
      bestStart = i
      bestLen = j - i
    }
    i = j
  }
  // RFC 5952 §5: IPv4-mapped addresses keep their dotted tail.
  if (bestStart === 0 && bestLen === 5 && groups[5] === 0xffff) {
    return `::ffff:${formatIpv4(((groups[6]! << 16) | groups[7]!) >>> 0)}`
  }
  let out = ''
  if (bestStart < 0) {
    out = groupText(groups[0]!)
    for (let i = 1; i < 8; i++) out += ':' + groupText(groups[i]!)
    return out
  }
  for (let i = 0; i < bestStart; i++) out += (i === 0 ? '' : ':') + groupText(groups[i]!)
  out += '::'
  for (let i = bestStart + bestLen; i < 8; i++) out += (i === bestStart + bestLen ? '' : ':') + groupText(groups[i]!)
  return out
}

/** The 16 bytes of an IPv6 address held as a 128-bit bigint (the form of prefix.ts). */
export function ipv6ValueBytes(value: bigint): Uint8Array {
  const bytes = new Uint8Array(16)
  for (let i = 15, v = value; i >= 0; i--, v >>= 8n) bytes[i] = Number(v & 0xffn)
  return bytes
}

/** The 128-bit bigint of an IPv6 address's 16 bytes. */
export function ipv6BytesValue(bytes: Uint8Array): bigint {
  let v = 0n
  for (let i = 0; i < 16; i += 4) v = (v << 32n) | BigInt((((bytes[i] ?? 0) << 24) | ((bytes[i + 1] ?? 0) << 16) | ((bytes[i + 2] ?? 0) << 8) | (bytes[i + 3] ?? 0)) >>> 0)
  return v
}

/** RFC 5952 text of an IPv6 address held as a 128-bit bigint. */
export function formatIpv6Value(value: bigint): string {
  return formatIpv6(ipv6ValueBytes(value))
}

/** The value of hex digit `c` (a char code), or -1. */
function hexDigit(c: number): number {
  if (c >= 48 && c <= 57) return c - 48
  if (c >= 97 && c <= 102) return c - 87
  if (c >= 65 && c <= 70) return c - 55
  return -1
}

/**
 * Parses IPv6 text (with `::` and an optional dotted IPv4 tail); undefined when malformed. One pass over
 * the characters with no intermediate strings: felix parses every IPv6 route's key and gateway with it.
 */
export function parseIpv6(text: string): Uint8Array | undefined {
  const n = text.length
  if (n === 0 || n > 45) return undefined
  const bytes = new Uint8Array(16)
  // Groups are written at `at` (byte offset) as they come; those after `::` are moved to the end at the close.
  let at = 0
  let gap = -1
  let i = 0
  if (text.charCodeAt(0) === 58) {
    if (text.charCodeAt(1) !== 58) return undefined
    gap = 0
    i = 2
    if (i === n) return bytes
  }
  for (;;) {
    // One group: 1-4 hex digits, or the dotted IPv4 tail that ends the text.
    let v = 0
    let digits = 0
    const groupStart = i
    for (; i < n; i++) {
      const d = hexDigit(text.charCodeAt(i))
      if (d < 0) break
      v = v * 16 + d
      digits++
    }
    if (i < n && text.charCodeAt(i) === 46) {
      // A dotted tail takes the last two groups' room, and only at the end of the text.
      const tail = parseIpv4(text.slice(groupStart))
      if (tail === undefined || at > 12) return undefined
      bytes[at] = tail >>> 24
      bytes[at + 1] = (tail >>> 16) & 255
      bytes[at + 2] = (tail >>> 8) & 255
      bytes[at + 3] = tail & 255
      at += 4
      break
    }
    if (digits === 0 || digits > 4 || at === 16) return undefined
    bytes[at] = v >>> 8
    bytes[at + 1] = v & 255
    at += 2
    if (i === n) break
    if (text.charCodeAt(i) !== 58) return undefined
    i++
    if (i < n && text.charCodeAt(i) === 58) {
      if (gap >= 0) return undefined
      gap = at
      i++
      if (i === n) break
    } else if (i === n) return undefined
  }
  if (gap < 0) return at === 16 ? bytes : undefined
  // `::` stands for at least one zero group.
  if (at > 14) return undefined
  const moved = at - gap
  bytes.copyWithin(16 - moved, gap, at)
  bytes.fill(0, gap, 16 - moved)
  return bytes
}
