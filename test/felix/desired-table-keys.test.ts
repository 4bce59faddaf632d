// felix's desired table keyed by numbers and bytes against references keyed by text: IPv6 routes of random
// lengths (stored by their bytes) equal a full render of a model keyed by prefix text; every listed change's
// desired route is what get() finds by parsing the key; a streaming read's IPv6 match marks exactly the
// routes the table wants; a combo id that is freed and made again for other hops renders those hops; and
// a walk that puts learned changes into operations leaves the kernel as the keyed walk does.

import t from 'tap'
import { formatIpv6, parseIpv6 } from '../../net/index.js'
import { DesiredTable, renderDesired, type HopSource, type KernelRoute, type LearnedNextHop, type LearnedRoute } from '../../felix/index.js'
import { replaceLine } from '../../felix/kernel-route.js'
import { LearnedOps } from '../../felix/learned-ops.js'
import type { DumpedRoute } from '../../felix/rtnl-routes.js'
import { Rng } from '../harness/random.js'
import { pools, vteps, localNode } from './render-fixtures.js'

const HOPS: LearnedNextHop[] = [{ nodeName: 'b', address: '192.0.2.12' }, { nodeName: 'c', address: '198.51.100.13' }, { nodeName: 'b', address: '2001:db8::12' }, { nodeName: 'c', address: '2001:db8::13' }]
const hops: HopSource = { hop: (id) => HOPS[id] }

function table(): DesiredTable {
  const d = new DesiredTable({ protocol: 87 })
  d.setContext({ pools, vteps, localNode }, hops)
  return d
}

function randomPrefix(r: Rng): { addr: Uint8Array; len: number; text: string } {
  const addr = new Uint8Array([0x20, 0x01, 0x0d, 0xb8, 0, r.int(3), 0, r.int(3), 0, 0, 0, 0, 0, 0, 0, r.int(4)])
  if (r.int(4) === 0) addr[8] = r.int(256)
  const len = r.pick([48, 56, 60, 64, 65, 96, 122, 128])
  for (let b = len; b < 128; b++) addr[b >> 3]! &= ~(0x80 >> (b & 7))
  return { addr, len, text: `${formatIpv6(addr)}/${len}` }
}

const line = (r: KernelRoute | null | undefined): string | undefined => (r == null ? undefined : replaceLine(r))

t.test('IPv6 by bytes: random changes leave the table equal to a full render of a text-keyed model', async (t) => {
  for (const seed of [11, 12, 13, 14]) {
    const r = new Rng(seed)
    const d = table()
    const model = new Map<string, { hops: number[]; metric?: number }>()
    let localBlocks: string[] = []
    const kernel = new Map<string, string>()
    let wrong = 0
    const take = (): void => {
      for (const [key, held, want] of d.takeChanges().entries()) {
        // What the walk says is desired there must be what a lookup by the key's text finds.
        const byKey = d.get(key)
        if (want !== undefined && line(want) !== line(byKey) && wrong++ < 5) t.fail(`seed ${seed}: ${key}: listed ${line(want)}, get() ${line(byKey)}`)
        if (line(held) !== kernel.get(key) && wrong++ < 5) t.fail(`seed ${seed}: ${key}: listed as holding ${line(held)}, written ${kernel.get(key)}`)
        if (byKey === undefined) kernel.delete(key)
        else kernel.set(key, replaceLine(byKey))
      }
    }
    for (let step = 0; step < 6000; step++) {
      const p = randomPrefix(r)
      const choice = r.int(20)
      if (choice < 11) {
        const hs = r.int(3) === 0 ? [2, 3] : [2 + r.int(2)]
        const metric = r.int(4) === 0 ? 100 + r.int(2) : undefined
        d.set(6, 0, p.addr, p.len, hs, metric)
        model.set(p.text, { hops: hs, ...(metric !== undefined ? { metric } : {}) })
      } else if (choice < 18) {
        d.delete(6, 0, p.addr, p.len)
        model.delete(p.text)
      } else if (choice < 19) {
        localBlocks = r.int(2) === 0 ? [] : [`${formatIpv6(p.addr)}/${p.len}`]
        d.setFixed(renderDesired({ pools: [], routes: [], localBlocks, vteps: [], localNode }, { protocol: 87 }).routes)
      }
      if (r.int(50) === 0) take()
    }
    take()
    t.equal(wrong, 0, `seed ${seed}: every listed change named what was written and what is desired`)
    const routes: LearnedRoute[] = [...model].map(([prefix, m]) => ({ prefix, nextHops: m.hops.map((h) => HOPS[h]!), ...(m.metric !== undefined ? { metric: m.metric } : {}) }))
    const want = renderDesired({ pools, routes, localBlocks, vteps, localNode }, { protocol: 87 }).routes
    const got = [...d].map(([k, x]) => [k, replaceLine(x)]).sort()
    t.same(got, [...want].map(([k, x]) => [k, replaceLine(x)]).sort(), `seed ${seed}: the table equals the full render (${want.size} routes)`)
    t.same([...kernel].sort(), got, `seed ${seed}: writing the listed keys leaves the kernel equal to the table`)
    t.equal(d.learnedCount, model.size, `seed ${seed}: learned count`)
  }
})

