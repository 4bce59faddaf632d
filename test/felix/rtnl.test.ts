// The rtnetlink messages felix writes, checked byte by byte against linux/rtnetlink.h layouts, and the
// kernel's answers read back.
import t from 'tap'
import type { KernelRoute } from '../../felix/kernel-route.js'
import { parseIpv6 } from '../../net/index.js'
import { NLMSG_ERROR, RTM_DELROUTE, RTM_NEWLINK, RTM_NEWROUTE, RtnlWriter, readReplies } from '../../felix/rtnl.js'

const route = (over: Partial<KernelRoute>): KernelRoute => ({ family: 4, table: 254, dst: '198.18.0.0/26', tos: 0, metric: 0, type: 'unicast', protocol: 87, nexthops: [{ gateway: '192.0.2.2', dev: 'eth0', onlink: false }], ...over })
const links = (dev: string): number | undefined => ({ eth0: 2, 'vxlan.pinto': 7, tunl0: 5 })[dev]

/** The header, the rtmsg and the attributes (type -> payload) of one message. */
function parse(b: Uint8Array): { len: number; type: number; flags: number; seq: number; rtm: number[]; attrs: Map<number, number[]> } {
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength)
  const attrs = new Map<number, number[]>()
  for (let at = 28; at < b.length; ) {
    const len = v.getUint16(at, true)
    attrs.set(v.getUint16(at + 2, true), [...b.subarray(at + 4, at + len)])
    at += (len + 3) & ~3
  }
  return { len: v.getUint32(0, true), type: v.getUint16(4, true), flags: v.getUint16(6, true), seq: v.getUint32(8, true), rtm: [...b.subarray(16, 28)], attrs }
}
const u32 = (n: number): number[] => [n & 255, (n >>> 8) & 255, (n >>> 16) & 255, n >>> 24]

t.test('a route through a nexthop object: the whole message, byte by byte', async (t) => {
  const w = new RtnlWriter()
  t.ok(w.replace(route({ dst: '198.18.0.5/32' }), 0x57000001, 9, links))
  t.same([...w.bytes()], [
    // nlmsghdr: length 52, RTM_NEWROUTE, REQUEST|REPLACE|CREATE, seq 9, port 0
    52, 0, 0, 0, 24, 0, 0x01, 0x05, 9, 0, 0, 0, 0, 0, 0, 0,
    // rtmsg: AF_INET, /32, src 0, tos 0, table main, proto 87, scope universe, unicast, flags 0
    2, 32, 0, 0, 254, 87, 0, 1, 0, 0, 0, 0,
    // RTA_DST 198.18.0.5, RTA_TABLE 254, RTA_NH_ID 0x57000001
    8, 0, 1, 0, 198, 18, 0, 5,
    8, 0, 15, 0, 254, 0, 0, 0,
    8, 0, 30, 0, 1, 0, 0, 0x57,
  ])
  t.equal(w.lastSeq(), 9)
  w.ackLast()
  t.equal(parse(w.bytes()).flags, 0x0505, 'an acknowledgement asked for')
})

