// The one process port of the plugins: run a program with optional stdin and collect its output.
// node:child_process only (execa costs tens of milliseconds to import, and the plugins start once per pod).

import type { ChildProcessWithoutNullStreams } from 'node:child_process'

export interface RunResult {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
  /** Set when the caller's `leaveWhen` held before the child ended: the child runs on, unwatched. */
  readonly left?: true
}

export interface RunOptions {
  readonly input?: string | AsyncIterable<string>
  readonly env?: NodeJS.ProcessEnv
  /**
   * Checked every millisecond while the child runs: once it holds, the result is no longer needed, so
   * the runner resolves with `left` and lets the child finish on its own without keeping this process
   * alive (e.g. `ip link del` once the link is out of the namespace, while the kernel's teardown goes on).
   */
  readonly leaveWhen?: () => boolean
}

/**
 * `input` is written to the child's stdin: a string at once, or chunks as an async iterable yields them
 * (the child is started first and reads them when they come).
 */
export type Runner = (cmd: string, args: readonly string[], opts?: RunOptions) => Promise<RunResult>

/** Where `ip` and `nsenter` live on any Linux, whatever PATH the runtime exec'd the plugin with. */
const SYSTEM_PATH = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin']

/** `path` with the system directories it lacks appended: a runtime's PATH may hold no sbin directory. */
export function withSystemPath(path: string | undefined): string {
  const dirs = (path ?? '').split(':').filter((d) => d !== '')
  return [...dirs, ...SYSTEM_PATH.filter((d) => !dirs.includes(d))].join(':')
}

let defaultEnv: NodeJS.ProcessEnv | undefined

/** The environment children get: ours, with the system directories on PATH. */
export function childEnv(): NodeJS.ProcessEnv {
  return (defaultEnv ??= { ...process.env, PATH: withSystemPath(process.env['PATH']) })
}

/** Loaded on first use, like node:net in the IPAM client: a failing or VERSION call starts faster. Kept: an ES module's import() is paid again on each call. */
let childProcess: Promise<typeof import('node:child_process')> | undefined

export const run: Runner = async (cmd, args, opts = {}) => {
  const { spawn } = await (childProcess ??= import('node:child_process'))
  return collect(spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'], env: opts.env ?? childEnv() }), opts)
}

/**
 * A started child's output and exit, as run() gives them: `head` goes to its stdin before `input` (a child
 * started ahead of need, which reads what it is to do first).
 */
export function collect(child: ChildProcessWithoutNullStreams, opts: RunOptions = {}, head = ''): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const out: Buffer[] = []
    const err: Buffer[] = []
    child.stdout.on('data', (c: Buffer) => out.push(c))
    child.stderr.on('data', (c: Buffer) => err.push(c))
    let watch: ReturnType<typeof setInterval> | undefined
    child.on('error', (e) => {
      clearInterval(watch)
      reject(e)
    })
    child.on('close', (code, signal) => {
      clearInterval(watch)
      resolve({ code: code ?? (signal ? 128 : 1), stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') })
    })
    const leaveWhen = opts.leaveWhen
    if (leaveWhen !== undefined) {
      watch = setInterval(() => {
        if (!leaveWhen()) return
        clearInterval(watch)
        // Nothing of the child may hold the event loop now: its pipes close (it writes nothing unless
        // it fails, and then the caller no longer asks) and the process is not waited for.
        child.removeAllListeners('close')
        child.stdout.destroy()
        child.stderr.destroy()
        child.unref()
        resolve({ code: 0, stdout: '', stderr: '', left: true })
      }, 1)
    }
    // A child that exits before reading its stdin must not crash us with EPIPE.
    child.stdin.on('error', () => undefined)
    if (head !== '') child.stdin.write(head)
    const input = opts.input ?? ''
    if (typeof input === 'string') child.stdin.end(input)
    else
      void (async () => {
        for await (const chunk of input) child.stdin.write(chunk)
        child.stdin.end()
      })().catch(() => child.stdin.destroy())
  })
}
