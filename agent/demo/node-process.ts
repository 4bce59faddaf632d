// A demo node's programs under the process runtime: its pinto-node started in the node's namespace (its
// log appended to the node's log file) and stopped by a signal, and its installed `pinto` plugin exec'd
// there as a container runtime does. The cluster decides when; this knows how.

import { spawn } from 'node:child_process'
import { closeSync, existsSync, openSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { execa } from 'execa'
import { AGENT_NODE_FLAGS, PLUGIN_EXEC_ENV } from '../node-flags.js'
import { DemoError, NODE_BIN, type DemoNode } from './cluster-spec.js'

/** Starts the node's pinto-node with `env` (beside this process's own) and waits for its CNI socket. */
export async function startNodeAgent(n: DemoNode, opts: { readonly node: string; readonly env: Readonly<Record<string, string>>; readonly timeoutMs: number }): Promise<void> {
  if (n.agent && n.agent.exitCode === null && n.agent.signalCode === null) throw new DemoError(`${n.name}: its agent is already running`)
  await rm(n.socket, { force: true })
  const fd = openSync(n.log, 'a')
  try {
    // `ip netns exec` execs the program, so the child's pid is pinto-node's own.
    n.agent = spawn('ip', ['netns', 'exec', n.ns, opts.node, ...AGENT_NODE_FLAGS, NODE_BIN], { env: { ...process.env, ...opts.env }, stdio: ['ignore', fd, fd] })
  } finally {
    closeSync(fd)
  }
  const child = n.agent
  const deadline = Date.now() + opts.timeoutMs
  while (!existsSync(n.socket)) {
    if (child.exitCode !== null || child.signalCode !== null) throw new DemoError(`${n.name}: pinto-node exited (${child.exitCode ?? child.signalCode}) before it was ready; see ${n.log}`)
    if (Date.now() > deadline) throw new DemoError(`${n.name}: pinto-node not ready after ${opts.timeoutMs} ms; see ${n.log}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

/** SIGTERM is pinto-node's graceful stop, SIGKILL a crash; SIGKILL too after `timeoutMs`. Resolves when it is gone. */
export async function stopNodeAgent(n: DemoNode, signal: NodeJS.Signals, timeoutMs: number): Promise<void> {
  const child = n.agent
  if (!child || child.exitCode !== null || child.signalCode !== null) return
  const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  child.kill(signal)
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
  await gone
  clearTimeout(timer)
}

/** The agent process's pid while it runs. */
export function nodeAgentPid(n: DemoNode): number | undefined {
  const c = n.agent
  return c && c.exitCode === null && c.signalCode === null ? c.pid : undefined
}

/** Execs the node's installed `pinto` plugin from `cniPath` with `cniEnv` (the verb, the pod) and the network config on stdin. */
export async function execPinto(n: DemoNode, cniPath: string, cniEnv: Readonly<Record<string, string>>, ipv4Pools?: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const conf = {
    cniVersion: '1.0.0',
    name: 'pinto-demo',
    type: 'pinto',
    mtu_file: n.mtuFile,
    socket: n.socket,
    ipam: { type: 'pinto-ipam', socket: n.socket, ...(ipv4Pools !== undefined ? { ipv4_pools: ipv4Pools } : {}) },
  }
  const env = {
    ...cniEnv,
    CNI_PATH: cniPath,
    // The bundles start with `#!/usr/bin/env node`; sudo may have dropped node's directory from PATH.
    PATH: `${dirname(process.execPath)}:${process.env['PATH'] ?? '/usr/bin:/bin'}`,
    ...PLUGIN_EXEC_ENV,
  }
  const r = await execa('ip', ['netns', 'exec', n.ns, join(cniPath, 'pinto')], { input: JSON.stringify(conf), env, extendEnv: true, reject: false, timeout: 60_000 })
  return { code: r.exitCode ?? -1, stdout: String(r.stdout), stderr: String(r.stderr) }
}
