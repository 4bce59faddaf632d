// The rtnetlink dumps felix reads its table with, from hand-built bytes (linux/rtnetlink.h layouts): each
// form of route read into the KernelRoute parseRouteJson makes of `ip -N -json`, the routes the read
// leaves out, multi-part dumps, interrupted and refused dumps, and malformed bytes named by offset.
import t from 'tap'
import type { KernelRoute } from '../../felix/kernel-route.js'
import { parseIpv6 } from '../../net/index.js'
import { linkDumpReader, linkDumpRequest, NLM_F_DUMP_INTR, NLMSG_DONE, routeDumpReader, routeDumpRequest, RTM_GETROUTE } from '../../felix/rtnl-routes.js'
import { NLMSG_ERROR, RTM_NEWLINK, RTM_NEWROUTE } from '../../felix/rtnl.js'

const u16 = (n: number): number[] => [n & 255, (n >>> 8) & 255]
const u32 = (n: number): number[] => [n & 255, (n >>> 8) & 255, (n >>> 16) & 255, (n >>> 24) & 255]
const pad = (b: number[]): number[] => [...b, ...new Array<number>((4 - (b.length % 4)) % 4).fill(0)]
const attr = (type: number, payload: number[]): number[] => pad([...u16(4 + payload.length), ...u16(type), ...payload])
const v4 = (s: string): number[] => s.split('.').map(Number)
const v6 = (s: string): number[] => [...(parseIpv6(s) as Uint8Array)]
const msg = (type: number, body: number[], flags = 0x2 /* NLM_F_MULTI */, seq = 7): number[] => [...u32(16 + body.length), ...u16(type), ...u16(flags), ...u32(seq), ...u32(0), ...body]
const done = (errno = 0): number[] => msg(NLMSG_DONE, u32(errno >>> 0))

interface Rtm {
  family?: number
  len: number
  tos?: number
  table?: number
  proto?: number
  scope?: number
  type?: number
  flags?: number
}
const rtmsg = (r: Rtm): number[] => [r.family ?? 2, r.len, 0, r.tos ?? 0, r.table ?? 254, r.proto ?? 87, r.scope ?? 0, r.type ?? 1, ...u32(r.flags ?? 0)]
const route = (r: Rtm, ...attrs: number[][]): number[] => msg(RTM_NEWROUTE, [...rtmsg(r), ...attrs.flat()])
const DST = 1
const OIF = 4
const GW = 5
const PRIO = 6
const MP = 9
const TABLE = 15
const VIA = 18
const NHID = 30
const hopBytes = (flags: number, ifindex: number, ...attrs: number[][]): number[] => {
  const body = attrs.flat()
  return [...u16(8 + body.length), flags, 0, ...u32(ifindex), ...body]
}

const links = new Map([
  [1, 'lo'],
  [2, 'eth0'],
  [7, 'vxlan.pinto'],
])
const kr = (over: Partial<KernelRoute>): KernelRoute => ({ family: 4, table: 254, dst: '198.18.0.0/26', tos: 0, metric: 0, type: 'unicast', protocol: 87, nexthops: [], ...over })

/** The routes one dump of `datagrams` yields (read for `family` and `table`). */
function read(datagrams: number[][], family: 4 | 6 = 4, table = 254): { routes: KernelRoute[]; interrupted: boolean; unknown: number } {
  const d = routeDumpReader(family, table, links)
  datagrams.forEach((b, i) => t.equal(d.reader.feed(Uint8Array.from(b)), i === datagrams.length - 1, `datagram ${i + 1} ${i === datagrams.length - 1 ? 'ends' : 'does not end'} the dump`))
  return { routes: d.routes, interrupted: d.reader.interrupted, unknown: d.unknownLinks() }
}

