// Test plumbing: one real pinto-node process (bin/pinto-node.js) inside a test's namespace, with its own sockets,
// state dir and datastore, its output kept for assertions, stopped by pid in teardown. It never starts anything
// else and never touches the host's /var/run/pinto or /var/lib/pinto.

import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { waitFor } from '../harness/wait.js'
import { AGENT_NODE_FLAGS } from '../../agent/node-flags.js'

const NODE_BIN = fileURLToPath(new URL('../../../bin/pinto-node.js', import.meta.url))

interface Teardown {
  teardown(fn: () => unknown): void
}

export interface AgentProcess {
  readonly child: ChildProcess
  readonly dir: string
  readonly apiSocket: string
  stdout(): string
  stderr(): string
  /** Exit code (or signal name) once it has exited. */
  readonly exited: Promise<number | string>
  /** GET over the agent's unix API socket. */
  get(path: string): Promise<{ status: number; body: unknown; text: string }>
  /** Waits until GET /v1/status answers 200. */
  ready(timeoutMs?: number): Promise<void>
  stop(): Promise<void>
}

export function unixGet(socketPath: string, path: string, timeoutMs = 5000): Promise<{ status: number; body: unknown; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path, method: 'GET', timeout: timeoutMs }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8')
        let body: unknown
        try {
          body = JSON.parse(text)
        } catch {
          body = undefined
        }
        resolve({ status: res.statusCode ?? 0, body, text })
      })
    })
    req.on('timeout', () => req.destroy(new Error(`GET ${path}: no answer within ${timeoutMs} ms`)))
    req.on('error', reject)
    req.end()
  })
}

/** Starts pinto-node in namespace `ns` with the image's V8 flags (PINTO_DATAPLANE=none unless env says otherwise). */
export function startAgent(t: Teardown, ns: string, env: Readonly<Record<string, string>>): AgentProcess {
  const dir = mkdtempSync(join(tmpdir(), 'pinto-agent-'))
  const apiSocket = join(dir, 'api.sock')
  const child = spawn('ip', ['netns', 'exec', ns, process.execPath, ...AGENT_NODE_FLAGS, NODE_BIN], {
    env: {
      ...process.env,
      PINTO_NODENAME: 'n1',
      PINTO_DATAPLANE: 'none',
      PINTO_SOCKET: join(dir, 'pinto.sock'),
      PINTO_API_SOCKET: apiSocket,
      PINTO_API_LISTEN: '127.0.0.1:9099',
      PINTO_STATE_DIR: dir,
      PINTO_MTU_FILE: join(dir, 'mtu'),
      PINTO_IPV4POOL_CIDR: '198.18.0.0/16',
      PINTO_READY_WINDOW_SECONDS: '0',
      PINTO_SYNC_DEADLINE_SECONDS: '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  let err = ''
  child.stdout?.on('data', (c: Buffer) => (out += c.toString()))
  child.stderr?.on('data', (c: Buffer) => (err += c.toString()))
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')))
  const alive = (): boolean => child.exitCode === null && child.signalCode === null
  const stop = async (): Promise<void> => {
    if (alive() && child.pid !== undefined) {
      process.kill(child.pid, 'SIGTERM')
      const killer = setTimeout(() => alive() && child.pid !== undefined && process.kill(child.pid, 'SIGKILL'), 10_000)
      await exited
      clearTimeout(killer)
    }
    rmSync(dir, { recursive: true, force: true })
  }
  t.teardown(stop)
  const get = (path: string) => unixGet(apiSocket, path)
  return {
    child,
    dir,
    apiSocket,
    stdout: () => out,
    stderr: () => err,
    exited,
    get,
    async ready(timeoutMs = 30_000) {
      const why = await waitFor(async () => (!alive() ? 'exited' : (await get('/v1/status')).status === 200 && 'ready'), {
        timeoutMs,
        what: 'pinto-node answering GET /v1/status',
      }).catch((e: Error) => e.message)
      if (why !== 'ready') throw new Error(`pinto-node not ready: ${why} (exit ${child.exitCode ?? child.signalCode})\n--- stdout\n${out.slice(-3000)}\n--- stderr\n${err.slice(-3000)}`)
    },
    stop,
  }
}
