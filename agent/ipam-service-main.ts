// Runs the IPAM service (and the CNI channel beside it) on its own (`node dist/agent/ipam-service-main.js`), before the rest of pinto-node
// exists: settings from the agent's env variables, one line "ready <socket>" on stdout, clean stop on SIGTERM.
// It composes; the service and the datastore own their logic.

import { pathToFileURL } from 'node:url'
import { openDatastore, parseDatastoreSpec } from '../config/index.js'
import type { EtcdTlsFiles } from '../config/index.js'
import { IpamService } from './ipam-service.js'
import { CniService } from './cni-service.js'
import { NodeIpamRepair } from './recovery/index.js'
import { settingsFromEnv as agentSettings } from './settings.js'
import { KubePods, NO_CREDENTIALS_PODS } from './kube-pods.js'
import type { KubeSource } from '../config/index.js'
import { BLOCKS_PREFIX, decodeBlock } from '../ipam/index.js'

export { DEFAULT_SOCKET } from '../cni/index.js'

export interface ServiceSettings {
  readonly datastore: string
  readonly etcdTls?: EtcdTlsFiles
  readonly socket: string
  readonly node: string
  readonly mtuFile: string
  readonly stateDir: string
  readonly ipamRepairSeconds: number
  readonly ipamRepairGraceSeconds: number
  readonly ipamClaimAhead?: number | undefined
  /** Kubernetes credentials in etcd mode (pods' annotations and the pod GC); none: those are off. */
  readonly kube?: KubeSource | undefined
  readonly podGcGraceSeconds?: number
}

/** The agent's own settings (one line naming a bad variable), narrowed to what the service needs. */
export function settingsFromEnv(env: Readonly<Record<string, string | undefined>>): ServiceSettings {
  const s = agentSettings(env)
  return {
    datastore: s.datastore, etcdTls: s.etcdTls, socket: s.socket, node: s.nodeName, mtuFile: s.mtuFile, stateDir: s.stateDir,
    ipamRepairSeconds: s.ipamRepairSeconds, ipamRepairGraceSeconds: s.ipamRepairGraceSeconds, ipamClaimAhead: s.ipamClaimAhead,
    kube: s.kube, podGcGraceSeconds: s.podGcGraceSeconds,
  }
}

const log = (msg: string, fields: Record<string, unknown>): void => void process.stderr.write(`pinto-node ipam-service: ${msg} ${JSON.stringify(fields)}\n`)

export async function startIpamService(s: ServiceSettings): Promise<{ service: IpamService; cni: CniService | undefined; stop: () => Promise<void> }> {
  const store = await openDatastore(s.datastore, s.etcdTls ? { etcdTls: s.etcdTls } : {})
  let repair: NodeIpamRepair | undefined
  const pods = new KubePods({ node: s.node, store, source: s.kube, gcGraceSeconds: s.podGcGraceSeconds ?? 0, log: (_level, msg, fields) => log(msg, fields) })
  const service = new IpamService({ store, node: s.node, socket: s.socket, mtuFile: s.mtuFile, stateDir: s.stateDir, claimAheadBelow: s.ipamClaimAhead, pods: pods.ipamHooks, log, onDatastoreBack: () => void repair?.trigger() })
  if (s.kube === undefined && parseDatastoreSpec(s.datastore).kind !== 'kubernetes') log(`no Kubernetes credentials (KUBECONFIG or the in-cluster ServiceAccount): ${NO_CREDENTIALS_PODS}`, {})
  try {
    await pods.start()
    await service.listen()
  } catch (err) {
    await pods.stop()
    await store.close()
    throw err
  }
  let cni: CniService | undefined = new CniService({ socket: s.socket, ipam: service })
  try {
    await cni.listen()
  } catch (err) {
    // An optimisation only: without it the plugins do their ADDs themselves.
    process.stderr.write(`pinto-node ipam-service: CNI channel not opened (${(err as Error).message}); the plugins will wire pods themselves\n`)
    cni = undefined
  }
  if (s.ipamRepairSeconds > 0) {
    repair = new NodeIpamRepair({ ipam: service.ipam, node: s.node, busy: (h) => service.busy(h) || cni?.busy(h) === true, graceMs: s.ipamRepairGraceSeconds * 1000, log })
    repair.start(s.ipamRepairSeconds * 1000)
  }
  pods.attachIpam({ release: (body) => service.release(body), busy: (h) => service.busy(h) || cni?.busy(h) === true, releasing: (h) => service.recovery.releaseWanted(h) }, async () => (await store.list(BLOCKS_PREFIX)).items.map((kv) => decodeBlock(kv.key, kv.value)))
  return { service, cni, stop: async () => { await pods.stop(); await repair?.stop(); await cni?.close(); await service.close(); await store.close() } }
}

async function main(): Promise<void> {
  let settings: ServiceSettings
  try {
    settings = settingsFromEnv(process.env)
  } catch (err) {
    process.stderr.write(`pinto-node ipam-service: ${(err as Error).message}\n`)
    process.exit(2)
  }
  const { stop } = await startIpamService(settings)
  process.stdout.write(`ready ${settings.socket}\n`)
  const quit = (): void => void stop().then(() => process.exit(0), () => process.exit(1))
  process.once('SIGTERM', quit)
  process.once('SIGINT', quit)
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().catch((err: unknown) => {
    process.stderr.write(`pinto-node ipam-service: ${(err as Error).message}\n`)
    process.exit(1)
  })
}
