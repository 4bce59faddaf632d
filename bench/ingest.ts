// bench/ingest, speaker only: one sender (bench/bgp-sender, pre-encoded UPDATEs) hands N IPv4 /32s over
// iBGP to pinto's BGP speaker alone (test/interop's runner, its own process: no dataplane, nothing listening
// to the Loc-RIB; bench/node-path measures pinto-node as a node runs it) and then, in the same run, to
// BIRD 2 (no kernel protocol), each in its own namespace. A part's figures, not the product's. Prints
// per receiver the seconds from Established to the full table, peak RSS (VmHWM) and bytes per prefix;
// then the same table from a second peer once the first one's session and routes are gone, to show what
// of pinto's time is its code's first run.
// Usage: node dist/bench/ingest.js [N ...]   (default 100000 1000000)
// INGEST_NODE_ARGS adds node flags to pinto's process, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof".
// INGEST_ROUNDS=k runs each size k times (default 5), each round a fresh pinto process and a fresh BIRD,
// and prints every round and the medians: on a shared 2-core machine one round's ratio moves by ±0.3.
// INGEST_PER_SET=k gives every run of k prefixes an AS path of its own, as a real table's UPDATEs carry a
// few prefixes each (default: one attribute set for all, the figure the targets are set for).

import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Topology, type NetNode } from '../test/harness/netns.js'
import { BirdControl, startBird } from '../test/harness/bird.js'
import { waitFor } from '../test/harness/wait.js'
import { Pinto } from '../test/interop/pinto.js'

const SENDER = join(fileURLToPath(new URL('.', import.meta.url)), 'bgp-sender.js')
const AS = 65000
/** INGEST_PER_SET=k: k prefixes per attribute set (each run of k its own AS path), as a real table has. */
const PER_SET = process.env['INGEST_PER_SET'] === undefined ? undefined : Number(process.env['INGEST_PER_SET'])
if (PER_SET !== undefined && !(Number.isInteger(PER_SET) && PER_SET > 0)) throw new Error(`INGEST_PER_SET: ${process.env['INGEST_PER_SET']} is not a positive integer`)

interface Result {
  readonly seconds: number
  /** The same table again from a second peer, after the first one's session ended and its routes went. */
  readonly again: number
  readonly hwmKb: number
  readonly baseKb: number
}

function procKb(pid: number, key: string): number {
  const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  if (m === null) throw new Error(`/proc/${pid}/status: no ${key}`)
  return Number(m[1])
}

/** Starts the sender toward `peer`; resolves with the ms timestamp at which it went Established. */
async function send(topo: Topology, from: NetNode, peer: string, n: number): Promise<{ established: number; stop: () => void }> {
  // /32s inside 198.18.0.0/15 while they fit, else from 10.64.0.0/10 (routes that never leave the namespace).
  const base = n <= 131072 ? '198.18.0.0' : '10.64.0.0'
  const child = topo.spawn(from.ns, process.execPath, [SENDER, JSON.stringify({ peer, local: from.v4, asn: AS, count: n, base, ...(PER_SET !== undefined ? { perSet: PER_SET } : {}) })], { stdout: 'pipe', buffer: false })
  let established: number | undefined
  let failed: string | undefined
  let buf = ''
  child.stdout?.on('data', (d: Buffer) => {
    buf += d.toString()
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      const ev = JSON.parse(buf.slice(0, nl)) as { event: string; at?: number }
      buf = buf.slice(nl + 1)
      if (ev.event === 'established') established = ev.at
      if (ev.event === 'notification' || ev.event === 'error') failed = JSON.stringify(ev)
    }
  })
  const at = await waitFor(() => {
    if (failed !== undefined) throw new Error(`sender: ${failed}`)
    return established
  }, { timeoutMs: 120_000, what: `sender Established with ${peer}` })
  return { established: at, stop: () => void child.kill('SIGTERM') }
}

async function pintoRun(topo: Topology, np: NetNode, senders: readonly NetNode[], n: number): Promise<Result> {
  const pinto = await Pinto.start(topo, np, {
    speaker: { asn: AS, routerId: np.v4!, listen: { port: 179, hosts: [np.v4!] } },
    // accept-all, as pinto-node gives a peer without BGPFilters.
    peers: senders.map((ns) => ({ name: ns.name, address: ns.v4!, localAddress: np.v4!, peerAsn: AS, passive: true, holdTime: 240, families: ['ipv4' as const], importPolicy: 'accept-all' as const })),
    logLevel: 'warn',
  }, { nodeArgs: (process.env['INGEST_NODE_ARGS'] ?? '').split(' ').filter((a) => a !== '') })
  const baseKb = Number((await pinto.cmd('memory'))['vmRssKb'])
  const table = async (from: NetNode): Promise<number> => {
    const full = pinto.cmd('wait-loc-rib', { count: n, timeoutMs: 300_000 }, 310_000)
    const s = await send(topo, from, np.v4!, n)
    const done = await full
    s.stop()
    return (Number(done['at']) - s.established) / 1000
  }
  const seconds = await table(senders[0]!)
  const hwmKb = Number((await pinto.cmd('memory'))['vmHwmKb'])
  await pinto.cmd('wait-loc-rib', { count: 0, atMost: true, timeoutMs: 60_000 }, 70_000)
  const again = await table(senders[1]!)
  await pinto.stop()
  return { seconds, again, hwmKb, baseKb }
}

