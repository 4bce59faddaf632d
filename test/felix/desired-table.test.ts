// felix's incremental desired table: a learned route (next-hop ids, metric) becomes the kernel route the
// full render makes of it, table-driven per pool mode; withdraws, ECMP and metric changes list exactly the
// keys they touch with what those held; a pool change re-renders; fixed routes win; and after random
// sequences of changes the table equals renderDesired of the same state.

import t from 'tap'
import type { IPPool } from '../../config/resources/index.js'
import { DesiredTable, RenderContext, renderDesired, type DesiredState, type HopSource, type KernelRoute, type LearnedNextHop, type LearnedRoute } from '../../felix/index.js'
import { replaceLine } from '../../felix/kernel-route.js'
import { formatIpv4, formatIpv6, parseIpv6 } from '../../net/index.js'
import { Rng } from '../harness/random.js'
import { pool, pools, vteps, localNode } from './render-fixtures.js'

/** Next hops by id: 0 = node b (same subnet), 1 = node c (across a router), 2 = a router, 3 = node b's IPv6. */
const HOPS: LearnedNextHop[] = [{ nodeName: 'b', address: '192.0.2.12' }, { nodeName: 'c', address: '198.51.100.13' }, { address: '203.0.113.1' }, { nodeName: 'b', address: '2001:db8::12' }]
const hops: HopSource = { hop: (id) => HOPS[id] }

function table(ps: readonly IPPool[] = pools): DesiredTable {
  const d = new DesiredTable({ protocol: 87 })
  d.setContext({ pools: ps, vteps, localNode }, hops)
  return d
}

const v4 = (text: string): [number, number] => {
  const [a, l] = text.split('/')
  return [a!.split('.').reduce((x, o) => x * 256 + Number(o), 0), Number(l)]
}
const lines = (d: DesiredTable): string[] => [...d.values()].map(replaceLine).sort()

const rows: { name: string; prefix: string; hops: number[]; metric?: number; line?: string }[] = [
  { name: 'no encap', prefix: '198.18.0.64/26', hops: [0], line: 'route replace 198.18.0.64/26 via 192.0.2.12 dev eth0 proto 87' },
  { name: 'outside every pool', prefix: '10.1.0.0/16', hops: [2], line: 'route replace 10.1.0.0/16 via 203.0.113.1 dev eth0 proto 87' },
  { name: 'IPIP Always', prefix: '198.18.16.64/26', hops: [1], line: 'route replace 198.18.16.64/26 via 198.51.100.13 dev tunl0 onlink proto 87' },
  { name: 'IPIP CrossSubnet, same subnet', prefix: '198.18.32.64/26', hops: [0], line: 'route replace 198.18.32.64/26 via 192.0.2.12 dev eth0 onlink proto 87' },
  { name: 'IPIP CrossSubnet, other subnet', prefix: '198.18.32.128/26', hops: [1], line: 'route replace 198.18.32.128/26 via 198.51.100.13 dev tunl0 onlink proto 87' },
  { name: 'VXLAN through the VTEP', prefix: '198.18.48.64/26', hops: [0], line: 'route replace 198.18.48.64/26 via 198.18.48.65 dev vxlan.pinto onlink proto 87' },
  { name: 'VXLAN with no VTEP: nothing', prefix: '198.18.48.192/26', hops: [2] },
  { name: 'ECMP, hops sorted', prefix: '198.18.1.0/26', hops: [1, 0], line: 'route replace 198.18.1.0/26 proto 87 nexthop via 192.0.2.12 dev eth0 nexthop via 198.51.100.13 dev eth0' },
  { name: 'a metric', prefix: '198.18.2.0/26', hops: [0], metric: 1024, line: 'route replace 198.18.2.0/26 via 192.0.2.12 dev eth0 proto 87 metric 1024' },
  { name: 'an IPv6 next hop for IPv4: nothing', prefix: '198.18.3.0/26', hops: [3] },
]

t.test('one learned route renders as the full render renders it', async (t) => {
  for (const row of rows) {
    const d = table()
    const [addr, len] = v4(row.prefix)
    d.set(4, addr, undefined, len, row.hops, row.metric)
    const full = renderDesired({ pools, routes: [{ prefix: row.prefix, nextHops: row.hops.map((h) => HOPS[h]!), ...(row.metric !== undefined ? { metric: row.metric } : {}) }], localBlocks: [], vteps, localNode }, { protocol: 87 })
    t.same(lines(d), row.line === undefined ? [] : [row.line], row.name)
    t.same(lines(d), [...full.routes.values()].map(replaceLine).sort(), `${row.name}: equal to renderDesired`)
    if (row.line !== undefined) {
      const key = [...d][0]![0]
      t.equal(replaceLine(d.get(key)!), row.line, `${row.name}: found again by its key`)
      t.ok(d.has(key))
    }
  }
  const d = table()
  d.set(6, 0, new Uint8Array([0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]), 64, [3], undefined)
  t.same(lines(d), ['route replace 2001:db8:1::/64 via 2001:db8::12 dev eth0 proto 87'], 'IPv6')
  t.same(d.families(), [4, 6])
})

