// One receiver's run for bench/node-path, in a topology of its own (receiver and sender namespaces on a
// bridge, removed afterwards even on failure): the table from Established until the kernel holds every
// route, its memory, then churn with the table held, one change at a time, from the UPDATE's write to
// the kernel's change. Owns the run's sequence; the figures are printed by node-path.ts.

import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { execa } from 'execa'
import { Topology } from '../test/harness/netns.js'
import { formatPrefix } from '../bgp/codec/index.js'
import { PINTO_PROTO, RECEIVER_AS, startBirdKernel, startPintoNode, type PeerSpec, type Receiver } from './node-path-receivers.js'
import { RouteMonitor, cpuMs, kernelRouteCount, memoryKb, waitKernelCount } from './kernel-watch.js'
import { churnPrefix, type MixFamily } from './route-mix.js'

const SENDER = join(fileURLToPath(new URL('.', import.meta.url)), 'table-sender.js')

export interface RunSpec {
  readonly receiver: 'pinto' | 'BIRD'
  readonly family: MixFamily
  readonly count: number
  readonly churn: number
  /** Time the churn may take for this receiver; the changes done by then are the ones reported. */
  readonly churnBudgetMs: number
  /** Node/V8 flags pinto-node runs with beyond its own (`--cpu-prof`, `--trace-gc`). */
  readonly nodeArgs?: readonly string[]
}

export interface RunResult {
  readonly spec: RunSpec
  readonly shape: string
  /** Established → the kernel holding every route, seconds. */
  readonly seconds: number
  readonly resolutionMs: number
  readonly rssBeforeKb: number
  readonly hwmKb: number
  /** The receiver's on-CPU time (all its threads) from the sender's connect to the kernel holding every route. */
  readonly tableCpuMs: number
  /** Milliseconds from writing each change's UPDATE to the kernel's change, in order. */
  readonly latencies: readonly number[]
  readonly cpuPerChangeMs: number
}

interface SenderEvent {
  readonly event: string
  readonly at?: number
  readonly k?: number
  readonly shape?: string
}

/** The sender process and its JSON lines: each event is kept, and next(name) waits for the next one. */
function startSender(topo: Topology, ns: string, args: Record<string, unknown>) {
  const child = topo.spawn(ns, process.execPath, [SENDER, JSON.stringify(args)], { stdin: 'pipe', stdout: 'pipe', stderr: 'pipe', buffer: false, cleanup: false })
  const queue: SenderEvent[] = []
  let wake: (() => void) | undefined
  let failed: string | undefined
  let buf = ''
  let stderr = ''
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()))
  child.stdout?.on('data', (d: Buffer) => {
    buf += d.toString()
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      const ev = JSON.parse(buf.slice(0, nl)) as SenderEvent
      buf = buf.slice(nl + 1)
      if (ev.event === 'notification' || ev.event === 'error') failed = `sender: ${JSON.stringify(ev)}`
      queue.push(ev)
      wake?.()
    }
  })
  void child.then((r) => {
    failed ??= `sender exited (${r.exitCode ?? r.signal}) ${stderr.slice(-1500)}`
    wake?.()
  })
  return {
    failed: () => failed,
    write: (line: string) => child.stdin?.write(line + '\n'),
    async next(event: string, timeoutMs: number): Promise<SenderEvent> {
      const deadline = Date.now() + timeoutMs
      for (;;) {
        const i = queue.findIndex((e) => e.event === event)
        if (i >= 0) return queue.splice(i, 1)[0]!
        if (failed !== undefined) throw new Error(failed)
        if (Date.now() > deadline) throw new Error(`sender: no ${event} within ${timeoutMs} ms`)
        await new Promise<void>((r) => {
          wake = r
          setTimeout(r, Math.max(1, deadline - Date.now())).unref()
        })
        wake = undefined
      }
    },
    stop: () => child.kill('SIGTERM'),
  }
}

/** Routes of the receiver's protocol in its kernel, counted exactly (one full dump, outside the timing). */
async function ownRoutes(ns: string, family: MixFamily, receiver: Receiver): Promise<number> {
  const proto = receiver.name === 'pinto' ? String(PINTO_PROTO) : 'bird'
  const out = await execa('sh', ['-c', `ip -n "$0" ${family === 'ipv4' ? '-4' : '-6'} route show proto ${proto} | wc -l`, ns])
  return Number(out.stdout.trim())
}

