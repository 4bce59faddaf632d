// /v1/routes page times over a 100k-route Loc-RIB originated in a real speaker, through fastify's
// inject (the whole request path: query validation, page selection, JSON). Prints per-page p50/p99
// for several page sizes beside the 50 ms target. usage: node dist/bench/api-routes.js [routes=100000]

import { cpus, loadavg } from 'node:os'
import { Registry } from 'prom-client'
import { BgpSpeaker, ipv4Prefix } from '../bgp/index.js'
import { buildApi } from '../agent/api/index.js'
import { speakerReads } from '../agent/api/adapters.js'

const N = Number(process.argv[2] ?? 100_000)
const TARGET_MS = 50
const BASE = 0xc6120000 // 198.18.0.0/15 holds 131072 /32s

const speaker = new BgpSpeaker({ asn: 64512, routerId: '192.0.2.1', listen: false })
for (let i = 0; i < N; i++) speaker.rib.originate(ipv4Prefix((BASE + i) >>> 0, 32), { communities: [(64512 << 16) | (i & 0xffff)] })
speaker.rib.flush()
const app = await buildApi({
  node: 'bench',
  uptimeSeconds: () => speaker.uptimeSeconds,
  bgp: speakerReads(speaker),
  ipam: { blocks: async () => [], pools: async () => [] },
  readiness: { startupWindowSeconds: 30 },
  metrics: new Registry(),
})

const pct = (sorted: number[], q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN

console.log(`/v1/routes over ${N} Loc-RIB routes (target: every page under ${TARGET_MS} ms)`)
// Shared machines skew the tail: say how busy this one was.
console.log(`load average ${loadavg().map((l) => l.toFixed(1)).join(' ')} on ${cpus().length} CPUs`)
console.log('limit  RIB         pages   p50 ms   p99 ms   max ms   target')
// "steady": the RIB stands still (pages come from one sorted copy); "churning": a route is originated
// and withdrawn before every page, so each page is a full selection pass over the table.
for (const [limit, churn] of [[100, false], [1000, false], [5000, false], [100, true], [1000, true]] as const) {
  const times: number[] = []
  let cursor: string | null = null
  let rows = 0
  const extra = ipv4Prefix(0xcb007100, 24) // 203.0.113.0/24, sorts after every bench route
  do {
    if (churn) {
      speaker.originate(extra)
      speaker.withdraw(extra)
    }
    const t0 = performance.now()
    const r = await app.inject({ url: `/v1/routes?limit=${limit}${cursor !== null ? `&cursor=${cursor}` : ''}` })
    const body: { nextCursor: string | null; routes: unknown[] } = r.json()
    times.push(performance.now() - t0)
    rows += body.routes.length
    cursor = body.nextCursor
  } while (cursor !== null)
  if (rows !== N) throw new Error(`walked ${rows} rows, expected ${N}`)
  times.sort((a, b) => a - b)
  const p99 = pct(times, 0.99)
  console.log(
    `${String(limit).padStart(5)}  ${churn ? 'churning' : 'steady  '}  ${String(times.length).padStart(5)}  ${pct(times, 0.5).toFixed(1).padStart(7)}  ${p99.toFixed(1).padStart(7)}  ${(times[times.length - 1] ?? 0).toFixed(1).padStart(7)}   ${p99 < TARGET_MS ? 'met' : 'MISSED'} (${TARGET_MS} ms)`,
  )
}
await app.close()
