// rtnetlink messages for felix's routes: RTM_NEWROUTE (replace) and RTM_DELROUTE built from a KernelRoute,
// RTM_GETLINK to learn a device's index, and the kernel's replies read back. Pure bytes, no socket (that is
// route-socket.ts); field layouts from linux/netlink.h and linux/rtnetlink.h. Messages are written one
// after another into one reusable buffer: a write of 100k routes makes no object per route.

import { parseIpv4, parseIpv6, type Family } from '../net/index.js'
import { defaultMetric, type KernelRoute, type RouteType } from './kernel-route.js'

export const RTM_NEWLINK = 16
export const RTM_GETLINK = 18
export const RTM_NEWROUTE = 24
export const RTM_DELROUTE = 25
export const NLMSG_ERROR = 2

export const NLM_F_REQUEST = 0x1
export const NLM_F_ACK = 0x4
export const NLM_F_REPLACE = 0x100
export const NLM_F_CREATE = 0x400

export const AF_INET = 2
export const AF_INET6 = 10

export const RTA_DST = 1
export const RTA_OIF = 4
export const RTA_GATEWAY = 5
export const RTA_PRIORITY = 6
export const RTA_TABLE = 15
export const RTA_NH_ID = 30
export const IFLA_IFNAME = 3

export const RT_SCOPE_UNIVERSE = 0
export const RT_SCOPE_LINK = 253
const RT_SCOPE_NOWHERE = 255
export const RTNH_F_ONLINK = 4

export const NLMSG_HDRLEN = 16
export const IFINFOMSG_LEN = 16

const RTN: Partial<Record<RouteType, number>> = { unicast: 1, blackhole: 6, unreachable: 7, prohibit: 8, throw: 9 }

/** A device's index by name, for routes that name one; undefined when the device is not known. */
export type LinkIndex = (dev: string) => number | undefined

export const align4 = (n: number): number => (n + 3) & ~3

/**
 * Appends messages to one buffer that grows as needed and is reused from chunk to chunk. A route it cannot
 * express leaves the buffer as it was and makes the call return false.
 */
export class RtnlWriter {
  protected buf: Uint8Array
  protected view: DataView
  length = 0
  /** Where the last whole message starts; -1 before any. */
  private last = -1
  /**
   * The last gateway text written and its bytes: routes through one next hop share its text, so a write
   * of a table through a few gateways parses each once, not once per route.
   */
  private gatewayText: string | undefined
  private gatewayFamily: Family = 4
  private readonly gatewayBytes = new Uint8Array(16)

  /** `size`: the bytes to start with (64 KB holds a chunk of 200 route messages with room to spare). */
  constructor(size = 1 << 16) {
    this.buf = new Uint8Array(size)
    this.view = new DataView(this.buf.buffer)
  }

  /** Empties the buffer (its bytes are reused). */
  reset(): void {
    this.length = 0
    this.last = -1
  }

  /** The messages written since the last reset; valid until the next write or reset. */
  bytes(): Uint8Array {
    return this.buf.subarray(0, this.length)
  }

  /** Asks for an acknowledgement of the last message written (the kernel then answers it even on success). */
  ackLast(): void {
    if (this.last >= 0) this.view.setUint16(this.last + 6, this.view.getUint16(this.last + 6, true) | NLM_F_ACK, true)
  }

  /** The sequence number of the last message written. */
  lastSeq(): number {
    return this.last < 0 ? -1 : this.view.getUint32(this.last + 8, true)
  }

  protected room(n: number): void {
    if (this.length + n <= this.buf.length) return
    const next = new Uint8Array(Math.max(this.buf.length * 2, this.length + n))
    next.set(this.buf.subarray(0, this.length))
    this.buf = next
    this.view = new DataView(next.buffer)
  }

  protected begin(type: number, flags: number, seq: number): number {
    this.room(256)
    const at = this.length
    const v = this.view
    v.setUint32(at, 0, true)
    v.setUint16(at + 4, type, true)
    v.setUint16(at + 6, flags, true)
    v.setUint32(at + 8, seq, true)
    v.setUint32(at + 12, 0, true)
    this.length = at + NLMSG_HDRLEN
    return at
  }

  protected end(at: number): true {
    this.view.setUint32(at, this.length - at, true)
    this.last = at
    return true
  }

  protected abandon(at: number): false {
    this.length = at
    return false
  }

  protected rtmsg(family: number, len: number, tos: number, table: number, protocol: number, scope: number, type: number, flags: number): void {
    const at = this.length
    const b = this.buf
    b[at] = family
    b[at + 1] = len
    b[at + 2] = 0
    b[at + 3] = tos
    b[at + 4] = table < 256 ? table : 0
    b[at + 5] = protocol
    b[at + 6] = scope
    b[at + 7] = type
    this.view.setUint32(at + 8, flags, true)
    this.length = at + 12
  }