t.test("a streaming read's IPv6 match marks exactly the desired routes, by the dump's bytes", async (t) => {
  const r = new Rng(21)
  const d = table()
  const routes = new Map<string, KernelRoute>()
  for (let i = 0; i < 3000; i++) {
    const p = randomPrefix(r)
    d.set(6, 0, p.addr, p.len, [2 + r.int(2)], r.int(5) === 0 ? 200 : undefined)
  }
  d.setFixed(renderDesired({ pools: [], routes: [], localBlocks: ['2001:db8:1::/122'], vteps: [], localNode }, { protocol: 87 }).routes)
  d.set(6, 0, parseIpv6('2001:db8:1::'), 122, [2], undefined)
  for (const [k, x] of d) routes.set(k, x)
  d.takeChanges().drop()
  // Each desired route dumped as the kernel would hold it, half of them altered (metric, hop, protocol).
  const buf = new Uint8Array(64)
  let altered = 0
  for (const x of routes.values()) {
    const slash = x.dst.indexOf('/')
    buf.set(parseIpv6(x.dst.slice(0, slash))!, 24)
    const change = r.int(6)
    const dumped: DumpedRoute = { family: 6, table: 254, dst4: 0, dst6: buf, dst6At: 24, len: Number(x.dst.slice(slash + 1)), tos: 0, metric: change === 0 ? x.metric + 1 : x.metric, type: x.type, protocol: change === 1 ? 3 : 87, nexthops: change === 2 ? [{ gateway: '2001:db8::99', dev: 'eth0', onlink: false }] : x.nexthops, nhid: undefined }
    const exact = change > 2 && x.type === 'unicast'
    if (!exact) altered++
    t.equal(d.matchDumped(dumped), exact, x.dst)
  }
  // The learned route a fixed one shadows is never the one the kernel should keep.
  buf.set(parseIpv6('2001:db8:1::')!, 24)
  const shadowed: DumpedRoute = { family: 6, table: 254, dst4: 0, dst6: buf, dst6At: 24, len: 122, tos: 0, metric: 1024, type: 'unicast', protocol: 87, nexthops: [{ gateway: '2001:db8::12', dev: 'eth0', onlink: false }], nhid: undefined }
  t.equal(d.matchDumped(shadowed), false, 'a prefix a fixed route holds is not matched')
  const left = [...d.unmatched()].map(([k]) => k)
  t.equal(left.length, altered, 'unmatched: the altered routes and the fixed one')
  for (const k of left) t.ok(routes.has(k), k)
  d.clearMatched()
  t.equal([...d.unmatched()].length, routes.size, 'cleared: every route unmatched again')
})

t.test('a combo id freed and made again for other hops renders the new hops', async (t) => {
  const d = table()
  const a = parseIpv6('2001:db8:1:1::')!
  const b = parseIpv6('2001:db8:1:2::')!
  d.set(6, 0, a, 64, [2], undefined)
  t.match(line(d.get(`254 2001:db8:1:1::/64 0 1024`)), /via 2001:db8::12 /)
  void [...d.takeChanges().entries()]
  d.delete(6, 0, a, 64)
  void [...d.takeChanges().entries()]
  d.set(6, 0, b, 64, [3], undefined)
  t.match(line(d.get(`254 2001:db8:1:2::/64 0 1024`)), /via 2001:db8::13 /, 'through the hop it was set with')
  t.same([...d.hopRoutes()].map((x) => x.nexthops[0]!.gateway), ['2001:db8::13'], 'and the nexthop sweep keeps that hop alone')
})

