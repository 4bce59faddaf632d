// The delta tracker fed real `ip -N -json route show` output (captured shapes): each row is the kernel's
// JSON, what felix wants, and the exact batch lines that must come out. Plus the parsers' error paths.

import t from 'tap'
import { replaceLine, sameRoute, type KernelRoute } from '../../felix/kernel-route.js'
import { batchScript } from '../../felix/batch-dealer.js'
import { parseBatchErrors, RouteDeltaTracker } from '../../felix/route-diff.js'
import { isDeviceLine, monitorDeviceEvent, parseMonitorHopLine, parseMonitorLine, parseRouteJson, RouteParseError } from '../../felix/route-parse.js'
import { routeKey } from '../../felix/index.js'

const P = 87

function want(...routes: KernelRoute[]): Map<string, KernelRoute> {
  return new Map(routes.map((r) => [routeKey(r), r]))
}
const via = (dst: string, gateway: string, dev: string, onlink = true): KernelRoute => ({
  family: 4, table: 254, dst, tos: 0, metric: 0, type: 'unicast', protocol: P, nexthops: [{ gateway, dev, onlink }],
})
const blackhole = (dst: string): KernelRoute => ({ family: 4, table: 254, dst, tos: 0, metric: 0, type: 'blackhole', protocol: P, nexthops: [] })

const rows: { name: string; json: unknown[]; desired: KernelRoute[]; workloads?: string[]; now?: number; lines: string[] }[] = [
  { name: 'empty kernel: everything added', json: [], desired: [blackhole('198.18.0.0/26')], lines: ['route replace blackhole 198.18.0.0/26 proto 87'] },
  {
    name: 'in sync: nothing to do (onlink flag, ECMP order ignored)',
    json: [
      { type: '6', dst: '198.18.0.0/26', protocol: '87', flags: [] },
      { dst: '198.18.1.0/26', gateway: '192.0.2.12', dev: 'eth0', protocol: '87', flags: ['onlink'] },
      { dst: '198.18.2.0/26', protocol: '87', flags: [], nexthops: [{ gateway: '192.0.2.13', dev: 'eth0', weight: 1, flags: [] }, { gateway: '192.0.2.12', dev: 'eth0', weight: 1, flags: [] }] },
    ],
    desired: [
      blackhole('198.18.0.0/26'),
      via('198.18.1.0/26', '192.0.2.12', 'eth0'),
      { ...via('198.18.2.0/26', '', ''), nexthops: [{ gateway: '192.0.2.12', dev: 'eth0', onlink: false }, { gateway: '192.0.2.13', dev: 'eth0', onlink: false }] },
    ],
    lines: [],
  },
  {
    name: 'changed gateway replaced, stale route of ours deleted',
    json: [
      { dst: '198.18.1.0/26', gateway: '192.0.2.99', dev: 'eth0', protocol: '87', flags: ['onlink'] },
      { dst: '198.18.9.0/26', gateway: '192.0.2.12', dev: 'tunl0', protocol: '87', flags: ['onlink'] },
    ],
    desired: [via('198.18.1.0/26', '192.0.2.12', 'eth0')],
    lines: ['route replace 198.18.1.0/26 via 192.0.2.12 dev eth0 onlink proto 87', 'route delete 198.18.9.0/26 table 254 proto 87 metric 0'],
  },
  {
    name: 'other protocols never touched, even in our prefix range; a key they hold is a conflict',
    json: [
      { dst: '198.18.3.0/26', gateway: '192.0.2.12', dev: 'eth0', protocol: '12', flags: [] },
      { dst: '198.18.0.0/15', gateway: '192.0.2.1', dev: 'eth0', protocol: '4', flags: [] },
      { dst: '192.0.2.0/24', dev: 'eth0', protocol: '2', scope: '253', prefsrc: '192.0.2.11', flags: [] },
    ],
    desired: [via('198.18.3.0/26', '192.0.2.13', 'eth0')],
    lines: [],
  },
  {
    name: 'a different metric is a different key: ours added beside theirs',
    json: [{ dst: '198.18.3.0/26', gateway: '192.0.2.12', dev: 'eth0', protocol: '12', metric: 32, flags: [] }],
    desired: [via('198.18.3.0/26', '192.0.2.13', 'eth0')],
    lines: ['route replace 198.18.3.0/26 via 192.0.2.13 dev eth0 onlink proto 87'],
  },
  {
    name: 'veth /32s left alone while the workloads are unknown',
    json: [{ dst: '198.18.0.5', dev: 'pinto1234', protocol: '3', scope: '253', flags: [] }],
    desired: [],
    lines: [],
  },
  {
    name: 'unknown veth /32 inside its grace period: kept',
    json: [{ dst: '198.18.0.5', dev: 'pinto1234', protocol: '3', scope: '253', flags: [] }],
    desired: [],
    workloads: ['198.18.0.6'],
    lines: [],
  },
]

