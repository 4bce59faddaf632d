// pintoctl's entry: parses the first words of the command line and hands off to one command module.
// Commands return an exit code; they write their output themselves and never call process.exit.

export type Command = (args: readonly string[]) => Promise<number>

const commands: Record<string, () => Promise<Command>> = {
  bgp: async () => (await import('./bgp.js')).bgpCommand,
  ipam: async () => (await import('./ipam.js')).ipamCommand,
  demo: async () => (await import('./demo.js')).demoCommand,
}

const USAGE = `usage: pintoctl <command> [args]

commands:
  bgp decode [FILE|-] [--hex]   decode a stream of BGP messages to JSON, one object per line
  ipam show|check|release       IPAM usage tables, leak check (and --repair), release an address
  demo [--nodes N] [--check]... a local cluster of network namespaces (sudo); --help for its options
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
