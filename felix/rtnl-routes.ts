// rtnetlink dumps of the kernel's route table and devices: the RTM_GETROUTE and RTM_GETLINK dump requests,
// and their multi-part answers read into the same KernelRoute values route-parse.ts makes of `ip -N -json
// route show table T`. Pure bytes in, values out; the socket is route-socket.ts. Malformed input raises an
// error naming the datagram and byte offset.

import { formatIpv4, formatIpv6, type Family } from '../net/index.js'
import type { KernelRoute, NextHop, RouteType } from './kernel-route.js'
import { AF_INET, AF_INET6, align4, IFINFOMSG_LEN, IFLA_IFNAME, NLM_F_REQUEST, NLMSG_ERROR, NLMSG_HDRLEN, RTA_DST, RTA_GATEWAY, RTA_NH_ID, RTA_OIF, RTA_PRIORITY, RTA_TABLE, RTM_GETLINK, RTM_NEWLINK, RTM_NEWROUTE, RTNH_F_ONLINK } from './rtnl.js'

export const RTM_GETROUTE = 26
export const NLMSG_DONE = 3
const NLM_F_DUMP = 0x300
/** Set on a dump's messages when the table changed while it was being dumped: the dump is inconsistent. */
export const NLM_F_DUMP_INTR = 0x10

const AF_UNSPEC = 0
const RTA_MULTIPATH = 9
const RTA_VIA = 18
const RTM_F_CLONED = 0x200
const RTMSG_LEN = 12
const RTNH_LEN = 8
/** The address of an IPv6 route without RTA_DST (::/0). */
const ZERO16 = new Uint8Array(16)
/** An attribute's type without NLA_F_NESTED and NLA_F_NET_BYTEORDER. */
const NLA_TYPE_MASK = 0x3fff

/** RTN_* (linux/rtnetlink.h) as route-parse.ts names them; any other type is 'other'. */
const RTN_TYPE: readonly RouteType[] = ['other', 'unicast', 'local', 'broadcast', 'other', 'other', 'blackhole', 'unreachable', 'prohibit', 'throw']

export class RtnlDumpError extends Error {
  constructor(
    what: string,
    datagram: number,
    offset: number,
    detail: string,
    /** The kernel's negative errno, when it answered the dump with one. */
    readonly errno?: number,
  ) {
    super(`netlink ${what} dump: datagram ${datagram}, byte ${offset}: ${detail}`)
    this.name = 'RtnlDumpError'
  }
}

function request(type: number, seq: number, body: Uint8Array): Uint8Array {
  const out = new Uint8Array(NLMSG_HDRLEN + body.length)
  const v = new DataView(out.buffer)
  v.setUint32(0, out.length, true)
  v.setUint16(4, type, true)
  v.setUint16(6, NLM_F_REQUEST | NLM_F_DUMP, true)
  v.setUint32(8, seq, true)
  out.set(body, NLMSG_HDRLEN)
  return out
}

/**
 * RTM_GETROUTE dump of one family's routes in `table` (rtm_table and RTA_TABLE). A kernel that checks dump
 * requests strictly answers with that table alone; others answer with every table, and the reader keeps
 * `table` only.
 */
export function routeDumpRequest(family: Family, table: number, seq: number): Uint8Array {
  const body = new Uint8Array(RTMSG_LEN + 8)
  const v = new DataView(body.buffer)
  body[0] = family === 4 ? AF_INET : AF_INET6
  body[4] = table < 256 ? table : 0
  v.setUint16(RTMSG_LEN, 8, true)
  v.setUint16(RTMSG_LEN + 2, RTA_TABLE, true)
  v.setUint32(RTMSG_LEN + 4, table, true)
  return request(RTM_GETROUTE, seq, body)
}

/** RTM_GETLINK dump of every device (index and name). */
export function linkDumpRequest(seq: number): Uint8Array {
  const body = new Uint8Array(IFINFOMSG_LEN)
  body[0] = AF_UNSPEC
  return request(RTM_GETLINK, seq, body)
}

/**
 * Reads one dump's datagrams in order: every message of a type it wants goes to `onMessage` (with the
 * message's start and end), until NLMSG_DONE. An NLMSG_ERROR or a failed NLMSG_DONE raises RtnlDumpError
 * with the kernel's errno; NLM_F_DUMP_INTR on any message sets `interrupted` (the caller dumps again).
 */
export class DumpReader {
  done = false
  interrupted = false
  private datagrams = 0

