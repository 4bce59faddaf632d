// The tunnel devices and host settings felix keeps: tunl0 and vxlan.pinto (created, sized, addressed), host
// MTU detection, the pod MTU file the CNI plugin reads, and the forwarding sysctls. Every command goes through
// the ProcessRunner; the MTU arithmetic is pure. Routes, neighbours and NAT live in their own modules.

import { mkdir, rename, writeFile } from 'node:fs/promises'
import { dirname } from 'node:path'
import { parseJsonArray } from './ip-json.js'
import { runChecked, type ProcessRunner } from './runner.js'

export const IPIP_OVERHEAD = 20
export const VXLAN_OVERHEAD = 50
export const DEFAULT_VXLAN_VNI = 4096
export const DEFAULT_VXLAN_PORT = 4789
/** Calico's fallback when nothing can be detected. */
export const FALLBACK_HOST_MTU = 1460

/** The pod MTU: the host's less the largest overhead among the encapsulations in use. */
export function podMtu(hostMtu: number, encaps: { ipip?: boolean; vxlan?: boolean }): number {
  const overhead = Math.max(encaps.ipip === true ? IPIP_OVERHEAD : 0, encaps.vxlan === true ? VXLAN_OVERHEAD : 0)
  return hostMtu - overhead
}

interface Ctx {
  readonly runner: ProcessRunner
  readonly netns?: string
}

function nsOpt(ctx: Ctx): { netns?: string } {
  return ctx.netns !== undefined ? { netns: ctx.netns } : {}
}

interface LinkJson {
  ifname?: string
  mtu?: number
  address?: string
  flags?: string[]
  linkinfo?: { info_kind?: string; info_data?: Record<string, unknown> }
  addr_info?: { family?: string; local?: string; prefixlen?: number; scope?: string }[]
}

/** The link's details, or undefined when it does not exist. */
async function showLink(ctx: Ctx, name: string): Promise<LinkJson | undefined> {
  const r = await ctx.runner.run('ip', ['-d', '-json', 'link', 'show', 'dev', name], nsOpt(ctx))
  if (r.exitCode !== 0) {
    if (/does not exist|Cannot find device/.test(r.stderr)) return undefined
    throw new Error(`ip link show ${name}: ${r.stderr.trim()}`)
  }
  return parseJsonArray<LinkJson>(r.stdout, `ip link show ${name}`)[0]
}

/** The host MTU: the parent interface's (where encapsulated packets leave). */
export async function detectHostMtu(ctx: Ctx, parentInterface: string): Promise<number> {
  const link = await showLink(ctx, parentInterface)
  if (link === undefined) throw new Error(`parentInterface: no interface named ${JSON.stringify(parentInterface)}`)
  if (typeof link.mtu !== 'number') throw new Error(`parentInterface: ip printed no MTU for ${parentInterface}`)
  return link.mtu
}

/** The interface holding `address` (Calico's detectParentIface). */
export async function detectParentInterface(ctx: Ctx, address: string): Promise<string> {
  const r = await runChecked(ctx.runner, 'ip', ['-json', 'addr', 'show'], nsOpt(ctx))
  for (const link of parseJsonArray<LinkJson>(r.stdout, 'ip addr show')) {
    if (link.addr_info?.some((a) => a.local === address) === true && link.ifname !== undefined) return link.ifname
  }
  throw new Error(`node address ${address}: no interface has it`)
}

/** Makes `dev` hold exactly `cidr` among its global addresses of that family (link-local ones are the kernel's). */
async function syncAddress(ctx: Ctx, dev: string, cidr: string): Promise<void> {
  const r = await runChecked(ctx.runner, 'ip', ['-json', 'addr', 'show', 'dev', dev], nsOpt(ctx))
  const family = cidr.includes(':') ? 'inet6' : 'inet'
  let present = false
  for (const a of parseJsonArray<LinkJson>(r.stdout, `ip addr show ${dev}`)[0]?.addr_info ?? []) {
    if (a.family !== family || a.scope === 'link') continue
    const have = `${a.local}/${a.prefixlen}`
    if (have === cidr) present = true
    else await runChecked(ctx.runner, 'ip', ['addr', 'del', have, 'dev', dev], nsOpt(ctx))
  }
  if (!present) await runChecked(ctx.runner, 'ip', ['addr', 'add', cidr, 'dev', dev], nsOpt(ctx))
}

