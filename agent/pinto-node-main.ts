// The pinto-node program: settings from the environment (a bad one stops it with one line naming
// the variable), the agent started, and SIGTERM/SIGINT leading to a graceful stop that leaves kernel
// routes in place and lets peers keep our routes while we restart.

import { version } from './version.js'

const USAGE = `usage: pinto-node [--help | --version]

The node agent: BGP speaker, kernel dataplane, IPAM service for the CNI plugins, REST API. It runs as
root with its settings from the environment (PINTO_NODENAME, PINTO_IP, PINTO_AS, PINTO_DATASTORE, ...;
docs/reference/settings.md lists them all) and stops gracefully on SIGTERM, leaving its kernel routes.
It takes no arguments: --help and --version print and exit without touching anything.
`

export async function main(env: NodeJS.ProcessEnv = process.env, argv: readonly string[] = []): Promise<number> {
  const [arg, ...extra] = argv
  if (arg === '--help' || arg === '-h') {
    process.stdout.write(USAGE)
    return 0
  }
  if (arg === '--version' || arg === '-v') {
    process.stdout.write(`pinto-node ${await version()}\n`)
    return 0
  }
  if (arg !== undefined || extra.length > 0) {
    process.stderr.write(`pinto-node: unexpected argument ${JSON.stringify(arg)}; settings come from the environment\n${USAGE}`)
    return 2
  }
  // The agent's modules load only now: --help and --version answer without them.
  const { settingsFromEnv, SettingsError } = await import('./settings.js')
  const { PintoNode } = await import('./node.js')
  let settings
  try {
    settings = settingsFromEnv(env)
  } catch (err) {
    if (err instanceof SettingsError) {
      process.stderr.write(`pinto-node: ${err.message}\n`)
      return 2
    }
    throw err
  }
  const node = new PintoNode(settings)
  try {
    await node.start()
  } catch (err) {
    node.log.fatal({ err: (err as Error).message }, 'pinto-node could not start')
    process.stderr.write(`pinto-node: ${(err as Error).message}\n`)
    await node.stop({ graceful: true }).catch(() => undefined)
    return 1
  }
  return new Promise<number>((resolve) => {
    let stopping = false
    const stop = (signal: string): void => {
      if (stopping) return
      stopping = true
      node.log.info({ signal }, 'stopping gracefully')
      node.stop({ graceful: true }).then(
        () => resolve(0),
        (err: Error) => {
          node.log.error({ err: err.message }, 'stop failed')
          resolve(1)
        },
      )
    }
    process.once('SIGTERM', () => stop('SIGTERM'))
    process.once('SIGINT', () => stop('SIGINT'))
  })
}