  constructor(
    private readonly what: string,
    private readonly type: number,
    private readonly onMessage: (view: DataView, buf: Uint8Array, at: number, end: number, datagram: number) => void,
  ) {}

  /** One datagram; true once the dump is done. */
  feed(buf: Uint8Array): boolean {
    const d = ++this.datagrams
    if (this.done) throw new RtnlDumpError(this.what, d, 0, 'a datagram after NLMSG_DONE')
    const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength)
    let at = 0
    while (at < buf.length) {
      if (at + NLMSG_HDRLEN > buf.length) throw new RtnlDumpError(this.what, d, at, `${buf.length - at} bytes left, less than a message header`)
      const len = view.getUint32(at, true)
      if (len < NLMSG_HDRLEN || at + len > buf.length) throw new RtnlDumpError(this.what, d, at, `message length ${len} with ${buf.length - at} bytes left`)
      const type = view.getUint16(at + 4, true)
      if ((view.getUint16(at + 6, true) & NLM_F_DUMP_INTR) !== 0) this.interrupted = true
      if (type === NLMSG_DONE || type === NLMSG_ERROR) {
        const errno = len >= NLMSG_HDRLEN + 4 ? view.getInt32(at + NLMSG_HDRLEN, true) : 0
        if (errno !== 0 || type === NLMSG_ERROR) throw new RtnlDumpError(this.what, d, at, `the kernel answered errno ${-errno}`, errno)
        this.done = true
        return true
      }
      if (type === this.type) this.onMessage(view, buf, at, at + len, d)
      at += align4(len)
    }
    return false
  }
}

/** A dumped route's fields, before any KernelRoute is made of it (the object is reused). */
export interface DumpedRoute {
  family: Family
  table: number
  /** An IPv4 destination's network address, unsigned (0 for IPv6). */
  dst4: number
  /** An IPv6 destination's 16 address bytes: `dst6[dst6At..dst6At+16]` (valid during the call only). */
  dst6: Uint8Array
  dst6At: number
  len: number
  tos: number
  metric: number
  type: RouteType
  protocol: number
  nexthops: readonly NextHop[]
  nhid: number | undefined
}

/**
 * Shown every route of the table as it is read; false when the route needs no KernelRoute (the caller has
 * accounted for it), true to keep it among the routes read.
 */
export type DumpFilter = (r: DumpedRoute) => boolean

/** Device names by index from an RTM_GETLINK dump. */
export function linkDumpReader(): { reader: DumpReader; links: Map<number, string> } {
  const links = new Map<number, string>()
  const decoder = new TextDecoder()
  const reader = new DumpReader('link', RTM_NEWLINK, (view, buf, at, end, d) => {
    if (end - at < NLMSG_HDRLEN + IFINFOMSG_LEN) throw new RtnlDumpError('link', d, at, `RTM_NEWLINK of ${end - at} bytes, shorter than its ifinfomsg`)
    const index = view.getInt32(at + NLMSG_HDRLEN + 4, true)
    for (let a = at + NLMSG_HDRLEN + IFINFOMSG_LEN; a + 4 <= end; ) {
      const alen = view.getUint16(a, true)
      if (alen < 4 || a + alen > end) throw new RtnlDumpError('link', d, a, `attribute length ${alen} with ${end - a} bytes left in its message`)
      if ((view.getUint16(a + 2, true) & NLA_TYPE_MASK) === IFLA_IFNAME) {
        let z = a + 4
        while (z < a + alen && buf[z] !== 0) z++
        links.set(index, decoder.decode(buf.subarray(a + 4, z)))
      }
      a += align4(alen)
    }
  })
  return { reader, links }
}

/**
 * Routes of `family` in `table` from an RTM_GETROUTE dump, as parseRouteJson makes them of `ip -N -json`:
 * devices named through `links` (`if<N>` for an index it lacks, as ip prints it), cached routes left out
 * as ip leaves them out, and hops that are alike shared between routes.
 */
export function routeDumpReader(family: Family, table: number, links: ReadonlyMap<number, string>, filter?: DumpFilter): { reader: DumpReader; routes: KernelRoute[]; unknownLinks: () => number } {
  const p = new RouteMessages(family, table, links, filter)
  const reader = new DumpReader('route', RTM_NEWROUTE, (view, buf, at, end, d) => p.message(view, buf, at, end, d))
  return { reader, routes: p.routes, unknownLinks: () => p.unknownLinks }
}

