// The rtnetlink requests for a pod's links, byte by byte against the layouts of linux/rtnetlink.h,
// if_link.h, veth.h, if_addr.h and neighbour.h (what `ip` sends for the same command).
import t from 'tap'
import { LinkWriter, linkOpText, type LinkOp } from '../../felix/rtnl-links.js'

const u16 = (n: number): number[] => [n & 255, n >>> 8]
const u32 = (n: number): number[] => [n & 255, (n >>> 8) & 255, (n >>> 16) & 255, n >>> 24]
const text = (s: string): number[] => [...new TextEncoder().encode(s)]
const index = (dev: string): number | undefined => ({ eth0: 2, pintoab12: 9 })[dev]

function one(o: LinkOp, seq = 1): number[] {
  const w = new LinkWriter(index, (path) => (path === '/run/netns/pod' ? 33 : undefined))
  w.write(o, seq)
  return [...w.bytes()]
}

t.test('a veth pair: both ends named, with their MACs and MTU, the peer nested in IFLA_INFO_DATA', async (t) => {
  t.same(one({ op: 'veth', name: 'eth0', mac: '0a:01:02:03:04:05', peer: 'pinto0', peerMac: 'ee:ee:ee:ee:ee:ee', mtu: 1500 }, 7), [
    // nlmsghdr: length 132, RTM_NEWLINK, REQUEST|ACK|EXCL|CREATE, seq 7, port 0
    ...u32(132), ...u16(16), ...u16(0x605), ...u32(7), ...u32(0),
    // ifinfomsg: AF_UNSPEC, type 0, index 0, flags 0, change 0
    0, 0, 0, 0, ...u32(0), ...u32(0), ...u32(0),
    // IFLA_IFNAME "eth0\0" (padded to 4), IFLA_ADDRESS (6 bytes, padded), IFLA_MTU 1500
    ...u16(9), ...u16(3), ...text('eth0'), 0, 0, 0, 0,
    ...u16(10), ...u16(1), 0x0a, 1, 2, 3, 4, 5, 0, 0,
    ...u16(8), ...u16(4), ...u32(1500),
    // IFLA_LINKINFO (68): IFLA_INFO_KIND "veth" (no NUL, as ip sends it), IFLA_INFO_DATA (56)
    ...u16(68), ...u16(18),
    ...u16(8), ...u16(1), ...text('veth'),
    ...u16(56), ...u16(2),
    // VETH_INFO_PEER (52): the peer's ifinfomsg, then its IFLA_IFNAME, IFLA_ADDRESS, IFLA_MTU
    ...u16(52), ...u16(1),
    0, 0, 0, 0, ...u32(0), ...u32(0), ...u32(0),
    ...u16(11), ...u16(3), ...text('pinto0'), 0, 0,
    ...u16(10), ...u16(1), 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0, 0,
    ...u16(8), ...u16(4), ...u32(1500),
  ])
})

t.test('a veth whose peer is made straight in another namespace: IFLA_NET_NS_FD in the peer\'s attributes', async (t) => {
  const o: LinkOp = { op: 'veth', name: 'pinto0', mac: 'ee:ee:ee:ee:ee:ee', peer: 'eth0', peerMac: '0a:01:02:03:04:05', mtu: 1500, peerNetns: '/run/netns/pod' }
  const b = one(o)
  t.same(b.slice(0, 4), u32(140), 'eight bytes longer than the pair made side by side')
  // VETH_INFO_PEER now 60 long, IFLA_INFO_DATA 64, IFLA_LINKINFO 76
  t.same(b.slice(64, 68), [...u16(76), ...u16(18)])
  t.same(b.slice(76, 80), [...u16(64), ...u16(2)])
  t.same(b.slice(80, 84), [...u16(60), ...u16(1)])
  t.same(b.slice(132), [...u16(8), ...u16(28), ...u32(33)], 'IFLA_NET_NS_FD 33, the peer\'s last attribute')
  t.equal(linkOpText(o), 'link add pinto0 address ee:ee:ee:ee:ee:ee mtu 1500 type veth peer name eth0 address 0a:01:02:03:04:05 mtu 1500 netns /run/netns/pod')
  t.throws(() => one({ ...o, peerNetns: '/run/netns/other' }), /\/run\/netns\/other is not open/)
})