t.test('each change lists the keys it touches with what they held', async (t) => {
  const d = table()
  const [a, l] = v4('198.18.0.64/26')
  d.set(4, a, undefined, l, [0], undefined)
  const added = d.takeChanged()
  t.same([...added], [['254 198.18.0.64/26 0 0', null]], 'a new route: its key, held nothing')
  t.same(d.takeChanged().size, 0, 'taken once')

  d.set(4, a, undefined, l, [0], undefined)
  t.equal(d.takeChanged().size, 0, 'the same route again changes nothing')

  const before = d.get('254 198.18.0.64/26 0 0')!
  d.set(4, a, undefined, l, [0, 1], undefined)
  const ecmp = d.takeChanged()
  t.same([...ecmp.keys()], ['254 198.18.0.64/26 0 0'], 'ECMP: the same key')
  t.equal(replaceLine(ecmp.get('254 198.18.0.64/26 0 0')!), replaceLine(before), 'with the route it had')
  t.equal(d.get('254 198.18.0.64/26 0 0')!.nexthops.length, 2)

  d.set(4, a, undefined, l, [1], 1024)
  const metric = d.takeChanged()
  t.same([...metric.keys()].sort(), ['254 198.18.0.64/26 0 0', '254 198.18.0.64/26 0 1024'], 'a metric change: the old key and the new one')
  t.equal(metric.get('254 198.18.0.64/26 0 1024'), null)
  t.equal(d.get('254 198.18.0.64/26 0 0'), undefined, 'the old key holds nothing now')

  d.delete(4, a, undefined, l)
  const withdrawn = d.takeChanged()
  t.same([...withdrawn.keys()], ['254 198.18.0.64/26 0 1024'], 'a withdraw: its key')
  t.match(replaceLine(withdrawn.get('254 198.18.0.64/26 0 1024')!), /metric 1024/)
  t.same(lines(d), [])
  d.delete(4, a, undefined, l)
  t.equal(d.takeChanged().size, 0, 'withdrawing what is not there changes nothing')
})

t.test('the written view holds what was desired at the last take, until the next', async (t) => {
  const d = table()
  const [a, l] = v4('198.18.0.64/26')
  d.set(4, a, undefined, l, [0], undefined)
  d.takeChanged()
  const written = d.asWritten()
  d.set(4, a, undefined, l, [1], undefined)
  t.match(replaceLine(written.get('254 198.18.0.64/26 0 0')!), /via 192\.0\.2\.12/, 'the kernel still has the old hop')
  t.match(replaceLine(d.get('254 198.18.0.64/26 0 0')!), /via 198\.51\.100\.13/, 'the desired route is the new one')
  d.takeChanged()
  t.match(replaceLine(written.get('254 198.18.0.64/26 0 0')!), /via 198\.51\.100\.13/, 'once taken, the new one is what is written')
  t.same([...written].map(([k]) => k), ['254 198.18.0.64/26 0 0'])
})

t.test('a pool change re-renders every route; fixed routes win over learned ones', async (t) => {
  const d = table([pool('plain', '198.18.0.0/16')])
  const [a, l] = v4('198.18.48.64/26')
  d.set(4, a, undefined, l, [0], undefined)
  t.same(lines(d), ['route replace 198.18.48.64/26 via 192.0.2.12 dev eth0 proto 87'])
  d.setContext({ pools: [pool('vx', '198.18.0.0/16', { vxlanMode: 'Always' })], vteps, localNode }, hops)
  t.same(lines(d), ['route replace 198.18.48.64/26 via 198.18.48.65 dev vxlan.pinto onlink proto 87'], 'now through the VTEP')
  t.equal(d.takeChanged().size, 0, 'a context change lists nothing: the caller resyncs')

  const fixed = renderDesired({ pools: [], routes: [], localBlocks: ['198.18.48.64/26'], vteps: [], localNode }, { protocol: 87 }).routes
  d.setFixed(fixed)
  t.same(lines(d), ['route replace blackhole 198.18.48.64/26 proto 87'], 'the blackhole wins')
  t.same([...d.takeChanged().keys()], ['254 198.18.48.64/26 0 0'])
  d.setFixed(new Map())
  t.same(lines(d), ['route replace 198.18.48.64/26 via 198.18.48.65 dev vxlan.pinto onlink proto 87'], 'and the learned route is back when it goes')
  t.match(replaceLine(d.takeChanged().get('254 198.18.48.64/26 0 0')!), /blackhole/, 'listed with the blackhole it held')
})

/** The state the model holds, as renderDesired takes it. */
function fullRender(model: ReadonlyMap<string, { hops: number[]; metric?: number }>, ps: readonly IPPool[], localBlocks: readonly string[]): Map<string, KernelRoute> {
  const routes: LearnedRoute[] = [...model].map(([prefix, r]) => ({ prefix, nextHops: r.hops.map((h) => HOPS[h]!), ...(r.metric !== undefined ? { metric: r.metric } : {}) }))
  const state: DesiredState = { pools: ps, routes, localBlocks, vteps, localNode }
  return renderDesired(state, { protocol: 87 }).routes
}