/** One dump's route messages, read one at a time into `routes` (state in fields: no closure per route). */
class RouteMessages {
  readonly routes: KernelRoute[] = []
  /** Hops made through a device index `links` lacks (each counted once). */
  unknownLinks = 0
  private readonly af: number
  private readonly alen: number
  /** Gateway texts by address: routes share a few gateways. */
  private readonly v4Text = new Map<number, string>()
  /** Hops, by device index and onlink (index * 2 + onlink), then gateway text ('' for none). */
  private readonly hops = new Map<number, Map<string, NextHop>>()
  /** The one-hop lists of single-path routes, by hop: shared, as the hops are. */
  private readonly single = new Map<NextHop, readonly NextHop[]>()
  private view: DataView = new DataView(new ArrayBuffer(0))
  private buf: Uint8Array = new Uint8Array(0)
  private d = 0
  private readonly dumped: DumpedRoute = { family: 4, table: 0, dst4: 0, dst6: ZERO16, dst6At: 0, len: 0, tos: 0, metric: 0, type: 'unicast', protocol: 0, nexthops: [], nhid: undefined }

  constructor(
    private readonly family: Family,
    private readonly table: number,
    private readonly links: ReadonlyMap<number, string>,
    private readonly filter: DumpFilter | undefined,
  ) {
    this.af = family === 4 ? AF_INET : AF_INET6
    this.alen = family === 4 ? 4 : 16
  }

  private error(offset: number, detail: string): RtnlDumpError {
    return new RtnlDumpError('route', this.d, offset, detail)
  }

  message(view: DataView, buf: Uint8Array, at: number, end: number, d: number): void {
    this.view = view
    this.buf = buf
    this.d = d
    if (end - at < NLMSG_HDRLEN + RTMSG_LEN) throw this.error(at, `RTM_NEWROUTE of ${end - at} bytes, shorter than its rtmsg`)
    const m = at + NLMSG_HDRLEN
    if (buf[m] !== this.af) return
    const flags = view.getUint32(m + 8, true)
    if ((flags & RTM_F_CLONED) !== 0) return
    let t = buf[m + 4] as number
    let dst6At = -1
    let dst4 = 0
    let oif = 0
    let gateway: string | undefined
    let metric = 0
    let nhid: number | undefined
    let multipath = -1
    let multipathEnd = 0
    for (let a = m + RTMSG_LEN; a + 4 <= end; ) {
      const len = view.getUint16(a, true)
      if (len < 4 || a + len > end) throw this.error(a, `attribute length ${len} with ${end - a} bytes left in its message`)
      const type = view.getUint16(a + 2, true) & NLA_TYPE_MASK
      if (type === RTA_DST) {
        if (this.family === 6) {
          if (len - 4 < 16) throw this.error(a, `RTA_DST of ${len - 4} bytes, expected 16`)
          dst6At = a + 4
        } else if (len < 8) throw this.error(a, `RTA_DST of ${len - 4} bytes, expected 4`)
        else dst4 = view.getUint32(a + 4, false)
      }
      else if (type === RTA_GATEWAY) gateway = this.address(a, len, 'RTA_GATEWAY')
      else if (type === RTA_VIA) gateway = this.via(a, len)
      else if (type === RTA_OIF) oif = this.u32(a, len, 'RTA_OIF')
      else if (type === RTA_PRIORITY) metric = this.u32(a, len, 'RTA_PRIORITY')
      else if (type === RTA_TABLE) t = this.u32(a, len, 'RTA_TABLE')
      else if (type === RTA_NH_ID) nhid = this.u32(a, len, 'RTA_NH_ID')
      else if (type === RTA_MULTIPATH) {
        multipath = a + 4
        multipathEnd = a + len
      }
      a += align4(len)
    }
    if (t !== this.table) return
    const type = RTN_TYPE[buf[m + 7] as number] ?? 'other'
    let nexthops: readonly NextHop[]
    if (multipath >= 0) nexthops = this.multipathHops(multipath, multipathEnd)
    // IPv6 shows these on `lo`, as parseRouteJson knows: not part of the route's identity.
    else if (type === 'blackhole' || type === 'unreachable' || type === 'prohibit') nexthops = []
    else {
      const h = this.hop(gateway, oif, (flags & RTNH_F_ONLINK) !== 0)
      let one = this.single.get(h)
      if (one === undefined) this.single.set(h, (one = [h]))
      nexthops = one
    }
    const family = this.family
    const tos = buf[m + 3] as number
    const protocol = buf[m + 5] as number
    if (this.filter !== undefined) {
      const r = this.dumped
      r.family = family
      r.table = t
      r.dst4 = dst4
      r.dst6 = dst6At >= 0 ? buf : ZERO16
      r.dst6At = dst6At >= 0 ? dst6At : 0
      r.len = buf[m + 1] as number
      r.tos = tos
      r.metric = metric
      r.type = type
      r.protocol = protocol
      r.nexthops = nexthops
      r.nhid = nhid
      if (!this.filter(r)) return
    }
    const prefix = family === 4 ? formatIpv4(dst4) : dst6At >= 0 ? formatIpv6(buf, dst6At) : '::'
    const text = `${prefix}/${buf[m + 1] as number}`
    this.routes.push(nhid !== undefined ? { family, table: t, dst: text, tos, metric, type, protocol, nexthops, nhid } : { family, table: t, dst: text, tos, metric, type, protocol, nexthops })
  }

