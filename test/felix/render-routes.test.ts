// Route rendering per pool mode, table-driven: each row is one learned route and the exact `ip` line it must
// become (or the problem it must report). Also blackholes, VTEP entries, ECMP and bad input paths.

import t from 'tap'
import type { IPPool } from '../../config/resources/index.js'
import { renderDesired, type DesiredState, type LearnedRoute } from '../../felix/index.js'
import { replaceLine } from '../../felix/kernel-route.js'
import { pool, pools, vteps, localNode } from './render-fixtures.js'

const base: DesiredState = {
  pools,
  routes: [],
  localBlocks: [],
  vteps,
  localNode,
}

const B = { nodeName: 'b', address: '192.0.2.12' } // same subnet as us
const C = { nodeName: 'c', address: '198.51.100.13' } // across a router

const rows: { name: string; route: LearnedRoute; line?: string; problem?: RegExp }[] = [
  { name: 'no encap', route: { prefix: '198.18.0.64/26', nextHops: [B] }, line: 'route replace 198.18.0.64/26 via 192.0.2.12 dev eth0 proto 87' },
  { name: 'outside every pool: no encap', route: { prefix: '203.0.113.0/24', nextHops: [B] }, line: 'route replace 203.0.113.0/24 via 192.0.2.12 dev eth0 proto 87' },
  { name: 'IPIP Always, same subnet', route: { prefix: '198.18.16.64/26', nextHops: [B] }, line: 'route replace 198.18.16.64/26 via 192.0.2.12 dev tunl0 onlink proto 87' },
  { name: 'IPIP Always, other subnet', route: { prefix: '198.18.16.128/26', nextHops: [C] }, line: 'route replace 198.18.16.128/26 via 198.51.100.13 dev tunl0 onlink proto 87' },
  { name: 'IPIP CrossSubnet, same subnet: direct', route: { prefix: '198.18.32.64/26', nextHops: [B] }, line: 'route replace 198.18.32.64/26 via 192.0.2.12 dev eth0 onlink proto 87' },
  { name: 'IPIP CrossSubnet, other subnet: tunl0', route: { prefix: '198.18.32.128/26', nextHops: [C] }, line: 'route replace 198.18.32.128/26 via 198.51.100.13 dev tunl0 onlink proto 87' },
  { name: 'VXLAN Always, same subnet', route: { prefix: '198.18.48.64/26', nextHops: [B] }, line: 'route replace 198.18.48.64/26 via 198.18.48.65 dev vxlan.pinto onlink proto 87' },
  { name: 'VXLAN Always, VTEP found by node IP', route: { prefix: '198.18.48.128/26', nextHops: [{ address: '198.51.100.13' }] }, line: 'route replace 198.18.48.128/26 via 198.18.48.129 dev vxlan.pinto onlink proto 87' },
  { name: 'VXLAN CrossSubnet, same subnet: direct', route: { prefix: '198.18.64.64/26', nextHops: [B] }, line: 'route replace 198.18.64.64/26 via 192.0.2.12 dev eth0 onlink proto 87' },
  { name: 'VXLAN CrossSubnet, other subnet: vxlan', route: { prefix: '198.18.64.128/26', nextHops: [C] }, line: 'route replace 198.18.64.128/26 via 198.18.48.129 dev vxlan.pinto onlink proto 87' },
  {
    name: 'ECMP, hops sorted, duplicates merged',
    route: { prefix: '198.18.1.0/26', nextHops: [C, B, B] },
    line: 'route replace 198.18.1.0/26 proto 87 nexthop via 192.0.2.12 dev eth0 nexthop via 198.51.100.13 dev eth0',
  },
  {
    name: 'ECMP across CrossSubnet: one direct, one tunnelled',
    route: { prefix: '198.18.64.0/26', nextHops: [B, C] },
    line: 'route replace 198.18.64.0/26 proto 87 nexthop via 192.0.2.12 dev eth0 onlink nexthop via 198.18.48.129 dev vxlan.pinto onlink',
  },
  { name: 'a priority: the metric', route: { prefix: '198.18.0.128/26', nextHops: [B], metric: 512 }, line: 'route replace 198.18.0.128/26 via 192.0.2.12 dev eth0 proto 87 metric 512' },
  { name: 'IPv6 with a priority', route: { prefix: '2001:db8:1:0:2::/122', nextHops: [{ address: '2001:db8::12' }], metric: 100 }, line: 'route replace 2001:db8:1:0:2::/122 via 2001:db8::12 dev eth0 proto 87 metric 100' },
  { name: 'borrowed /32', route: { prefix: '198.18.48.7/32', nextHops: [B] }, line: 'route replace 198.18.48.7/32 via 198.18.48.65 dev vxlan.pinto onlink proto 87' },
  { name: 'IPv6 no encap', route: { prefix: '2001:db8:1:0:1::/122', nextHops: [{ address: '2001:db8::12' }] }, line: 'route replace 2001:db8:1:0:1::/122 via 2001:db8::12 dev eth0 proto 87' },
  { name: 'VXLAN with unknown VTEP', route: { prefix: '198.18.48.192/26', nextHops: [{ nodeName: 'd', address: '203.0.113.9' }] }, problem: /routes\[0\]\.nextHops\[0\]\.address: no VTEP known for d/ },
  { name: 'bad prefix', route: { prefix: '198.18.0.300/26', nextHops: [B] }, problem: /routes\[0\]\.prefix: "198\.18\.0\.300\/26": "198\.18\.0\.300" is not an IPv4 or IPv6 address/ },
  { name: 'host bits', route: { prefix: '198.18.0.65/26', nextHops: [B] }, problem: /routes\[0\]\.prefix: .*host bits set \(the network is 198\.18\.0\.64\/26\)/ },
  { name: 'bad next hop', route: { prefix: '198.18.0.64/26', nextHops: [{ address: 'node-b' }] }, problem: /routes\[0\]\.nextHops\[0\]\.address: "node-b" is not an IPv4 or IPv6 address/ },
  { name: 'family mismatch', route: { prefix: '198.18.0.64/26', nextHops: [{ address: '2001:db8::12' }] }, problem: /IPv6 next hop for IPv4 prefix/ },
  { name: 'no next hops', route: { prefix: '198.18.0.64/26', nextHops: [] }, problem: /routes\[0\]\.nextHops: no next hops/ },
]

