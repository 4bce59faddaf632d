// RIB ingest: a full table of IPv4 /24s from one eBGP peer (accept-all policy) in sections of 1000
// prefixes, then the same prefixes from a second peer (two paths each). Prints seconds, prefixes/s
// and heap bytes per prefix. usage: node --expose-gc dist/bench/rib.js [prefixes=1000000]

import { ipv4Prefix, type PathAttributes, type Prefix } from '../bgp/index.js'
import { Rib, type RibPeer } from '../bgp/rib/index.js'
import { ACCEPT_ALL } from '../bgp/policy/index.js'

const N = Number(process.argv[2] ?? 1_000_000)
const SECTION = 1000
const TARGET_RATE = 1e6
const TARGET_BYTES = 250
const gc = (globalThis as { gc?: () => void }).gc
if (gc === undefined) {
  console.error('run with node --expose-gc')
  process.exit(2)
}

function peer(id: number, asn: number): RibPeer {
  return {
    id,
    name: `peer${id}`,
    address: `192.0.2.${id}`,
    localAddress: '192.0.2.254',
    asn,
    localAsn: 64512,
    type: 'ebgp',
    rrClient: false,
    nextHopMode: 'auto',
    allowLocalAs: 0,
    importPolicy: ACCEPT_ALL,
    exportPolicy: ACCEPT_ALL,
    families: new Set([0x101]),
    addPathSend: new Set(),
  }
}

/** Sections as a session would hand them over: fresh prefix objects, one attribute set per section. */
function sections(asn: number, hop: string): { prefixes: Prefix[]; attrs: PathAttributes }[] {
  const out: { prefixes: Prefix[]; attrs: PathAttributes }[] = []
  for (let i = 0; i < N; i += SECTION) {
    const prefixes: Prefix[] = []
    for (let k = i; k < Math.min(N, i + SECTION); k++) prefixes.push(ipv4Prefix(((1 << 24) + k * 256) >>> 0, 24))
    // A handful of distinct AS paths, as in a real table where sets repeat.
    out.push({ prefixes, attrs: { origin: 0, asPath: [{ type: 2, asns: [asn, 3356, 1000 + ((i / SECTION) % 500)] }], nextHop: hop, med: 0 } })
  }
  return out
}

function heap(): number {
  gc!()
  gc!()
  return process.memoryUsage().heapUsed
}

/** As the speaker does it: one receive per section, a flush, and every Adj-RIB-Out drained. */
function feed(rib: Rib, p: RibPeer, input: { prefixes: Prefix[]; attrs: PathAttributes }[]): number {
  const session = { routerId: p.address }
  const t0 = process.hrtime.bigint()
  for (const s of input) {
    rib.receive(p, session, s.prefixes, s.attrs)
    rib.flush()
    for (const out of outs) while (out.pending > 0) sent += out.take(SECTION).reduce((n, b) => n + b.announce.length, 0)
  }
  return Number(process.hrtime.bigint() - t0) / 1e9
}

const rib = new Rib({ localAsn: 64512, routerId: '192.0.2.254' })
const a = peer(1, 65001)
const b = peer(2, 65002)
// Both sessions are up: peer b is sent what a announces (eBGP to eBGP), a gets nothing back.
const outs = [rib.attachPeer(a), rib.attachPeer(b)]
let sent = 0
let changes = 0
rib.subscribe((c) => (changes += c.length))

// Measured from before the input exists: the decoded prefix objects stay in the RIB, as they would
// from a real session; only the section arrays are dropped.
const base = heap()
const inputA = sections(65001, '192.0.2.1')
const secA = feed(rib, a, inputA)
inputA.length = 0
const oneBytes = (heap() - base) / N
const mid = heap()
const inputB = sections(65002, '192.0.2.2')
const secB = feed(rib, b, inputB)
inputB.length = 0
const twoBytes = (heap() - mid) / N + oneBytes

const fmt = (n: number): string => Math.round(n).toLocaleString('en-US')
console.log(`rib ingest, ${fmt(N)} IPv4 /24s in sections of ${SECTION}, flush after each (Loc-RIB changes seen: ${fmt(changes)}, prefixes sent to the other peer: ${fmt(sent)})`)
console.log(`  one peer:  ${secA.toFixed(2)} s  ${fmt(N / secA)} prefixes/s  ${oneBytes.toFixed(0)} heap bytes/prefix`)
console.log(`  two peers: ${secB.toFixed(2)} s  ${fmt(N / secB)} prefixes/s  ${twoBytes.toFixed(0)} heap bytes/prefix (both paths)`)
console.log(`  targets: >= ${fmt(TARGET_RATE)} prefixes/s into the RIB; <= ${TARGET_BYTES} bytes/prefix for the whole speaker with one full table`)
console.log(`  attribute sets interned: ${rib.attributeSets}; Loc-RIB size ${fmt(rib.size)}`)
