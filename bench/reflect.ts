// bench/reflect: one pinto route reflector (the runner, its own process) with N iBGP clients, each
// originating one /26 (bench/bgp-clients: N minimal sessions in one process on 127.0.1.x, inside a
// namespace of our own). Prints the time until every client holds all N routes and the reflector's RSS.
// Usage: node dist/bench/reflect.js [N]   (default 200; target under 2 s)

import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Topology } from '../test/harness/netns.js'
import { waitFor } from '../test/harness/wait.js'
import { Pinto } from '../test/interop/pinto.js'
import type { PeerJson } from '../test/interop/runner-config.js'

const CLIENTS = join(fileURLToPath(new URL('.', import.meta.url)), 'bgp-clients.js')
const AS = 65000
const n = Number(process.argv[2] ?? 200)
if (!Number.isInteger(n) || n < 2 || n > 254) throw new Error(`N: ${process.argv[2]} must be 2..254 (clients are 127.0.1.1..254)`)

const topo = await Topology.create()
try {
  const node = await topo.addNode({ name: 'rr', v4: '192.0.2.1/24' })
  // Loopback inside the namespace: 127.0.0.0/8 is all local, so every client gets an address of its own.
  const peers: PeerJson[] = []
  for (let i = 1; i <= n; i++) {
    peers.push({ name: `c${i}`, address: `127.0.1.${i}`, localAddress: '127.0.0.1', peerAsn: AS, passive: true, rrClient: true, holdTime: 240, families: ['ipv4'], gracefulRestart: false })
  }
  const rr = await Pinto.start(topo, node, {
    speaker: { asn: AS, routerId: node.v4!, clusterId: node.v4!, listen: { port: 179, hosts: ['127.0.0.1'] } },
    peers,
    logLevel: 'warn',
  })
  const child = topo.spawn(node.ns, process.execPath, [CLIENTS, JSON.stringify({ count: n, server: '127.0.0.1', asn: AS })], { stdout: 'pipe', buffer: false })
  let done: { seconds: number; sinceLastEstablished: number } | undefined
  let failed: string | undefined
  let buf = ''
  child.stdout?.on('data', (d: Buffer) => {
    buf += d.toString()
    for (let nl = buf.indexOf('\n'); nl >= 0; nl = buf.indexOf('\n')) {
      const ev = JSON.parse(buf.slice(0, nl)) as { event: string; seconds: number; sinceLastEstablished: number }
      buf = buf.slice(nl + 1)
      if (ev.event === 'done') done = ev
      if (ev.event === 'error' || ev.event === 'notification') failed = JSON.stringify(ev)
    }
  })
  const r = await waitFor(() => {
    if (failed !== undefined) throw new Error(`clients: ${failed}`)
    return done
  }, { timeoutMs: 60_000, what: `all ${n} clients holding ${n} routes` })
  const mem = await rr.cmd('memory')
  const st = await rr.cmd('status')
  console.log(`reflect: 1 pinto reflector, ${n} clients each originating one /26`)
  console.log(`  every client holds all ${n} routes ${r.seconds.toFixed(2)} s after the first connect (${r.sinceLastEstablished.toFixed(2)} s after the last session came up); target < 2 s`)
  console.log(`  reflector VmHWM ${(Number(mem['vmHwmKb']) / 1024).toFixed(1)} MB, VmRSS ${(Number(mem['vmRssKb']) / 1024).toFixed(1)} MB, Loc-RIB ${st['locRibSize']} prefixes`)
  child.kill('SIGTERM')
  await rr.stop()
} finally {
  await topo.destroy()
}