t.test('routes with their hop: gateway and device, onlink, a device alone, a metric, IPv6', async (t) => {
  const w = new RtnlWriter()
  t.ok(w.replace(route({ metric: 100 }), undefined, 1, links))
  let m = parse(w.bytes())
  t.equal(m.len, w.length)
  t.same(m.rtm.slice(0, 8), [2, 26, 0, 0, 254, 87, 0, 1])
  t.same(m.attrs.get(1), [198, 18, 0, 0], 'RTA_DST')
  t.same(m.attrs.get(5), [192, 0, 2, 2], 'RTA_GATEWAY')
  t.same(m.attrs.get(4), u32(2), 'RTA_OIF from the device index')
  t.same(m.attrs.get(6), u32(100), 'RTA_PRIORITY for a metric of its own')

  w.reset()
  t.ok(w.replace(route({ nexthops: [{ gateway: '203.0.113.7', dev: 'tunl0', onlink: true }] }), undefined, 2, links))
  m = parse(w.bytes())
  t.same(m.rtm.slice(8), u32(4), 'RTNH_F_ONLINK in rtm_flags')
  t.same(m.attrs.get(4), u32(5))

  w.reset()
  t.ok(w.replace(route({ dst: '198.18.0.9/32', nexthops: [{ dev: 'eth0', onlink: false }] }), undefined, 3, links))
  m = parse(w.bytes())
  t.equal(m.rtm[6], 253, 'a route straight onto a device is link scope')
  t.notOk(m.attrs.has(5), 'no gateway')

  w.reset()
  t.ok(w.replace(route({ family: 6, dst: '2001:db8:18::/122', metric: 1024, nexthops: [{ gateway: 'fe80::1', dev: 'eth0', onlink: false }] }), undefined, 4, links))
  m = parse(w.bytes())
  t.same(m.rtm.slice(0, 2), [10, 122])
  t.same(m.attrs.get(1), [...(parseIpv6('2001:db8:18::') as Uint8Array)])
  t.same(m.attrs.get(5), [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1])
  t.notOk(m.attrs.has(6), 'the family default metric (1024) is left to the kernel')

  w.reset()
  t.ok(w.replace(route({ type: 'blackhole', nexthops: [] }), undefined, 5, links))
  m = parse(w.bytes())
  t.equal(m.rtm[7], 6, 'RTN_BLACKHOLE')
  t.notOk(m.attrs.has(5) || m.attrs.has(4))
})

t.test('what it does not write is left whole for ip', async (t) => {
  const w = new RtnlWriter()
  t.ok(w.replace(route({}), undefined, 1, links))
  const before = w.length
  const cannot: [string, KernelRoute][] = [
    ['two hops without an object', route({ nexthops: [{ gateway: '192.0.2.2', onlink: false }, { gateway: '192.0.2.3', onlink: false }] })],
    ['a device the kernel does not know', route({ nexthops: [{ gateway: '192.0.2.2', dev: 'nosuch0', onlink: false }] })],
    ['a local route', route({ type: 'local' })],
    ['a bad prefix', route({ dst: '198.18.0.300/32' })],
    ['a bad gateway', route({ nexthops: [{ gateway: '192.0.2', onlink: false }] })],
    ['a bad IPv6 prefix', route({ family: 6, dst: '2001:db8::1::/64', nexthops: [{ gateway: 'fe80::1', onlink: false }] })],
    ['a blackhole with a hop', route({ type: 'blackhole' })],
  ]
  for (const [what, r] of cannot) {
    t.notOk(w.replace(r, undefined, 2, links), what)
    t.equal(w.length, before, `${what}: nothing of it written`)
  }
  t.equal(w.lastSeq(), 1, 'the last whole message is still the last')
  t.notOk(w.delete(route({ nexthops: [{ dev: 'gone0', onlink: false }] }), 3, links), 'deleting a route on a device that is gone')
})

t.test('deletes match as ip route delete does', async (t) => {
  const w = new RtnlWriter()
  t.ok(w.delete(route({ dst: '198.18.0.7/32', nexthops: [{ dev: 'eth0', onlink: false }], metric: 0 }), 11, links))
  let m = parse(w.bytes())
  t.equal(m.type, RTM_DELROUTE)
  t.equal(m.flags, 0x1, 'a plain request')
  t.same(m.rtm.slice(0, 8), [2, 32, 0, 0, 254, 87, 255, 0], 'scope NOWHERE and type 0 match any; the protocol must match')
  t.same(m.attrs.get(4), u32(2), 'the device of a device route')
  t.same(m.attrs.get(6), u32(0))
  w.reset()
  t.ok(w.delete(route({ type: 'blackhole', nexthops: [] }), 12, links))
  m = parse(w.bytes())
  t.equal(m.rtm[7], 6, 'a blackhole is deleted as one')
  w.reset()
  t.ok(w.delete(route({}), 13, links))
  t.notOk(parse(w.bytes()).attrs.has(4), 'a route through a gateway is not matched by device')
})