const CASES: [string, number[], KernelRoute[], (4 | 6)?, number?][] = [
  ['unicast via a gateway, a device and a metric', route({ len: 26 }, attr(TABLE, u32(254)), attr(DST, v4('198.18.0.0')), attr(PRIO, u32(100)), attr(GW, v4('192.0.2.12')), attr(OIF, u32(2))), [kr({ metric: 100, nexthops: [{ gateway: '192.0.2.12', dev: 'eth0', onlink: false }] })]],
  ['a device route of another protocol', route({ len: 24, proto: 2, scope: 253 }, attr(TABLE, u32(254)), attr(DST, v4('192.0.2.0')), attr(OIF, u32(2))), [kr({ dst: '192.0.2.0/24', protocol: 2, nexthops: [{ dev: 'eth0', onlink: false }] })]],
  ['onlink from rtm_flags', route({ len: 26, flags: 4 }, attr(DST, v4('198.18.48.64')), attr(GW, v4('198.18.48.65')), attr(OIF, u32(7))), [kr({ dst: '198.18.48.64/26', nexthops: [{ gateway: '198.18.48.65', dev: 'vxlan.pinto', onlink: true }] })]],
  [
    'ECMP: RTA_MULTIPATH, onlink per hop',
    route({ len: 26 }, attr(TABLE, u32(254)), attr(DST, v4('198.18.0.128')), attr(MP, [...hopBytes(0, 2, attr(GW, v4('192.0.2.12'))), ...hopBytes(4, 7, attr(GW, v4('192.0.2.13')))])),
    [kr({ dst: '198.18.0.128/26', nexthops: [{ gateway: '192.0.2.12', dev: 'eth0', onlink: false }, { gateway: '192.0.2.13', dev: 'vxlan.pinto', onlink: true }] })],
  ],
  ['a blackhole has no hop', route({ len: 26, type: 6 }, attr(TABLE, u32(254)), attr(DST, v4('198.18.0.0'))), [kr({ type: 'blackhole' })]],
  ['an IPv6 unreachable on lo has no hop', route({ family: 10, len: 64, type: 7 }, attr(TABLE, u32(254)), attr(DST, v6('2001:db8:9::')), attr(PRIO, u32(1024)), attr(OIF, u32(1))), [kr({ family: 6, dst: '2001:db8:9::/64', metric: 1024, type: 'unreachable' })], 6],
  ['IPv6 through a link-local gateway', route({ family: 10, len: 122 }, attr(TABLE, u32(254)), attr(DST, v6('2001:db8:1:0:1::')), attr(PRIO, u32(1024)), attr(GW, v6('fe80::1')), attr(OIF, u32(2))), [kr({ family: 6, dst: '2001:db8:1:0:1::/122', metric: 1024, nexthops: [{ gateway: 'fe80::1', dev: 'eth0', onlink: false }] })], 6],
  ['a route through a nexthop object', route({ len: 32 }, attr(DST, v4('198.18.1.7')), attr(NHID, u32(0x57000001)), attr(GW, v4('192.0.2.13')), attr(OIF, u32(2))), [kr({ dst: '198.18.1.7/32', nhid: 0x57000001, nexthops: [{ gateway: '192.0.2.13', dev: 'eth0', onlink: false }] })]],
  ['default: no RTA_DST', route({ len: 0, proto: 3 }, attr(GW, v4('192.0.2.1')), attr(OIF, u32(2))), [kr({ dst: '0.0.0.0/0', protocol: 3, nexthops: [{ gateway: '192.0.2.1', dev: 'eth0', onlink: false }] })]],
  ['RTA_VIA: an IPv4 route through an IPv6 neighbour', route({ len: 24 }, attr(DST, v4('198.18.9.0')), attr(VIA, [...u16(10), ...v6('fe80::2')]), attr(OIF, u32(2))), [kr({ dst: '198.18.9.0/24', nexthops: [{ gateway: 'fe80::2', dev: 'eth0', onlink: false }] })]],
  ['a tos, and a type felix does not know', route({ len: 24, tos: 16, type: 5 }, attr(DST, v4('198.18.9.0'))), [kr({ dst: '198.18.9.0/24', tos: 16, type: 'other', nexthops: [{ onlink: false }] })]],
  ['a table past 255 is RTA_TABLE alone', route({ len: 24, table: 252 }, attr(TABLE, u32(1000)), attr(DST, v4('198.18.9.0')), attr(OIF, u32(2))), [kr({ table: 1000, dst: '198.18.9.0/24', nexthops: [{ dev: 'eth0', onlink: false }] })], 4, 1000],
  ['another table is left out', route({ len: 24, table: 200 }, attr(TABLE, u32(200)), attr(DST, v4('198.18.9.0'))), []],
  ['a cached route is left out, as ip leaves it out', route({ len: 32, flags: 0x200 }, attr(DST, v4('198.18.9.9'))), []],
  ['another family is left out', route({ family: 10, len: 64 }, attr(DST, v6('2001:db8::'))), []],
]

