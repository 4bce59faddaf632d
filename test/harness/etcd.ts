// Test harness: a private etcd (Debian's /usr/bin/etcd) with its own temp data dir: on loopback with free ports
// by default, or on an address and ports the caller chooses (inside a namespace through a command prefix), plain
// or TLS with client-certificate auth. It owns starting, health-waiting and stopping that one process (by pid)
// and removing its directory; it never touches another etcd. Pass the tap test to have it stopped in teardown.

import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { stopProcess } from './stop-process.js'

export const ETCD_BIN = process.env['PINTO_ETCD_BIN'] ?? '/usr/bin/etcd'
const ETCDCTL_BIN = process.env['PINTO_ETCDCTL_BIN'] ?? '/usr/bin/etcdctl'

/** TLS for the client listener: etcd's certificate and the CA whose client certificates it accepts. */
export interface EtcdServerTls {
  readonly trustedCa: string
  readonly cert: string
  readonly key: string
  /** A client certificate signed by trustedCa, used by the health check. */
  readonly client: { readonly cert: string; readonly key: string }
}

export interface EtcdStartOptions {
  /** The etcd binary; default ETCD_BIN (Debian's). Kubernetes' tests pass the one scripts/kubernetes.js builds. */
  readonly bin?: string
  /** Where its data dir is made; default the system temp dir. */
  readonly parentDir?: string
  /** Client and peer listen address; default 127.0.0.1. */
  readonly host?: string
  /** Fixed ports (e.g. inside a namespace, where a free loopback port of this one means nothing); default free ones. */
  readonly clientPort?: number
  readonly peerPort?: number
  /** Command prefix etcd and its health check run under, e.g. ['ip', 'netns', 'exec', 'fabric-x']. */
  readonly wrap?: readonly string[]
  readonly tls?: EtcdServerTls
  /**
   * etcd's own default limits (quota 2 GiB, snapshot every 100,000 writes, WALs kept 5) instead of the small ones
   * tests use: for benches whose figures must be those of etcd as operators run it. Every write is fsynced either way.
   */
  readonly defaults?: boolean
}

/** The flags the harness adds to etcd's own defaults, unless `defaults` (for a bench to print beside its figures). */
export const TEST_LIMIT_ARGS: readonly string[] = ['--quota-backend-bytes', String(256 * 1024 * 1024), '--snapshot-count', '5000', '--max-wals', '2']

export interface EtcdInstance {
  /** host:port of the client listener, as used in `etcd://<endpoint>`. */
  readonly endpoint: string
  /** The client URL, http:// or https://. */
  readonly url: string
  /** The PINTO_DATASTORE value that reaches this etcd: etcd://host:port, or https://host:port with TLS. */
  readonly datastore: string
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

/**
 * etcdctl's health check, through the same command prefix and with the client certificate. It does not verify the
 * server's certificate: tests also start an etcd whose certificate is wrong on purpose.
 */
function healthyCtl(url: string, options: EtcdStartOptions): Promise<boolean> {
  const tls = options.tls
  const args = [
    ...(options.wrap ?? []).slice(1), ETCDCTL_BIN, `--endpoints=${url}`, '--command-timeout=1s', '--dial-timeout=1s',
    ...(tls ? ['--insecure-skip-tls-verify', `--cert=${tls.client.cert}`, `--key=${tls.client.key}`] : []),
    'endpoint', 'health',
  ]
  const [bin, ...rest] = options.wrap && options.wrap.length > 0 ? [options.wrap[0]!, ...args] : args
  return new Promise((resolve) => execFile(bin!, rest, { timeout: 3000, env: { ...process.env, ETCDCTL_API: '3' } }, (err) => resolve(err === null)))
}

async function startOnce(deadlineMs: number, options: EtcdStartOptions): Promise<EtcdInstance | 'port-clash'> {
  const clientPort = options.clientPort ?? (await freePort())
  const peerPort = options.peerPort ?? (await freePort())
  const host = options.host ?? '127.0.0.1'
  const hostInUrl = host.includes(':') ? `[${host}]` : host
  const dataDir = mkdtempSync(join(options.parentDir ?? tmpdir(), 'pinto-etcd-'))
  const tls = options.tls
  const client = `${tls ? 'https' : 'http'}://${hostInUrl}:${clientPort}`
  const peer = `http://${hostInUrl}:${peerPort}`
  const name = `pinto-test-${process.pid}-${clientPort}`
  const wrap = options.wrap ?? []
  const bin = options.bin ?? ETCD_BIN
  const tlsArgs = tls ? ['--client-cert-auth', '--trusted-ca-file', tls.trustedCa, '--cert-file', tls.cert, '--key-file', tls.key] : []
  const launch = (state: 'new' | 'existing'): ChildProcess => spawn(
    wrap[0] ?? bin,
    [
      ...(wrap.length > 0 ? [...wrap.slice(1), bin] : []),
      '--name', name, '--data-dir', join(dataDir, 'data'),
      '--listen-client-urls', client, '--advertise-client-urls', client, ...tlsArgs,
      '--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer,
      '--initial-cluster', `${name}=${peer}`, '--initial-cluster-state', state,
      // Small limits: tests write little, and the 2-core machine is shared. (3.4 has no --unsafe-no-fsync.)
      ...(options.defaults === true ? [] : TEST_LIMIT_ARGS),
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
      stderr += `\nspawn ${bin}: ${err.message}`
    })
  }
  let child = launch('new')
  watchOutput(child)
  const endpoint = `${hostInUrl}:${clientPort}`
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
  const datastore = tls ? client : `etcd://${endpoint}`
  const plain = !tls && wrap.length === 0
  const isHealthy = (): Promise<boolean> => (plain ? healthy(endpoint) : healthyCtl(client, options))
  const instance: EtcdInstance = {
    endpoint, url: client, datastore, dataDir, stop,
    get pid() {
      return child.pid ?? -1
    },
    freeze: () => stopProcess(instance.pid),
    thaw: () => void process.kill(instance.pid, 'SIGCONT'),
    async crash() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
      await exited(child)
    },
    async restart() {
      child = launch('existing')
      watchOutput(child)
      const until = Date.now() + 15_000
      while (!(await isHealthy())) {
        if (child.exitCode !== null || Date.now() > until) throw new Error(`etcd did not come back on ${dataDir}: ${stderr.trim()}`)
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    },
  }
  while (Date.now() < deadlineMs) {
    if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) {
      await stop()
      const fixed = options.clientPort !== undefined && options.peerPort !== undefined
      if (/address already in use/.test(stderr) && !fixed) return 'port-clash'
      throw new Error(`etcd exited before it was healthy (code ${child.exitCode}): ${stderr.trim()}`)
    }
    if (await isHealthy()) return instance
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  await instance.stop()
  throw new Error(`etcd on ${endpoint} was not healthy within the deadline: ${stderr.trim()}`)
}

/** Starts a private etcd and waits until it reports healthy (within 15 s). */
export async function startEtcd(t?: Teardown, options: EtcdStartOptions = {}): Promise<EtcdInstance> {
  const deadline = Date.now() + 15_000
  for (let attempt = 0; attempt < 5; attempt++) {
    const started = await startOnce(deadline, options)
    if (started === 'port-clash') continue
    t?.teardown(() => started.stop())
    return started
  }
  throw new Error('etcd: could not find free loopback ports after 5 attempts')
}