t.test('several messages in one buffer, and RTM_GETLINK', async (t) => {
  const w = new RtnlWriter()
  let written = 0
  for (let i = 0; i < 3000; i++) if (w.replace(route({ dst: `10.${(i >> 8) & 255}.${i & 255}.0/24` }), 7, 100 + i, links)) written++
  t.equal(written, 3000)
  t.equal(w.length, 3000 * 52, 'grown past its first 64 KB')
  t.equal(w.lastSeq(), 3099)
  w.reset()
  w.getLink('vxlan.pinto', 42)
  const b = w.bytes()
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength)
  t.equal(v.getUint16(4, true), 18, 'RTM_GETLINK')
  t.equal(v.getUint32(0, true), b.length)
  t.equal(b.length % 4, 0, 'padded to 4 bytes')
  t.equal(new TextDecoder().decode(b.subarray(36, 36 + 11)), 'vxlan.pinto')
  t.equal(b[36 + 11], 0, 'NUL-terminated')
})

t.test('answers: acknowledgement, refusal, a link, and a cut message', async (t) => {
  const msg = (type: number, seq: number, body: number[]): number[] => [...u32(16 + body.length), type, 0, 0, 0, ...u32(seq), 0, 0, 0, 0, ...body]
  const ack = msg(NLMSG_ERROR, 5, [...u32(0), ...new Array(16).fill(0)])
  const refused = msg(NLMSG_ERROR, 6, [...u32(-101 >>> 0), ...new Array(16).fill(0)])
  const link = msg(RTM_NEWLINK, 7, [0, 0, 1, 0, ...u32(9), 0, 0, 0, 0, 0, 0, 0, 0])
  t.same(readReplies(Uint8Array.from([...ack, ...refused, ...link])), [
    { type: NLMSG_ERROR, seq: 5, error: 0 },
    { type: NLMSG_ERROR, seq: 6, error: -101 },
    { type: RTM_NEWLINK, seq: 7, ifindex: 9 },
  ])
  t.throws(() => readReplies(Uint8Array.from([...ack, ...refused.slice(0, 30)])), /message at byte 36 has length 36 of 30 left/)
  t.equal(RTM_NEWROUTE, 24)
})

t.test('routes through gateways one after another: each message carries its own gateway', async (t) => {
  // The writer keeps the last gateway's bytes; the same text again, another one, the other family and a
  // bad one in between must each come out as a fresh writer writes them.
  const hops: [4 | 6, string][] = [
    [4, '192.0.2.2'], [4, '192.0.2.2'], [4, '192.0.2.3'], [6, 'fe80::1'], [6, 'fe80::1'], [4, '192.0.2.3'],
    [6, '192.0.2.3'], [6, '2001:db8:ffff::2'], [4, '192.0.2'], [4, '192.0.2.3'], [6, 'fe80::1'], [6, 'fe80::2'],
  ]
  const w = new RtnlWriter()
  for (const [i, [family, gateway]] of hops.entries()) {
    const r = route(family === 4 ? { nexthops: [{ gateway, onlink: false }] } : { family: 6, dst: '2001:db8:18::/64', metric: 1024, nexthops: [{ gateway, onlink: false }] })
    const fresh = new RtnlWriter()
    const ok = fresh.replace(r, undefined, 10 + i, links)
    w.reset()
    t.equal(w.replace(r, undefined, 10 + i, links), ok, `${gateway}: written as a fresh writer does`)
    t.same([...w.bytes()], [...fresh.bytes()], `${gateway}: the same bytes`)
    if (ok) t.same(parse(w.bytes()).attrs.get(5), family === 4 ? gateway.split('.').map(Number) : [...parseIpv6(gateway)!], `${gateway}: RTA_GATEWAY`)
  }
})
