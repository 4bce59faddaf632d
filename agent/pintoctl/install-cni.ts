// `pintoctl install-cni`: puts the CNI plugins and pinto's network config where the container runtime
// finds them (Calico's install-cni). Run once per node, by root, after `npm run build`; again after each
// build; in pinto's image, by the DaemonSet's init container. Flags win over PINTO_CNI_* variables.

import { installCni, seaExecutable } from '../install-cni.js'
import { parseFlags } from './ipam.js'

export const USAGE = `usage:
  pintoctl install-cni [--bin-dir DIR] [--conf-dir DIR] [--conf-name NAME] [--no-conf]
                       [--node PATH] [--socket PATH] [--mtu N] [--chain LIST]

  --bin-dir DIR     where the runtime looks for plugins (PINTO_CNI_BIN_DIR, default /opt/cni/bin)
  --conf-dir DIR    where the runtime reads network configs (PINTO_CNI_CONF_DIR, default /etc/cni/net.d)
  --conf-name NAME  the config's file name (default 10-pinto.conflist)
  --no-conf         install the plugins only
  --node PATH       install the bundles with this Node.js in their #! line, by absolute path, instead
                    of the single executable (the default when it is not built: this one, ${process.execPath})
  --socket PATH     the agent's socket (PINTO_CNI_SOCKET, default /var/run/pinto/pinto.sock)
  --mtu N           the pods' MTU (PINTO_CNI_MTU, default 0: the MTU the agent writes)
  --chain LIST      plugins chained after pinto, comma-separated (default: portmap when DIR has it)

An empty variable counts as unset.
`

/** The variable each flag falls back to. */
const VARIABLES: Readonly<Record<string, string>> = {
  '--bin-dir': 'PINTO_CNI_BIN_DIR', '--conf-dir': 'PINTO_CNI_CONF_DIR', '--mtu': 'PINTO_CNI_MTU', '--socket': 'PINTO_CNI_SOCKET',
}

/** An error naming a flag that was not given names the variable its value came from instead. */
function fromVariable(flags: ReadonlyMap<string, string>, message: string): string {
  const flag = /^(--[a-z-]+):/.exec(message)?.[1]
  const variable = flag === undefined ? undefined : VARIABLES[flag]
  return flag === undefined || variable === undefined || flags.has(flag) ? message : `${variable}${message.slice(flag.length)}`
}

/** The flag's value, else the variable's when it is set and not empty. */
function setting(flags: ReadonlyMap<string, string>, flag: string, variable: string): string | undefined {
  const v = process.env[variable]
  return flags.get(flag) ?? (v === undefined || v === '' ? undefined : v)
}

const VALUED = ['--bin-dir', '--conf-dir', '--conf-name', '--node', '--socket', '--mtu', '--chain']
const KNOWN = [...VALUED, '--no-conf', '-h', '--help']

export async function installCniCommand(args: readonly string[]): Promise<number> {
  let flags: Map<string, string>
  let rest: string[]
  try {
    ;({ flags, rest } = parseFlags(args, VALUED))
  } catch (err) {
    process.stderr.write(`pintoctl install-cni: ${(err as Error).message}\n${USAGE}`)
    return 2
  }
  if (flags.has('-h') || flags.has('--help')) {
    process.stdout.write(USAGE)
    return 0
  }
  const unknown = [...flags.keys()].find((f) => !KNOWN.includes(f))
  if (unknown !== undefined || rest.length > 0) {
    process.stderr.write(`pintoctl install-cni: ${unknown !== undefined ? `unknown flag ${unknown}` : `unexpected ${JSON.stringify(rest[0])}`}\n${USAGE}`)
    return 2
  }
  const mtuText = setting(flags, '--mtu', 'PINTO_CNI_MTU') ?? '0'
  const chainText = flags.get('--chain')
  try {
    if (!/^\d+$/.test(mtuText)) throw new Error(`--mtu: ${JSON.stringify(mtuText)} is not a number`)
    const report = installCni({
      binDir: setting(flags, '--bin-dir', 'PINTO_CNI_BIN_DIR') ?? '/opt/cni/bin',
      confDir: flags.has('--no-conf') ? undefined : (setting(flags, '--conf-dir', 'PINTO_CNI_CONF_DIR') ?? '/etc/cni/net.d'),
      confName: flags.get('--conf-name') ?? '10-pinto.conflist',
      node: flags.get('--node') ?? (seaExecutable() === undefined ? process.execPath : undefined),
      socket: setting(flags, '--socket', 'PINTO_CNI_SOCKET'),
      mtu: Number(mtuText),
      chain: chainText === undefined ? undefined : chainText.split(',').filter((c) => c !== ''),
    })
    for (const f of report.written) process.stdout.write(`installed ${f}\n`)
    for (const n of report.notes) process.stderr.write(`note: ${n}\n`)
    return 0
  } catch (err) {
    process.stderr.write(`pintoctl install-cni: ${fromVariable(flags, (err as Error).message)}\n`)
    return 1
  }
}
