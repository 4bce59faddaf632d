// Makes a TCP service on this process's loopback (a private etcd, say) reachable on the same port of
// another network namespace's loopback, and lets this process open TCP connections from inside a
// namespace (a hand-written BGP speaker, say): a unix socket in a temp dir carries each connection across
// (paths cross namespaces, loopbacks do not). Byte-for-byte pipes, so a stalled or killed service looks
// the same from the far side. Everything it starts is stopped in t.teardown.

import { once } from 'node:events'
import { createConnection, createServer, type Socket } from 'node:net'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Topology } from './netns.js'
import { waitFor } from './wait.js'

/** The far end: listens on 127.0.0.1:PORT in its namespace and connects each client to the unix socket. */
const FAR_END = `
const net = require('node:net')
const [port, path] = [Number(process.argv[1]), process.argv[2]]
net.createServer((c) => {
  const u = net.connect(path)
  c.pipe(u); u.pipe(c)
  const end = () => { c.destroy(); u.destroy() }
  c.on('error', end); u.on('error', end); c.on('close', end); u.on('close', end)
}).listen(port, '127.0.0.1', () => process.stdout.write('listening\\n'))
`

export async function bridgeLoopback(t: { teardown(fn: () => unknown): void }, topo: Topology, ns: string, port: number): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'pinto-bridge-'))
  const path = join(dir, 'port.sock')
  const open = new Set<Socket>()
  const server = createServer((u) => {
    const c = createConnection(port, '127.0.0.1')
    open.add(u).add(c)
    u.pipe(c)
    c.pipe(u)
    const end = (): void => {
      u.destroy()
      c.destroy()
      open.delete(u)
      open.delete(c)
    }
    for (const s of [u, c]) s.on('error', end).on('close', end)
  })
  await new Promise<void>((resolve) => server.listen(path, resolve))
  const far = topo.spawn(ns, process.execPath, ['-e', FAR_END, String(port), path], { stdout: 'pipe', stderr: 'pipe', buffer: false })
  let out = ''
  far.stdout?.on('data', (d: Buffer) => (out += d.toString()))
  t.teardown(async () => {
    far.kill('SIGKILL')
    await far
    for (const s of open) s.destroy()
    await new Promise((resolve) => server.close(resolve))
    rmSync(dir, { recursive: true, force: true })
  })
  await waitFor(() => out.includes('listening'), { timeoutMs: 10_000, what: `the bridge to port ${port} in ${ns}` })
}

/** The far end of a dialer: listens on the unix socket and opens, for each client, TCP from its namespace. */
const FAR_DIAL = `
const net = require('node:net')
const [path, host, port, localAddress] = [process.argv[1], process.argv[2], Number(process.argv[3]), process.argv[4]]
net.createServer((u) => {
  const c = net.connect({ host, port, localAddress })
  u.pipe(c); c.pipe(u)
  const end = () => { c.destroy(); u.destroy() }
  c.on('error', end); u.on('error', end); c.on('close', end); u.on('close', end)
}).listen(path, () => process.stdout.write('listening\\n'))
`

export interface DialTarget {
  readonly host: string
  readonly port: number
  /** The address inside the namespace the connection comes from. */
  readonly localAddress: string
}

/**
 * Returns a function opening a TCP connection from inside namespace `ns` to `target`, handed to this
 * process as a socket (the bytes pass unchanged; the far side sees a plain TCP peer at `localAddress`).
 * A connection the target refuses arrives here closed.
 */
export async function dialFrom(t: { teardown(fn: () => unknown): void }, topo: Topology, ns: string, target: DialTarget): Promise<() => Promise<Socket>> {
  const dir = mkdtempSync(join(tmpdir(), 'pinto-dial-'))
  const path = join(dir, 'dial.sock')
  const far = topo.spawn(ns, process.execPath, ['-e', FAR_DIAL, path, target.host, String(target.port), target.localAddress], { stdout: 'pipe', stderr: 'pipe', buffer: false })
  let out = ''
  far.stdout?.on('data', (d: Buffer) => (out += d.toString()))
  const open = new Set<Socket>()
  t.teardown(async () => {
    for (const s of open) s.destroy()
    far.kill('SIGKILL')
    await far
    rmSync(dir, { recursive: true, force: true })
  })
  await waitFor(() => out.includes('listening'), { timeoutMs: 10_000, what: `the dialer from ${ns} to ${target.host}:${target.port}` })
  return async () => {
    const s = createConnection(path)
    open.add(s)
    s.on('close', () => open.delete(s))
    await once(s, 'connect')
    return s
  }
}
