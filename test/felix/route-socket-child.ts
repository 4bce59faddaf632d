// Run by route-socket.test.ts inside a node namespace (`ip netns exec`), as pinto-node runs felix: a
// reconciler of its own namespace writing through the route socket. Its stdin is JSON: the desired states
// to apply in turn and the reconciler's options. After each apply it resyncs (reads the kernel back, over
// the socket's dump) and prints one JSON line: what the apply planned and refused, what the resync still
// found, and how many times the reconciler read the table with `ip route show` instead.

import { readStdinSync } from '../../cni/stdin.js'
import { renderDesired, RouteReconciler, workloadAddresses, type DesiredState } from '../../felix/index.js'
import { countingRunner } from './lab.js'
import { RouteSocket } from '../../felix/route-socket.js'

interface Job {
  readonly states: DesiredState[]
  readonly nexthopObjects: boolean
  readonly protocol: number
  /** Keep running with the monitor on after the last state, until SIGTERM (drift tests). */
  readonly hold?: boolean
}

const job = JSON.parse(readStdinSync()) as Job
const socket = await RouteSocket.open()
if (socket instanceof Error) {
  process.stderr.write(`route socket: ${socket.message}\n`)
  process.exit(2)
}
const { runner, ipReads: reads } = countingRunner()
const rec = new RouteReconciler({ runner, protocol: job.protocol, routeSocket: socket, monitor: job.hold === true, retryMs: 600_000, resyncIntervalMs: 600_000, nexthopObjects: job.nexthopObjects })
if (job.hold === true) await rec.start()
for (const s of job.states) {
  rec.setDesired(renderDesired(s, { protocol: job.protocol }).routes, workloadAddresses(s))
  const r = await rec.apply()
  const again = await rec.resync()
  const errors = r.errors.map((e) => ({ op: e.op.op, dst: e.op.route.dst, message: e.message }))
  process.stdout.write(JSON.stringify({ planned: r.planned, errors, resyncPlanned: again.planned, socketError: socket.error?.message ?? null, ipReads: reads() }) + '\n')
}
if (job.hold === true) await new Promise<void>((resolve) => process.once('SIGTERM', () => resolve()))
await rec.stop()
socket.close()
