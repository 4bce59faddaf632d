// A part's bench: parsing N prefix texts with ip-num (net/'s parseCidr, and ip-num's own
// IPv4CidrRange/IPv6CidrRange.fromCidr), net/'s numeric readCidr, and the BGP codec's parsePrefix;
// then the per-address IPAM math (contains, nth address) with ip-num's objects against net/'s bigint.
// usage: node dist/bench/ip-parse.js [--prefixes 1000000]

import { IPv4, IPv4CidrRange, IPv6CidrRange } from 'ip-num'
import { loadavg } from 'node:os'
import { parsePrefix } from '../bgp/codec/nlri.js'
import { cidrContains, formatAddr, parseCidr, readCidr } from '../net/index.js'
import { numberArg } from './args.js'

const N = numberArg('--prefixes', 1_000_000)
const v4 = Array.from({ length: N }, (_, i) => `${10 + ((i >>> 16) & 63)}.${(i >>> 8) & 255}.${i & 255}.0/24`)
const v6 = Array.from({ length: N }, (_, i) => `2001:db8:${(i >>> 16).toString(16)}:${(i & 0xffff).toString(16)}::/64`)

let sink = 0
/** One timed run after a warm-up run. */
function seconds(fn: () => void): number {
  fn()
  const t0 = process.hrtime.bigint()
  fn()
  return Number(process.hrtime.bigint() - t0) / 1e9
}

function row(label: string, s: number, anchor?: number): void {
  const ratio = anchor !== undefined ? `  ${(s / anchor).toFixed(1)}x the codec` : ''
  console.log(`  ${label.padEnd(44)} ${s.toFixed(2).padStart(7)} s  ${((s * 1e9) / N).toFixed(0).padStart(6)} ns/prefix${ratio}`)
}

console.log(`bench/ip-parse: ${N.toLocaleString('en')} prefixes per family, one core (node ${process.version}, load ${loadavg()[0]!.toFixed(1)})`)
for (const [family, texts] of [['IPv4', v4], ['IPv6', v6]] as const) {
  console.log(`${family} (${texts[0]} ...)`)
  const codec = seconds(() => {
    for (const t of texts) sink += parsePrefix(t).len
  })
  row('codec parsePrefix (numeric, no checks)', codec)
  row('net readCidr (numeric, canonical)', seconds(() => {
    for (const t of texts) sink += readCidr(t).prefix
  }), codec)
  row('net parseCidr (ip-num + strict checks)', seconds(() => {
    for (const t of texts) sink += parseCidr(t).prefix
  }), codec)
  row(`ip-num ${family}CidrRange.fromCidr alone`, seconds(() => {
    if (family === 'IPv4') for (const t of texts) sink += Number(IPv4CidrRange.fromCidr(t).cidrPrefix.value)
    else for (const t of texts) sink += Number(IPv6CidrRange.fromCidr(t).cidrPrefix.value)
  }), codec)
}

// IPAM's per-address math: is an address inside a prefix, and the nth address of a block as text.
const pool = parseCidr('10.0.0.0/10')
const range = IPv4CidrRange.fromCidr('10.0.0.0/10')
const addrs = Array.from({ length: N }, (_, i) => 0x0a000000n + BigInt(i * 7))
const ipnumAddrs = addrs.map((v) => IPv4.fromNumber(v))
console.log('IPAM per-address math (IPv4)')
const contains = seconds(() => {
  for (const v of addrs) sink += cidrContains(pool, 4, v) ? 1 : 0
})
row('net cidrContains (bigint)', contains)
row('ip-num range.contains(IPv4)', seconds(() => {
  for (const a of ipnumAddrs) sink += range.contains(a) ? 1 : 0
}))
row('net nth address as text (formatAddr)', seconds(() => {
  for (let i = 0; i < N; i++) sink += formatAddr(4, pool.base + BigInt(i)).length
}))
row('ip-num IPv4.fromNumber(base + n).toString()', seconds(() => {
  for (let i = 0; i < N; i++) sink += IPv4.fromNumber(pool.base + BigInt(i)).toString().length
}))
if (sink < 0) console.log(sink)
