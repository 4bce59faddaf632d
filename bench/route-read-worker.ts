// bench/route-read's reader, run inside the namespace (`ip netns exec`) in a process of its own per method:
// reads table main's IPv4 routes twice, through the route socket's RTM_GETROUTE dump (`netlink`) or
// `ip -N -json route show` parsed by parseRouteJson (`ip`), felix's two ways, and prints one JSON line:
// the first (cold) and second (warm) read's time, this process's VmHWM before and after the first read,
// and `ip`'s own peak RSS. Usage: node dist/bench/route-read-worker.js netlink|ip

import { readFileSync } from 'node:fs'
import { execa } from 'execa'
import type { KernelRoute } from '../felix/kernel-route.js'
import { parseRouteJson } from '../felix/route-parse.js'
import { RouteSocket } from '../felix/route-socket.js'

export interface ReadFigures {
  method: 'netlink' | 'ip'
  routes: number
  coldMs: number
  warmMs: number
  /** This process's VmHWM (KB) before the first read and after it. */
  hwmBeforeKB: number
  hwmAfterKB: number
  /** The `ip` process's peak RSS (KB), 0 for netlink. */
  ipMaxRssKB: number
}

function vmHwmKB(): number {
  const m = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'))
  if (m === null) throw new Error('no VmHWM in /proc/self/status')
  return Number(m[1])
}

async function main(): Promise<void> {
  const method = process.argv[2]
  if (method !== 'netlink' && method !== 'ip') throw new Error('usage: route-read-worker.js netlink|ip')
  const socket = method === 'netlink' ? await RouteSocket.open() : undefined
  if (socket instanceof Error) throw new Error(`route socket: ${socket.message}`)
  let ipMaxRssKB = 0
  const read = async (): Promise<KernelRoute[]> => {
    if (socket !== undefined) return socket.readTable([4], 254)
    // /usr/bin/time prints ip's peak RSS (KB) as the last line of stderr.
    const r = await execa('/usr/bin/time', ['-f', '%M', 'ip', '-N', '-json', '-4', 'route', 'show', 'table', '254'], { maxBuffer: 1 << 30 })
    ipMaxRssKB = Math.max(ipMaxRssKB, Number(String(r.stderr).trim().split('\n').pop()))
    return parseRouteJson(String(r.stdout), 4, 254)
  }
  const hwmBeforeKB = vmHwmKB()
  let t0 = performance.now()
  let routes = await read()
  const coldMs = performance.now() - t0
  const hwmAfterKB = vmHwmKB()
  const n = routes.length
  routes.length = 0
  t0 = performance.now()
  routes = await read()
  const warmMs = performance.now() - t0
  if (routes.length !== n) throw new Error(`the second read found ${routes.length} routes, the first ${n}`)
  socket?.close()
  const out: ReadFigures = { method, routes: n, coldMs, warmMs, hwmBeforeKB, hwmAfterKB, ipMaxRssKB }
  process.stdout.write(JSON.stringify(out) + '\n')
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`)
  process.exitCode = 1
})