for (const row of rows) {
  t.test(row.name, async (t) => {
    const out = renderDesired({ ...base, routes: [row.route] })
    const lines = [...out.routes.values()].map(replaceLine)
    if (row.line !== undefined) {
      t.same(lines, [row.line])
      t.same(out.problems, [])
    } else {
      t.same(lines, [], 'the bad route is skipped')
      t.match(out.problems.map((p) => `${p.path}: ${p.message}`).join('\n'), row.problem ?? /./)
    }
  })
}

t.test('one bad route does not stop the others', async (t) => {
  const out = renderDesired({ ...base, routes: [{ prefix: 'x', nextHops: [B] }, { prefix: '198.18.0.64/26', nextHops: [B] }] })
  t.equal(out.routes.size, 1)
  t.equal(out.problems[0]?.path, 'routes[0].prefix')
})

t.test('blackholes for local blocks, never for /32s; the blackhole beats a learned copy of our block', async (t) => {
  const out = renderDesired({
    ...base,
    localBlocks: ['198.18.0.0/26', '198.18.0.200/32', '2001:db8:1::/122'],
    routes: [{ prefix: '198.18.0.0/26', nextHops: [B] }],
  })
  t.same([...out.routes.values()].map(replaceLine), [
    'route replace blackhole 198.18.0.0/26 proto 87',
    'route replace blackhole 2001:db8:1::/122 proto 87',
  ])
  t.match(out.problems, [{ path: 'localBlocks[0]', message: /blackhole wins/ }])
})

t.test('VTEP neighbours and FDB entries only when a VXLAN pool exists; bad VTEPs named', async (t) => {
  const vx = renderDesired(base)
  t.same(vx.neighbours, [
    { dev: 'vxlan.pinto', address: '198.18.48.65', mac: '66:00:00:00:00:02' },
    { dev: 'vxlan.pinto', address: '198.18.48.129', mac: '66:00:00:00:00:03' },
  ])
  t.same(vx.fdb, [
    { dev: 'vxlan.pinto', mac: '66:00:00:00:00:02', dst: '192.0.2.12' },
    { dev: 'vxlan.pinto', mac: '66:00:00:00:00:03', dst: '198.51.100.13' },
  ])
  const none = renderDesired({ ...base, pools: [pools[0] as IPPool] })
  t.same([none.neighbours, none.fdb], [[], []])
  const bad = renderDesired({ ...base, vteps: [{ nodeName: 'x', nodeAddress: '192.0.2.9', tunnelAddress: '198.18.48.1', mac: '66:00:00:00:00' }] })
  t.match(bad.problems, [{ path: 'vteps[0].mac', message: /not a MAC address/ }])
})

t.test('options: table, protocol and device names', async (t) => {
  const out = renderDesired({ ...base, routes: [{ prefix: '198.18.16.64/26', nextHops: [B] }] }, { table: 100, protocol: 99, tunlDevice: 'tun9' })
  t.same([...out.routes.values()].map(replaceLine), ['route replace 198.18.16.64/26 via 192.0.2.12 dev tun9 onlink table 100 proto 99'])
})

t.test('pool problems: both encaps, IPv6 encap, bad CIDR', async (t) => {
  const out = renderDesired({
    ...base,
    pools: [pool('both', '198.18.0.0/20', { ipipMode: 'Always', vxlanMode: 'Always' }), pool('v6x', '2001:db8:2::/48', { vxlanMode: 'Always' }), pool('bad', '198.18.0.0/99')],
  })
  t.match(out.problems, [
    { path: 'pools[0].spec.ipipMode', message: /using VXLAN/ },
    { path: 'pools[1].spec.vxlanMode', message: /IPv4-only/ },
    { path: 'pools[2].spec.cidr', message: /invalid prefix length/ },
  ])
})
