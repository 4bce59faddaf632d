// pinto-node's IPAM service and CNI channel as their own process in a lab's host namespace, with the
// datastore and state dir a test chooses, so the test can kill -9 it and start it again on the same state.
// Killed at teardown even when the test fails; the lab removes the directories.

import { join } from 'node:path'
import type { Test } from 'tap'
import { openDatastore } from '../../config/datastore-open.js'
import { encodeResource, resourceKey } from '../../config/resources/index.js'
import { type Lab, type ServiceProcess, createLab, spawnIpamService } from '../cni/lab.js'
import { type EtcdInstance, startEtcd } from '../harness/etcd.js'
import { bridgeLoopback } from '../harness/ns-bridge.js'

export type AgentProcess = ServiceProcess

export async function startAgent(t: { teardown(fn: () => unknown): void }, lab: Lab, env: Record<string, string>): Promise<AgentProcess> {
  const agent = await spawnIpamService(lab.topo, lab.hostNs, { PINTO_SOCKET: lab.socket, PINTO_MTU_FILE: lab.mtuFile, PINTO_STATE_DIR: join(lab.dir, 'state'), ...env })
  t.teardown(() => agent.kill('SIGKILL'))
  return agent
}

/**
 * A lab without an agent whose datastore is a private etcd (on this process's loopback, bridged into the
 * lab's host namespace) holding one IPv4 pool, 198.18.0.0/24 in /26 blocks; `env` starts an agent on it
 * with its own repair off.
 */
export async function etcdLab(t: Test): Promise<{ etcd: EtcdInstance; spec: string; lab: Lab; env: Record<string, string> }> {
  const etcd = await startEtcd(t)
  const spec = `etcd://${etcd.endpoint}`
  const setup = await openDatastore(spec)
  await setup.create(resourceKey('IPPool', 'pods-v4'), encodeResource({ apiVersion: 'projectcalico.org/v3', kind: 'IPPool', metadata: { name: 'pods-v4' }, spec: { cidr: '198.18.0.0/24', blockSize: 26 } } as never))
  await setup.close()
  const lab = await createLab(t, { service: false })
  await bridgeLoopback(t, lab.topo, lab.hostNs, Number(etcd.endpoint.split(':')[1]))
  return { etcd, spec, lab, env: { PINTO_DATASTORE: spec, PINTO_IPAM_REPAIR_SECONDS: '0' } }
}
