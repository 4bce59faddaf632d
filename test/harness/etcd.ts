// Test harness: a private etcd (Debian's /usr/bin/etcd) on loopback with free ports and its own temp data dir.
// It owns starting, health-waiting and stopping that one process (by pid) and removing its directory;
// it never touches another etcd. Pass the tap test to have it stopped in t.teardown even when the test fails.

import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

export const ETCD_BIN = process.env['PINTO_ETCD_BIN'] ?? '/usr/bin/etcd'

export interface EtcdInstance {
  /** host:port of the client listener, as used in `etcd://<endpoint>`. */
  readonly endpoint: string
  readonly pid: number
  readonly dataDir: string
  stop(): Promise<void>
  /** SIGSTOP / SIGCONT: etcd stops answering (requests hang, as on a stalled disk) and resumes. */
  freeze(): void
  thaw(): void
  /** kill -9, the data dir kept; restart() starts it again on the same data dir and ports, healthy. */
  crash(): Promise<void>
  restart(): Promise<void>
}

/** Anything with tap's teardown (kept structural so the harness does not depend on tap's types). */
interface Teardown {
  teardown(fn: () => unknown): void
}

/** Asks the kernel for a free loopback port; another process may still take it, so start() retries on a clash. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.unref()
    srv.on('error', reject)
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address()
      const port = typeof addr === 'object' && addr ? addr.port : 0
      srv.close(() => resolve(port))
    })
  })
}

function exited(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise((resolve) => child.once('exit', () => resolve()))
}

async function stopChild(child: ChildProcess, dataDir: string): Promise<void> {
  // A frozen etcd would not see SIGTERM.
  if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) process.kill(child.pid, 'SIGCONT')
  if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
    process.kill(child.pid, 'SIGTERM')
    const killer = setTimeout(() => child.pid !== undefined && child.exitCode === null && process.kill(child.pid, 'SIGKILL'), 5000)
    await exited(child)
    clearTimeout(killer)
  }
  rmSync(dataDir, { recursive: true, force: true })
}

async function healthy(endpoint: string): Promise<boolean> {
  try {
    const res = await fetch(`http://${endpoint}/health`, { signal: AbortSignal.timeout(1000) })
    const body = (await res.json()) as { health?: string }
    return body.health === 'true'
  } catch {
    return false
  }
}

async function startOnce(deadlineMs: number): Promise<EtcdInstance | 'port-clash'> {
  const [clientPort, peerPort] = [await freePort(), await freePort()]
  const dataDir = mkdtempSync(join(tmpdir(), 'pinto-etcd-'))
  const client = `http://127.0.0.1:${clientPort}`
  const peer = `http://127.0.0.1:${peerPort}`
  const name = `pinto-test-${process.pid}-${clientPort}`
  const launch = (state: 'new' | 'existing'): ChildProcess => spawn(
    ETCD_BIN,
    [
      '--name', name, '--data-dir', join(dataDir, 'data'),
      '--listen-client-urls', client, '--advertise-client-urls', client,
      '--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer,
      '--initial-cluster', `${name}=${peer}`, '--initial-cluster-state', state,
      // Small limits: tests write little, and the 2-core machine is shared. (3.4 has no --unsafe-no-fsync.)
      '--quota-backend-bytes', String(256 * 1024 * 1024), '--snapshot-count', '5000', '--max-wals', '2',
      '--logger', 'zap', '--log-outputs', 'stderr', '--log-level', 'error',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  )
  let stderr = ''
  const watchOutput = (c: ChildProcess): void => {
    c.stderr?.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-4000)
    })
    c.on('error', (err) => {
      stderr += `\nspawn ${ETCD_BIN}: ${err.message}`
    })
  }
  let child = launch('new')
  watchOutput(child)
  const endpoint = `127.0.0.1:${clientPort}`
  // If the test process dies without its teardown, do not leave etcd and 100+ MB of WAL behind.
  const onExit = (): void => {
    if (child.exitCode === null && child.pid !== undefined) child.kill('SIGKILL')
    rmSync(dataDir, { recursive: true, force: true })
  }
  process.once('exit', onExit)
  const stop = async (): Promise<void> => {
    process.removeListener('exit', onExit)
    await stopChild(child, dataDir)
  }
  const instance: EtcdInstance = {
    endpoint, dataDir, stop,
    get pid() {
      return child.pid ?? -1
    },
    freeze: () => void process.kill(instance.pid, 'SIGSTOP'),
    thaw: () => void process.kill(instance.pid, 'SIGCONT'),
    async crash() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
      await exited(child)
    },
    async restart() {
      child = launch('existing')
      watchOutput(child)
      const until = Date.now() + 15_000
      while (!(await healthy(endpoint))) {
        if (child.exitCode !== null || Date.now() > until) throw new Error(`etcd did not come back on ${dataDir}: ${stderr.trim()}`)
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    },
  }
  while (Date.now() < deadlineMs) {
    if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) {
      await stop()
      if (/address already in use/.test(stderr)) return 'port-clash'
      throw new Error(`etcd exited before it was healthy (code ${child.exitCode}): ${stderr.trim()}`)
    }
    if (await healthy(endpoint)) return instance
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  await instance.stop()
  throw new Error(`etcd on ${endpoint} was not healthy within the deadline: ${stderr.trim()}`)
}

/** Starts a private etcd and waits until it reports healthy (within 15 s). */
export async function startEtcd(t?: Teardown): Promise<EtcdInstance> {
  const deadline = Date.now() + 15_000
  for (let attempt = 0; attempt < 5; attempt++) {
    const started = await startOnce(deadline)
    if (started === 'port-clash') continue
    t?.teardown(() => started.stop())
    return started
  }
  throw new Error('etcd: could not find free loopback ports after 5 attempts')
}