t.test('link settings by name: alias, up (with an MTU), delete', async (t) => {
  const head = (len: number, type: number, flags: number): number[] => [...u32(len), ...u16(type), ...u16(flags), ...u32(1), ...u32(0)]
  const name = [...u16(14), ...u16(3), ...text('pintoab12'), 0, 0, 0] // IFLA_IFNAME "pintoab12\0", padded
  t.same(one({ op: 'alias', dev: 'pintoab12', alias: 'net.c1' }), [
    ...head(60, 16, 0x5), 0, 0, 0, 0, ...u32(0), ...u32(0), ...u32(0), ...name,
    // IFLA_IFALIAS "net.c1" (no NUL), padded
    ...u16(10), ...u16(20), ...text('net.c1'), 0, 0,
  ])
  // ifinfomsg flags IFF_UP and change IFF_UP: only that flag is touched.
  t.same(one({ op: 'up', dev: 'eth0' }), [...head(44, 16, 0x5), 0, 0, 0, 0, ...u32(0), ...u32(1), ...u32(1), ...u16(9), ...u16(3), ...text('eth0'), 0, 0, 0, 0])
  t.same(one({ op: 'up', dev: 'eth0', mtu: 1400 }).slice(44), [...u16(8), ...u16(4), ...u32(1400)], 'IFLA_MTU after the name')
  t.same(one({ op: 'del', dev: 'eth0' }), [...head(44, 17, 0x5), 0, 0, 0, 0, ...u32(0), ...u32(0), ...u32(0), ...u16(9), ...u16(3), ...text('eth0'), 0, 0, 0, 0])
})

t.test('addresses: IFA_LOCAL and IFA_ADDRESS, the device by index; IPv6 without DAD', async (t) => {
  t.same(one({ op: 'addr', dev: 'eth0', address: '198.18.0.5', prefixLength: 32 }), [
    // RTM_NEWADDR, REQUEST|ACK|EXCL|CREATE
    ...u32(40), ...u16(20), ...u16(0x605), ...u32(1), ...u32(0),
    // ifaddrmsg: AF_INET, /32, flags 0, scope universe, index 2
    2, 32, 0, 0, ...u32(2),
    ...u16(8), ...u16(2), 198, 18, 0, 5, // IFA_LOCAL
    ...u16(8), ...u16(1), 198, 18, 0, 5, // IFA_ADDRESS
  ])
  const v6 = one({ op: 'addr', dev: 'eth0', address: '2001:db8::5', prefixLength: 128, nodad: true })
  const addr = [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5]
  t.same(v6, [
    ...u32(72), ...u16(20), ...u16(0x605), ...u32(1), ...u32(0),
    // AF_INET6, /128, IFA_F_NODAD, universe, index 2
    10, 128, 2, 0, ...u32(2),
    ...u16(20), ...u16(2), ...addr,
    ...u16(20), ...u16(1), ...addr,
    ...u16(8), ...u16(8), ...u32(2), // IFA_FLAGS IFA_F_NODAD
  ])
  t.throws(() => one({ op: 'addr', dev: 'eth1', address: '198.18.0.5', prefixLength: 32 }), /addr add 198\.18\.0\.5\/32 dev eth1: no device eth1/)
  t.throws(() => one({ op: 'addr', dev: 'eth0', address: '198.18.0.500', prefixLength: 32 }), /"198\.18\.0\.500" is not an address of its family/)
})