t.test('each form of route, as parseRouteJson makes it', async (t) => {
  for (const [what, bytes, want, family, table] of CASES) {
    t.same(read([[...bytes, ...done()]], family, table).routes, want, what)
  }
})

t.test('a multi-part dump: routes from every datagram, hops shared, devices it lacks named as ip names them', async (t) => {
  const a = route({ len: 32 }, attr(DST, v4('198.18.1.1')), attr(GW, v4('192.0.2.12')), attr(OIF, u32(2)))
  const b = route({ len: 32 }, attr(DST, v4('198.18.1.2')), attr(GW, v4('192.0.2.12')), attr(OIF, u32(2)))
  const c = route({ len: 32 }, attr(DST, v4('198.18.1.3')), attr(OIF, u32(9)))
  const r = read([[...a, ...b], c, done()])
  t.same(r.routes.map((x) => x.dst), ['198.18.1.1/32', '198.18.1.2/32', '198.18.1.3/32'])
  t.equal(r.routes[0]?.nexthops[0], r.routes[1]?.nexthops[0], 'one hop object for routes through the same hop')
  t.same(r.routes[2]?.nexthops, [{ dev: 'if9', onlink: false }])
  t.equal(r.unknown, 1, 'the unknown index is counted, so the caller reads the links again')
  t.equal(r.interrupted, false)
})

t.test('an interrupted dump is marked; a refused one raises the errno', async (t) => {
  const a = msg(RTM_NEWROUTE, [...rtmsg({ len: 32 }), ...attr(DST, v4('198.18.1.1'))], 0x2 | NLM_F_DUMP_INTR)
  t.equal(read([[...a, ...done()]]).interrupted, true)
  const d = routeDumpReader(4, 254, links)
  t.throws(() => d.reader.feed(Uint8Array.from(msg(NLMSG_ERROR, [...u32(-16 >>> 0), ...new Array<number>(16).fill(0)]))), { name: 'RtnlDumpError', errno: -16, message: /datagram 1, byte 0: the kernel answered errno 16/ })
  const e = routeDumpReader(4, 254, links)
  t.throws(() => e.reader.feed(Uint8Array.from(done(-4))), { name: 'RtnlDumpError', errno: -4 }, 'NLMSG_DONE carrying an error')
  const f = routeDumpReader(4, 254, links)
  f.reader.feed(Uint8Array.from(done()))
  t.throws(() => f.reader.feed(Uint8Array.from(done())), /after NLMSG_DONE/)
})