async function birdRun(topo: Topology, nb: NetNode, senders: readonly NetNode[], n: number): Promise<Result> {
  const bird = await startBird(topo, nb, {
    routerId: nb.v4!,
    as: AS,
    holdTime: 240,
    neighbors: senders.map((ns) => ({ name: ns.name, address: ns.v4!, as: AS, families: ['ipv4' as const], passive: true })),
  })
  const baseKb = procKb(bird.pid, 'VmRSS')
  const control = await BirdControl.open(bird.socket)
  const imported = async (from: NetNode): Promise<number> => Number(/(\d+) imported/.exec(await control.query(`show protocols all ${from.name}`))?.[1] ?? 0)
  const table = async (from: NetNode): Promise<number> => {
    const s = await send(topo, from, nb.v4!, n)
    // Polled every millisecond on an open control socket, as the runner polls pinto's table.
    const at = await waitFor(async () => ((await imported(from)) >= n ? Date.now() : undefined), { timeoutMs: 300_000, intervalMs: 1, what: `BIRD importing ${n} routes` })
    s.stop()
    return (at - s.established) / 1000
  }
  const seconds = await table(senders[0]!)
  const hwmKb = procKb(bird.pid, 'VmHWM')
  await waitFor(async () => (await imported(senders[0]!)) === 0 && / 0 of 0 routes/.test(await control.query('show route count')), { timeoutMs: 60_000, intervalMs: 10, what: 'BIRD dropping the first table' })
  const again = await table(senders[1]!)
  control.close()
  await bird.stop()
  return { seconds, again, hwmKb, baseKb }
}

const median = (xs: readonly number[]): number => {
  const v = [...xs].sort((a, b) => a - b)
  return v.length % 2 === 1 ? v[(v.length - 1) / 2]! : (v[v.length / 2 - 1]! + v[v.length / 2]!) / 2
}
const range = (xs: readonly number[], digits: number): string => `${Math.min(...xs).toFixed(digits)}-${Math.max(...xs).toFixed(digits)}`
const perPrefix = (r: Result, n: number): number => ((r.hwmKb - r.baseKb) * 1024) / n

function line(name: string, n: number, rs: readonly Result[]): string {
  const secs = rs.map((r) => r.seconds)
  const hwm = median(rs.map((r) => r.hwmKb))
  return `  ${name.padEnd(6)} median ${median(secs).toFixed(3)} s (${range(secs, 3)})   VmHWM ${(hwm / 1024).toFixed(1).padStart(6)} MB   (HWM - RSS before) / N = ${median(rs.map((r) => perPrefix(r, n))).toFixed(0).padStart(4)} B/prefix   HWM / N = ${((hwm * 1024) / n).toFixed(0)} B/prefix`
}

/** INGEST_ROUNDS=k: each size k times, each round a fresh pinto process and a fresh BIRD (default 5). */
const ROUNDS = Number(process.env['INGEST_ROUNDS'] ?? 5)
if (!(Number.isInteger(ROUNDS) && ROUNDS > 0)) throw new Error(`INGEST_ROUNDS: ${process.env['INGEST_ROUNDS']} is not a positive integer`)

const sizes = process.argv.slice(2).map(Number)
for (const n of sizes.length > 0 ? sizes : [100_000, 1_000_000]) {
  console.log(`ingest ${n} IPv4 /32s over iBGP, speaker only (pinto's speaker without its dataplane; BIRD without a kernel protocol), Established -> all in the receiver's table; ${ROUNDS} round(s), each a fresh pinto process and a fresh BIRD:`)
  const ps: Result[] = []
  const bs: Result[] = []
  for (let round = 1; round <= ROUNDS; round++) {
    const topo = await Topology.create()
    try {
      const senders = [await topo.addNode({ name: 'sender', v4: '192.0.2.2/24' }), await topo.addNode({ name: 'again', v4: '192.0.2.4/24' })]
      const np = await topo.addNode({ name: 'pinto', v4: '192.0.2.1/24' })
      const nb = await topo.addNode({ name: 'bird', v4: '192.0.2.3/24' })
      const p = await pintoRun(topo, np, senders, n)
      const b = await birdRun(topo, nb, senders, n)
      ps.push(p)
      bs.push(b)
      console.log(`  round ${round}: pinto ${p.seconds.toFixed(3)} s, BIRD ${b.seconds.toFixed(3)} s, ratio ${(p.seconds / b.seconds).toFixed(2)}x;   again, pinto's code warm: ${p.again.toFixed(3)} s, ${b.again.toFixed(3)} s, ${(p.again / b.again).toFixed(2)}x`)
    } finally {
      await topo.destroy()
    }
  }
  const ratios = ps.map((p, i) => p.seconds / bs[i]!.seconds)
  const again = ps.map((p, i) => p.again / bs[i]!.again)
  console.log(line('pinto', n, ps))
  console.log(line('BIRD', n, bs))
  console.log(`  ratio pinto/BIRD time, median of the rounds' ratios ${median(ratios).toFixed(2)}x (${range(ratios, 2)}) (target <= 1.5x); pinto ${median(ps.map((r) => perPrefix(r, n))).toFixed(0)} B/prefix (target <= 250)`)
  console.log(`  the same table again from a second peer once the first one's session and routes are gone (pinto's code warm):`)
  console.log(`    pinto median ${median(ps.map((r) => r.again)).toFixed(3)} s, BIRD ${median(bs.map((r) => r.again)).toFixed(3)} s, ratio ${median(again).toFixed(2)}x (${range(again, 2)})`)
}
