// bench/fib: felix programming N routes into a fresh namespace, and a resync with nothing to do, timed beside
// a raw `ip -batch` of the same routes and BIRD 2's kernel protocol installing the same set, in the same run.
// felix runs in its own process inside the namespace (fib-felix.ts), through its route socket and, for
// comparison, through `ip -batch` alone; its headline figure is a start on warm code (see fib-felix.ts),
// printed beside the same start as its process's first.
// Usage: node dist/bench/fib.js [N ...] [--runs R]   (default 10000 100000; add 1000000 for the big run)
// Each figure is the median of R runs (default 3 up to 100k routes, 1 above), every run in a fresh namespace.

import { execa } from 'execa'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import type { FelixFigures } from './fib-felix.js'
import { fibPrefixes, FIB_NEXT_HOP, makeFibNamespace } from './fib-routes.js'
import { numberArg, positionalArgs } from './args.js'

const PROTO = 87
const NEXT_HOP = FIB_NEXT_HOP
let seq = 0

/** A fresh namespace with va (192.0.2.1/24) up, its peer vb up, so 192.0.2.2 is a valid gateway. */
async function freshNs(): Promise<string> {
  const ns = `pfb${process.pid}-${seq++}`
  await makeFibNamespace(ns)
  return ns
}

async function dropNs(ns: string): Promise<void> {
  await execa('ip', ['netns', 'del', ns], { reject: false })
}

async function countRoutes(ns: string, proto: string): Promise<number> {
  const r = await execa('ip', ['-n', ns, '-4', 'route', 'show', 'proto', proto], { maxBuffer: 1 << 30 })
  return r.stdout === '' ? 0 : r.stdout.split('\n').length
}

async function raw(p: string[]): Promise<number> {
  const ns = await freshNs()
  try {
    const script = p.map((d) => `route add ${d} via ${NEXT_HOP} dev va proto static\n`).join('')
    const t0 = performance.now()
    await execa('ip', ['-n', ns, '-batch', '-'], { input: script })
    const ms = performance.now() - t0
    if ((await countRoutes(ns, 'static')) !== p.length) throw new Error('raw ip -batch: route count mismatch')
    return ms
  } finally {
    await dropNs(ns)
  }
}

const FELIX = fileURLToPath(new URL('fib-felix.js', import.meta.url))

/** felix in its own process inside a fresh namespace, as the agent runs (see fib-felix.ts). */
async function felix(p: string[], via: 'netlink' | 'ip', warm: boolean): Promise<FelixFigures> {
  const ns = await freshNs()
  try {
    const r = await execa('ip', ['netns', 'exec', ns, process.execPath, FELIX, String(p.length), String(PROTO), ...(via === 'ip' ? ['--ip'] : []), ...(warm ? ['--warm'] : [])], { reject: false })
    if (r.exitCode !== 0) throw new Error(`felix (${via}): ${String(r.stderr).trim()}`)
    if ((await countRoutes(ns, String(PROTO))) !== p.length) throw new Error(`felix (${via}): route count mismatch`)
    return JSON.parse(String(r.stdout)) as FelixFigures
  } finally {
    await dropNs(ns)
  }
}

async function birdc(dir: string, ...args: string[]): Promise<string> {
  return (await execa('birdc', ['-s', join(dir, 'bird.ctl'), ...args])).stdout
}

/** BIRD's kernel protocol, enabled once the static routes are loaded: the time until all N are exported. */
async function bird(p: string[]): Promise<number> {
  const ns = await freshNs()
  const dir = await mkdtemp(join(tmpdir(), 'pinto-fib-bird-'))
  let pid: number | undefined
  try {
    const conf = [
      'router id 192.0.2.1;',
      'protocol device { scan time 10; }',
      'protocol static s4 {',
      '  ipv4;',
      ...p.map((d) => `  route ${d} via ${NEXT_HOP};`),
      '}',
      'protocol kernel k4 {',
      '  disabled yes;',
      '  ipv4 { import none; export all; };',
      '  learn off;',
      '  scan time 600;',
      '}',
    ].join('\n')
    await writeFile(join(dir, 'bird.conf'), conf + '\n')
    await execa('ip', ['netns', 'exec', ns, 'bird', '-c', join(dir, 'bird.conf'), '-s', join(dir, 'bird.ctl'), '-P', join(dir, 'bird.pid')])
    pid = Number((await execa('cat', [join(dir, 'bird.pid')])).stdout)
    const routesOf = async (proto: string, what: 'imported' | 'exported'): Promise<number> => {
      const out = await birdc(dir, 'show', 'protocols', 'all', proto).catch(() => '')
      const m = new RegExp(`Routes:\\s+(\\d+) imported, (\\d+) exported`).exec(out)
      return m === null ? -1 : Number(what === 'imported' ? m[1] : m[2])
    }
    for (const deadline = Date.now() + 120_000; (await routesOf('s4', 'imported')) !== p.length; ) {
      if (Date.now() > deadline) throw new Error('BIRD did not load its static routes')
      await delay(20)
    }
    const t0 = performance.now()
    await birdc(dir, 'enable', 'k4')
    for (const deadline = Date.now() + 300_000; (await routesOf('k4', 'exported')) !== p.length; ) {
      if (Date.now() > deadline) throw new Error('BIRD did not export to the kernel')
      await delay(10)
    }
    const ms = performance.now() - t0
    const inKernel = await countRoutes(ns, 'bird')
    if (inKernel !== p.length) throw new Error(`BIRD: ${inKernel} of ${p.length} routes in the kernel`)
    return ms
  } finally {
    if (pid !== undefined) {
      try {
        process.kill(pid, 'SIGTERM')
      } catch {
        // already gone
      }
      for (let i = 0; i < 100; i++) {
        try {
          process.kill(pid, 0)
          await delay(50)
        } catch {
          break
        }
      }
    }
    await dropNs(ns)
    await rm(dir, { recursive: true, force: true })
  }
}

