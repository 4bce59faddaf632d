// The product path: pinto-node as a node runs it (bin/pinto-node.js, kernel dataplane, configured by its
// datastore) beside BIRD 2 with a kernel protocol, each fed the same table by the same kind of sender
// (bench/table-sender, over iBGP, route-mix's attribute mix) in its own namespace, one after the other in
// the same run. Per size and family it prints the time from Established until the receiver's kernel holds
// every route, whole-process peak RSS (VmHWM) and bytes per prefix, and the ratios pinto/BIRD; then, with
// the table held, churn (single prefixes announced and withdrawn, one at a time): write of the UPDATE →
// the kernel's change seen by `ip monitor route`, p50/p99, and the receiver's CPU per change.
// The sender connects once the receiver is past its start-up (for pinto-node its 10 s sync deadline):
// a table arriving at a running node, as from a top-of-rack router that comes back or a new peer.
// Run (root): npx tsc -p . && node dist/bench/node-path.js [--sizes 10000,100000,1000000] [--churn 1000]
//   [--churn-seconds 60] [--ipv4 on|off] [--ipv6 on|off] [--ipv6-size 100000] [--bird on|off]
//   [--node-args '--cpu-prof --cpu-prof-dir=/tmp/prof'] [--json FILE]
// --churn-seconds bounds each receiver's churn; a receiver slower than that reports the changes it made.
// --node-args adds V8/Node flags to pinto-node's own (split on spaces); --bird off runs pinto-node alone
// (no ratios), for profiling one receiver. --json FILE also writes each receiver's table time, VmHWM and
// churn p50/p99 there (bench/json-figures).

import { loadavg } from 'node:os'
import { table } from '../agent/demo/tables.js'
import { numberArg } from './args.js'
import { type Figure, figure, jsonPathArg, writeFigures } from './json-figures.js'
import { runReceiver, type RunResult, type RunSpec } from './node-path-run.js'
import type { MixFamily } from './route-mix.js'

function listArg(name: string, fallback: readonly number[]): number[] {
  const i = process.argv.indexOf(name)
  if (i < 0) return [...fallback]
  const v = (process.argv[i + 1] ?? '').split(',').map(Number)
  if (v.length === 0 || v.some((n) => !Number.isInteger(n) || n < 1)) throw new Error(`${name}: expected sizes like 10000,100000, got ${JSON.stringify(process.argv[i + 1])}`)
  return v
}

function onOffArg(name: string, fallback: boolean): boolean {
  const i = process.argv.indexOf(name)
  if (i < 0) return fallback
  const v = process.argv[i + 1]
  if (v !== 'on' && v !== 'off') throw new Error(`${name}: expected on or off, got ${JSON.stringify(v)}`)
  return v === 'on'
}

const SIZES = listArg('--sizes', [10_000, 100_000, 1_000_000])
const CHURN = numberArg('--churn', 1000)
const CHURN_MS = numberArg('--churn-seconds', 60) * 1000
const IPV4 = onOffArg('--ipv4', true)
const IPV6 = onOffArg('--ipv6', true)
const BIRD = onOffArg('--bird', true)
const NODE_ARGS = (() => {
  const i = process.argv.indexOf('--node-args')
  return i < 0 ? [] : (process.argv[i + 1] ?? '').split(' ').filter((a) => a !== '')
})()
const IPV6_SIZE = numberArg('--ipv6-size', 100_000)
const JSON_OUT = jsonPathArg()
const TARGET_TIME = 1.0
const TARGET_HWM = 2.0
const TARGET_CHURN_MS = 10

const pct = (xs: readonly number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] ?? NaN
}
const mb = (kb: number): string => `${(kb / 1024).toFixed(1)} MB`
const ms = (x: number): string => (Number.isFinite(x) ? (x < 10 ? x.toFixed(2) : x.toFixed(0)) : '-')
const perPrefix = (r: RunResult): string => `${(((r.hwmKb - r.rssBeforeKb) * 1024) / r.spec.count).toFixed(0)} / ${((r.hwmKb * 1024) / r.spec.count).toFixed(0)}`
const met = (ok: boolean): string => (ok ? 'met' : 'MISSED')

