// A part's bench: the IPAM service's side of a burst of pod starts on one node: N concurrent assigns (then N
// releases) through IpamService on the embedded datastore, as the CNI channel calls it, no plugin exec and no
// wiring. Per op and per burst p50/p99; every write made durable (fdatasync) as in production.
// Run: npx tsc -p . && node dist/bench/ipam-burst.js [bursts] [--parallel N]

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { IpamService } from '../agent/ipam-service.js'
import { openDatastore } from '../config/datastore-open.js'
import { encodeResource, resourceKey } from '../config/resources/index.js'
import { numberArg, positionalArgs } from './args.js'

const BURSTS = Number(positionalArgs()[0] ?? 20)
const N = numberArg('--parallel', 20)

function pct(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] as number
}

const row = (name: string, xs: readonly number[]): string => `${name.padEnd(28)} p50 ${pct(xs, 50).toFixed(1).padStart(7)} ms   p99 ${pct(xs, 99).toFixed(1).padStart(7)} ms`

async function timedAll(n: number, fn: (i: number) => Promise<unknown>): Promise<{ each: number[]; whole: number }> {
  const t0 = performance.now()
  const each = await Promise.all(Array.from({ length: n }, async (_, i) => {
    const t = performance.now()
    await fn(i)
    return performance.now() - t
  }))
  return { each, whole: performance.now() - t0 }
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'pinto-ipamburst-'))
  try {
    const store = await openDatastore(join(dir, 'store'))
    const pool = { apiVersion: 'projectcalico.org/v3', kind: 'IPPool', metadata: { name: 'p4' }, spec: { cidr: '198.18.0.0/16', blockSize: 26 } }
    await store.create(resourceKey('IPPool', 'p4'), encodeResource(pool as never))
    const svc = new IpamService({ store, node: 'n1', socket: join(dir, 'unused.sock') })
    await svc.prepare()
    // The node's first block claimed before the bursts: they measure ADDs from a block, the common case.
    await svc.assign({ handle: 'bench.warm', num4: 1 })
    const m = { add: [] as number[], del: [] as number[], addBurst: [] as number[], delBurst: [] as number[] }
    for (let b = 0; b < BURSTS; b++) {
      const add = await timedAll(N, (i) => svc.assign({ handle: `bench.${b}.${i}`, num4: 1 }))
      const del = await timedAll(N, (i) => svc.release({ handle: `bench.${b}.${i}` }))
      m.add.push(...add.each)
      m.del.push(...del.each)
      m.addBurst.push(add.whole)
      m.delBurst.push(del.whole)
    }
    await svc.close(0)
    await store.close()
    process.stdout.write([
      `bench/ipam-burst: ${BURSTS} bursts of ${N} concurrent assigns, then releases (load ${(await import('node:os')).loadavg()[0]?.toFixed(1)})`,
      row('assign, per op', m.add),
      row('release, per op', m.del),
      row(`assign, burst of ${N}`, m.addBurst),
      row(`release, burst of ${N}`, m.delBurst),
    ].join('\n') + '\n')
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

await main()