/** How `ip monitor` names a route's destination: a host route without its length. */
function monitorDst(family: MixFamily, k: number): string {
  const text = formatPrefix(churnPrefix(family, k))
  return family === 'ipv4' && text.endsWith('/32') ? text.slice(0, -3) : text
}

export async function runReceiver(spec: RunSpec): Promise<RunResult> {
  const topo = await Topology.create()
  // Interrupted, it still removes what it made: the run's awaits then fail and it ends with an error once
  // the one removal (shared by the signal and the finally below) is done.
  let removal: Promise<void> | undefined
  const destroy = (): Promise<void> => (removal ??= topo.destroy())
  const stopping = (): void => void destroy()
  process.once('SIGINT', stopping)
  process.once('SIGTERM', stopping)
  try {
    const recv = await topo.addNode({ name: 'recv', v4: '192.0.2.1/24', v6: '2001:db8:ffff::1/64' })
    const send = await topo.addNode({ name: 'send', v4: '192.0.2.2/24', v6: '2001:db8:ffff::2/64' })
    const v4 = spec.family === 'ipv4'
    const peer: PeerSpec = { name: 'sender', address: (v4 ? send.v4 : send.v6)!, family: spec.family }
    // The sender encodes its table before the receiver starts, so the two never share the CPU for it.
    const sender = startSender(topo, send.ns, { peer: (v4 ? recv.v4 : recv.v6)!, local: peer.address, routerId: send.v4!, asn: RECEIVER_AS, family: spec.family, count: spec.count })
    const encoded = await sender.next('encoded', 300_000)
    const receiver = spec.receiver === 'pinto' ? await startPintoNode(topo, recv, peer, spec.nodeArgs ?? []) : await startBirdKernel(topo, recv, peer)
    try {
      await receiver.settled()
      const base = kernelRouteCount(receiver.pid, spec.family)
      const rssBeforeKb = memoryKb(receiver.pid, 'VmRSS')
      const tableCpu0 = cpuMs(receiver.pid)
      sender.write(JSON.stringify({ op: 'connect' }))
      const established = (await sender.next('established', 60_000)).at!
      const reached = await waitKernelCount(receiver.pid, spec.family, base + spec.count, 900_000, () => receiver.died() ?? sender.failed())
      const hwmKb = memoryKb(receiver.pid, 'VmHWM')
      const tableCpuMs = cpuMs(receiver.pid) - tableCpu0
      const own = await ownRoutes(recv.ns, spec.family, receiver)
      if (own !== spec.count) throw new Error(`${receiver.name}: ${own} routes of its own in the kernel, ${spec.count} sent`)

      const monitor = await RouteMonitor.start(recv.ns, spec.family)
      const latencies: number[] = []
      const cpu0 = cpuMs(receiver.pid)
      const end = Date.now() + spec.churnBudgetMs
      try {
        for (let c = 0; c < spec.churn && Date.now() < end; c++) {
          const k = c >> 1
          const op = c % 2 === 0 ? 'announce' : 'withdraw'
          const dst = monitorDst(spec.family, k)
          const seen = op === 'announce' ? 'add' : 'del'
          monitor.forget(seen, dst)
          sender.write(JSON.stringify({ op, k }))
          const wrote = await sender.next('wrote', 10_000)
          // The first change is waited for however long it takes (up to 5 min), so every receiver has a figure.
          const at = await monitor.when(seen, dst, Math.max(c === 0 ? 300_000 : 1000, end - Date.now()))
          if (at === undefined) break
          latencies.push(at - wrote.at!)
        }
      } finally {
        monitor.stop()
      }
      const cpuPerChangeMs = latencies.length > 0 ? (cpuMs(receiver.pid) - cpu0) / latencies.length : NaN
      return { spec, shape: encoded.shape ?? '', seconds: (reached.at - established) / 1000, resolutionMs: reached.resolutionMs, rssBeforeKb, hwmKb, tableCpuMs, latencies, cpuPerChangeMs }
    } finally {
      await receiver.stop()
    }
  } finally {
    await destroy()
    process.off('SIGINT', stopping)
    process.off('SIGTERM', stopping)
  }
}
