// Runs the IPAM service on its own (`node dist/agent/ipam-service-main.js`), before the rest of pinto-node
// exists: settings from the agent's env variables, one line "ready <socket>" on stdout, clean stop on SIGTERM.
// It composes; the service and the datastore own their logic.

import { hostname } from 'node:os'
import { pathToFileURL } from 'node:url'
import { DEFAULT_DATASTORE, openDatastore } from '../config/datastore-open.js'
import { DEFAULT_MTU_FILE, IpamService } from './ipam-service.js'

export const DEFAULT_SOCKET = '/var/run/pinto/pinto.sock'

export interface ServiceSettings {
  readonly datastore: string
  readonly socket: string
  readonly node: string
  readonly mtuFile: string
}

/** Settings from env, like calico-node: a bad value is one line naming the variable. */
export function settingsFromEnv(env: Readonly<Record<string, string | undefined>>): ServiceSettings {
  const pick = (name: string, fallback: string): string => {
    const v = env[name]
    if (v === undefined) return fallback
    if (v === '' || v.trim() !== v) throw new Error(`${name}=${JSON.stringify(v)}: must be non-empty without surrounding spaces`)
    return v
  }
  const node = pick('PINTO_NODENAME', hostname())
  if (/[/\s]/.test(node) || node.length > 253) throw new Error(`PINTO_NODENAME=${JSON.stringify(node)}: a node name has no '/' or spaces and at most 253 characters`)
  return {
    datastore: pick('PINTO_DATASTORE', DEFAULT_DATASTORE),
    socket: pick('PINTO_SOCKET', DEFAULT_SOCKET),
    node,
    mtuFile: pick('PINTO_MTU_FILE', DEFAULT_MTU_FILE),
  }
}

export async function startIpamService(s: ServiceSettings): Promise<{ service: IpamService; stop: () => Promise<void> }> {
  const store = await openDatastore(s.datastore)
  const service = new IpamService({ store, node: s.node, socket: s.socket, mtuFile: s.mtuFile })
  try {
    await service.listen()
  } catch (err) {
    await store.close()
    throw err
  }
  return { service, stop: async () => { await service.close(); await store.close() } }
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