t.test('malformed bytes: an error naming the datagram and the byte offset', async (t) => {
  const good = route({ len: 32 }, attr(DST, v4('198.18.1.1')))
  const bad: [string, number[], RegExp][] = [
    ['a message cut short', [...good, ...route({ len: 32 }, attr(DST, v4('198.18.1.2')), attr(GW, v4('192.0.2.1'))).slice(0, 40)], /datagram 1, byte 36: message length 44 with 40 bytes left/],
    ['less than a header left', [...good, 1, 2, 3, 4], /datagram 1, byte 36: 4 bytes left, less than a message header/],
    ['an rtmsg cut short', msg(RTM_NEWROUTE, [2, 32, 0, 0]), /byte 0: RTM_NEWROUTE of 20 bytes, shorter than its rtmsg/],
    ['an attribute longer than its message', msg(RTM_NEWROUTE, [...rtmsg({ len: 32 }), ...u16(12), ...u16(DST), ...v4('198.18.1.1')]), /byte 28: attribute length 12 with 8 bytes left in its message/],
    ['an attribute length below its header', msg(RTM_NEWROUTE, [...rtmsg({ len: 32 }), ...u16(2), ...u16(DST), ...v4('198.18.1.1')]), /byte 28: attribute length 2/],
    ['a gateway of three bytes', [...good, ...route({ len: 32 }, attr(DST, v4('198.18.1.2')), attr(GW, [192, 0, 2]))], /datagram 1, byte 72: RTA_GATEWAY of 3 bytes, expected 4/],
    ['an IPv4 address where IPv6 is due', route({ family: 10, len: 64 }, attr(DST, v4('198.18.1.2'))), /byte 28: RTA_DST of 4 bytes, expected 16/],
    ['a metric of two bytes', route({ len: 32 }, attr(PRIO, [1, 0])), /byte 28: RTA_PRIORITY of 2 bytes, expected 4/],
    ['a hop longer than RTA_MULTIPATH', route({ len: 32 }, attr(MP, [...u16(40), 0, 0, ...u32(2)])), /byte 32: rtnexthop length 40 with 8 bytes left in RTA_MULTIPATH/],
    ['an attribute past its hop', route({ len: 32 }, attr(MP, [...u16(16), 0, 0, ...u32(2), ...u16(12), ...u16(GW), ...v4('192.0.2.1')])), /byte 40: attribute length 12 with 8 bytes left in its rtnexthop/],
    ['RTA_VIA of an unknown family', route({ len: 32 }, attr(VIA, [...u16(99), 1, 2, 3, 4])), /byte 28: RTA_VIA of 6 bytes for address family 99/],
  ]
  for (const [what, bytes, err] of bad) {
    const d = routeDumpReader(family(bytes), 254, links)
    t.throws(() => d.reader.feed(Uint8Array.from(bytes)), err, what)
  }
  const second = routeDumpReader(4, 254, links)
  second.reader.feed(Uint8Array.from(good))
  t.throws(() => second.reader.feed(Uint8Array.from(good.slice(0, 20))), /netlink route dump: datagram 2, byte 0: message length 36 with 20 bytes left/, 'the datagram is counted')
})

function family(bytes: number[]): 4 | 6 {
  return bytes[16] === 10 ? 6 : 4
}

t.test('the requests, and the link dump', async (t) => {
  t.same([...routeDumpRequest(6, 254, 9)], [...u32(36), ...u16(RTM_GETROUTE), ...u16(0x301), ...u32(9), ...u32(0), 10, 0, 0, 0, 254, 0, 0, 0, ...u32(0), ...attr(TABLE, u32(254))], 'RTM_GETROUTE, REQUEST|DUMP, AF_INET6, table main')
  t.same([...routeDumpRequest(4, 1000, 1)].slice(16, 21), [2, 0, 0, 0, 0], 'a table past 255: rtm_table 0, RTA_TABLE only')
  t.same([...linkDumpRequest(3)], [...u32(32), ...u16(18), ...u16(0x301), ...u32(3), ...u32(0), ...new Array<number>(16).fill(0)])
  const link = (index: number, name: string): number[] => msg(RTM_NEWLINK, [0, 0, ...u16(1), ...u32(index), ...u32(0), ...u32(0), ...attr(4 /* IFLA_MTU */, u32(1500)), ...attr(3, [...new TextEncoder().encode(name), 0])])
  const l = linkDumpReader()
  t.equal(l.reader.feed(Uint8Array.from([...link(1, 'lo'), ...link(7, 'vxlan.pinto')])), false)
  t.equal(l.reader.feed(Uint8Array.from(done())), true)
  t.same([...l.links], [
    [1, 'lo'],
    [7, 'vxlan.pinto'],
  ])
  const bad = linkDumpReader()
  t.throws(() => bad.reader.feed(Uint8Array.from(msg(RTM_NEWLINK, [0, 0, 0, 0]))), /netlink link dump: datagram 1, byte 0: RTM_NEWLINK of 20 bytes, shorter than its ifinfomsg/)
})
