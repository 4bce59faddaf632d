// `pintoctl install-cni`: puts the CNI plugins and pinto's network config where the container runtime
// finds them (Calico's install-cni). Run once per node, by root, after `npm run build`; again after each build.

import { installCni } from '../install-cni.js'
import { parseFlags } from './ipam.js'
import { INSTALL_CNI_USAGE as USAGE } from './usage.js'


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
  const mtuText = flags.get('--mtu') ?? '0'
  const chainText = flags.get('--chain')
  try {
    if (!/^\d+$/.test(mtuText)) throw new Error(`--mtu: ${JSON.stringify(mtuText)} is not a number`)
    const report = installCni({
      binDir: flags.get('--bin-dir') ?? '/opt/cni/bin',
      confDir: flags.has('--no-conf') ? undefined : (flags.get('--conf-dir') ?? '/etc/cni/net.d'),
      confName: flags.get('--conf-name') ?? '10-pinto.conflist',
      node: flags.get('--node') ?? process.execPath,
      socket: flags.get('--socket'),
      mtu: Number(mtuText),
      chain: chainText === undefined ? undefined : chainText.split(',').filter((c) => c !== ''),
    })
    for (const f of report.written) process.stdout.write(`installed ${f}\n`)
    for (const n of report.notes) process.stderr.write(`note: ${n}\n`)
    return 0
  } catch (err) {
    process.stderr.write(`pintoctl install-cni: ${(err as Error).message}\n`)
    return 1
  }
}
