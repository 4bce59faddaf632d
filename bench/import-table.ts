// bench/import-table: what keeping a peer's routes as received (the import table of a session without
// route refresh) costs, and how long re-running import over it takes. The speaker's RIB alone, in process
// (a part's figure, no sockets): N IPv4 /24s from one eBGP peer with a per-prefix import policy, four
// prefixes per attribute set (each set its own AS path, as a real table's UPDATEs carry a few prefixes),
// loaded once without and once with the table, each in a fresh process. Prints the extra RSS and heap
// bytes per prefix, and the seconds a policy change's re-import takes (one flush), for three changes in a
// row (each moves the rejected sixteenth: 1/8 of the table changes).
// Usage: node dist/bench/import-table.js [N ...]   (default 100000 1000000)

import { execFileSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { PathAttributes } from '../bgp/index.js'
import { Rib, type Policy, type RibPeer } from '../bgp/rib/index.js'
import { positionalArgs } from './args.js'

const PER_SET = 4
const SELF = fileURLToPath(import.meta.url)

interface Figures {
  readonly rssBytes: number
  /** heapUsed and arrayBuffers. */
  readonly heapBytes: number
  readonly loadSeconds: number
  /** Each of three policy changes in a row: the first runs the re-import's code cold. */
  readonly reimportSeconds?: readonly number[]
  readonly changes?: number
  readonly kept: number
}

/** Rejects the prefixes whose /24 number is `k` modulo 16; the rest pass unchanged. */
function rejectEvery16th(k: number): Policy {
  return { empty: false, apply: (p, a) => (p.afi === 1 && ((p.addr >>> 8) & 15) === k ? undefined : a) }
}

function measure(n: number, keep: boolean): Figures {
  const gc = (globalThis as { gc?: () => void }).gc!
  let policy = rejectEvery16th(0)
  const peer: RibPeer = {
    id: 1,
    name: 'tor',
    address: '192.0.2.2',
    localAddress: '192.0.2.1',
    asn: 65001,
    localAsn: 65000,
    type: 'ebgp',
    rrClient: false,
    nextHopMode: 'auto',
    allowLocalAs: 0,
    get importPolicy() {
      return policy
    },
    families: new Set([0x101]),
    addPathSend: new Set(),
    importTable: keep,
  }
  const rib = new Rib({ localAsn: 65000, routerId: '192.0.2.1' })
  let changes = 0
  rib.subscribe((c) => (changes += c.length))
  const session = { routerId: peer.address }
  const addr = new Int32Array(PER_SET)
  const len = new Uint8Array(PER_SET).fill(24)
  gc()
  gc()
  const base = process.memoryUsage()
  const t0 = process.hrtime.bigint()
  for (let i = 0; i < n; i += PER_SET) {
    const count = Math.min(PER_SET, n - i)
    for (let k = 0; k < count; k++) addr[k] = ((1 << 24) + (i + k) * 256) | 0
    const attrs: PathAttributes = { origin: 0, asPath: [{ type: 2, asns: [65001, 3356, 100000 + i / PER_SET] }], nextHop: '192.0.2.2', med: 0 }
    rib.receiveIpv4(peer, session, { count, addr, len }, attrs)
    // The speaker flushes after each UPDATE's sections; every thousand keeps the bench on the RIB.
    if ((i / PER_SET) % 250 === 0) rib.flush()
  }
  rib.flush()
  const loadSeconds = Number(process.hrtime.bigint() - t0) / 1e9
  gc()
  gc()
  const after = process.memoryUsage()
  const kept = rib.counts(peer).importTable ?? 0
  // The table's columns are typed arrays: their memory is the ArrayBuffers', outside heapUsed.
  const figures = { rssBytes: after.rss - base.rss, heapBytes: after.heapUsed + after.arrayBuffers - base.heapUsed - base.arrayBuffers, loadSeconds, kept }
  if (!keep) return figures
  const reimportSeconds: number[] = []
  for (let k = 1; k <= 3; k++) {
    changes = 0
    policy = rejectEvery16th(k)
    const t1 = process.hrtime.bigint()
    rib.reimport(peer)
    rib.flush()
    reimportSeconds.push(Number(process.hrtime.bigint() - t1) / 1e9)
  }
  return { ...figures, reimportSeconds, changes }
}

const child = process.argv.indexOf('--child')
if (child >= 0) {
  process.stdout.write(JSON.stringify(measure(Number(process.argv[child + 1]), process.argv[child + 2] === 'keep')))
} else {
  const sizes = positionalArgs().map(Number)
  const fmt = (x: number): string => Math.round(x).toLocaleString('en-US')
  console.log(`import table (routes kept as received for a peer without route refresh): the speaker's RIB alone, in process, ${PER_SET} prefixes per attribute set, import policy rejecting 1/16`)
  for (const n of sizes.length > 0 ? sizes : [100_000, 1_000_000]) {
    const run = (mode: string): Figures => JSON.parse(execFileSync(process.execPath, ['--expose-gc', SELF, '--child', String(n), mode], { encoding: 'utf8', maxBuffer: 1 << 20 })) as Figures
    const off = run('plain')
    const on = run('keep')
    console.log(`  ${fmt(n)} prefixes (${fmt(on.kept)} kept):`)
    console.log(`    without the table: load ${off.loadSeconds.toFixed(2)} s, RSS +${fmt(off.rssBytes / n)} B/prefix, heap and array buffers +${fmt(off.heapBytes / n)} B/prefix`)
    console.log(`    with the table:    load ${on.loadSeconds.toFixed(2)} s, RSS +${fmt(on.rssBytes / n)} B/prefix, heap and array buffers +${fmt(on.heapBytes / n)} B/prefix`)
    console.log(`    the table costs:   ${fmt((on.rssBytes - off.rssBytes) / n)} B/prefix of RSS, ${fmt((on.heapBytes - off.heapBytes) / n)} B/prefix of heap and array buffers`)
    const [first, ...then] = on.reimportSeconds!
    console.log(`    re-import after a policy change, with its flush (${fmt(on.changes!)} Loc-RIB changes each): first ${first!.toFixed(3)} s (its code cold), then ${then.map((s) => s.toFixed(3)).join(' s, ')} s`)
  }
}
