// Runs another CNI plugin (an IPAM plugin such as the reference host-local) the way libcni's delegation
// does: found in CNI_PATH, the same environment with CNI_COMMAND set, the network config on stdin.

import { accessSync, constants } from 'node:fs'
import { join } from 'node:path'
import { type Runner, run as defaultRun } from './exec.js'
import { type CniResult, parseResult } from './result.js'
import { type Command, CniError, ERR } from './spec.js'

export function findPlugin(type: string, cniPath: readonly string[]): string {
  if (type.includes('/')) throw new CniError(ERR.invalidConfig, `ipam.type: ${JSON.stringify(type)} must be a plugin name, not a path`)
  for (const dir of cniPath) {
    const file = join(dir, type)
    try {
      accessSync(file, constants.X_OK)
      return file
    } catch {
      // not in this directory
    }
  }
  throw new CniError(ERR.invalidConfig, `ipam.type: plugin ${JSON.stringify(type)} not found in CNI_PATH (${cniPath.join(':') || 'empty'})`)
}

/** Execs the plugin; its error JSON becomes a CniError with its own code and message, prefixed with its name. */
export async function delegate(type: string, command: Command, stdin: string, cniPath: readonly string[], runner: Runner = defaultRun): Promise<CniResult | undefined> {
  const file = findPlugin(type, cniPath)
  const r = await runner(file, [], { input: stdin, env: { ...process.env, CNI_COMMAND: command } })
  const text = r.stdout.trim()
  if (r.code !== 0) {
    let e: { code?: unknown; msg?: unknown; details?: unknown } = {}
    try {
      e = JSON.parse(text) as typeof e
    } catch {
      // not JSON: report stderr below
    }
    const code = typeof e.code === 'number' ? e.code : ERR.io
    const msg = typeof e.msg === 'string' ? e.msg : (r.stderr.trim() || text || `exit code ${r.code}`)
    throw new CniError(code, `${type} ${command}: ${msg}`, typeof e.details === 'string' ? e.details : '')
  }
  if (command !== 'ADD') return undefined
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch (e) {
    throw new CniError(ERR.decode, `${type} ADD printed a result that is not JSON: ${(e as Error).message}`)
  }
  return parseResult(raw, `${type} result`)
}