const fmt = (ms: number) => `${(ms / 1000).toFixed(3)} s`
const rate = (n: number, ms: number) => `${Math.round(n / (ms / 1000)).toLocaleString('en')} routes/s`

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)] as number
}

const samples = (xs: readonly number[]) => (xs.length > 1 ? `  [runs: ${xs.map((x) => (x / 1000).toFixed(3)).join(', ')}]` : '')

async function main(): Promise<void> {
  const sizes = positionalArgs().map(Number)
  const ns = sizes.length > 0 ? sizes : [10_000, 100_000]
  for (const n of ns) {
    if (!Number.isInteger(n) || n < 1) throw new Error(`argument: ${n} is not a route count`)
    const runs = numberArg('--runs', n <= 100_000 ? 3 : 1)
    const p = fibPrefixes(n)
    const rawRuns: number[] = []
    const felixRuns: FelixFigures[] = []
    const coldRuns: number[] = []
    const ipRuns: number[] = []
    const birdRuns: number[] = []
    // Interleaved, so a slow spell of the host falls on all alike.
    for (let r = 0; r < runs; r++) {
      rawRuns.push(await raw(p))
      felixRuns.push(await felix(p, 'netlink', true))
      coldRuns.push((await felix(p, 'netlink', false)).applyMs)
      ipRuns.push((await felix(p, 'ip', true)).applyMs)
      birdRuns.push(await bird(p))
    }
    const rawMs = median(rawRuns)
    const birdMs = median(birdRuns)
    const applies = felixRuns.map((f) => f.applyMs)
    const f = { applyMs: median(applies), readMs: median(felixRuns.map((x) => x.readMs)), renderMs: median(felixRuns.map((x) => x.renderMs)), noopMs: median(felixRuns.map((x) => x.noopMs)), knownNoopMs: median(felixRuns.map((x) => x.knownNoopMs)) }
    const vsRaw = rawMs / f.applyMs
    const vsBird = f.applyMs / birdMs
    console.log(`\n== ${n.toLocaleString('en')} routes (median of ${runs}) ==`)
    console.log(`raw ip -batch add           ${fmt(rawMs)}  (${rate(n, rawMs)})${samples(rawRuns)}`)
    console.log(`felix start (route socket)   ${fmt(f.applyMs)}  (${rate(n, f.applyMs)}; read ${fmt(f.readMs)}; render beforehand ${fmt(f.renderMs)})${samples(applies)}`)
    console.log(`  the same as a process's first ${fmt(median(coldRuns))}  (${rate(n, median(coldRuns))}; code not yet compiled, as at pinto-node's start)${samples(coldRuns)}`)
    console.log(`felix start (ip -batch only) ${fmt(median(ipRuns))}  (${rate(n, median(ipRuns))}; without the route socket, as where its addon cannot load)${samples(ipRuns)}`)
    console.log(`BIRD kernel protocol         ${fmt(birdMs)}  (${rate(n, birdMs)})${samples(birdRuns)}`)
    console.log(`felix no-op resync           ${fmt(f.noopMs)}  (reads the table; an apply against the known table: ${fmt(f.knownNoopMs)})`)
    console.log(`ratios: felix rate / raw rate = ${vsRaw.toFixed(2)} (target >= 0.80: ${vsRaw >= 0.8 ? 'met' : 'MISSED'})`)
    console.log(`        felix time / BIRD time = ${vsBird.toFixed(2)}${n >= 100_000 ? ` (target <= 1.25 at 100k+: ${vsBird <= 1.25 ? 'met' : 'MISSED'})` : ''}`)
    const cold = median(coldRuns)
    console.log(`        as a process's first start: rate / raw ${(rawMs / cold).toFixed(2)}, time / BIRD ${(cold / birdMs).toFixed(2)}`)
    if (n === 100_000) console.log(`        no-op resync ${fmt(f.noopMs)} (target < 1.5 s at 100k: ${f.noopMs < 1500 ? 'met' : 'MISSED'})`)
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err)
  process.exitCode = 1
})
