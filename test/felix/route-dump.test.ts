// felix's rtnetlink read of the route table against `ip -N -json`'s, on a real kernel: a table of every
// form (gateway, device only, onlink, ECMP, nexthop objects and groups, blackhole/unreachable/prohibit/
// throw, tos, several metrics and protocols, IPv6 with link-local gateways, a non-main table, routes felix
// owns and routes it does not), and thousands more so each dump comes in several datagrams, read both ways
// must give the same routes, route for route.

import t from 'tap'
import { execa } from 'execa'
import { fileURLToPath } from 'node:url'
import { createTopology } from '../harness/netns.js'
import { routeKey, type KernelRoute } from '../../felix/kernel-route.js'
import { parseRouteJson } from '../../felix/route-parse.js'

const CHILD = fileURLToPath(new URL('route-dump-child.js', import.meta.url))

const V4 = [
  'route add 198.18.0.64/26 via 192.0.2.12 dev eth0 proto 87',
  'route add 198.18.0.65/32 dev eth0 proto 87 scope link',
  'route add 198.18.0.128/26 via 198.18.48.65 dev eth0 onlink proto 87',
  'route add 198.18.1.0/24 proto 87 nexthop via 192.0.2.12 dev eth0 nexthop via 192.0.2.13 dev eth0 onlink',
  'route add blackhole 198.18.2.0/26 proto 87',
  'route add unreachable 198.18.3.0/24 proto 12 metric 20',
  'route add prohibit 198.18.4.0/24',
  'route add 198.18.5.0/24 via 192.0.2.14 metric 100 proto 186',
  'route add 198.18.5.0/24 via 192.0.2.15 metric 200 proto static',
  'route add default via 192.0.2.1',
  'route add 198.18.7.0/24 tos 0x10 via 192.0.2.12',
  'route add throw 198.18.8.0/24',
  'nexthop add id 101 via 192.0.2.12 dev eth0 proto 87',
  'nexthop add id 102 via 192.0.2.13 dev eth0 proto 87',
  'nexthop add id 103 group 101/102 proto 87',
  'route add 198.18.9.0/24 nhid 101 proto 87',
  'route add 198.18.10.0/24 nhid 103 proto 87',
  'route add 198.18.11.0/24 via inet6 2001:db8::12 dev eth0',
  'route add 198.18.12.5/32 dev pintoa1 scope link',
  'route add 198.18.12.6/32 dev pintob1 proto 87 scope link',
  'route add 198.18.6.0/24 via 192.0.2.12 table 200 proto 87',
  'route add 198.18.6.128/25 dev eth0 table 200 metric 5',
  'route add blackhole 198.18.6.64/26 table 1000 proto 87',
]
const V6 = [
  '-6 route add 2001:db8:1::/64 via fe80::1 dev eth0 proto 87',
  '-6 route add 2001:db8:2::/64 via 2001:db8::12 metric 100',
  '-6 route add 2001:db8:2::/64 via 2001:db8::13 metric 200 proto bird',
  '-6 route add 2001:db8:3::/64 proto 87 nexthop via fe80::1 dev eth0 nexthop via fe80::2 dev eth0',
  '-6 route add blackhole 2001:db8:4::/64 proto 87',
  '-6 route add unreachable 2001:db8:5::/64 metric 10',
  '-6 route add 2001:db8:6::7/128 dev pintoa1 proto 87',
  '-6 route add 2001:db8:7::/64 via fe80::1 dev eth0 onlink',
  '-6 route add default via 2001:db8::1',
  '-6 route add 2001:db8:8::/64 via 2001:db8::12 table 200',
]

const sorted = (rs: KernelRoute[]): KernelRoute[] => [...rs].sort((a, b) => (routeKey(a) < routeKey(b) ? -1 : routeKey(a) > routeKey(b) ? 1 : 0))

t.test('the netlink read equals the ip -json read, route for route', async (t) => {
  const topo = await createTopology(t)
  const a = await topo.addNode({ name: 'a', v4: '192.0.2.11/24', v6: '2001:db8::11/64' })
  const ip = (args: string) => execa('ip', ['-n', a.ns, ...args.split(' ')])
  await ip('link add pintoa1 type veth peer name pintob1')
  await ip('link set pintoa1 up')
  await ip('link set pintob1 up')
  await execa('ip', ['netns', 'exec', a.ns, 'sysctl', '-q', '-w', 'net.ipv6.conf.eth0.accept_dad=0'])
  for (const cmd of [...V4, ...V6]) await ip(cmd)
  // Enough more that each family's dump spans several datagrams (the socket reads at most 32 KB a datagram).
  const many = Array.from({ length: 3000 }, (_, i) => `route add 198.18.${64 + (i >> 8)}.${i & 255}/32 via 192.0.2.${12 + (i % 3)} dev eth0 proto ${i % 2 === 0 ? 87 : 12}`)
  const many6 = Array.from({ length: 1500 }, (_, i) => `route add 2001:db8:40::${i.toString(16)}/128 via fe80::${1 + (i % 2)} dev eth0 proto 87`)
  await execa('ip', ['-n', a.ns, '-batch', '-'], { input: many.join('\n') + '\n' })
  await execa('ip', ['-n', a.ns, '-6', '-batch', '-'], { input: many6.join('\n') + '\n' })
  for (const [families, table] of [[[4, 6], 254], [[4], 200], [[4, 6], 200], [[6], 1000], [[4], 1000], [[4], 77]] as [(4 | 6)[], number][]) {
    const r = await execa('ip', ['netns', 'exec', a.ns, process.execPath, CHILD], { input: JSON.stringify({ families, table }), timeout: 30_000 })
    const viaNetlink = JSON.parse(String(r.stdout)) as KernelRoute[]
    const viaIp: KernelRoute[] = []
    for (const f of families) {
      const j = await execa('ip', ['-n', a.ns, '-N', '-json', `-${f}`, 'route', 'show', 'table', String(table)], { reject: false })
      if (j.exitCode !== 0 && /FIB table does not exist/.test(String(j.stderr))) continue
      viaIp.push(...parseRouteJson(String(j.stdout), f, table))
    }
    t.same(sorted(viaNetlink), sorted(viaIp), `table ${table}, IPv${families.join('+IPv')}: ${viaIp.length} routes`)
    const mine = viaNetlink.filter((x) => x.protocol === 87).length
    if (table === 254) t.ok(viaNetlink.length >= 4530 && mine >= 3012, `main holds every form and more (${viaNetlink.length} routes, ${mine} felix's)`)
  }
})
