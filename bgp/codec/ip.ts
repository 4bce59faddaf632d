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

export function formatIpv6(bytes: Uint8Array, offset = 0): string {
  const groups: number[] = []
  for (let i = 0; i < 16; i += 2) groups.push(((bytes[offset + i] ?? 0) << 8) | (bytes[offset + i + 1] ?? 0))
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
    return `::ffff:${formatIpv4((((groups[6] ?? 0) << 16) | (groups[7] ?? 0)) >>> 0)}`
  }
  const hex = groups.map((g) => g.toString(16))
  if (bestStart < 0) return hex.join(':')
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLen).join(':')}`
}

/** The 16 bytes of an IPv6 address held as a 128-bit bigint (config/ip's form). */
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

/** Parses IPv6 text (with `::` and an optional dotted IPv4 tail); undefined when malformed. */
export function parseIpv6(text: string): Uint8Array | undefined {
  if (text.length === 0 || text.length > 45) return undefined
  let head = text
  let tail4: number | undefined
  const lastColon = text.lastIndexOf(':')
  if (text.indexOf('.', lastColon) >= 0) {
    tail4 = parseIpv4(text.slice(lastColon + 1))
    if (tail4 === undefined) return undefined
    head = text.slice(0, lastColon + 1) + '0:0'
  }
  const halves = head.split('::')
  if (halves.length > 2) return undefined
  const parse = (s: string): number[] | undefined => {
    if (s === '') return []
    const out: number[] = []
    for (const g of s.split(':')) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return undefined
      out.push(parseInt(g, 16))
    }
    return out
  }
  const left = parse(halves[0] ?? '')
  const right = halves.length === 2 ? parse(halves[1] ?? '') : []
  if (left === undefined || right === undefined) return undefined
  const total = left.length + right.length
  if (halves.length === 2 ? total > 7 : total !== 8) return undefined
  const groups = [...left, ...new Array<number>(8 - total).fill(0), ...right]
  const bytes = new Uint8Array(16)
  groups.forEach((g, i) => {
    bytes[i * 2] = g >> 8
    bytes[i * 2 + 1] = g & 255
  })
  if (tail4 !== undefined) {
    bytes[12] = tail4 >>> 24
    bytes[13] = (tail4 >>> 16) & 255
    bytes[14] = (tail4 >>> 8) & 255
    bytes[15] = tail4 & 255
  }
  return bytes
}