interface Pair {
  readonly family: MixFamily
  readonly count: number
  readonly pinto: RunResult
  readonly bird: RunResult | undefined
}

interface FullPair extends Pair {
  readonly bird: RunResult
}

// A signal between two runs ends the bench before the next one; inside a run, runReceiver removes what it made.
let interrupted: string | undefined
for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, () => (interrupted = sig))
const run = async (spec: RunSpec): Promise<RunResult> => {
  if (interrupted !== undefined) throw new Error(`node-path: stopped by ${interrupted}`)
  return runReceiver(spec)
}

async function pair(family: MixFamily, count: number): Promise<Pair> {
  const spec = (receiver: RunSpec['receiver']): RunSpec => ({ receiver, family, count, churn: CHURN, churnBudgetMs: CHURN_MS, nodeArgs: NODE_ARGS })
  process.stdout.write(`${family} ${count}: pinto-node ...`)
  const pinto = await run(spec('pinto'))
  process.stdout.write(` ${pinto.seconds.toFixed(2)} s (CPU ${(pinto.tableCpuMs / 1000).toFixed(2)} s), ${mb(pinto.hwmKb)}, churn ${pinto.latencies.length} changes;${BIRD ? ' BIRD ...' : ' BIRD not run'}`)
  if (!BIRD) {
    process.stdout.write(` (load average ${loadavg()[0]!.toFixed(1)})\n    table: ${pinto.shape}\n`)
    return { family, count, pinto, bird: undefined }
  }
  const bird = await run(spec('BIRD'))
  process.stdout.write(` ${bird.seconds.toFixed(2)} s (CPU ${(bird.tableCpuMs / 1000).toFixed(2)} s), ${mb(bird.hwmKb)}, churn ${bird.latencies.length} changes (load average ${loadavg()[0]!.toFixed(1)})\n    table: ${pinto.shape}\n`)
  return { family, count, pinto, bird }
}