t.test('routes as `ip route add` makes them: main table, proto boot; a link route, a default via a gateway', async (t) => {
  t.same(one({ op: 'route', dev: 'eth0', dst: '169.254.1.1', prefixLength: 32 }), [
    // RTM_NEWROUTE, REQUEST|ACK|EXCL|CREATE
    ...u32(44), ...u16(24), ...u16(0x605), ...u32(1), ...u32(0),
    // rtmsg: AF_INET, /32, src 0, tos 0, main, RTPROT_BOOT, scope link, unicast, flags 0
    2, 32, 0, 0, 254, 3, 253, 1, ...u32(0),
    ...u16(8), ...u16(1), 169, 254, 1, 1, // RTA_DST
    ...u16(8), ...u16(4), ...u32(2), // RTA_OIF
  ])
  t.same(one({ op: 'route', dev: 'eth0', dst: undefined, prefixLength: 0, gateway: '169.254.1.1' }), [
    ...u32(44), ...u16(24), ...u16(0x605), ...u32(1), ...u32(0),
    // AF_INET, /0, scope universe; no RTA_DST
    2, 0, 0, 0, 254, 3, 0, 1, ...u32(0),
    ...u16(8), ...u16(5), 169, 254, 1, 1, // RTA_GATEWAY
    ...u16(8), ...u16(4), ...u32(2),
  ])
  const v6 = one({ op: 'route', dev: 'pintoab12', dst: '2001:db8::5', prefixLength: 128 })
  t.same(v6.slice(16, 28), [10, 128, 0, 0, 254, 3, 253, 1, ...u32(0)], 'IPv6 host route: AF_INET6, /128, link scope')
  t.same(v6.slice(28), [...u16(20), ...u16(1), 0x20, 0x01, 0x0d, 0xb8, ...new Array<number>(11).fill(0), 5, ...u16(8), ...u16(4), ...u32(9)])
  const gw6 = one({ op: 'route', dev: 'eth0', dst: undefined, prefixLength: 0, gateway: 'fe80::ecee:eeff:feee:eeee' })
  t.same(gw6.slice(16, 20), [10, 0, 0, 0], 'the default route takes its family from the gateway')
  t.same(gw6.slice(28, 32), [...u16(20), ...u16(5)])
})

t.test('a permanent neighbour entry, replacing any', async (t) => {
  t.same(one({ op: 'neigh', dev: 'eth0', address: '169.254.1.1', lladdr: 'ee:ee:ee:ee:ee:ee' }), [
    // RTM_NEWNEIGH, REQUEST|ACK|REPLACE|CREATE
    ...u32(48), ...u16(28), ...u16(0x505), ...u32(1), ...u32(0),
    // ndmsg: AF_INET, pads, index 2, NUD_PERMANENT, flags 0, type 0
    2, 0, 0, 0, ...u32(2), ...u16(0x80), 0, 0,
    ...u16(8), ...u16(1), 169, 254, 1, 1, // NDA_DST
    ...u16(10), ...u16(2), 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0, 0, // NDA_LLADDR
  ])
  t.throws(() => one({ op: 'neigh', dev: 'eth0', address: '169.254.1.1', lladdr: 'ee:ee:ee' }), /lladdr: "ee:ee:ee" is not a MAC address/)
})

t.test('ops written one after another share the buffer; each names itself as the ip command', async (t) => {
  const w = new LinkWriter(index)
  w.write({ op: 'up', dev: 'eth0' }, 1)
  const first = w.length
  w.write({ op: 'addr', dev: 'eth0', address: '198.18.0.5', prefixLength: 32 }, 2)
  t.equal(w.length, first + 40)
  t.equal(w.lastSeq(), 2)
  t.equal(linkOpText({ op: 'veth', name: 'eth0', mac: 'm', peer: 'p', peerMac: 'pm', mtu: 1 }), 'link add eth0 address m mtu 1 type veth peer name p address pm mtu 1')
  t.equal(linkOpText({ op: 'route', dev: 'p', dst: '198.18.0.5', prefixLength: 32 }), 'route add 198.18.0.5/32 dev p scope link')
  t.equal(linkOpText({ op: 'route', dev: 'p', dst: '2001:db8::5', prefixLength: 128 }), 'route add 2001:db8::5/128 dev p', 'IPv6 routes have no scope')
  t.equal(linkOpText({ op: 'route', dev: 'eth0', dst: undefined, prefixLength: 0, gateway: '169.254.1.1' }), 'route add default via 169.254.1.1 dev eth0')
  t.equal(linkOpText({ op: 'neigh', dev: 'eth0', address: '169.254.1.1', lladdr: 'ee:ee:ee:ee:ee:ee' }), 'neigh replace 169.254.1.1 lladdr ee:ee:ee:ee:ee:ee dev eth0 nud permanent')
})
