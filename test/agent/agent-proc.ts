// pinto-node's IPAM service and CNI channel as their own process in a lab's host namespace, with the
// datastore and state dir a test chooses, so the test can kill -9 it and start it again on the same state.
// Killed at teardown even when the test fails; the lab removes the directories.

import { join } from 'node:path'
import { PLUGIN_EXEC_ENV } from '../../agent/node-flags.js'
import { waitFor } from '../harness/wait.js'
import { DIST, type Lab } from '../cni/lab.js'

const SERVICE_MAIN = join(DIST, 'agent', 'ipam-service-main.js')

export interface AgentProcess {
  readonly pid: number
  /** stderr so far (the agent's log lines). */
  readonly log: () => string
  kill(signal: NodeJS.Signals): Promise<void>
}

export async function startAgent(t: { teardown(fn: () => unknown): void }, lab: Lab, env: Record<string, string>): Promise<AgentProcess> {
  const child = lab.topo.spawn(lab.hostNs, process.execPath, [SERVICE_MAIN], {
    env: { PINTO_SOCKET: lab.socket, PINTO_NODENAME: 'node1', PINTO_MTU_FILE: lab.mtuFile, PINTO_STATE_DIR: join(lab.dir, 'state'), ...PLUGIN_EXEC_ENV, ...env },
    extendEnv: true, stdout: 'pipe', stderr: 'pipe', buffer: false,
  })
  let out = ''
  let err = ''
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()))
  let exited = false
  const done = child.finally(() => (exited = true))
  const kill = async (signal: NodeJS.Signals): Promise<void> => {
    if (!exited) child.kill(signal)
    await done
  }
  t.teardown(() => kill('SIGKILL'))
  const state = await waitFor(() => (exited ? 'exited' : out.includes('ready') ? 'ready' : undefined), { timeoutMs: 30_000, what: 'the agent ready' })
  if (state === 'exited') throw new Error(`the agent exited: ${err.trim()}`)
  return { pid: child.pid ?? -1, log: () => err, kill }
}
