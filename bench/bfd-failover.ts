// BFD failover: pinto-node (kernel dataplane) peering over eBGP with FRR top-of-rack routers (zebra, bgpd
// and bfdd, each in its own namespace). With BFD at 100 ms × 3 on 4 sessions it cuts the first router's
// link silently (an nftables drop there) --cuts times and prints p50/p99 of cut → the router's route gone
// from pinto's kernel (seen by `ip monitor route`), then pinto-node's idle CPU over --idle seconds; then,
// BFD off with keepalive 3 s / hold 9 s, the same for --hold-cuts cuts (fewer: each waits out the hold time).
// Run (root): npx tsc -p . && node scripts/bundle.js && node dist/bench/bfd-failover.js [--cuts 20] [--hold-cuts 3] [--idle 20]

import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { execa, type ResultPromise } from 'execa'
import { createTopology, type Topology } from '../test/harness/netns.js'
import { startFrr, type FrrDaemon } from '../test/harness/frr.js'
import { cutLink, startBfdd } from '../test/harness/bfdd.js'
import { waitFor } from '../test/harness/wait.js'
import { startAgent, type AgentProcess } from '../test/agent/agent-process.js'
import { runPintoctl } from '../test/agent/pintoctl-run.js'
import { kernelRoutes } from '../agent/demo/observe.js'
import { table } from '../agent/demo/tables.js'
import { numberArg } from './args.js'

const CUTS = numberArg('--cuts', 20)
const HOLD_CUTS = numberArg('--hold-cuts', 3)
const IDLE_SECONDS = numberArg('--idle', 20)
const ROUTERS = 4
const PINTO_AS = 64512
const now = (): number => performance.timeOrigin + performance.now()

const teardowns: (() => unknown)[] = []
const td = { teardown: (fn: () => unknown) => teardowns.push(fn) }

/** Times at which `ip monitor route` in `ns` reported a route to `prefix` deleted. */
function watchDeletes(ns: string, prefix: string): { deleted: number[]; stop(): void } {
  const deleted: number[] = []
  const child: ResultPromise = execa('ip', ['-n', ns, 'monitor', 'route'], { reject: false, buffer: false })
  let partial = ''
  child.stdout?.setEncoding('utf8')
  child.stdout?.on('data', (chunk: string) => {
    const parts = (partial + chunk).split('\n')
    partial = parts.pop() ?? ''
    for (const l of parts) if (l.startsWith('Deleted') && l.includes(prefix)) deleted.push(now())
  })
  return { deleted, stop: () => child.kill('SIGTERM') }
}

const pct = (xs: readonly number[], p: number): number => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] ?? NaN
}

function peerResource(i: number, address: string, bfd: boolean): Record<string, unknown> {
  return {
    apiVersion: 'projectcalico.org/v3',
    kind: 'BGPPeer',
    metadata: { name: `tor${i}`, ...(bfd ? { annotations: { 'pinto.dev/bfd': 'minTx=100ms,minRx=100ms,multiplier=3' } } : {}) },
    spec: { peerIP: address, asNumber: 65001 + i, keepaliveTime: '3s' },
  }
}

async function apply(store: string, items: readonly Record<string, unknown>[]): Promise<void> {
  const r = await runPintoctl(['apply', '-f', '-'], { env: { PINTO_DATASTORE: store }, input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items }) })
  if (r.status !== 0) throw new Error(`pintoctl apply: ${r.stderr}`)
}

async function cpuTicks(pid: number): Promise<number> {
  const f = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
  return Number(f[11]) + Number(f[12]) // utime, stime (fields 14, 15)
}

/** pinto-node's CPU (user + system) over IDLE_SECONDS, as a fraction of one core. */
async function idleCpu(pid: number): Promise<number> {
  const hz = Number((await execa('getconf', ['CLK_TCK'])).stdout)
  const t0 = now()
  const c0 = await cpuTicks(pid)
  await new Promise((r) => setTimeout(r, IDLE_SECONDS * 1000))
  return ((await cpuTicks(pid)) - c0) / hz / ((now() - t0) / 1000)
}

async function cuts(agent: AgentProcess, ns: string, router: FrrDaemon, pintoAddr: string, prefix: string, n: number, bfd: boolean): Promise<number[]> {
  const out: number[] = []
  const peerUp = async (): Promise<boolean> => {
    const peers = ((await agent.get('/v1/peers')).body as { peers: { name: string; state: string }[] }).peers
    return peers.find((p) => p.name === 'peer-tor0')?.state === 'Established'
  }
  const hasRoute = async (): Promise<boolean> => (await kernelRoutes(ns)).some((r) => r.prefix === prefix)
  for (let i = 0; i < n; i++) {
    await waitFor(async () => (await peerUp()) && (await hasRoute()), { timeoutMs: 60_000, what: `cut ${i}: session and ${prefix} up before the cut` })
    const watch = watchDeletes(ns, prefix)
    await new Promise((r) => setTimeout(r, 300)) // the monitor subscribes
    const at = now()
    await cutLink(router.node.ns, pintoAddr, true)
    await waitFor(() => watch.deleted.length > 0, { timeoutMs: bfd ? 10_000 : 30_000, intervalMs: 5, what: `cut ${i}: ${prefix} deleted` })
    out.push(watch.deleted[0]! - at)
    watch.stop()
    await cutLink(router.node.ns, pintoAddr, false)
    process.stdout.write(`  ${bfd ? 'BFD' : 'hold time'} cut ${i + 1}/${n}: ${(watch.deleted[0]! - at).toFixed(0)} ms\n`)
  }
  return out
}

