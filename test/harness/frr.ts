// FRR bgpd as a test peer, standalone (no zebra, no watchfrr, no /etc/frr): renders bgpd.conf from a
// SpeakerSpec, starts bgpd in a namespace with its own vty socket dir and pid file, queries it with vtysh.

import { writeFile } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { execa } from 'execa'
import type { Topology, NetNode } from './netns.js'
import { establishedWaiter, familyOf, localAddressFor, neighborOf, validateSpec, type Daemon, type Family, type OriginRoute, type RibRoute, type SpeakerSpec } from './daemons.js'
import { stopPid, waitPidFile } from './pid.js'
import { waitFor } from './wait.js'

function routeMap(name: string, r: OriginRoute): string[] {
  const sets: string[] = []
  if ((r.communities ?? []).length > 0) sets.push(`set community ${(r.communities ?? []).join(' ')}`)
  if ((r.largeCommunities ?? []).length > 0) sets.push(`set large-community ${(r.largeCommunities ?? []).join(' ')}`)
  if ((r.routeTargets ?? []).length > 0) sets.push(`set extcommunity rt ${(r.routeTargets ?? []).join(' ')}`)
  if (r.med !== undefined) sets.push(`set metric ${r.med}`)
  if (r.localPref !== undefined) sets.push(`set local-preference ${r.localPref}`)
  if ((r.prepend ?? []).length > 0) sets.push(`set as-path prepend ${(r.prepend ?? []).join(' ')}`)
  return sets.length === 0 ? [] : [`route-map ${name} permit 10`, ...sets.map((s) => ` ${s}`), '!']
}

/** bgpd.conf for a spec. Pure. */
export function renderFrrConfig(spec: SpeakerSpec, node: NetNode, dir: string): string {
  validateSpec(spec)
  if (spec.routeRefresh === false) throw new Error('spec.routeRefresh: only the BIRD launcher turns route refresh off')
  const origin = spec.originate ?? []
  const lines = ['frr defaults traditional', `hostname ${node.name}`, `log file ${join(dir, 'bgpd.log')} informational`, '!']
  origin.forEach((r, i) => lines.push(...routeMap(`ORIG${i}`, r)))
  lines.push(`router bgp ${spec.as}`, ` bgp router-id ${spec.routerId}`)
  // Without zebra nothing is "in the RIB", so network statements need the import check off.
  lines.push(' no bgp ebgp-requires-policy', ' no bgp network import-check', ' no bgp default ipv4-unicast')
  if (spec.gracefulRestart === true) lines.push(' bgp graceful-restart')
  if (spec.clusterId !== undefined) lines.push(` bgp cluster-id ${spec.clusterId}`)
  if (spec.holdTime !== undefined) lines.push(` timers bgp ${Math.max(1, Math.floor(spec.holdTime / 3))} ${spec.holdTime}`)
  for (const n of spec.neighbors) {
    lines.push(` neighbor ${n.address} remote-as ${n.as}`, ` neighbor ${n.address} update-source ${localAddressFor(node, n)}`)
    if (n.passive === true) lines.push(` neighbor ${n.address} passive`)
    if (n.noCapabilities === true) lines.push(` neighbor ${n.address} dont-capability-negotiate`)
    if (n.password !== undefined) lines.push(` neighbor ${n.address} password ${n.password}`)
    if (n.ttlSecurityHops !== undefined) lines.push(` neighbor ${n.address} ttl-security hops ${n.ttlSecurityHops}`)
  }
  for (const family of ['ipv4', 'ipv6'] as const) {
    const peers = spec.neighbors.filter((n) => n.families.includes(family))
    const nets = origin.map((r, i) => ({ r, i })).filter(({ r }) => familyOf(r.prefix) === family)
    if (peers.length === 0 && nets.length === 0) continue
    lines.push(` address-family ${family} unicast`)
    for (const { r, i } of nets) lines.push(`  network ${r.prefix}${routeMap('', r).length > 0 ? ` route-map ORIG${i}` : ''}`)
    for (const a of (spec.aggregates ?? []).filter((p) => familyOf(p) === family)) lines.push(`  aggregate-address ${a}`)
    for (const n of peers) {
      lines.push(`  neighbor ${n.address} activate`, `  neighbor ${n.address} send-community all`)
      if (n.rrClient === true) lines.push(`  neighbor ${n.address} route-reflector-client`)
      if (spec.addPath === true) lines.push(`  neighbor ${n.address} addpath-tx-all-paths`)
    }
    lines.push(' exit-address-family')
  }
  lines.push('!')
  return lines.join('\n') + '\n'
}

export interface FrrDaemon extends Daemon {
  readonly kind: 'frr'
  /** Runs vtysh with one or more -c commands (in order, one session) and returns the output. */
  vtysh(...commands: string[]): Promise<string>
}

interface FrrSummary {
  peers?: Record<string, { state?: string }>
}

