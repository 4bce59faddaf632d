// FRR's bfdd beside an FRR started with zebra (startFrr(..., { zebra: true })): renders its config, runs
// it as frr in the same directory (bgpd reaches it through zebra), and turns `neighbor X bfd` on in bgpd.
// Also the link cut the BFD tests and bench use: an nftables drop of everything to and from one address.

import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { execa } from 'execa'
import type { FrrDaemon } from './frr.js'
import type { Topology } from './netns.js'
import { waitPidFile } from './pid.js'

export interface BfddPeer {
  readonly address: string
  readonly localAddress: string
  readonly intervalMs: number
  readonly multiplier: number
}

export interface Bfdd {
  readonly pid: number
  /** `show bfd peer X json` as FRR prints it (status, diagnostic, remote-id, ...). */
  peer(address: string): Promise<Record<string, unknown>>
  /** `shutdown` (AdminDown) or `no shutdown` of one peer. */
  adminDown(address: string, down: boolean): Promise<void>
}

export function renderBfddConfig(dir: string, peers: readonly BfddPeer[]): string {
  const lines = [`log file ${join(dir, 'bfdd.log')} informational`, 'bfd']
  for (const p of peers) {
    lines.push(` peer ${p.address} local-address ${p.localAddress}`, `  receive-interval ${p.intervalMs}`, `  transmit-interval ${p.intervalMs}`, `  detect-multiplier ${p.multiplier}`, ' !')
  }
  return lines.join('\n') + '\n!\n'
}

export async function startBfdd(topo: Topology, frr: FrrDaemon, peers: readonly BfddPeer[], bgpNeighbors: readonly string[]): Promise<Bfdd> {
  const dir = frr.dir
  await writeFile(join(dir, 'bfdd.conf'), renderBfddConfig(dir, peers))
  await execa('chown', ['-R', 'frr:frr', dir])
  const pidFile = join(dir, 'bfdd.pid')
  await topo.exec(frr.node.ns, '/usr/lib/frr/bfdd', ['-d', '-f', join(dir, 'bfdd.conf'), '-i', pidFile, '-z', join(dir, 'zserv.api'), '--vty_socket', dir, '-P', '0', '--bfdctl', join(dir, 'bfdd.sock'), '-u', 'frr', '-g', 'frr'])
  const pid = await waitPidFile(pidFile, 5000)
  topo.trackPid(pid)
  if (bgpNeighbors.length > 0) await frr.vtysh('configure terminal', `router bgp ${frr.spec.as}`, ...bgpNeighbors.map((n) => `neighbor ${n} bfd`))
  const bfdVtysh = async (...commands: string[]): Promise<string> =>
    (await execa('vtysh', ['--vty_socket', dir, '-d', 'bfdd', ...commands.flatMap((c) => ['-c', c])])).stdout
  return {
    pid,
    async peer(address) {
      return JSON.parse(await bfdVtysh(`show bfd peer ${address} json`)) as Record<string, unknown>
    },
    async adminDown(address, down) {
      const p = peers.find((x) => x.address === address)
      await bfdVtysh('configure terminal', 'bfd', `peer ${address} local-address ${p?.localAddress ?? ''}`.trim(), down ? 'shutdown' : 'no shutdown')
    },
  }
}

/** Drops every packet to and from `address` in namespace `ns` (a silent link failure), or lifts the drop. */
export async function cutLink(ns: string, address: string, cut: boolean): Promise<void> {
  const table = 'pinto_test_cut'
  if (!cut) {
    await execa('ip', ['netns', 'exec', ns, 'nft', 'delete', 'table', 'inet', table], { reject: false })
    return
  }
  const family = address.includes(':') ? 'ip6' : 'ip'
  const script = [
    `table inet ${table} {`,
    `  chain in { type filter hook input priority -10; policy accept; ${family} saddr ${address} drop; }`,
    `  chain out { type filter hook output priority -10; policy accept; ${family} daddr ${address} drop; }`,
    '}',
  ].join('\n')
  await execa('ip', ['netns', 'exec', ns, 'nft', '-f', '-'], { input: script })
}