  private u32(a: number, len: number, name: string): number {
    if (len < 8) throw this.error(a, `${name} of ${len - 4} bytes, expected 4`)
    return this.view.getUint32(a + 4, true)
  }

  /** A gateway attribute of the route's family. */
  private address(a: number, len: number, name: string): string {
    if (len - 4 < this.alen) throw this.error(a, `${name} of ${len - 4} bytes, expected ${this.alen}`)
    return this.addressText(a + 4, this.family)
  }

  /** RTA_VIA: a gateway of either family (an IPv4 route through an IPv6 neighbour). */
  private via(a: number, len: number): string {
    const viaFamily = len >= 6 ? this.view.getUint16(a + 4, true) : -1
    const want = viaFamily === AF_INET ? 4 : viaFamily === AF_INET6 ? 16 : -1
    if (want < 0 || len - 6 < want) throw this.error(a, `RTA_VIA of ${len - 4} bytes for address family ${viaFamily}`)
    return this.addressText(a + 6, want === 4 ? 4 : 6)
  }

  private multipathHops(from: number, to: number): NextHop[] {
    const view = this.view
    const out: NextHop[] = []
    for (let h = from; h + RTNH_LEN <= to; ) {
      const hlen = view.getUint16(h, true)
      if (hlen < RTNH_LEN || h + hlen > to) throw this.error(h, `rtnexthop length ${hlen} with ${to - h} bytes left in RTA_MULTIPATH`)
      let gw: string | undefined
      for (let a = h + RTNH_LEN; a + 4 <= h + hlen; ) {
        const len = view.getUint16(a, true)
        if (len < 4 || a + len > h + hlen) throw this.error(a, `attribute length ${len} with ${h + hlen - a} bytes left in its rtnexthop`)
        const type = view.getUint16(a + 2, true) & NLA_TYPE_MASK
        if (type === RTA_GATEWAY) gw = this.address(a, len, 'RTA_GATEWAY')
        else if (type === RTA_VIA) gw = this.via(a, len)
        a += align4(len)
      }
      out.push(this.hop(gw, view.getInt32(h + 4, true), ((this.buf[h + 2] as number) & RTNH_F_ONLINK) !== 0))
      h += align4(hlen)
    }
    return out
  }

  private addressText(at: number, f: Family): string {
    if (f === 6) return formatIpv6(this.buf, at)
    const n = this.view.getUint32(at, false)
    let s = this.v4Text.get(n)
    if (s === undefined) this.v4Text.set(n, (s = formatIpv4(n)))
    return s
  }

  private hop(gateway: string | undefined, oif: number, onlink: boolean): NextHop {
    const slot = oif * 2 + (onlink ? 1 : 0)
    let byGateway = this.hops.get(slot)
    if (byGateway === undefined) this.hops.set(slot, (byGateway = new Map<string, NextHop>()))
    let h = byGateway.get(gateway ?? '')
    if (h === undefined) {
      let dev = oif === 0 ? undefined : this.links.get(oif)
      if (oif !== 0 && dev === undefined) {
        this.unknownLinks++
        dev = `if${oif}`
      }
      // The shapes parseRouteJson makes: no key for an absent gateway or device.
      h = gateway !== undefined && dev !== undefined ? { gateway, dev, onlink } : dev !== undefined ? { dev, onlink } : gateway !== undefined ? { gateway, onlink } : { onlink }
      byGateway.set(gateway ?? '', h)
    }
    return h
  }
}
