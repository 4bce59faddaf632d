// Runs the real pintoctl binary (bin/pintoctl.js) as an operator would, without blocking this process's
// event loop (so a server in the test can answer it), and returns exit status and output.
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

export const PINTOCTL = fileURLToPath(new URL('../../../../bin/pintoctl.js', import.meta.url))

export interface Run {
  status: number | null
  stdout: string
  stderr: string
}

export function runPintoctl(args: readonly string[], opts: { env?: Record<string, string | undefined>; input?: string } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [PINTOCTL, ...args], { env: { ...process.env, PINTO_API: undefined, PINTO_DATASTORE: undefined, ...opts.env } })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()))
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()))
    child.on('error', reject)
    child.on('close', (status) => resolve({ status, stdout, stderr }))
    child.stdin.end(opts.input ?? '')
  })
}