export interface FrrOptions {
  readonly timeoutMs?: number
  /**
   * Run zebra too. Needed when a peer sends an IPv6 link-local next hop: bgpd without zebra knows no
   * interfaces and treats such an UPDATE as a withdrawal (then resets the session). Costs one more process.
   */
  readonly zebra?: boolean
}

export async function startFrr(topo: Topology, node: NetNode, spec: SpeakerSpec, opts: FrrOptions = {}): Promise<FrrDaemon> {
  const dir = await topo.tempDir('frr')
  const conf = join(dir, 'bgpd.conf')
  const pidFile = join(dir, 'bgpd.pid')
  const timeoutMs = opts.timeoutMs ?? 5000
  await writeFile(conf, renderFrrConfig(spec, node, dir))
  let daemonArgs: string[]
  if (opts.zebra === true) {
    // zebra refuses to run as root (root is not in group frrvty), so both run as frr in a dir frr owns.
    const zserv = join(dir, 'zserv.api')
    await writeFile(join(dir, 'zebra.conf'), `hostname ${node.name}-zebra\nlog file ${join(dir, 'zebra.log')} informational\n`)
    await execa('chown', ['-R', 'frr:frr', dir])
    const zpid = join(dir, 'zebra.pid')
    await topo.exec(node.ns, '/usr/lib/frr/zebra', ['-d', '-f', join(dir, 'zebra.conf'), '-i', zpid, '-z', zserv, '--vty_socket', dir, '-u', 'frr', '-g', 'frr', '-P', '0'])
    topo.trackPid(await waitPidFile(zpid, timeoutMs))
    await waitFor(() => existsSync(zserv), { timeoutMs, what: 'zebra API socket' })
    daemonArgs = ['-z', zserv, '-u', 'frr', '-g', 'frr']
  } else {
    // -S: stay root without capability games; -Z: no zebra.
    daemonArgs = ['-S', '-Z']
  }
  // -P 0: no TCP vty, only the socket in dir.
  await topo.exec(node.ns, '/usr/lib/frr/bgpd', ['-d', '-f', conf, '-i', pidFile, '--vty_socket', dir, '-P', '0', ...daemonArgs])
  const pid = await waitPidFile(pidFile, timeoutMs)
  topo.trackPid(pid)

  const vtysh = async (...commands: string[]): Promise<string> =>
    (await execa('vtysh', ['--vty_socket', dir, '-d', 'bgpd', ...commands.flatMap((c) => ['-c', c])])).stdout
  await waitFor(async () => (await vtysh('show bgp summary')).length >= 0, { timeoutMs: 5000, what: 'FRR vty socket' })

  const sessionState = async (address: string): Promise<string> => {
    const fam = neighborOf(spec, address).families[0] ?? 'ipv4'
    const s = JSON.parse(await vtysh(`show bgp ${fam} unicast summary json`)) as FrrSummary
    return s.peers?.[address]?.state ?? 'unknown'
  }

  return {
    kind: 'frr',
    node,
    spec,
    dir,
    pid,
    vtysh,
    sessionState,
    waitEstablished: establishedWaiter(`FRR in ${node.name}`, sessionState),
    async routes(family: Family) {
      const table = JSON.parse(await vtysh(`show bgp ${family} unicast json`)) as { routes?: Record<string, unknown> }
      const out: RibRoute[] = []
      for (const prefix of Object.keys(table.routes ?? {})) out.push(...parseFrrPrefixDetail(await vtysh(`show bgp ${family} unicast ${prefix} json`)))
      return out
    },
    stop: () => stopPid(pid),
  }
}

interface FrrPath {
  peer?: { peerId?: string }
  nexthops?: { ip?: string }[]
  aspath?: { string?: string }
  community?: { list?: string[] }
  largeCommunity?: { list?: string[] }
  metric?: number
  med?: number
  locPrf?: number
  localpref?: number
}

/**
 * Parses `show bgp FAMILY unicast PREFIX json` (FRR 8). The table-wide JSON lacks communities and MED, so
 * routes() lists prefixes from it and asks for each one's detail: fine for the handful of routes tests use.
 */
export function parseFrrPrefixDetail(json: string): RibRoute[] {
  const doc = JSON.parse(json) as { prefix?: string; paths?: FrrPath[] }
  const prefix = doc.prefix
  if (prefix === undefined) return []
  return (doc.paths ?? []).map((p) => {
    const id = p.peer?.peerId
    return {
      prefix,
      fromPeer: id === undefined || id === '(unspec)' || id === '0.0.0.0' || id === '::' ? undefined : id,
      nextHop: p.nexthops?.[0]?.ip,
      asPath: (p.aspath?.string ?? '').split(/\s+/).filter((x) => /^\d+$/.test(x)).map(Number),
      communities: p.community?.list ?? [],
      largeCommunities: p.largeCommunity?.list ?? [],
      med: p.med ?? p.metric,
      localPref: p.localpref ?? p.locPrf,
    }
  })
}