for (const row of rows) {
  t.test(row.name, async (t) => {
    const actual = parseRouteJson(JSON.stringify(row.json), 4, 254)
    const tracker = new RouteDeltaTracker({ protocol: P, vethPrefix: 'pinto', graceMs: 10_000 })
    const d = tracker.diff(want(...row.desired), actual, row.now ?? 1000, row.workloads === undefined ? undefined : new Set(row.workloads))
    t.same(batchScript(d.ops).split('\n').filter((l) => l !== ''), row.lines)
  })
}

t.test('grace period: an unknown veth /32 goes only after graceMs, a known one never, a non-veth one never', async (t) => {
  const json = JSON.stringify([
    { dst: '198.18.0.5', dev: 'pinto1234', protocol: '3', scope: '253', flags: [] },
    { dst: '198.18.0.6', dev: 'pinto5678', protocol: '3', scope: '253', flags: [] },
    { dst: '198.18.0.7', dev: 'eth1', protocol: '3', scope: '253', flags: [] },
  ])
  const actual = parseRouteJson(json, 4, 254)
  const tracker = new RouteDeltaTracker({ protocol: P, vethPrefix: 'pinto', graceMs: 10_000 })
  const known = new Set(['198.18.0.6'])
  const first = tracker.diff(new Map(), actual, 1000, known)
  t.same(first.ops, [])
  t.equal(first.graceDeadline, 11_000)
  t.same(tracker.diff(new Map(), actual, 10_999, known).ops, [])
  const due = tracker.diff(new Map(), actual, 11_000, known)
  t.same(batchScript(due.ops), 'route delete 198.18.0.5/32 dev pinto1234 table 254 proto 3 metric 0\n')
  // The pod turns up before deletion: the clock restarts if it disappears again.
  const tracker2 = new RouteDeltaTracker({ protocol: P, vethPrefix: 'pinto', graceMs: 10_000 })
  tracker2.diff(new Map(), actual, 0, known)
  tracker2.diff(new Map(), actual, 5000, new Set(['198.18.0.5', '198.18.0.6']))
  t.equal(tracker2.diff(new Map(), actual, 12_000, known).graceDeadline, 22_000)
})

t.test('conflicts are reported with the holder', async (t) => {
  const actual = parseRouteJson(JSON.stringify([{ dst: '198.18.3.0/26', gateway: '192.0.2.12', dev: 'eth0', protocol: 'bird', flags: [] }]), 4, 254)
  const d = new RouteDeltaTracker({ protocol: P, vethPrefix: 'pinto', graceMs: 0 }).diff(want(via('198.18.3.0/26', '192.0.2.13', 'eth0')), actual, 0)
  t.equal(d.conflicts.length, 1)
  t.equal(d.conflicts[0]?.holder.protocol, 12)
})

