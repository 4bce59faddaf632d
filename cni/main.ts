// The process skeleton both plugins share: read stdin and the CNI_* env, dispatch to a verb handler, print
// the result converted to the config's version, or the spec error JSON on stdout with exit code 1.

import { writeSync } from 'node:fs'
import { readStdinSync } from './stdin.js'
import { decodeJson, parseNetConf } from './config.js'
import type { Invocation } from './pinto-plugin.js'
import { convertResult, type CniResult } from './result.js'
import { type Command, CniError, ERR, LATEST, checkVerbAllowed, errorJson, parseEnv, versionResult } from './spec.js'

export type Handlers = { readonly [C in Exclude<Command, 'VERSION'>]: (inv: Invocation) => Promise<CniResult | void> }

function readStdin(): string {
  try {
    return readStdinSync()
  } catch (err) {
    throw new CniError(ERR.io, `reading the network config from stdin: ${(err as Error).message}`)
  }
}

/**
 * Writes the result to fd 1 directly. process.stdout on a pipe (as runtimes give it) builds a stream on
 * node:net first, which a cold process pays for; a result is far smaller than a pipe's buffer, and a
 * non-blocking pipe that is full for once hands the rest to process.stdout after all.
 */
export function writeStdout(text: string): void {
  const buf = Buffer.from(text)
  let off = 0
  try {
    while (off < buf.length) off += writeSync(1, buf, off)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EAGAIN') throw err
    process.stdout.write(buf.subarray(off))
  }
}

function about(role: 'main' | 'ipam'): string {
  const name = role === 'main' ? 'pinto' : 'pinto-ipam'
  return `${name}: pinto's CNI ${role === 'main' ? 'plugin' : 'IPAM plugin'}, CNI spec ${LATEST} (results for 0.3.0 to 1.0.0)
A container runtime runs it with CNI_COMMAND (ADD, DEL, CHECK, STATUS, GC or VERSION) and the other CNI_*
variables set and the network config on stdin; it answers on stdout. \`pintoctl install-cni\` installs it.
`
}

async function pluginMain(role: 'main' | 'ipam', handlers: Handlers): Promise<number> {
  let version: string = LATEST
  try {
    const env = parseEnv(process.env)
    const stdin = readStdin()
    if (env.command === 'VERSION') {
      let requested: unknown
      try {
        requested = (JSON.parse(stdin) as { cniVersion?: unknown }).cniVersion
      } catch {
        // VERSION may come with no config at all
      }
      writeStdout(JSON.stringify(versionResult(requested)) + '\n')
      return 0
    }
    const raw = decodeJson(stdin)
    if (typeof raw['cniVersion'] === 'string') version = raw['cniVersion']
    const conf = parseNetConf(raw, role)
    checkVerbAllowed(env.command, conf.cniVersion)
    const result = await handlers[env.command]({ conf, env, stdin })
    if (result !== undefined) writeStdout(JSON.stringify(convertResult(result, conf.cniVersion)) + '\n')
    return 0
  } catch (err) {
    const e = err instanceof CniError ? err : new CniError(ERR.io, (err as Error).message ?? String(err))
    writeStdout(errorJson(version, e) + '\n')
    return 1
  }
}

/**
 * Runs one plugin invocation and exits at once with its code: the result is written (synchronously), and
 * nothing left on the loop (a socket's close, an `ip` left to finish on its own) matters to the runtime.
 */
export function runPlugin(role: 'main' | 'ipam', handlers: Handlers): void {
  // A runtime passes no arguments; a person asking gets a line on what this is, and nothing runs.
  const arg = process.argv[2]
  if (arg === '--help' || arg === '-h' || arg === '--version') {
    writeStdout(about(role))
    process.exit(0)
  }
  void pluginMain(role, handlers).then((code) => process.exit(code))
}
