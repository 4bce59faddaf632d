// rtnetlink requests for a pod's links: a veth pair, a link's alias, state and namespace, its deletion,
// an address, a plain route and a neighbour entry, each described as a LinkOp and written as the message
// `ip` would send for it (linux/rtnetlink.h, if_link.h, veth.h, if_addr.h, neighbour.h). Pure bytes; the
// socket is netns-rtnl.ts.

import { AF_INET, AF_INET6, IFINFOMSG_LEN, IFLA_IFNAME, NLM_F_ACK, NLM_F_CREATE, NLM_F_REPLACE, NLM_F_REQUEST, RT_SCOPE_LINK, RT_SCOPE_UNIVERSE, RTA_DST, RTA_GATEWAY, RTA_OIF, RTM_NEWLINK, RTM_NEWROUTE, RtnlWriter } from './rtnl.js'

export const RTM_DELLINK = 17
export const RTM_NEWADDR = 20
export const RTM_NEWNEIGH = 28
const NLM_F_EXCL = 0x200

const IFLA_ADDRESS = 1
const IFLA_MTU = 4
const IFLA_LINKINFO = 18
const IFLA_IFALIAS = 20
const IFLA_NET_NS_FD = 28
const IFLA_INFO_KIND = 1
const IFLA_INFO_DATA = 2
const VETH_INFO_PEER = 1
const IFF_UP = 1

const IFA_ADDRESS = 1
const IFA_LOCAL = 2
const IFA_FLAGS = 8
const IFA_F_NODAD = 0x02
const IFADDRMSG_LEN = 8

const NDA_DST = 1
const NDA_LLADDR = 2
const NUD_PERMANENT = 0x80
const NDMSG_LEN = 12

/** `ip route add`'s protocol and table. */
const RTPROT_BOOT = 3
const RT_TABLE_MAIN = 254

/**
 * One request about a pod's links, by device name. An `addr`, `route` or `neigh` needs its device's index
 * (the writer's `index`).
 */
export type LinkOp =
  /**
   * `name` in the socket's namespace and its peer `peer` made at once, straight in the namespace at path
   * `peerNetns` when given (the writer's `netnsFd` has it open), else beside it.
   */
  | { readonly op: 'veth'; readonly name: string; readonly mac: string; readonly peer: string; readonly peerMac: string; readonly mtu: number; readonly peerNetns?: string }
  | { readonly op: 'alias'; readonly dev: string; readonly alias: string }
  | { readonly op: 'up'; readonly dev: string; readonly mtu?: number }
  | { readonly op: 'del'; readonly dev: string }
  /** `address` bare; `nodad` for IPv6 only. */
  | { readonly op: 'addr'; readonly dev: string; readonly address: string; readonly prefixLength: number; readonly nodad?: boolean }
  /** `dst` undefined is the default route of `gateway`'s family; without a gateway, a link-scope route. */
  | { readonly op: 'route'; readonly dev: string; readonly dst: string | undefined; readonly prefixLength: number; readonly gateway?: string }
  /** A permanent entry, replacing any. */
  | { readonly op: 'neigh'; readonly dev: string; readonly address: string; readonly lladdr: string }

const isV6 = (address: string): boolean => address.includes(':')

/**
 * The `ip -batch` line an op stands for, for messages. A link route is written
 * `scope link` for IPv4 only: IPv6 routes have no scope, and `ip` writes the same message either way.
 */
export function linkOpText(o: LinkOp): string {
  switch (o.op) {
    case 'veth': return `link add ${o.name} address ${o.mac} mtu ${o.mtu} type veth peer name ${o.peer} address ${o.peerMac} mtu ${o.mtu}${o.peerNetns !== undefined ? ` netns ${o.peerNetns}` : ''}`
    case 'alias': return `link set ${o.dev} alias ${o.alias}`
    case 'up': return `link set ${o.dev}${o.mtu !== undefined ? ` mtu ${o.mtu}` : ''} up`
    case 'del': return `link del ${o.dev}`
    case 'addr': return `addr add ${o.address}/${o.prefixLength} dev ${o.dev}${o.nodad === true ? ' nodad' : ''}`
    case 'route': {
      const link = o.gateway === undefined && o.dst !== undefined && !isV6(o.dst) ? ' scope link' : ''
      return `route add ${o.dst === undefined ? 'default' : `${o.dst}/${o.prefixLength}`}${o.gateway !== undefined ? ` via ${o.gateway}` : ''} dev ${o.dev}${link}`
    }
    case 'neigh': return `neigh replace ${o.address} lladdr ${o.lladdr} dev ${o.dev} nud permanent`
    default: return unreachable(o)
  }
}