  protected attrU32(type: number, v: number): void {
    const at = this.length
    this.view.setUint16(at, 8, true)
    this.view.setUint16(at + 2, type, true)
    this.view.setUint32(at + 4, v >>> 0, true)
    this.length = at + 8
  }

  /**
   * An address attribute from text (`198.18.0.5`, or the address part of `198.18.0.0/26` up to `end`);
   * false when the text is not an address of the family.
   */
  protected attrAddress(type: number, text: string, end: number, family: Family): boolean {
    const at = this.length
    if (family === 6) {
      const bytes = parseIpv6(text.slice(0, end))
      if (bytes === undefined) return false
      this.view.setUint16(at, 20, true)
      this.view.setUint16(at + 2, type, true)
      this.buf.set(bytes, at + 4)
      this.length = at + 20
      return true
    }
    const addr = parseIpv4(text, end)
    if (addr === undefined) return false
    this.view.setUint16(at, 8, true)
    this.view.setUint16(at + 2, type, true)
    this.view.setUint32(at + 4, addr, false)
    this.length = at + 8
    return true
  }

  /** RTA_GATEWAY: the bytes of the last gateway again when the text is the same, else parsed (and kept). */
  private attrGateway(text: string, family: Family): boolean {
    const size = family === 4 ? 4 : 16
    if (text !== this.gatewayText || family !== this.gatewayFamily) {
      const at = this.length
      if (!this.attrAddress(RTA_GATEWAY, text, text.length, family)) return false
      this.gatewayBytes.set(this.buf.subarray(at + 4, at + 4 + size))
      this.gatewayText = text
      this.gatewayFamily = family
      return true
    }
    const at = this.length
    this.view.setUint16(at, 4 + size, true)
    this.view.setUint16(at + 2, RTA_GATEWAY, true)
    this.buf.set(this.gatewayBytes.subarray(0, size), at + 4)
    this.length = at + 4 + size
    return true
  }

  /** RTA_DST from the route's numeric address or bytes when it has them, else from `dst` up to `slash`. */
  private attrDst(r: KernelRoute, slash: number): boolean {
    if (r.dst6 !== undefined && r.family === 6 && r.dst6.length === 16) {
      const at = this.length
      this.view.setUint16(at, 20, true)
      this.view.setUint16(at + 2, RTA_DST, true)
      this.buf.set(r.dst6, at + 4)
      this.length = at + 20
      return true
    }
    if (r.dst4 === undefined || r.family !== 4) return this.attrAddress(RTA_DST, r.dst, slash < 0 ? r.dst.length : slash, r.family)
    const at = this.length
    this.view.setUint16(at, 8, true)
    this.view.setUint16(at + 2, RTA_DST, true)
    this.view.setUint32(at + 4, r.dst4, false)
    this.length = at + 8
    return true
  }

  /** The prefix length of a canonical `addr/len`, or -1; `slash` is where the `/` is. */
  private static prefixLength(dst: string, slash: number, family: Family): number {
    const len = slash < 0 ? (family === 4 ? 32 : 128) : Number(dst.slice(slash + 1))
    return Number.isInteger(len) && len >= 0 && len <= (family === 4 ? 32 : 128) ? len : -1
  }

  /**
   * `ip route replace` of one route as an RTM_NEWROUTE message: through nexthop object `nhid` when given,
   * otherwise with its one hop (a gateway, a device or both, onlink or not). False when the route is beyond
   * what this writes (several hops without an object, a type such as `local`, a device whose index is not
   * known): the caller gives that route to `ip`.
   */
  replace(r: KernelRoute, nhid: number | undefined, seq: number, link: LinkIndex): boolean {
    const type = RTN[r.type]
    if (type === undefined) return false
    const numeric = r.dst4 !== undefined || (r.dst6?.length === 16 && r.dstLen !== undefined)
    const slash = numeric ? -1 : r.dst.indexOf('/')
    const len = numeric ? (r.dstLen ?? 32) : RtnlWriter.prefixLength(r.dst, slash, r.family)
    if (len < 0) return false
    const hop = r.nexthops[0]
    let oif: number | undefined
    if (type === 1 && nhid === undefined) {
      if (r.nexthops.length !== 1 || hop === undefined || (hop.gateway === undefined && hop.dev === undefined)) return false
      if (hop.dev !== undefined && (oif = link(hop.dev)) === undefined) return false
    } else if (type !== 1 && r.nexthops.length !== 0) return false
    const at = this.begin(RTM_NEWROUTE, NLM_F_REQUEST | NLM_F_CREATE | NLM_F_REPLACE, seq)
    const gateway = nhid === undefined ? hop?.gateway : undefined
    // A route straight onto a device (no gateway, no object) is a link-scope route, as `ip` makes it.
    const scope = type === 1 && nhid === undefined && gateway === undefined ? RT_SCOPE_LINK : RT_SCOPE_UNIVERSE
    this.rtmsg(r.family === 4 ? AF_INET : AF_INET6, len, r.tos, r.table, r.protocol, scope, type, hop?.onlink === true && nhid === undefined ? RTNH_F_ONLINK : 0)
    if (!this.attrDst(r, slash)) return this.abandon(at)
    this.attrU32(RTA_TABLE, r.table)
    if (r.metric !== defaultMetric(r.family)) this.attrU32(RTA_PRIORITY, r.metric)
    if (nhid !== undefined) this.attrU32(RTA_NH_ID, nhid)
    if (gateway !== undefined && !this.attrGateway(gateway, r.family)) return this.abandon(at)
    if (oif !== undefined) this.attrU32(RTA_OIF, oif)
    return this.end(at)
  }