async function main(): Promise<void> {
  const topo: Topology = await createTopology(td)
  const np = await topo.addNode({ name: 'pinto', v4: '192.0.2.1/24' })
  const routers: FrrDaemon[] = []
  for (let i = 0; i < ROUTERS; i++) {
    const n = await topo.addNode({ name: `tor${i}`, v4: `192.0.2.${10 + i}/24` })
    const frr = await startFrr(topo, n, {
      routerId: n.v4!, as: 65001 + i, holdTime: 9,
      neighbors: [{ name: 'pinto', address: np.v4!, as: PINTO_AS, families: ['ipv4'] }],
      originate: [{ prefix: `203.0.113.${i * 64}/26` }],
    }, { zebra: true })
    await startBfdd(topo, frr, [{ address: np.v4!, localAddress: n.v4!, intervalMs: 100, multiplier: 3 }], [np.v4!])
    routers.push(frr)
  }
  const store = join(await topo.tempDir('store'), 'store')
  const config = { apiVersion: 'projectcalico.org/v3', kind: 'BGPConfiguration', metadata: { name: 'default' }, spec: { asNumber: PINTO_AS, nodeToNodeMeshEnabled: false } }
  await apply(store, [config, ...routers.map((r, i) => peerResource(i, r.node.v4!, true))])
  const agent = startAgent(td, np.ns, { PINTO_DATASTORE: store, PINTO_DATAPLANE: 'kernel', PINTO_IP: '192.0.2.1/24', PINTO_LOG_LEVEL: 'warn' })
  await agent.ready()
  const sessions = async () => ((await agent.get('/v1/bfd')).body as { sessions: { state: string }[] }).sessions
  await waitFor(async () => (await sessions()).filter((s) => s.state === 'Up').length === ROUTERS, { timeoutMs: 30_000, what: `${ROUTERS} BFD sessions Up` })

  const bfdTimes = await cuts(agent, np.ns, routers[0]!, np.v4!, '203.0.113.0/26', CUTS, true)

  await waitFor(async () => (await sessions()).filter((s) => s.state === 'Up').length === ROUTERS, { timeoutMs: 30_000, what: 'every BFD session Up before the idle measurement' })
  const pid = agent.child.pid!
  const cpu = await idleCpu(pid)

  // BFD off for the first router (here and there): the hold time is what notices the cut.
  await routers[0]!.vtysh('configure terminal', `router bgp ${routers[0]!.spec.as}`, `no neighbor ${np.v4} bfd`)
  await apply(store, [peerResource(0, routers[0]!.node.v4!, false)])
  await waitFor(async () => (await sessions()).length === ROUTERS - 1, { timeoutMs: 10_000, what: 'BFD off for tor0' })
  const holdTimes = await cuts(agent, np.ns, routers[0]!, np.v4!, '203.0.113.0/26', HOLD_CUTS, false)

  // The same node with no BFD session at all, for what the sessions add.
  await apply(store, routers.map((r, i) => peerResource(i, r.node.v4!, false)))
  await waitFor(async () => (await sessions()).length === 0, { timeoutMs: 10_000, what: 'BFD off everywhere' })
  const baseline = await idleCpu(pid)

  const row = (what: string, xs: number[]): string[] => [what, String(xs.length), pct(xs, 50).toFixed(0), pct(xs, 99).toFixed(0), Math.max(...xs).toFixed(0)]
  process.stdout.write('\ncut -> route through that router gone from pinto-node\'s kernel (ms)\n')
  process.stdout.write(table(['path', 'cuts', 'p50', 'p99', 'max'], [row('BFD 100 ms x 3 (detect 300 ms)', bfdTimes), row('BGP hold time 9 s (keepalive 3 s)', holdTimes)]))
  process.stdout.write(`\npinto-node idle CPU over ${IDLE_SECONDS} s, ${ROUTERS} BGP sessions: ${(cpu * 100).toFixed(2)} % of one core with a BFD session each at 100 ms, ${(baseline * 100).toFixed(2)} % without BFD\n`)
}

try {
  await main()
} finally {
  for (const fn of teardowns.reverse()) await Promise.resolve(fn()).catch(() => undefined)
}