function unreachable(o: never): never {
  throw new Error(`link op ${JSON.stringify(o)} is not known`)
}

/** The devices whose indexes an op's message carries. */
export function linkOpNeedsIndex(o: LinkOp): string | undefined {
  return o.op === 'addr' || o.op === 'route' || o.op === 'neigh' ? o.dev : undefined
}

function macBytes(text: string, field: string): Uint8Array {
  const parts = text.split(':')
  if (parts.length !== 6 || !parts.every((p) => /^[0-9a-fA-F]{2}$/.test(p))) throw new Error(`${field}: "${text}" is not a MAC address`)
  return Uint8Array.from(parts.map((p) => parseInt(p, 16)))
}

/** Writes LinkOps as rtnetlink requests, each asking for an acknowledgement. */
export class LinkWriter extends RtnlWriter {
  constructor(
    /** A device's index in the socket's namespace; undefined when it is not known there. */
    private readonly index: (dev: string) => number | undefined = () => undefined,
    /** The namespace at a path, as an open file descriptor, for a veth's peer made there. */
    private readonly netnsFd: (path: string) => number | undefined = () => undefined,
  ) {
    super(1024)
  }

  /** Appends `o` under sequence number `seq`; throws naming the op when it cannot be written. */
  write(o: LinkOp, seq: number): void {
    switch (o.op) {
      case 'veth': return this.veth(o, seq)
      case 'alias': return this.setLink(seq, o.dev, (w) => w.attrText(IFLA_IFALIAS, o.alias, false))
      case 'up': return this.setLink(seq, o.dev, (w) => (o.mtu !== undefined ? w.attrU32(IFLA_MTU, o.mtu) : undefined), IFF_UP)
      case 'del': {
        const at = this.begin(RTM_DELLINK, NLM_F_REQUEST | NLM_F_ACK, seq)
        this.ifinfomsg(0, 0, 0)
        this.attrText(IFLA_IFNAME, o.dev, true)
        this.end(at)
        return
      }
      case 'addr': return this.addr(o, seq)
      case 'route': return this.route(o, seq)
      case 'neigh': return this.neigh(o, seq)
      default: return unreachable(o)
    }
  }

  private ifIndex(o: LinkOp & { readonly dev: string }): number {
    const i = this.index(o.dev)
    if (i === undefined) throw new Error(`${linkOpText(o)}: no device ${o.dev}`)
    return i
  }

  private ifinfomsg(index: number, flags: number, change: number): void {
    const at = this.length
    this.buf.fill(0, at, at + IFINFOMSG_LEN) // AF_UNSPEC, type 0
    this.view.setInt32(at + 4, index, true)
    this.view.setUint32(at + 8, flags, true)
    this.view.setUint32(at + 12, change, true)
    this.length = at + IFINFOMSG_LEN
  }

  /** A string attribute, NUL-terminated when `nul` (names) or not (an alias, a link kind, as `ip` sends them). */
  private attrText(type: number, text: string, nul: boolean): void {
    const bytes = new TextEncoder().encode(nul ? text + '\0' : text)
    this.attrBytes(type, bytes)
  }

  /** Opens a nested attribute; `close` writes its length. */
  private nest(type: number): number {
    this.room(4)
    const at = this.length
    this.view.setUint16(at + 2, type, true)
    this.length = at + 4
    return at
  }

  private close(at: number): void {
    this.view.setUint16(at, this.length - at, true)
  }

  /** `ip link set DEV ...` (by name): what `attrs` writes, and IFF_UP when `up` is set. */
  private setLink(seq: number, dev: string, attrs: (w: this) => void, up = 0): void {
    const at = this.begin(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK, seq)
    this.ifinfomsg(0, up, up)
    this.attrText(IFLA_IFNAME, dev, true)
    attrs(this)
    this.end(at)
  }

