// IPAM allocation rate, uncontended (1 process) and contended (4 processes on 2 nodes), on the embedded
// store and on a private etcd, printed beside the targets (embedded >= 1000/s uncontended, etcd >= 300/s).
// Run: npx tsc -p . && node dist/bench/ipam.js [--count N]
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startEtcd } from '../test/harness/etcd.js'
import type { WorkerArgs, WorkerLine } from './ipam-worker.js'
import { numberArg } from './args.js'

const WORKER = fileURLToPath(new URL('./ipam-worker.js', import.meta.url))
const COUNT = numberArg('--count', 1000)
const POOLS = [{ name: 'v4', cidr: '198.18.0.0/16', blockSize: 26 }]

function worker(args: WorkerArgs): Promise<WorkerLine[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [WORKER, JSON.stringify(args)], { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.on('data', (d: Buffer) => (out += d.toString()))
    child.on('exit', (code) => (code === 0 ? resolve(out.trim().split('\n').map((l) => JSON.parse(l) as WorkerLine)) : reject(new Error(`worker exited ${code}`))))
  })
}

/** Allocations per second over all processes: successful allocations / wall time of the slowest process. */
async function rate(store: string, run: string, nodes: readonly string[], perProcess: number): Promise<{ perSec: number; errors: number }> {
  const results = await Promise.all(nodes.map((node, i) => worker({
    // Node names are per run, so a run on the shared etcd starts with no blocks, like a run on a fresh directory.
    store, node: `${run}-${node}`, id: `${run}-b${i}`, count: perProcess, releaseP: 0, cap: Number.MAX_SAFE_INTEGER, num4: 1, num6: 0, pools: POOLS, log: false,
  })))
  const lines = results.flat()
  const done = lines.filter((l): l is Extract<WorkerLine, { op: 'done' }> => l.op === 'done')
  const allocs = done.reduce((n, d) => n + d.allocs, 0)
  const ms = Math.max(...done.map((d) => d.ms))
  return { perSec: (allocs * 1000) / ms, errors: lines.filter((l) => l.op === 'error').length }
}

async function main(): Promise<void> {
  const etcd = await startEtcd()
  const dir = mkdtempSync(join(tmpdir(), 'pinto-bench-ipam-'))
  try {
    const backends: [string, () => string, number][] = [
      ['embedded', () => mkdtempSync(join(dir, 's-')), 1000],
      ['etcd', () => `etcd://${etcd.endpoint}`, 300],
    ]
    console.log(`IPAM autoAssign (1 IPv4 address each, /26 blocks), ${COUNT} allocations per run`)
    console.log('backend   mode                      allocs/s   target    ratio')
    for (const [name, spec, target] of backends) {
      const runs: [string, readonly string[]][] = [['uncontended (1 proc)', ['n1']], ['contended (4 procs, 2 nodes)', ['n1', 'n1', 'n2', 'n2']]]
      for (const [mode, nodes] of runs) {
        const r = await rate(spec(), `${name}-${nodes.length}`, nodes, Math.ceil(COUNT / nodes.length))
        const tgt = mode.startsWith('uncontended') ? `>= ${target}` : '-'
        const ratio = mode.startsWith('uncontended') ? `${(r.perSec / target).toFixed(2)}x` : ''
        console.log(`${name.padEnd(9)} ${mode.padEnd(28)} ${r.perSec.toFixed(0).padStart(7)}   ${tgt.padEnd(8)} ${ratio}${r.errors > 0 ? `  (${r.errors} errors)` : ''}`)
      }
    }
  } finally {
    await etcd.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

main().catch((err: unknown) => {
  console.error(err)
  process.exitCode = 1
})
