// The pinto-fanout program (Typha's place): one list and watch of what every agent follows, served to many
// agents. Settings from the environment; a bad one stops it with one line naming the variable.
//   PINTO_DATASTORE          the agents' datastore (kubernetes, etcd://..., as pinto-node takes it)
//   PINTO_FANOUT_LISTEN      host:port to serve agents on (default 0.0.0.0:5474)
//   PINTO_FANOUT_TOKEN_FILE  a file holding the bearer token agents must send (default: none asked)
//   PINTO_LOG_LEVEL          as pinto-node's

import { pino } from 'pino'
import { FANOUT_PORT, openDatastoreFromEnv } from '../../config/index.js'
import { FANOUT_ROOTS } from './roots.js'
import { choice, hostPort, LOG_LEVELS, SettingsError } from '../settings.js'
import { readFanoutToken } from './token.js'
import { buildFanoutServer } from './server.js'
import { FanoutView } from './view.js'
import { version } from '../version.js'

const USAGE = `usage: pinto-fanout [--help | --version]

Serves the cluster's pinto resources, Kubernetes Nodes and block affinities to the pinto-node agents from one
list and one watch of the datastore, as Typha does for Calico. Settings come from the environment:
PINTO_DATASTORE, PINTO_FANOUT_LISTEN (default 0.0.0.0:${FANOUT_PORT}), PINTO_FANOUT_TOKEN_FILE, PINTO_LOG_LEVEL.
`

interface FanoutSettings {
  readonly listen: { readonly host: string; readonly port: number }
  readonly token: string | undefined
  readonly logLevel: (typeof LOG_LEVELS)[number]
}

export function fanoutSettingsFromEnv(env: NodeJS.ProcessEnv): FanoutSettings {
  const tokenFile = env.PINTO_FANOUT_TOKEN_FILE
  return {
    listen: hostPort('PINTO_FANOUT_LISTEN', env.PINTO_FANOUT_LISTEN || `0.0.0.0:${FANOUT_PORT}`),
    token: tokenFile !== undefined && tokenFile !== '' ? readFanoutToken(tokenFile) : undefined,
    logLevel: choice(env, 'PINTO_LOG_LEVEL', 'info', LOG_LEVELS),
  }
}

export async function main(env: NodeJS.ProcessEnv = process.env, argv: readonly string[] = []): Promise<number> {
  const [arg] = argv
  if (arg === '--help' || arg === '-h') {
    process.stdout.write(USAGE)
    return 0
  }
  if (arg === '--version' || arg === '-v') {
    process.stdout.write(`pinto-fanout ${await version()}\n`)
    return 0
  }
  if (arg !== undefined) {
    process.stderr.write(`pinto-fanout: unexpected argument ${JSON.stringify(arg)}; settings come from the environment\n${USAGE}`)
    return 2
  }
  let settings: FanoutSettings
  try {
    settings = fanoutSettingsFromEnv(env)
  } catch (err) {
    if (!(err instanceof SettingsError)) throw err
    process.stderr.write(`pinto-fanout: ${err.message}\n`)
    return 2
  }
  const log = pino({ level: settings.logLevel })
  let store
  try {
    store = await openDatastoreFromEnv(env, { embedded: { create: false } })
  } catch (err) {
    process.stderr.write(`pinto-fanout: ${(err as Error).message}\n`)
    return 2
  }
  const view = new FanoutView(store, log.child({ component: 'view' }), { roots: FANOUT_ROOTS })
  const app = buildFanoutServer(view, { token: settings.token })
  try {
    await view.start()
    await app.listen({ host: settings.listen.host, port: settings.listen.port })
  } catch (err) {
    log.fatal({ err: (err as Error).message }, 'pinto-fanout could not start')
    view.close()
    await store.close().catch(() => undefined)
    return 1
  }
  log.info({ listen: app.server.address(), roots: FANOUT_ROOTS, epoch: view.epoch }, 'pinto-fanout serving')
  return new Promise<number>((resolve) => {
    const stop = (signal: string): void => {
      log.info({ signal }, 'stopping')
      view.close()
      void app.close().finally(() => void store.close().finally(() => resolve(0)))
    }
    process.once('SIGTERM', () => stop('SIGTERM'))
    process.once('SIGINT', () => stop('SIGINT'))
  })
}