t.test('parseRouteJson: IPv6 defaults, tables, tos, host routes', async (t) => {
  const v6 = parseRouteJson(JSON.stringify([{ type: '6', dst: '2001:db8:2::/122', dev: 'lo', protocol: '87', metric: 1024, flags: [], pref: 'medium' }, { dst: 'default', gateway: '2001:db8::1', dev: 'eth0', protocol: '3', metric: 1024, flags: [] }]), 6, 254)
  t.same(v6.map(replaceLine), ['route replace blackhole 2001:db8:2::/122 proto 87', 'route replace ::/0 via 2001:db8::1 dev eth0 proto 3'])
  const other = parseRouteJson(JSON.stringify([{ dst: '198.18.0.0/28', tos: '0x10', gateway: '192.0.2.5', dev: 'va', table: '7', protocol: '12', flags: ['linkdown'] }]), 4, 7)
  t.match(other[0], { table: 7, tos: 16, protocol: 12, dst: '198.18.0.0/28' })
})

t.test('parseRouteJson: bad input names the element and field', async (t) => {
  const cases: [string, RegExp][] = [
    ['not json', /\(document\): not JSON/],
    ['{}', /\(document\): expected an array/],
    ['[{"gateway":"192.0.2.1"}]', /\[0\]\.dst: missing/],
    ['[{"dst":"198.18.0.0/26"},{"dst":"198.18.0.64/26","protocol":"wibble"}]', /\[1\]\.protocol: unknown protocol "wibble"/],
    ['[{"dst":"198.18.0.0/26","metric":"x"}]', /\[0\]\.metric: expected a number/],
    ['[{"dst":"198.18.0.0/26","nexthops":[{"gateway":5}]}]', /\[0\]\.nexthops\[0\]\.gateway: expected a string/],
  ]
  for (const [text, re] of cases) t.throws(() => parseRouteJson(text, 4, 254), { name: 'RouteParseError', message: re }, text)
  t.ok(new RouteParseError('[0]', 'x') instanceof Error)
  t.same(parseRouteJson('', 4, 254), [], 'an empty table may print nothing')
})

t.test('parseMonitorLine: the fields felix filters on', async (t) => {
  t.match(parseMonitorLine('Deleted blackhole 198.18.0.0/26 proto 87 '), { deleted: true, dst: '198.18.0.0/26', protocol: 87, table: 254 })
  t.match(parseMonitorLine('198.18.0.5 dev pinto1 proto boot scope link '), { deleted: false, dst: '198.18.0.5/32', protocol: 3, dev: 'pinto1' })
  t.match(parseMonitorLine('2001:db8:1::/122 via 2001:db8::2 dev eth0 table 100 proto 87 metric 1024 pref medium'), { dst: '2001:db8:1::/122', table: 100, metric: 1024 })
  t.equal(parseMonitorLine('\tnexthop via 192.0.2.4 dev va weight 1 onlink'), undefined)
  t.equal(parseMonitorLine(''), undefined)
  t.match(parseMonitorLine('Deleted blackhole 198.18.0.0/26 proto 87 '), { type: 'blackhole', gateway: undefined })
  t.match(parseMonitorLine('198.18.0.64/26 via 192.0.2.12 dev eth0 proto 87 '), { type: 'unicast', gateway: '192.0.2.12', dev: 'eth0' })
})

t.test('parseMonitorHopLine: the hop lines of a multipath route, nothing else', async (t) => {
  t.same(parseMonitorHopLine('\tnexthop via 192.0.2.4 dev va weight 1 onlink'), { gateway: '192.0.2.4', dev: 'va', onlink: true })
  t.same(parseMonitorHopLine('\tnexthop via 192.0.2.5 dev eth0 weight 1 '), { gateway: '192.0.2.5', dev: 'eth0', onlink: false })
  t.same(parseMonitorHopLine('\tnexthop dev pinto1 weight 1 '), { dev: 'pinto1', onlink: false })
  t.equal(parseMonitorHopLine('198.18.0.64/26 via 192.0.2.12 dev eth0 proto 87 '), undefined)
  t.equal(parseMonitorHopLine(''), undefined)
})

