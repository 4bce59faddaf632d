// pintoctl's entry: parses the first words of the command line and hands off to one command module.
// Commands return an exit code; they write their output themselves and never call process.exit.

export type Command = (args: readonly string[]) => Promise<number>

const commands: Record<string, () => Promise<Command>> = {
  bgp: async () => (await import('./bgp.js')).bgpCommand,
  ipam: async () => (await import('./ipam.js')).ipamCommand,
  node: async () => (await import('./node.js')).nodeCommand,
  routes: async () => (await import('./routes.js')).routesCommand,
  apply: async () => (await import('./resources.js')).applyCommand,
  get: async () => (await import('./resources.js')).getCommand,
  delete: async () => (await import('./resources.js')).deleteCommand,
  demo: async () => (await import('./demo.js')).demoCommand,
  'install-cni': async () => (await import('./install-cni.js')).installCniCommand,
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
  demo [--nodes N] [--check]... a local cluster of network namespaces (sudo); --help for its options
  install-cni [--bin-dir DIR] [--conf-dir DIR] [--node PATH]...
                                install the CNI plugins and pinto's network config on this node; --help

node status and routes read the agent at --api URL, else PINTO_API, else http://127.0.0.1:9099.
`

export async function main(argv: readonly string[]): Promise<number> {
  const [name, ...rest] = argv
  if (name === undefined || name === '-h' || name === '--help' || name === 'help') {
    process.stdout.write(USAGE)
    return name === undefined ? 2 : 0
  }
  const load = commands[name]
  if (load === undefined) {
    process.stderr.write(`pintoctl: ${name}: not implemented yet\n`)
    return 1
  }
  return (await load())(rest)
}
