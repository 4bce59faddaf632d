// bench/cni-wiring: a part's figures, the wiring part of pinto-node's ADD and DEL alone (no plugin exec, no
// IPAM): Dataplane.wire of a dual-stack pod and removeHostVeth, through rtnetlink sockets and through the
// `ip` processes the agent starts ahead (agent/warm-runner.ts, refilled between runs as the agent does),
// interleaved in one run inside a lab namespace.
// Run: npx tsc -p . && node dist/bench/cni-wiring.js [runs]

import { execa } from 'execa'
import { fileURLToPath } from 'node:url'
import { Dataplane } from '../cni/index.js'
import { NetnsRtnl } from '../felix/index.js'
import { WarmRunner } from '../agent/warm-runner.js'
import { createLab } from '../test/cni/lab.js'

function pct(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] as number
}

const ms = (t0: bigint): number => Number(process.hrtime.bigint() - t0) / 1e6

/** The loop itself, in the lab's host namespace: the veths it makes are there and in `netns`. */
async function inside(netns: string, runs: number): Promise<void> {
  const warm = new WarmRunner()
  const ways = { ip: new Dataplane(warm.run), netlink: new Dataplane(undefined, { open: (ns) => NetnsRtnl.open(ns) }) }
  const m: Record<string, number[]> = { 'ip wire': [], 'ip del': [], 'netlink wire': [], 'netlink del': [] }
  warm.refill()
  for (let i = 0; i < runs; i++) {
    for (const [name, dp] of Object.entries(ways)) {
      // The agent refills after each ADD, off the next one's path.
      await new Promise((r) => setTimeout(r, 20))
      const v = { ifname: 'eth0', hostVeth: 'pintobench0', mtu: 1450, podMac: '0a:00:00:00:00:01', owner: 'bench.c1', containerId: 'c1' }
      let t0 = process.hrtime.bigint()
      await dp.wire(v, netns, Promise.resolve({ v4: '198.18.0.5', v6: '2001:db8:18::5' }))
      m[`${name} wire`]!.push(ms(t0))
      warm.refill()
      await new Promise((r) => setTimeout(r, 20))
      t0 = process.hrtime.bigint()
      await dp.removeHostVeth(v.hostVeth)
      m[`${name} del`]!.push(ms(t0))
      warm.refill()
      // The next run's names must be free: the kernel finishes the deletion on its own.
      while (dp.hostLinkExists(v.hostVeth)) await new Promise((r) => setTimeout(r, 1))
    }
  }
  warm.close()
  process.stdout.write(JSON.stringify(m))
}

async function main(): Promise<void> {
  const runs = Number(process.argv[2] ?? 100)
  const teardowns: (() => unknown)[] = []
  const lab = await createLab({ teardown: (fn) => void teardowns.push(fn) }, { service: false })
  try {
    const netns = await lab.pod('wiring')
    const load = (await import('node:os')).loadavg()[0]?.toFixed(1)
    const r = await execa('ip', ['netns', 'exec', lab.hostNs, process.execPath, fileURLToPath(import.meta.url), '--inside', netns, String(runs)])
    const m = JSON.parse(String(r.stdout)) as Record<string, number[]>
    const row = (name: string): string => `${name.padEnd(14)} p50 ${pct(m[name]!, 50).toFixed(2).padStart(7)} ms   p99 ${pct(m[name]!, 99).toFixed(2).padStart(7)} ms`
    process.stdout.write([`bench/cni-wiring: ${runs} runs each, interleaved, dual-stack pod (load ${load})`, ...Object.keys(m).map(row)].join('\n') + '\n')
  } finally {
    for (const fn of teardowns.reverse()) await fn()
  }
}

if (process.argv[2] === '--inside') await inside(process.argv[3] as string, Number(process.argv[4]))
else await main()