function report(pairs: readonly FullPair[]): void {
  const load: string[][] = []
  for (const p of pairs) {
    const t = p.pinto.seconds / p.bird.seconds
    const h = p.pinto.hwmKb / p.bird.hwmKb
    const label = `${p.family} ${p.count}`
    load.push([label, 'BIRD 2', `${p.bird.seconds.toFixed(2)} s (±${(p.bird.resolutionMs / 1000).toFixed(2)})`, mb(p.bird.hwmKb), perPrefix(p.bird), '', ''])
    load.push([label, 'pinto-node', `${p.pinto.seconds.toFixed(2)} s (±${(p.pinto.resolutionMs / 1000).toFixed(2)})`, mb(p.pinto.hwmKb), perPrefix(p.pinto), `${t.toFixed(2)}x (<= ${TARGET_TIME}x ${met(t <= TARGET_TIME)})`, `${h.toFixed(2)}x${p.count >= 1_000_000 ? ` (<= ${TARGET_HWM}x ${met(h <= TARGET_HWM)})` : ''}`])
  }
  process.stdout.write('\nTable in: Established -> every route in the receiver\'s kernel (product path: pinto-node with its dataplane, not the speaker alone; the session comes up at a running node)\n')
  process.stdout.write(table(['table', 'receiver', 'time', 'peak RSS (VmHWM)', 'B/prefix (HWM-RSS before / HWM)', 'time pinto/BIRD', 'HWM pinto/BIRD'], load))

  const churn: string[][] = []
  for (const p of pairs) {
    for (const r of [p.bird, p.pinto]) {
      const l = r.latencies
      const budget = l.length < r.spec.churn ? ` (of ${r.spec.churn}: ${(r.spec.churnBudgetMs / 1000).toFixed(0)} s budget)` : ''
      const target = r === p.pinto ? met(pct(l, 50) <= pct(p.bird.latencies, 50) + TARGET_CHURN_MS && pct(l, 99) <= pct(p.bird.latencies, 99) + TARGET_CHURN_MS) : ''
      churn.push([`${p.family} ${p.count}`, r === p.pinto ? 'pinto-node' : 'BIRD 2', `${l.length}${budget}`, ms(pct(l, 50)), ms(pct(l, 99)), ms(Math.max(...l)), ms(r.cpuPerChangeMs), target])
    }
  }
  process.stdout.write('\nChurn with the table held: one prefix announced or withdrawn at a time, UPDATE written -> kernel change (ip monitor route), ms\n')
  process.stdout.write(table(['table held', 'receiver', 'changes', 'p50', 'p99', 'max', 'CPU/change', `pinto <= BIRD + ${TARGET_CHURN_MS} ms (p50, p99)`], churn))

  const v4 = pairs.filter((p) => p.family === 'ipv4')
  if (v4.length >= 2) {
    const small = v4[0]!
    const large = v4[v4.length - 1]!
    const rows: string[][] = []
    for (const which of ['bird', 'pinto'] as const) {
      const a = small[which]
      const b = large[which]
      const growth = b.cpuPerChangeMs / a.cpuPerChangeMs
      const lat = pct(b.latencies, 50) / pct(a.latencies, 50)
      rows.push([which === 'pinto' ? 'pinto-node' : 'BIRD 2', `${ms(pct(a.latencies, 50))} / ${ms(pct(b.latencies, 50))}`, `${lat.toFixed(2)}x`, `${ms(a.cpuPerChangeMs)} / ${ms(b.cpuPerChangeMs)}`, `${growth.toFixed(2)}x${which === 'pinto' ? ` (<= 2x ${met(growth <= 2 && lat <= 2)})` : ''}`])
    }
    process.stdout.write(`\nCost of one change as the table grows, IPv4 ${small.count} vs ${large.count} held\n`)
    process.stdout.write(table(['receiver', `p50 ms ${small.count} / ${large.count}`, 'growth', `CPU/change ms ${small.count} / ${large.count}`, 'growth'], rows))
  }
  process.stdout.write(`\nTime: the first kernel read that saw every route, less the sender's Established; ± is the time since the read before, which saw fewer (IPv4: fib_triestat, read at 6x its cost; IPv6: rt6_stats).\n`)
  process.stdout.write(`BIRD's kernel protocol rescans the kernel table every 60 s (its default scan time): at 1M a scan inside the churn window shows in its max and CPU/change.\n`)
  process.stdout.write(`CPU/change: on-CPU time of all the receiver's threads (/proc/PID/task/*/schedstat) over the churn, divided by the changes.\n`)
  process.stdout.write(`Machine: 2 cores shared with other work; load average ${loadavg().map((x) => x.toFixed(1)).join(' ')}.\n`)
}

/** Per table and receiver: the table's time to the kernel, VmHWM, churn p50 and p99 (BIRD's as the anchor). */
function figures(pairs: readonly Pair[]): Figure[] {
  const out: Figure[] = []
  for (const p of pairs) {
    for (const [label, r] of [['pinto-node', p.pinto], ['BIRD 2', p.bird]] as const) {
      if (r === undefined) continue
      const name = `${p.family} ${p.count} ${label}:`
      const anchor = r === p.bird
      out.push(
        figure(`${name} table in`, r.seconds, 's', anchor),
        figure(`${name} VmHWM`, r.hwmKb / 1024, 'MB', anchor),
        figure(`${name} churn p50`, pct(r.latencies, 50), 'ms', anchor),
        figure(`${name} churn p99`, pct(r.latencies, 99), 'ms', anchor),
      )
    }
  }
  return out
}

const pairs: Pair[] = []
if (IPV4) for (const n of SIZES) pairs.push(await pair('ipv4', n))
if (IPV6) pairs.push(await pair('ipv6', IPV6_SIZE))
if (BIRD) report(pairs as FullPair[])
else process.stdout.write(`Machine: 2 cores shared with other work; load average ${loadavg().map((x) => x.toFixed(1)).join(' ')}.\n`)
writeFigures(JSON_OUT, 'node-path', figures(pairs))
