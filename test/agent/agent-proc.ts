// pinto-node's IPAM service and CNI channel as their own process in a lab's host namespace, with the
// datastore and state dir a test chooses, so the test can kill -9 it and start it again on the same state.
// Killed at teardown even when the test fails; the lab removes the directories.

import { join } from 'node:path'
import { type Lab, type ServiceProcess, spawnIpamService } from '../cni/lab.js'

export type AgentProcess = ServiceProcess

export async function startAgent(t: { teardown(fn: () => unknown): void }, lab: Lab, env: Record<string, string>): Promise<AgentProcess> {
  const agent = await spawnIpamService(lab.topo, lab.hostNs, { PINTO_SOCKET: lab.socket, PINTO_MTU_FILE: lab.mtuFile, PINTO_STATE_DIR: join(lab.dir, 'state'), ...env })
  t.teardown(() => agent.kill('SIGKILL'))
  return agent
}