const plainRoute = (r: KernelRoute): string => replaceLine(r)

t.test('differential: after random changes the table equals a full render of the same state', async (t) => {
  const poolSets = [pools, [pool('plain', '198.18.0.0/16')], [pool('vx', '198.18.0.0/16', { vxlanMode: 'CrossSubnet' })]]
  for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
    const rng = new Rng(seed)
    let ps = poolSets[0]!
    const d = table(ps)
    const model = new Map<string, { hops: number[]; metric?: number }>()
    let localBlocks: string[] = []
    // What the kernel would hold: the desired routes as of each take, patched by the keys listed.
    let kernel = new Map<string, KernelRoute>()
    for (let step = 0; step < 400; step++) {
      const choice = rng.int(20)
      const v6 = rng.int(8) === 0
      const addr = v6 ? 0 : ((198 << 24) | (18 << 16) | (rng.int(80) << 8) | (rng.int(4) << 6)) >>> 0
      const bytes = new Uint8Array([0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, rng.int(4), 0, 0, 0, 0, 0, 0, 0, 0])
      const len = v6 ? 64 : 26
      const text = v6 ? `${formatIpv6(bytes)}/64` : `${formatIpv4(addr)}/26`
      if (choice < 11) {
        const hs = v6 ? [3] : [...new Set(Array.from({ length: 1 + rng.int(3) }, () => rng.int(3)))]
        const metric = rng.int(4) === 0 ? 100 + rng.int(3) : undefined
        d.set(v6 ? 6 : 4, addr, v6 ? bytes : undefined, len, hs, metric)
        model.set(text, { hops: hs, ...(metric !== undefined ? { metric } : {}) })
      } else if (choice < 17) {
        d.delete(v6 ? 6 : 4, addr, v6 ? bytes : undefined, len)
        model.delete(text)
      } else if (choice < 19) {
        localBlocks = rng.int(2) === 0 ? [] : [`${formatIpv4(addr)}/26`]
        d.setFixed(renderDesired({ pools: [], routes: [], localBlocks, vteps: [], localNode }, { protocol: 87 }).routes)
      } else {
        ps = rng.pick(poolSets)
        d.setContext({ pools: ps, vteps, localNode }, hops)
        d.takeChanged()
        kernel = new Map([...d].map(([k, r]) => [k, r]))
      }
      if (rng.int(5) === 0) {
        for (const [k] of d.takeChanged()) {
          const now = d.get(k)
          if (now === undefined) kernel.delete(k)
          else kernel.set(k, now)
        }
      }
    }
    const want = fullRender(model, ps, localBlocks)
    const got = new Map([...d].map(([k, r]) => [k, plainRoute(r)]))
    t.same([...got].sort(), [...want].map(([k, r]) => [k, plainRoute(r)]).sort(), `seed ${seed}: the table equals the full render`)
    t.equal(d.count(), want.size, `seed ${seed}: count() without a walk`)
    for (const [k, r] of want) t.equal(d.get(k) && plainRoute(d.get(k)!), plainRoute(r), `seed ${seed}: ${k} found by key`)
    for (const [k] of d.takeChanged()) {
      const now = d.get(k)
      if (now === undefined) kernel.delete(k)
      else kernel.set(k, now)
    }
    t.same([...kernel].map(([k, r]) => [k, plainRoute(r)]).sort(), [...got].sort(), `seed ${seed}: writing only the listed keys leaves the kernel equal to the table`)
  }
})

t.test("an IPv6 route's pool, matched on its bytes, is the one the context's CIDR match finds", async (t) => {
  // Nested pools at byte and non-byte boundaries, two of one length side by side, and ::/0.
  const cidrs = ['2001:db8::/32', '2001:db8:1::/48', '2001:db8:1:8000::/49', '2001:db8:1:8000::/57', '2001:db8:2::/47', '2001:db8:4::/47', '::/0', '2001:db8:1:8000::40/122']
  const ctx = new RenderContext({ pools: cidrs.map((c, i) => pool(`p${i}`, c)), vteps, localNode })
  const r = new Rng(0x6006)
  let bad = 0
  for (let n = 0; n < 20_000 && bad < 5; n++) {
    const base = parseIpv6(cidrs[r.int(cidrs.length)]!.split('/')[0]!)!
    const addr = Uint8Array.from(base)
    // Flip a few bits around the pools' boundaries, then clear the host bits of a random length.
    for (let k = r.int(3); k > 0; k--) addr[4 + r.int(12)]! ^= 1 << r.int(8)
    const len = r.int(129)
    for (let b = len; b < 128; b++) addr[b >> 3]! &= ~(0x80 >> (b & 7))
    const got = ctx.poolForIpv6(addr, len)
    const want = ctx.poolFor({ family: 6, base: BigInt(`0x${Buffer.from(addr).toString('hex')}`), prefix: len })
    if (got.index !== want.index && bad++ < 5) t.fail(`${formatIpv6(addr)}/${len}: pool #${got.index}, the CIDR match finds #${want.index}`)
  }
  t.equal(bad, 0, 'every prefix finds the same pool both ways')
})
