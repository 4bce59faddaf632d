// The one narrow port through which felix runs processes (`ip`, `bridge`, `sysctl`, `nft`): a one-shot
// run() and a long-running watch() (for `ip monitor`). The execa implementation is the only place felix
// spawns anything; the recording one lets tests see exact commands. No knowledge of routes lives here.

import { createInterface } from 'node:readline'
import { execa } from 'execa'

export interface RunOptions {
  /**
   * Written to the child's stdin (e.g. an `ip -batch -` script). Chunks from an iterable are made as the
   * child reads, so a long script is consumed while the rest of it is still being produced.
   */
  readonly input?: string | Iterable<string>
  /** Network namespace name to run in (as for `ip netns exec`); the caller's namespace when absent. */
  readonly netns?: string
}

export interface RunResult {
  readonly stdout: string
  readonly stderr: string
  readonly exitCode: number
}

export interface WatchOptions {
  readonly netns?: string
  /** Called once per stdout line, without the newline. */
  readonly onLine: (line: string) => void
}

export interface WatchHandle {
  /** Resolves with the exit code when the child ends, for whatever reason. */
  readonly exited: Promise<number>
  /** Ends the child (SIGTERM): no line is delivered from the call on; resolves once the child has exited. */
  stop(): Promise<void>
}

export interface ProcessRunner {
  run(cmd: string, args: readonly string[], opts?: RunOptions): Promise<RunResult>
  watch(cmd: string, args: readonly string[], opts: WatchOptions): WatchHandle
}

/** A command's failure as an error naming the command and its stderr, for callers that need success. */
export class CommandError extends Error {
  constructor(
    readonly cmd: string,
    readonly args: readonly string[],
    readonly result: RunResult,
  ) {
    super(`${cmd} ${args.join(' ')}: exit ${result.exitCode}: ${result.stderr.trim() || result.stdout.trim()}`)
    this.name = 'CommandError'
  }
}

/** run() that throws CommandError on a non-zero exit. */
export async function runChecked(runner: ProcessRunner, cmd: string, args: readonly string[], opts?: RunOptions): Promise<RunResult> {
  const r = await runner.run(cmd, args, opts)
  if (r.exitCode !== 0) throw new CommandError(cmd, args, r)
  return r
}

// `ip -json route show` of a full table is far more JSON than execa's default cap, which would cut it off.
const MAX_BUFFER = 1 << 30

/** `ip` has its own `-n NS` (cheaper than `ip netns exec`, which remounts /sys); everything else is exec'd inside. */
function inNetns(cmd: string, args: readonly string[], netns: string | undefined): [string, string[]] {
  if (netns === undefined) return [cmd, [...args]]
  if (cmd === 'ip') return ['ip', ['-n', netns, ...args]]
  return ['ip', ['netns', 'exec', netns, cmd, ...args]]
}

export class ExecaRunner implements ProcessRunner {
  async run(cmd: string, args: readonly string[], opts: RunOptions = {}): Promise<RunResult> {
    const [file, argv] = inNetns(cmd, args, opts.netns)
    const r = await execa(file, argv, {
      reject: false,
      maxBuffer: MAX_BUFFER,
      stripFinalNewline: false,
      ...(opts.input === undefined ? { stdin: 'ignore' as const } : typeof opts.input === 'string' ? { input: opts.input } : { stdin: opts.input }),
    })
    // A spawn failure (binary missing) has no exit code; report it as 127 like a shell would.
    return { stdout: String(r.stdout ?? ''), stderr: String(r.stderr ?? (r.message ?? '')), exitCode: r.exitCode ?? 127 }
  }

  watch(cmd: string, args: readonly string[], opts: WatchOptions): WatchHandle {
    const [file, argv] = inNetns(cmd, args, opts.netns)
    const child = execa(file, argv, { reject: false, buffer: false, stdin: 'ignore', stderr: 'ignore' })
    let stopped = false
    if (child.stdout !== null) {
      const rl = createInterface({ input: child.stdout })
      rl.on('line', (line) => {
        if (!stopped) opts.onLine(line)
      })
    }
    const exited = child.then((r) => r.exitCode ?? -1)
    return {
      exited,
      async stop() {
        stopped = true
        child.kill('SIGTERM')
        await exited
      },
    }
  }
}

export interface RecordedCall {
  readonly cmd: string
  readonly args: readonly string[]
  readonly input?: string
  readonly netns?: string
}

export type Responder = (call: RecordedCall) => RunResult | Promise<RunResult>

/**
 * Records every call, answering through a responder (default: success with empty output). A responder may
 * forward to a real runner, so a test can both run against a namespace and assert the exact commands.
 */
export class RecordingRunner implements ProcessRunner {
  readonly calls: RecordedCall[] = []
  private readonly watchers: { call: RecordedCall; onLine: (line: string) => void; stopped: boolean }[] = []

  constructor(private readonly respond: Responder = () => ({ stdout: '', stderr: '', exitCode: 0 })) {}

  async run(cmd: string, args: readonly string[], opts: RunOptions = {}): Promise<RunResult> {
    const input = typeof opts.input === 'string' || opts.input === undefined ? opts.input : [...opts.input].join('')
    const call: RecordedCall = { cmd, args: [...args], ...(input !== undefined ? { input } : {}), ...(opts.netns !== undefined ? { netns: opts.netns } : {}) }
    this.calls.push(call)
    return this.respond(call)
  }

  watch(cmd: string, args: readonly string[], opts: WatchOptions): WatchHandle {
    const call: RecordedCall = { cmd, args: [...args], ...(opts.netns !== undefined ? { netns: opts.netns } : {}) }
    this.calls.push(call)
    const w = { call, onLine: opts.onLine, stopped: false }
    this.watchers.push(w)
    let resolveExit: (code: number) => void = () => {}
    const exited = new Promise<number>((resolve) => (resolveExit = resolve))
    return {
      exited,
      async stop() {
        w.stopped = true
        resolveExit(0)
      },
    }
  }

  /** Feeds a line to every live watcher, as if the watched process had printed it. */
  emit(line: string): void {
    for (const w of this.watchers) if (!w.stopped) w.onLine(line)
  }

  /** The calls as shell-like lines (`[ns] cmd args`), handy for exact comparisons. */
  lines(): string[] {
    return this.calls.map((c) => `${c.netns !== undefined ? `[${c.netns}] ` : ''}${c.cmd} ${c.args.join(' ')}`)
  }
}