  private veth(o: LinkOp & { readonly op: 'veth' }, seq: number): void {
    const mac = macBytes(o.mac, `${linkOpText(o)}: mac`)
    const peerMac = macBytes(o.peerMac, `${linkOpText(o)}: peer mac`)
    const peerNs = o.peerNetns === undefined ? undefined : this.netnsFd(o.peerNetns)
    if (o.peerNetns !== undefined && peerNs === undefined) throw new Error(`${linkOpText(o)}: ${o.peerNetns} is not open`)
    const at = this.begin(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, seq)
    this.ifinfomsg(0, 0, 0)
    this.attrText(IFLA_IFNAME, o.name, true)
    this.attrBytes(IFLA_ADDRESS, mac)
    this.attrU32(IFLA_MTU, o.mtu)
    const info = this.nest(IFLA_LINKINFO)
    this.attrText(IFLA_INFO_KIND, 'veth', false)
    const data = this.nest(IFLA_INFO_DATA)
    const peer = this.nest(VETH_INFO_PEER)
    this.room(IFINFOMSG_LEN + 64)
    this.ifinfomsg(0, 0, 0)
    this.attrText(IFLA_IFNAME, o.peer, true)
    this.attrBytes(IFLA_ADDRESS, peerMac)
    this.attrU32(IFLA_MTU, o.mtu)
    if (peerNs !== undefined) this.attrU32(IFLA_NET_NS_FD, peerNs)
    this.close(peer)
    this.close(data)
    this.close(info)
    this.end(at)
  }

  private addr(o: LinkOp & { readonly op: 'addr' }, seq: number): void {
    const index = this.ifIndex(o)
    const v6 = isV6(o.address)
    const at = this.begin(RTM_NEWADDR, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, seq)
    const m = this.length
    const flags = v6 && o.nodad === true ? IFA_F_NODAD : 0
    this.buf[m] = v6 ? AF_INET6 : AF_INET
    this.buf[m + 1] = o.prefixLength
    this.buf[m + 2] = flags
    this.buf[m + 3] = RT_SCOPE_UNIVERSE
    this.view.setUint32(m + 4, index, true)
    this.length = m + IFADDRMSG_LEN
    for (const type of [IFA_LOCAL, IFA_ADDRESS]) if (!this.attrAddress(type, o.address, o.address.length, v6 ? 6 : 4)) this.badAddress(o, at, o.address)
    if (flags !== 0) this.attrU32(IFA_FLAGS, flags)
    this.end(at)
  }

  private route(o: LinkOp & { readonly op: 'route' }, seq: number): void {
    const index = this.ifIndex(o)
    const v6 = isV6(o.dst ?? o.gateway ?? '')
    const at = this.begin(RTM_NEWROUTE, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, seq)
    const len = o.dst === undefined ? 0 : o.prefixLength
    this.rtmsg(v6 ? AF_INET6 : AF_INET, len, 0, RT_TABLE_MAIN, RTPROT_BOOT, o.gateway === undefined ? RT_SCOPE_LINK : RT_SCOPE_UNIVERSE, 1 /* RTN_UNICAST */, 0)
    if (o.dst !== undefined && !this.attrAddress(RTA_DST, o.dst, o.dst.length, v6 ? 6 : 4)) this.badAddress(o, at, o.dst)
    if (o.gateway !== undefined && !this.attrAddress(RTA_GATEWAY, o.gateway, o.gateway.length, v6 ? 6 : 4)) this.badAddress(o, at, o.gateway)
    this.attrU32(RTA_OIF, index)
    this.end(at)
  }

  private neigh(o: LinkOp & { readonly op: 'neigh' }, seq: number): void {
    const index = this.ifIndex(o)
    const lladdr = macBytes(o.lladdr, `${linkOpText(o)}: lladdr`)
    const v6 = isV6(o.address)
    const at = this.begin(RTM_NEWNEIGH, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_REPLACE, seq)
    const m = this.length
    this.buf.fill(0, m, m + NDMSG_LEN)
    this.buf[m] = v6 ? AF_INET6 : AF_INET
    this.view.setInt32(m + 4, index, true)
    this.view.setUint16(m + 8, NUD_PERMANENT, true)
    this.length = m + NDMSG_LEN
    if (!this.attrAddress(NDA_DST, o.address, o.address.length, v6 ? 6 : 4)) this.badAddress(o, at, o.address)
    this.attrBytes(NDA_LLADDR, lladdr)
    this.end(at)
  }

  private badAddress(o: LinkOp, at: number, text: string): never {
    this.abandon(at)
    throw new Error(`${linkOpText(o)}: "${text}" is not an address of its family`)
  }
}

