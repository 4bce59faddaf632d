// Route convergence: time from a pod's CNI ADD on one node to a route covering its address in every other
// node's kernel (seen by `ip monitor route` there), p50 and p99 over 50 pods in a 10-node cluster, beside
// the target p99 < 200 ms. The first pod on a node claims a new block, which must be advertised; later pods
// fall inside an already-advertised block and are covered at once. The two are reported apart.
// The cluster runs --settle seconds (default 15) before the first pod, as a cluster that serves pods has.
// Run (root): npx tsc -p . && node scripts/bundle.js && node dist/bench/converge.js [--nodes 10] [--pods 50] [--settle 15]

import { execa, type ResultPromise } from 'execa'
import { DemoCluster, type DemoNode } from '../agent/demo/cluster.js'
import { cidrContains, parseAddr, readCidr } from '../net/index.js'
import { table } from '../agent/demo/tables.js'
import { numberArg } from './args.js'

const NODES = numberArg('--nodes', 10)
const PODS = numberArg('--pods', 50)
/** Seconds the started cluster runs before the first pod: a cluster that serves pods has been up a while. */
const SETTLE = numberArg('--settle', 15)
const TARGET_P99_MS = 200
/** A route of our own (not felix's protocol, so it is left alone) that shows a monitor is listening. */
const MARKER = '198.51.100.255'

const now = (): number => performance.timeOrigin + performance.now()

/** First arrival time of each prefix added in a node's kernel, from `ip monitor route`. */
class RouteWatch {
  readonly seen = new Map<string, number>()
  /** Whether the readiness marker route was reported (ip prints a host route without its /32). */
  markerSeen = false
  private readonly child: ResultPromise
  private partial = ''
  constructor(readonly node: DemoNode) {
    this.child = execa('ip', ['-n', node.ns, 'monitor', 'route'], { reject: false, buffer: false })
    this.child.stdout?.setEncoding('utf8')
    this.child.stdout?.on('data', (chunk: string) => {
      const at = now()
      this.partial += chunk
      const lines = this.partial.split('\n')
      this.partial = lines.pop() ?? ''
      for (const l of lines) {
        if (!l.startsWith('Deleted') && l.includes(MARKER)) this.markerSeen = true
        if (l.startsWith('Deleted') || !(l.includes('proto 87') || l.includes(MARKER)) || l.startsWith('blackhole')) continue
        const prefix = /(\d+\.\d+\.\d+\.\d+\/\d+)/.exec(l)?.[1]
        if (prefix !== undefined && !this.seen.has(prefix)) this.seen.set(prefix, at)
      }
    })
  }
  /** When a route covering `address` first appeared, if it has. */
  coveredAt(address: string): number | undefined {
    const a = parseAddr(address)
    let best: number | undefined
    for (const [p, at] of this.seen) if (cidrContains(readCidr(p), a.family, a.value) && (best === undefined || at < best)) best = at
    return best
  }
  stop(): void {
    this.child.kill('SIGTERM')
  }
}

function pct(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!
}

const ms = (x: number): string => (Number.isNaN(x) ? '-' : `${x.toFixed(1)} ms`)

async function main(): Promise<void> {
  const started = now()
  const cluster = DemoCluster.prepare({ nodes: NODES, env: { PINTO_LOG_LEVEL: 'warn' } })
  const stop = (): void => void cluster.destroy({ hurry: true })
  process.once('SIGINT', stop)
  try {
    await cluster.start()
    process.stdout.write(`${NODES} nodes up in ${((now() - started) / 1000).toFixed(1)} s; settling ${SETTLE} s, then adding ${PODS} pods one at a time, round robin\n`)
    const watches = cluster.nodes.map((n) => new RouteWatch(n))
    // Wait for the monitors to be listening: a marker route of our own must show up in each. It is made
    // again until seen: one made before ip monitor has subscribed is never reported.
    for (const w of watches) {
      const deadline = Date.now() + 5000
      while (!w.markerSeen) {
        if (Date.now() > deadline) throw new Error(`ip monitor route in ${w.node.name} reported nothing within 5 s`)
        await execa('ip', ['-n', w.node.ns, 'route', 'del', `${MARKER}/32`, 'dev', 'lo'], { reject: false })
        await execa('ip', ['-n', w.node.ns, 'route', 'add', `${MARKER}/32`, 'dev', 'lo'])
        for (const until = Date.now() + 250; !w.markerSeen && Date.now() < until; ) await new Promise((r) => setTimeout(r, 10))
      }
      await execa('ip', ['-n', w.node.ns, 'route', 'del', `${MARKER}/32`, 'dev', 'lo'])
    }
    await new Promise((r) => setTimeout(r, SETTLE * 1000))
    const newBlock: number[] = []
    const inBlock: number[] = []
    const adds: number[] = []
    const afterAdd: number[] = []
    let coveredAtOnce = 0
    let timeouts = 0
    for (let i = 0; i < PODS; i++) {
      const node = cluster.nodes[i % NODES]!
      const first = i < NODES
      const t0 = now()
      const pod = await cluster.addPod(node)
      const t1 = now()
      adds.push(t1 - t0)
      const others = watches.filter((w) => w.node !== node)
      const deadline = Date.now() + 10_000
      while (others.some((w) => w.coveredAt(pod.address) === undefined) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5))
      for (const w of others) {
        const at = w.coveredAt(pod.address)
        if (at === undefined) {
          timeouts++
          continue
        }
        const latency = Math.max(0, at - t0)
        if (at < t0) coveredAtOnce++
        if (first) afterAdd.push(at - t1)
        ;(first ? newBlock : inBlock).push(latency)
      }
    }
    for (const w of watches) w.stop()
    const rows = (label: string, xs: number[]): string[] => {
      const s = [...xs].sort((a, b) => a - b)
      return [label, String(s.length), ms(pct(s, 50)), ms(pct(s, 99)), ms(s[s.length - 1] ?? NaN), `${TARGET_P99_MS} ms`, pct(s, 99) < TARGET_P99_MS ? 'met' : 'MISSED']
    }
    const all = [...newBlock, ...inBlock]
    process.stdout.write(`\nfrom the start of CNI ADD on one node to a covering route in each other node's kernel (${NODES} nodes, ${PODS} pods; samples = pods x other nodes)\n`)
    process.stdout.write(
      table(['pods', 'samples', 'p50', 'p99', 'max', 'target p99', ''], [
        rows(`first pod per node (new /26 block advertised)`, newBlock),
        rows(`later pods (inside an advertised block)`, inBlock),
        rows('all', all),
      ]),
    )
    const addSorted = [...adds].sort((a, b) => a - b)
    process.stdout.write(`later pods covered by their block route before ADD began: ${coveredAtOnce} of ${inBlock.length} samples (latency 0)\n`)
    process.stdout.write(`CNI ADD itself (exec of the pinto plugin to its result): p50 ${ms(pct(addSorted, 50))}, p99 ${ms(pct(addSorted, 99))}\n`)
    const after = [...afterAdd].sort((a, b) => a - b)
    process.stdout.write(`new blocks, from ADD's result to the route elsewhere (negative: the route came first): p50 ${ms(pct(after, 50))}, p99 ${ms(pct(after, 99))}\n`)
    if (timeouts > 0) process.stdout.write(`${timeouts} samples never saw a route within 10 s\n`)
  } finally {
    await cluster.destroy()
    process.off('SIGINT', stop)
  }
}

await main()
