// Codec throughput on one core: decode (framer + decodeMessage) and encode (packUpdates, or
// encodeMessage for one-prefix UPDATEs) for three workloads, printed beside the targets.
// usage: node dist/bench/codec.js [prefixes=1000000]

import {
  Framer,
  codecOptions,
  decodeMessage,
  encodeMessage,
  ipv4Prefix,
  ipv6Prefix,
  packUpdates,
  type PathAttributes,
  type Prefix,
  type UpdateMessage,
} from '../bgp/index.js'
import { loadavg } from 'node:os'

const N = Number(process.argv[2] ?? 1_000_000)
const opts = codecOptions({ as4: true })
const attrs: PathAttributes = {
  origin: 0,
  asPath: [{ type: 2, asns: [64512, 65001, 65002] }],
  nextHop: '192.0.2.1',
  localPref: 100,
  communities: [0xfde90064],
}
const TARGET_DECODE = 5e6
const TARGET_ENCODE = 3e6

function seconds(fn: () => void): number {
  const t0 = process.hrtime.bigint()
  fn()
  return Number(process.hrtime.bigint() - t0) / 1e9
}

/** The median of five runs, after one warm-up. */
function measure(fn: () => void): number {
  fn()
  const runs = Array.from({ length: 5 }, () => seconds(fn)).sort((a, b) => a - b)
  return runs[2]!
}

/** `columns`: IPv4 NLRI as typed arrays, as a session decodes them. */
function decodeAll(msgs: readonly Buffer[], columns = false): number {
  const framer = new Framer()
  let n = 0
  for (const m of msgs) {
    for (const frame of framer.push(m)) {
      const u = decodeMessage(frame, opts, columns) as UpdateMessage
      n += u.nlri.length + (u.nlriColumns?.count ?? 0) + (u.mpReach?.nlri.length ?? 0)
    }
  }
  return n
}

function report(name: string, prefixes: number, bytes: number, decodeS: number, encodeS: number, targeted = false): void {
  const dRate = prefixes / decodeS
  const eRate = prefixes / encodeS
  const mb = bytes / 1e6
  console.log(
    `${name.padEnd(36)} decode ${(dRate / 1e6).toFixed(2).padStart(6)} M prefixes/s ${(mb / decodeS).toFixed(0).padStart(5)} MB/s${targeted ? ` (${(dRate / TARGET_DECODE).toFixed(1)}x target)` : ''}` +
      `   encode ${(eRate / 1e6).toFixed(2).padStart(6)} M prefixes/s ${(mb / encodeS).toFixed(0).padStart(5)} MB/s${targeted ? ` (${(eRate / TARGET_ENCODE).toFixed(1)}x target)` : ''}`,
  )
}

const v4: Prefix[] = Array.from({ length: N }, (_, i) => ipv4Prefix(((10 << 24) >>> 0) + i * 256, 24))
let msgs: Buffer[] = []
const e4 = measure(() => {
  msgs = packUpdates({ afi: 1, attributes: attrs, announce: v4 }, opts)
})
const d4 = measure(() => {
  if (decodeAll(msgs) !== N) throw new Error('decode lost prefixes')
})
report(`IPv4 /24s packed (${msgs.length} UPDATEs)`, N, msgs.reduce((s, m) => s + m.length, 0), d4, e4, true)
const c4 = measure(() => {
  if (decodeAll(msgs, true) !== N) throw new Error('decode lost prefixes')
})
report('  the same, NLRI as columns', N, msgs.reduce((s, m) => s + m.length, 0), c4, e4, true)

const n6 = Math.floor(N / 4)
const v6: Prefix[] = Array.from({ length: n6 }, (_, i) => {
  const a = new Uint8Array(16)
  a.set([0x20, 0x01, 0x0d, 0xb8, (i >> 16) & 255, (i >> 8) & 255, i & 255])
  return ipv6Prefix(a, 56)
})
const v6attrs: PathAttributes = { origin: 0, asPath: [{ type: 2, asns: [64512, 65001] }], localPref: 100 }
const e6 = measure(() => {
  msgs = packUpdates({ afi: 2, attributes: v6attrs, nextHop: ['2001:db8::1', 'fe80::1'], announce: v6 }, opts)
})
const d6 = measure(() => {
  if (decodeAll(msgs) !== n6) throw new Error('decode lost prefixes')
})
report(`IPv6 /56s in MP_REACH (${msgs.length} UPDATEs)`, n6, msgs.reduce((s, m) => s + m.length, 0), d6, e6)

const nSmall = Math.floor(N / 10)
const small: UpdateMessage[] = Array.from({ length: nSmall }, (_, i) => ({
  type: 'update',
  withdrawn: [],
  attributes: { ...attrs, med: i },
  nlri: [v4[i]!],
}))
const es = measure(() => {
  msgs = small.map((u) => encodeMessage(u, opts))
})
const ds = measure(() => {
  if (decodeAll(msgs) !== nSmall) throw new Error('decode lost prefixes')
})
report(`one-prefix UPDATEs (${nSmall})`, nSmall, msgs.reduce((s, m) => s + m.length, 0), ds, es)
console.log(`targets on one core (IPv4 packed): decode >= ${TARGET_DECODE / 1e6} M prefixes/s, encode >= ${TARGET_ENCODE / 1e6} M/s (node ${process.version}, load ${loadavg()[0]!.toFixed(1)})`)
