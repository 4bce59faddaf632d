// Scalar formats of Calico's resources: AS numbers (plain and asdot), BGP communities, object names,
// label keys and values, peer "ip:port", MAC and interface names. Each check returns a reason string
// (the caller adds the field path) or undefined; nothing here knows which field uses which format.

import { AddrError, parseAddr, tryAddr, type Addr, type Family } from '../../net/index.js'

export const MAX_AS_NUMBER = 4294967295

/**
 * Calico's numorstring.ASNumber: a number, a decimal string, or asdot "A.B" (A*65536 + B, each part 0-65535).
 * 0 is refused: Calico reads it as "not set", so writing it is always a mistake.
 */
export function parseASNumber(value: unknown): number | string {
  let n: number
  if (typeof value === 'number') {
    n = value
  } else if (typeof value === 'string') {
    const dot = /^(0|[1-9][0-9]{0,4})\.(0|[1-9][0-9]{0,4})$/.exec(value)
    if (dot !== null) {
      const hi = Number(dot[1])
      const lo = Number(dot[2])
      if (hi > 65535 || lo > 65535) return `asdot AS number ${JSON.stringify(value)} has a part above 65535`
      n = hi * 65536 + lo
    } else if (/^[0-9]+$/.test(value)) {
      n = Number(value)
    } else {
      return `${JSON.stringify(value)} is not an AS number (use 1-4294967295 or asdot "A.B")`
    }
  } else {
    return `expected an AS number, got ${describeValue(value)}`
  }
  if (!Number.isInteger(n)) return `AS number ${String(value)} is not an integer`
  if (n < 1 || n > MAX_AS_NUMBER) return `AS number ${String(value)} is out of range 1-${MAX_AS_NUMBER}`
  return n
}

/** `aa:nn` (standard, 16-bit parts) or `aa:nn:mm` (large, 32-bit parts). */
export function checkCommunity(value: string): string | undefined {
  const parts = value.split(':')
  const limit = parts.length === 2 ? 65535 : parts.length === 3 ? MAX_AS_NUMBER : -1
  if (limit < 0 || !parts.every((p) => /^(0|[1-9][0-9]*)$/.test(p) && Number(p) <= limit)) {
    return `${JSON.stringify(value)} is not a community (aa:nn with 16-bit parts, or aa:nn:mm with 32-bit parts)`
  }
  return undefined
}

const DNS_LABEL = '[a-z0-9]([-a-z0-9]*[a-z0-9])?'
const DNS_SUBDOMAIN = new RegExp(`^${DNS_LABEL}(\\.${DNS_LABEL})*$`)

/** Kubernetes DNS-1123 subdomain, the form of every Calico resource name. */
export function checkName(name: string): string | undefined {
  if (name.length > 253) return `name is too long by ${name.length - 253} characters (at most 253)`
  if (!DNS_SUBDOMAIN.test(name)) {
    return `${JSON.stringify(name)} must consist of lower case alphanumeric characters, '-' or '.', and start and end with an alphanumeric`
  }
  return undefined
}

const LABEL_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/

/** Kubernetes qualified name: `[prefix/]name`, prefix a DNS subdomain, name at most 63 characters. */
export function checkLabelKey(key: string): string | undefined {
  const slash = key.lastIndexOf('/')
  const prefix = slash >= 0 ? key.slice(0, slash) : undefined
  const name = slash >= 0 ? key.slice(slash + 1) : key
  if (prefix !== undefined && (prefix === '' || checkName(prefix) !== undefined)) {
    return `label key ${JSON.stringify(key)} has an invalid prefix (must be a DNS subdomain)`
  }
  if (name.length > 63 || !LABEL_NAME.test(name)) {
    return `label key ${JSON.stringify(key)} is invalid (at most 63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric)`
  }
  return undefined
}

export function checkLabelValue(value: string): string | undefined {
  if (value === '') return undefined
  if (value.length > 63 || !LABEL_NAME.test(value)) {
    return `label value ${JSON.stringify(value)} is invalid (at most 63 alphanumerics, '-', '_' or '.', starting and ending alphanumeric)`
  }
  return undefined
}

export interface PeerAddress {
  readonly ip: Addr
  readonly ipText: string
  /** Undefined when the peerIP carries no port: the peer's listenPort (default 179) applies. */
  readonly port: number | undefined
}

/** BGPPeer.peerIP: `<IP>`, `<IPv4>:<port>` or `[<IPv6>]:<port>`, port 1-65535. */
export function parsePeerIP(text: string): PeerAddress | string {
  const bad = `${JSON.stringify(text)} is not a peer address (use <IP>, <IPv4>:<port> or [<IPv6>]:<port>)`
  let ipText = text
  let portText: string | undefined
  const v6 = /^\[([^\]]+)\]:([0-9]+)$/.exec(text)
  const v4 = /^([0-9.]+):([0-9]+)$/.exec(text)
  if (v6 !== null) [, ipText = '', portText] = v6
  else if (v4 !== null) [, ipText = '', portText] = v4
  let ip: Addr
  try {
    ip = parseAddr(ipText, 'peerIP', v6 !== null ? { family: 6 } : {})
  } catch (e) {
    if (!(e instanceof AddrError)) throw e
    return ipText === text ? `${bad}: ${e.reason}` : bad
  }
  if (portText === undefined) return { ip, ipText, port: undefined }
  const port = Number(portText)
  if (!/^[0-9]{1,5}$/.test(portText) || port < 1 || port > 65535) return `${JSON.stringify(text)} has an invalid port (1-65535)`
  return { ip, ipText, port }
}

/** The reason net/ gave for refusing a value, or undefined when `parse` took it; the caller adds the path. */
export function addrReason(parse: () => unknown): string | undefined {
  const r = tryAddr(parse)
  return r instanceof AddrError ? r.reason : undefined
}

/** `parse()`'s value, or undefined when net/ refused it (the field's own check reports why). */
export function parsedOrUndefined<T>(parse: () => T): T | undefined {
  const r = tryAddr(parse)
  return r instanceof AddrError ? undefined : r
}

/** An address, of `family` when given. */
export function checkIP(text: string, family?: Family): string | undefined {
  return addrReason(() => parseAddr(text, 'value', family !== undefined ? { family } : {}))
}

export function checkMAC(text: string): string | undefined {
  return /^([0-9a-fA-F]{2}[:-]){5}[0-9a-fA-F]{2}$/.test(text) ? undefined : `${JSON.stringify(text)} is not a MAC address`
}

/** Interface names (and globs with '*'), at most 15 characters as Linux allows. */
export function checkInterfaceGlob(text: string): string | undefined {
  return /^[a-zA-Z0-9_.*-]{1,15}$/.test(text)
    ? undefined
    : `${JSON.stringify(text)} is not an interface name or glob (1-15 of a-z A-Z 0-9 _ . - *)`
}

export function describeValue(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'a list'
  if (typeof value === 'object') return 'a mapping'
  if (typeof value === 'string') return JSON.stringify(value)
  // eslint-disable-next-line @typescript-eslint/no-base-to-string -- only primitives are left here
  return `${typeof value} ${String(value)}`
}
