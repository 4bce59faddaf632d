// The `ip` processes of a pod's ADD, started before the pod comes: a spawn holds pinto-node's thread, and
// an ADD needs two (one in the pod's namespace, one here), so spawning them on the ADD's path would be
// most of its time.
// One of each kind waits, blocked on its stdin:
// - `ip -batch -` in this namespace, for the host side;
// - a shell that reads a namespace name (or path) as its first line and then execs `ip -n NAME -batch -`
//   (or `nsenter --net=PATH ip -batch -`), for the pod side; the rest of its stdin is ip's batch.
// A taken process is replaced once the ADD has answered (refill). Anything else, or a kind not waiting
// (a burst of ADDs), is spawned when it is asked for.

import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process'
import { type RunOptions, type RunResult, type Runner, childEnv, collect, run } from '../cni/index.js'

type Kind = 'host' | 'byName' | 'byPath'

const SHELL: Readonly<Record<Exclude<Kind, 'host'>, string>> = {
  byName: 'IFS= read -r ns && exec ip -n "$ns" -batch -',
  byPath: 'IFS= read -r ns && exec nsenter --net="$ns" ip -batch -',
}

function start(kind: Kind): ChildProcessWithoutNullStreams {
  const child = kind === 'host' ? spawn('ip', ['-batch', '-'], { stdio: 'pipe', env: childEnv() }) : spawn('/bin/sh', ['-c', SHELL[kind]], { stdio: 'pipe', env: childEnv() })
  // Until taken, nobody listens: a failed start or an early death just leaves a process not worth taking.
  child.on('error', () => undefined)
  child.stdin.on('error', () => undefined)
  return child
}

const alive = (c: ChildProcessWithoutNullStreams): boolean => c.exitCode === null && c.signalCode === null && c.pid !== undefined

/** What kind of waiting process serves `cmd args`, and the first line it must read; undefined for none. */
export function warmKind(cmd: string, args: readonly string[]): { kind: Kind; head: string } | undefined {
  const batch = (rest: readonly string[]): boolean => rest.length === 2 && rest[0] === '-batch' && rest[1] === '-'
  if (cmd === 'ip' && batch(args)) return { kind: 'host', head: '' }
  const ns = args[1]
  if (cmd === 'ip' && args[0] === '-n' && ns !== undefined && !ns.includes('\n') && batch(args.slice(2))) return { kind: 'byName', head: `${ns}\n` }
  const net = args[0]
  if (cmd === 'nsenter' && net?.startsWith('--net=') === true && !net.includes('\n') && args[1] === 'ip' && batch(args.slice(2))) {
    return { kind: 'byPath', head: `${net.slice('--net='.length)}\n` }
  }
  return undefined
}

export class WarmRunner {
  private readonly waiting = new Map<Kind, ChildProcessWithoutNullStreams>()
  private closed = false
  /** How many runs a waiting process served, and how many were spawned on demand. */
  readonly counts = { warm: 0, cold: 0 }

  readonly run: Runner = (cmd: string, args: readonly string[], opts?: RunOptions): Promise<RunResult> => {
    const w = opts?.env === undefined ? warmKind(cmd, args) : undefined
    const child = w === undefined ? undefined : this.waiting.get(w.kind)
    if (w !== undefined && child !== undefined) {
      this.waiting.delete(w.kind)
      if (alive(child)) {
        this.counts.warm++
        return collect(child, opts, w.head)
      }
    }
    this.counts.cold++
    return run(cmd, args, opts)
  }

  /** Starts a process of each kind not waiting. */
  refill(): void {
    if (this.closed) return
    for (const kind of ['byName', 'host', 'byPath'] as const) {
      const c = this.waiting.get(kind)
      if (c === undefined || !alive(c)) this.waiting.set(kind, start(kind))
    }
  }

  /** Ends the waiting processes: with stdin closed, `read` and `ip -batch` exit at once. */
  close(): void {
    this.closed = true
    for (const c of this.waiting.values()) c.stdin.end()
    this.waiting.clear()
  }
}
