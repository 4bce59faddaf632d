// pintoctl's entry: parses the first words of the command line and hands off to one command module.
// Commands return an exit code; they write their output themselves and never call process.exit.

import { version } from '../version.js'

export type Command = (args: readonly string[]) => Promise<number>

/** A command: how to run it, and its usage text (printed for -h/--help before anything runs). */
interface Entry {
  readonly run: () => Promise<Command>
  readonly usage: () => Promise<string>
}

const resources = async (): Promise<typeof import('./resources.js')> => import('./resources.js')
const commands: Record<string, Entry> = {
  bgp: { run: async () => (await import('./bgp.js')).bgpCommand, usage: async () => (await import('./usage.js')).BGP_USAGE },
  ipam: { run: async () => (await import('./ipam.js')).ipamCommand, usage: async () => (await import('./usage.js')).IPAM_USAGE },
  node: { run: async () => (await import('./node.js')).nodeCommand, usage: async () => (await import('./usage.js')).NODE_USAGE },
  routes: { run: async () => (await import('./routes.js')).routesCommand, usage: async () => (await import('./usage.js')).ROUTES_USAGE },
  apply: { run: async () => (await resources()).applyCommand, usage: async () => (await import('./usage.js')).RESOURCES_USAGE },
  get: { run: async () => (await resources()).getCommand, usage: async () => (await import('./usage.js')).RESOURCES_USAGE },
  delete: { run: async () => (await resources()).deleteCommand, usage: async () => (await import('./usage.js')).RESOURCES_USAGE },
  demo: { run: async () => (await import('./demo.js')).demoCommand, usage: async () => (await import('../demo/options.js')).DEMO_USAGE },
  'install-cni': { run: async () => (await import('./install-cni.js')).installCniCommand, usage: async () => (await import('./usage.js')).INSTALL_CNI_USAGE },
}

/** -h or --help anywhere before a `--` (after which words are a command's operands). */
export function asksForHelp(args: readonly string[]): boolean {
  const end = args.indexOf('--')
  return (end < 0 ? args : args.slice(0, end)).some((a) => a === '-h' || a === '--help')
}

const USAGE = `usage: pintoctl <command> [args]

commands:
  bgp decode [FILE|-] [--hex]   decode a stream of BGP messages to JSON, one object per line
  ipam show|check|release       IPAM usage tables, leak check (and --repair), release an address
  node status                   the agent's BGP sessions, like calicoctl node status (--api URL|unix:/path.sock)
  routes [--table T] [--peer P] [--prefix CIDR] [-o json]
                                a route table of the agent: loc-rib (default), adj-rib-in, adj-rib-out, fib
  apply -f FILE|-               create or replace projectcalico.org/v3 resources in PINTO_DATASTORE
  get KIND [NAME] [-o yaml|json|wide]
                                list or show resources
  delete KIND NAME | -f FILE|-  delete resources
  demo [--nodes N] [--check]... a local cluster of network namespaces (as root); --help for its options
  install-cni [--bin-dir DIR] [--conf-dir DIR] [--node PATH]...
                                install the CNI plugins and pinto's network config on this node; --help
  version                       pintoctl's version

Every command answers -h/--help with its usage, and does nothing else then.

node status and routes read the agent at --api URL, else PINTO_API, else http://127.0.0.1:9099.
`

export async function main(argv: readonly string[]): Promise<number> {
  const [name, ...rest] = argv
  if (name === undefined || name === '-h' || name === '--help' || name === 'help') {
    process.stdout.write(USAGE)
    return name === undefined ? 2 : 0
  }
  if (name === '--version' || name === 'version') {
    process.stdout.write(`pintoctl ${await version()}\n`)
    return 0
  }
  const entry = commands[name]
  if (entry === undefined) {
    process.stderr.write(`pintoctl: unknown command ${JSON.stringify(name)}\n\n${USAGE}`)
    return 2
  }
  // Help touches nothing: no datastore is opened, no agent asked, no file made.
  if (asksForHelp(rest)) {
    process.stdout.write(await entry.usage())
    return 0
  }
  return (await entry.run())(rest)
}