t.test('monitor device lines: links always, addresses only when deleted, never a route', async (t) => {
  const rows: [string, boolean, string | undefined][] = [
    ['3: eth0@if5: <BROADCAST,MULTICAST> mtu 1500 qdisc noqueue state DOWN', true, 'eth0'],
    ['Deleted 7: vxlan.pinto: <BROADCAST> mtu 1450', true, 'vxlan.pinto'],
    ['2: eth0    inet6 fe80::1/64 scope link ', true, undefined],
    ['Deleted 2: eth0    inet 192.0.2.11/24 brd 192.0.2.255 scope global eth0', true, 'eth0'],
    ['198.18.0.64/26 via 192.0.2.12 dev eth0 proto 87 ', false, undefined],
    ['2001:db8::/64 dev eth0 proto kernel metric 256 pref medium', false, undefined],
    ['Deleted 198.18.0.0/26 proto 87 ', false, undefined],
  ]
  for (const [line, device, dev] of rows) {
    t.equal(isDeviceLine(line), device, `${line}: device line`)
    t.equal(monitorDeviceEvent(line), dev, `${line}: device`)
  }
})

t.test('parseBatchErrors maps ip -force failures to op indexes', async (t) => {
  const stderr = 'Error: Nexthop has invalid gateway.\nCommand failed -:2\nCannot find device "nope"\nCommand failed -:3\n'
  t.same([...parseBatchErrors(stderr)], [
    [1, 'Error: Nexthop has invalid gateway.'],
    [2, 'Cannot find device "nope"'],
  ])
})

t.test('sameRoute: type, protocol and hops in any order; nothing else', async (t) => {
  const hop = (gateway: string | undefined, dev: string | undefined, onlink = false) => ({ ...(gateway !== undefined ? { gateway } : {}), ...(dev !== undefined ? { dev } : {}), onlink })
  const r = (nexthops: ReturnType<typeof hop>[], over: Partial<KernelRoute> = {}): KernelRoute => ({ family: 4, table: 254, dst: '198.18.0.0/26', tos: 0, metric: 0, type: 'unicast', protocol: P, nexthops, ...over })
  const rows: [string, KernelRoute, KernelRoute, boolean][] = [
    ['one hop, equal', r([hop('192.0.2.12', 'eth0')]), r([hop('192.0.2.12', 'eth0')]), true],
    ['another gateway', r([hop('192.0.2.12', 'eth0')]), r([hop('192.0.2.13', 'eth0')]), false],
    ['another device', r([hop('192.0.2.12', 'eth0')]), r([hop('192.0.2.12', 'eth1')]), false],
    ['onlink differs', r([hop('192.0.2.12', 'eth0', true)]), r([hop('192.0.2.12', 'eth0')]), false],
    ['no gateway and an empty one', r([hop(undefined, 'pinto1')]), r([hop('', 'pinto1')]), true],
    ['ECMP in another order', r([hop('192.0.2.12', 'eth0'), hop('192.0.2.13', 'eth0')]), r([hop('192.0.2.13', 'eth0'), hop('192.0.2.12', 'eth0')]), true],
    ['ECMP with a hop less', r([hop('192.0.2.12', 'eth0'), hop('192.0.2.13', 'eth0')]), r([hop('192.0.2.12', 'eth0')]), false],
    ['blackholes', r([], { type: 'blackhole' }), r([], { type: 'blackhole' }), true],
    ['another type', r([], { type: 'blackhole' }), r([], { type: 'unreachable' }), false],
    ['another protocol', r([hop('192.0.2.12', 'eth0')]), r([hop('192.0.2.12', 'eth0')], { protocol: 12 }), false],
    ['the metric is the key, not the route', r([hop('192.0.2.12', 'eth0')]), r([hop('192.0.2.12', 'eth0')], { metric: 5 }), true],
  ]
  for (const [name, a, b, same] of rows) {
    t.equal(sameRoute(a, b), same, name)
    t.equal(sameRoute(b, a), same, `${name} (the other way)`)
  }
})
