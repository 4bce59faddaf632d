// An idle pinto-node holding 1k routes: a BIRD top-of-rack originates 1000 prefixes to it over eBGP, felix
// installs them, then the agent sits idle for 60 s. Prints its RSS (VmRSS) and CPU% (utime+stime over the
// window, from /proc/PID/stat) beside the targets RSS < 100 MB and CPU < 1%. The window starts after a
// settling period, whose CPU is printed too: a node is idle once it has started.
// Run (root): npx tsc -p . && node scripts/bundle.js && node dist/bench/idle.js [--routes 1000] [--seconds 60] [--settle 15]

import { cpuMsOf } from './proc-cpu.js'
import { readFileSync } from 'node:fs'
import { execa } from 'execa'
import { DemoCluster } from '../agent/demo/cluster.js'
import { table } from '../agent/demo/tables.js'
import { numberArg } from './args.js'

const ROUTES = numberArg('--routes', 1000)
const SECONDS = numberArg('--seconds', 60)
/** Start-up settling (JIT, V8's memory reducer after the start's allocations) before the idle window. */
const SETTLE = numberArg('--settle', 15)
const TARGET_RSS_MB = 100
const TARGET_CPU_PCT = 1

/**
 * ROUTES /28s from 100.64.0.0/16 (RFC 6598 shared space), as BIRD static routes: outside the demo's pool
 * (198.18.0.0/15), whose prefixes pinto-node refuses from a router no BGPFilter lets announce them.
 */
function prefixes(n: number): string[] {
  if (n > 4096) throw new Error('--routes: at most 4096 (/28s of 100.64.0.0/16)')
  return Array.from({ length: n }, (_, i) => `100.64.${i >> 4}.${(i & 15) << 4}/28`)
}


function rssKb(pid: number, field = 'VmRSS'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return Number(m?.[1] ?? NaN)
}

async function main(): Promise<void> {
  const cluster = DemoCluster.prepare({ nodes: 1, tor: true, torPrefixes: prefixes(ROUTES), env: { PINTO_LOG_LEVEL: 'warn' } })
  const stop = (): void => void cluster.destroy({ hurry: true })
  process.once('SIGINT', stop)
  try {
    await cluster.start()
    const node = cluster.nodes[0]!
    const pid = cluster.agentPid(node)!
    const count = async (): Promise<number> => String((await execa('ip', ['-n', node.ns, 'route', 'show', 'proto', '87'])).stdout).split('\n').filter((l) => l.includes('via')).length
    const t0 = Date.now()
    while ((await count()) < ROUTES) {
      if (Date.now() - t0 > 60_000) throw new Error(`only ${await count()} of ${ROUTES} routes after 60 s`)
      await new Promise((r) => setTimeout(r, 200))
    }
    process.stdout.write(`pinto-node (pid ${pid}) has ${await count()} routes in its kernel from BIRD after ${((Date.now() - t0) / 1000).toFixed(1)} s; settling ${SETTLE} s, then idle for ${SECONDS} s\n`)
    const settleMs = cpuMsOf(pid)
    const settleStart = process.hrtime.bigint()
    await new Promise((r) => setTimeout(r, SETTLE * 1000))
    const settleCpu = ((cpuMsOf(pid) - settleMs) / 1000 / (Number(process.hrtime.bigint() - settleStart) / 1e9)) * 100
    // The anchor beside it: a bare Node.js process waking 4 times a second (as the idle agent does) over the
    // same window. On a VM the cost of a wake-up varies severalfold with the host's load.
    const bare = execa(process.execPath, ['-e', 'setInterval(() => {}, 250)'], { reject: false })
    const bareMs0 = bare.pid !== undefined ? cpuMsOf(bare.pid) : 0
    const ms0 = cpuMsOf(pid)
    const start = process.hrtime.bigint()
    let peak = 0
    const end = Date.now() + SECONDS * 1000
    while (Date.now() < end) {
      peak = Math.max(peak, rssKb(pid))
      await new Promise((r) => setTimeout(r, 1000))
    }
    const elapsed = Number(process.hrtime.bigint() - start) / 1e9
    const cpu = ((cpuMsOf(pid) - ms0) / 1000 / elapsed) * 100
    const bareCpu = bare.pid !== undefined ? ((cpuMsOf(bare.pid) - bareMs0) / 1000 / elapsed) * 100 : NaN
    bare.kill()
    await bare
    const rss = rssKb(pid) / 1024
    process.stdout.write(
      table(['measure', 'value', 'target', ''], [
        ['RSS (VmRSS, at the end)', `${rss.toFixed(1)} MB`, `< ${TARGET_RSS_MB} MB`, rss < TARGET_RSS_MB ? 'met' : 'MISSED'],
        ['RSS peak during the window', `${(peak / 1024).toFixed(1)} MB`, '', ''],
        [`CPU while settling (${SETTLE} s after the routes landed)`, `${settleCpu.toFixed(2)} %`, '', ''],
        [`CPU over ${elapsed.toFixed(0)} s (utime+stime)`, `${cpu.toFixed(2)} %`, `< ${TARGET_CPU_PCT} %`, cpu < TARGET_CPU_PCT ? 'met' : 'MISSED'],
        ['bare node, 4 wake-ups/s, same window (anchor)', `${bareCpu.toFixed(2)} %`, '', ''],
        ['routes held (kernel, proto 87)', String(await count()), `${ROUTES}`, ''],
      ]),
    )
  } finally {
    await cluster.destroy()
    process.off('SIGINT', stop)
  }
}

await main()