  /**
   * `ip route delete` of one route as an RTM_DELROUTE message, matched as deleteLine matches it: by key
   * (table, prefix, tos, metric), protocol and type, and by device for a route straight onto one. False
   * when that device's index is not known (it may be gone, taking the route with it): the caller uses `ip`.
   */
  delete(r: KernelRoute, seq: number, link: LinkIndex): boolean {
    const numeric = r.dst4 !== undefined || (r.dst6?.length === 16 && r.dstLen !== undefined)
    const slash = numeric ? -1 : r.dst.indexOf('/')
    const len = numeric ? (r.dstLen ?? 32) : RtnlWriter.prefixLength(r.dst, slash, r.family)
    if (len < 0) return false
    const [only] = r.nexthops
    let oif: number | undefined
    if (r.nexthops.length === 1 && only?.dev !== undefined && only.gateway === undefined && (oif = link(only.dev)) === undefined) return false
    const at = this.begin(RTM_DELROUTE, NLM_F_REQUEST, seq)
    // Scope NOWHERE matches any scope, type 0 any type: what `ip route delete` sends without a type word.
    this.rtmsg(r.family === 4 ? AF_INET : AF_INET6, len, r.tos, r.table, r.protocol, RT_SCOPE_NOWHERE, r.type === 'unicast' ? 0 : (RTN[r.type] ?? 0), 0)
    if (!this.attrDst(r, slash)) return this.abandon(at)
    this.attrU32(RTA_TABLE, r.table)
    this.attrU32(RTA_PRIORITY, r.metric)
    if (oif !== undefined) this.attrU32(RTA_OIF, oif)
    return this.end(at)
  }

  /** RTM_GETLINK for one device by name; the answer is an RTM_NEWLINK (see readReplies) or an error. */
  getLink(name: string, seq: number): void {
    const at = this.begin(RTM_GETLINK, NLM_F_REQUEST, seq)
    this.buf.fill(0, this.length, this.length + IFINFOMSG_LEN) // AF_UNSPEC, by name (index 0)
    this.length += IFINFOMSG_LEN
    this.attrBytes(IFLA_IFNAME, new TextEncoder().encode(name + '\0'))
    this.end(at)
  }

  /** An attribute of any bytes, padded to 4 with zeros. */
  protected attrBytes(type: number, bytes: Uint8Array): void {
    this.room(4 + bytes.length + 3)
    const at = this.length
    this.view.setUint16(at, 4 + bytes.length, true)
    this.view.setUint16(at + 2, type, true)
    this.buf.set(bytes, at + 4)
    this.length = at + align4(4 + bytes.length)
    this.buf.fill(0, at + 4 + bytes.length, this.length)
  }
}

export interface Reply {
  readonly type: number
  readonly seq: number
  /** NLMSG_ERROR: 0 for an acknowledgement, else a negative errno. */
  readonly error?: number
  /** RTM_NEWLINK: the device's index. */
  readonly ifindex?: number
}

/**
 * The messages in one datagram from the kernel. A header whose length runs past the end, or is shorter
 * than a header, stops the walk with an error naming its byte offset.
 */
export function readReplies(buf: Uint8Array): Reply[] {
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength)
  const out: Reply[] = []
  for (let at = 0; at + NLMSG_HDRLEN <= buf.length; ) {
    const len = view.getUint32(at, true)
    if (len < NLMSG_HDRLEN || at + len > buf.length) throw new Error(`netlink reply: message at byte ${at} has length ${len} of ${buf.length - at} left`)
    const type = view.getUint16(at + 4, true)
    const seq = view.getUint32(at + 8, true)
    if (type === NLMSG_ERROR && len >= NLMSG_HDRLEN + 4) out.push({ type, seq, error: view.getInt32(at + NLMSG_HDRLEN, true) })
    else if (type === RTM_NEWLINK && len >= NLMSG_HDRLEN + IFINFOMSG_LEN) out.push({ type, seq, ifindex: view.getInt32(at + NLMSG_HDRLEN + 4, true) })
    else out.push({ type, seq })
    at += align4(len)
  }
  return out
}
