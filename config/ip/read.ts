// Reading back address and CIDR text pinto wrote itself (IPAM block and affinity records, routes from
// the RIB), where it is parsed in loops: canonical text takes the codec's numeric scanners (a tenth of
// ip-num's cost); anything else goes to parse.ts, so results and errors are exactly parseAddr's and parseCidr's.

import { formatIpv4, formatIpv6, ipv6BytesValue, parseIpv4, parseIpv6 } from '../../bgp/codec/ip.js'
import { familyBits, hostMask, type Addr, type Cidr } from './arith.js'
import { PREFIX_LENGTH, parseAddr, parseCidr } from './parse.js'

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

/** parseAddr's result, faster for canonical text. */
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
