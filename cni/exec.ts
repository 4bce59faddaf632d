// The one process port of the plugins: run a program with optional stdin and collect its output.
// node:child_process only (execa costs tens of milliseconds to import, and the plugins start once per pod).


export interface RunResult {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

/**
 * `input` is written to the child's stdin: a string at once, or chunks as an async iterable yields them
 * (the child is started first and reads them when they come).
 */
export type Runner = (cmd: string, args: readonly string[], opts?: { input?: string | AsyncIterable<string>; env?: NodeJS.ProcessEnv }) => Promise<RunResult>

export const run: Runner = async (cmd, args, opts = {}) => {
  // Loaded on first use, like node:http in the IPAM client: a failing or VERSION call starts faster.
  const { spawn } = await import('node:child_process')
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'], env: opts.env ?? process.env })
    const out: Buffer[] = []
    const err: Buffer[] = []
    child.stdout.on('data', (c: Buffer) => out.push(c))
    child.stderr.on('data', (c: Buffer) => err.push(c))
    child.on('error', reject)
    child.on('close', (code, signal) => {
      resolve({ code: code ?? (signal ? 128 : 1), stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') })
    })
    // A child that exits before reading its stdin must not crash us with EPIPE.
    child.stdin.on('error', () => undefined)
    const input = opts.input ?? ''
    if (typeof input === 'string') child.stdin.end(input)
    else
      void (async () => {
        for await (const chunk of input) child.stdin.write(chunk)
        child.stdin.end()
      })().catch(() => child.stdin.destroy())
  })
}