t.test('a walk into learned operations leaves the kernel as the keyed walk does, and lists by key what others may hold', async (t) => {
  const ipv4 = (n: number): number => ((198 << 24) | (18 << 16)) + n * 64
  for (const seed of [31, 32, 33]) {
    const r = new Rng(seed)
    const d = table()
    const kernel = new Map<string, string>()
    // Prefixes another protocol's route is at in the kernel: their changes must come by key.
    const others = new Set<string>()
    let wrong = 0
    const fail = (m: string): void => {
      if (wrong++ < 5) t.fail(`seed ${seed}: ${m}`)
    }
    const ops = new LearnedOps(254, 87, 16)
    // The operations of a batch, written as the reconciler writes them.
    const write = (): void => {
      for (let i = 0; i < ops.length; i++) {
        const o = ops.op(i)
        const at = o.route.family === 4 ? `${o.route.dst4}/${o.route.dstLen}` : o.route.dst
        if (others.has(at)) fail(`${o.route.dst}: another protocol's route is there, yet it came as an operation`)
        if (o.op === 'delete') {
          if (kernel.get(o.key) !== replaceLine(o.route)) fail(`${o.key}: deleted ${replaceLine(o.route)}, written ${kernel.get(o.key)}`)
          kernel.delete(o.key)
        } else {
          if (kernel.get(o.key) === replaceLine(o.route)) fail(`${o.key}: replaced with what it held`)
          kernel.set(o.key, replaceLine(o.route))
        }
      }
      ops.reset()
    }
    const take = (): void => {
      ops.reset()
      // Small batches: the walk stops for the writer several times a take.
      const sink = { ops, limit: 7, free: (f: 4 | 6, a4: number, a6: Uint8Array | undefined, len: number) => !others.has(f === 4 ? `${a4}/${len}` : `${formatIpv6(a6!)}/${len}`) }
      for (const c of d.takeChanges().walk!(sink)) {
        if (c === undefined) {
          if (ops.length < 7) fail(`the walk stopped with ${ops.length} operations, fewer than a batch`)
          write()
          continue
        }
        const [key, held] = c
        if (line(held) !== kernel.get(key)) fail(`${key}: listed as holding ${line(held)}, written ${kernel.get(key)}`)
        const now = d.get(key)
        if (now === undefined) kernel.delete(key)
        else kernel.set(key, replaceLine(now))
      }
      write()
    }
    for (let step = 0; step < 8000; step++) {
      const choice = r.int(24)
      const v6 = r.int(3) === 0
      const p = randomPrefix(r)
      const addr4 = ipv4(r.int(200))
      const len4 = r.pick([26, 27, 32])
      const metric = r.int(4) === 0 ? 100 + r.int(2) : undefined
      if (choice < 12) {
        if (v6) d.set(6, 0, p.addr, p.len, r.int(3) === 0 ? [2, 3] : [2 + r.int(2)], metric)
        else d.set(4, addr4, undefined, len4, r.int(3) === 0 ? [0, 1] : [r.int(2)], metric)
      } else if (choice < 20) {
        if (v6) d.delete(6, 0, p.addr, p.len)
        else d.delete(4, addr4, undefined, len4)
      } else if (choice < 21) {
        const localBlocks = r.int(2) === 0 ? [] : [v6 ? p.text : `198.18.${(addr4 >>> 8) & 255}.${addr4 & 255}/${len4}`]
        d.setFixed(renderDesired({ pools: [], routes: [], localBlocks, vteps: [], localNode }, { protocol: 87 }).routes)
      } else if (choice < 22 && others.size < 20) others.add(v6 ? p.text : `${addr4}/${len4}`)
      if (r.int(60) === 0) take()
    }
    take()
    t.equal(wrong, 0, `seed ${seed}: every operation and listed change named what was written and what is desired`)
    const got = [...d].map(([k, x]) => [k, replaceLine(x)]).sort()
    t.same([...kernel].sort(), got, `seed ${seed}: writing the operations and the listed keys leaves the kernel equal to the table (${got.length} routes)`)
  }
})