async function setUp(ctx: Ctx, dev: string, link: LinkJson | undefined, mtu: number, mac?: string): Promise<void> {
  const args = ['link', 'set', 'dev', dev]
  if (link?.mtu !== mtu) args.push('mtu', String(mtu))
  if (mac !== undefined && link?.address?.toLowerCase() !== mac.toLowerCase()) args.push('address', mac)
  if (link?.flags?.includes('UP') !== true) args.push('up')
  if (args.length > 4) await runChecked(ctx.runner, 'ip', args, nsOpt(ctx))
}

export interface Tunl0Spec {
  /** The IPIP tunnel address (Node `bgp.ipv4IPIPTunnelAddr`), held as a /32. */
  readonly address: string
  readonly mtu: number
}

/** tunl0: created if the kernel has not made it, MTU set, the tunnel address as its only /32, up. */
export async function ensureTunl0(ctx: Ctx, spec: Tunl0Spec): Promise<void> {
  const link = await showLink(ctx, 'tunl0')
  if (link === undefined) {
    // Loading the ipip module makes tunl0 in every namespace; asking for it by name does the same.
    await runChecked(ctx.runner, 'ip', ['link', 'add', 'name', 'tunl0', 'type', 'ipip'], nsOpt(ctx))
  }
  await setUp(ctx, 'tunl0', link, spec.mtu)
  await syncAddress(ctx, 'tunl0', `${spec.address}/32`)
}

export interface VxlanSpec {
  readonly name?: string
  readonly vni?: number
  readonly port?: number
  readonly mtu: number
  /** The VTEP MAC (published on the Node as `vxlanTunnelMACAddr`). */
  readonly mac: string
  /** The VTEP address (`ipv4VXLANTunnelAddr`), held as a /32. */
  readonly address: string
  /** The node's own IP, the outer source, and the interface it is on. */
  readonly localAddress: string
  readonly parentInterface: string
}

/** vxlan.pinto: recreated when its VNI, port, source or parent differ (they cannot be changed in place). */
export async function ensureVxlan(ctx: Ctx, spec: VxlanSpec): Promise<void> {
  const name = spec.name ?? 'vxlan.pinto'
  const vni = spec.vni ?? DEFAULT_VXLAN_VNI
  const port = spec.port ?? DEFAULT_VXLAN_PORT
  let link = await showLink(ctx, name)
  const d = link?.linkinfo?.info_data
  const compatible =
    link?.linkinfo?.info_kind === 'vxlan' && d?.['id'] === vni && d['port'] === port && d['local'] === spec.localAddress && d['link'] === spec.parentInterface && d['learning'] === false
  if (link !== undefined && !compatible) {
    await runChecked(ctx.runner, 'ip', ['link', 'del', 'dev', name], nsOpt(ctx))
    link = undefined
  }
  if (link === undefined) {
    // nolearning: the FDB is programmed from the Node resources, never learned from traffic.
    const add = ['link', 'add', 'name', name, 'type', 'vxlan', 'id', String(vni), 'dstport', String(port), 'local', spec.localAddress, 'dev', spec.parentInterface, 'nolearning']
    await runChecked(ctx.runner, 'ip', add, nsOpt(ctx))
  }
  await setUp(ctx, name, link, spec.mtu, spec.mac)
  await syncAddress(ctx, name, `${spec.address}/32`)
}

/** Writes the pod MTU where the CNI plugin reads it, atomically (a reader never sees half a number). */
export async function writePodMtu(path: string, mtu: number): Promise<void> {
  await mkdir(dirname(path), { recursive: true })
  const tmp = `${path}.${process.pid}.tmp`
  await writeFile(tmp, `${mtu}\n`)
  await rename(tmp, path)
}

/** IPv4 forwarding always; IPv6 forwarding when an IPv6 pool exists. */
export async function enableForwarding(ctx: Ctx, ipv6: boolean): Promise<void> {
  const keys = ['net.ipv4.ip_forward=1', ...(ipv6 ? ['net.ipv6.conf.all.forwarding=1'] : [])]
  await runChecked(ctx.runner, 'sysctl', ['-q', '-w', ...keys], nsOpt(ctx))
}
