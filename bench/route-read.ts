// bench/route-read: felix's full read of a table of N routes (N /32s through one gateway, as bench/fib
// writes them, plus the namespace's own), over the route socket's rtnetlink dump beside `ip -N -json`,
// each in a fresh process inside one namespace (route-read-worker.ts), interleaved. Prints the median
// cold (first in its process) and warm read times, the reader's VmHWM growth over the first read and
// `ip`'s own peak RSS, with the load average. Usage: node dist/bench/route-read.js [N] [--runs R]

import { execa } from 'execa'
import { cpus, loadavg } from 'node:os'
import { fileURLToPath } from 'node:url'
import { fibPrefixes, FIB_NEXT_HOP, makeFibNamespace } from './fib-routes.js'
import { numberArg, positionalArgs } from './args.js'
import type { ReadFigures } from './route-read-worker.js'

const WORKER = fileURLToPath(new URL('route-read-worker.js', import.meta.url))

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)] as number
}

async function main(): Promise<void> {
  const n = Number(positionalArgs()[0] ?? 100_000)
  const runs = numberArg('--runs', 3)
  if (!Number.isInteger(n) || n < 1) throw new Error(`N: expected a positive integer, got ${positionalArgs()[0]}`)
  const ns = `prr${process.pid}`
  try {
    await makeFibNamespace(ns)
    await execa('ip', ['-n', ns, '-batch', '-'], { input: fibPrefixes(n).map((d) => `route add ${d} via ${FIB_NEXT_HOP} dev va proto 87\n`).join('') })
    const figures: Record<'netlink' | 'ip', ReadFigures[]> = { netlink: [], ip: [] }
    for (let i = 0; i < runs; i++) {
      for (const method of ['ip', 'netlink'] as const) {
        const r = await execa('ip', ['netns', 'exec', ns, process.execPath, WORKER, method], { reject: false })
        if (r.exitCode !== 0) throw new Error(`route-read-worker ${method}: ${String(r.stderr).trim()}`)
        const f = JSON.parse(String(r.stdout)) as ReadFigures
        if (f.routes < n) throw new Error(`${method} read ${f.routes} routes of at least ${n}`)
        figures[method].push(f)
      }
    }
    console.log(`bench/route-read: ${n} routes in table main (+ the namespace's own), median of ${runs} runs each, interleaved; load average ${loadavg().map((l) => l.toFixed(1)).join(' ')} on ${cpus().length} CPUs`)
    console.log('method    routes   cold ms   warm ms   reader VmHWM +MB (before→after)   ip peak RSS MB')
    for (const method of ['ip', 'netlink'] as const) {
      const fs = figures[method]
      const mb = (kb: number): string => (kb / 1024).toFixed(0)
      const before = median(fs.map((f) => f.hwmBeforeKB))
      const after = median(fs.map((f) => f.hwmAfterKB))
      const row = [
        method.padEnd(8),
        String(fs[0]?.routes).padStart(7),
        median(fs.map((f) => f.coldMs)).toFixed(0).padStart(9),
        median(fs.map((f) => f.warmMs)).toFixed(0).padStart(9),
        `${mb(median(fs.map((f) => f.hwmAfterKB - f.hwmBeforeKB))).padStart(6)} (${mb(before)}→${mb(after)})`.padEnd(33),
        method === 'ip' ? mb(median(fs.map((f) => f.ipMaxRssKB))).padStart(14) : '             -',
      ]
      console.log(row.join(' '))
    }
  } finally {
    await execa('ip', ['netns', 'del', ns], { reject: false })
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : String(err))
  process.exitCode = 1
})
