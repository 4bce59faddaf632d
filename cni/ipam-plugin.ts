// The `pinto-ipam` IPAM plugin: a standard CNI IPAM result from the agent's allocation, so it also serves
// the reference ptp. Addresses carry their block's length and Calico's 169.254.1.1 as gateway, which ptp
// puts on its host veth and routes the block through; it wires nothing itself. Under ptp an IPv4 address
// gets a default route too (see ptpDefault).

import { parseIpv4 } from '../net/ip.js'
import { validHandles } from './config.js'
import { ERR_CHECK, assign, checkHeld, clientFor, collect, release, status } from './ipam-core.js'
import type { Invocation } from './pinto-plugin.js'
import { type CniIp, type CniResult, parseResult } from './result.js'
import { CniError, ERR } from './spec.js'
import { GATEWAY_V4, GATEWAY_V6 } from './wiring-plan.js'

/** The number of leading bits two IPv4 addresses share (0 when either is not one). */
export function commonPrefixLength(a: string, b: string): number {
  const x = parseIpv4(a)
  const y = parseIpv4(b)
  if (x === undefined || y === undefined) return 0
  const diff = (x ^ y) >>> 0
  return diff === 0 ? 32 : Math.clz32(diff)
}

/**
 * The address and routes ptp is given for an IPv4 address. ptp adds the IPAM routes before it makes the
 * gateway reachable, so a default route via 169.254.1.1 only goes in if the address's own prefix covers
 * 169.254.1.1 (the kernel's route for that prefix makes the gateway on-link until ptp replaces it with a
 * route via the gateway). So the address goes out with the longest length that does: /1 for any pool in
 * 128.0.0.0/1 (192.168.0.0/16, 172.16.0.0/12, 198.18.0.0/15). ptp then routes that half of the space and
 * the default via the gateway, and the pod reaches everything through the host. A pool in 0.0.0.0/1
 * (10.0.0.0/8, say) shares no leading bit with any link-local gateway: its pods get their block's route
 * only.
 */
export function ptpDefault(address: string, blockLength: number): { length: number; defaultRoute: boolean } {
  const shared = commonPrefixLength(address, GATEWAY_V4)
  return shared >= 1 ? { length: Math.min(shared, blockLength), defaultRoute: true } : { length: blockLength, defaultRoute: false }
}

export async function ipamCmdAdd(inv: Invocation): Promise<CniResult> {
  const r = await assign(inv.conf, inv.env, clientFor(inv.conf))
  const len = (block: string): number => Number(block.split('/')[1])
  const underPtp = inv.conf.type === 'ptp'
  const routes: { dst: string }[] = []
  const ips: CniIp[] = [
    ...r.ipv4.map((a) => {
      if (!underPtp) return { address: `${a.address}/${len(a.block)}`, gateway: GATEWAY_V4 }
      const p = ptpDefault(a.address, len(a.block))
      if (p.defaultRoute && routes.length === 0) routes.push({ dst: '0.0.0.0/0' })
      return { address: `${a.address}/${p.length}`, gateway: GATEWAY_V4 }
    }),
    ...r.ipv6.map((a) => ({ address: `${a.address}/${len(a.block)}`, gateway: GATEWAY_V6 })),
  ]
  // No routes for other main plugins: one that wires as pinto does routes the pod itself.
  return { cniVersion: inv.conf.cniVersion, ips, routes, dns: {} }
}

export async function ipamCmdDel(inv: Invocation): Promise<void> {
  // An ID ADD refuses: no handle of ours can have it.
  if (inv.env.notOurs !== undefined) return
  await release(inv.conf, inv.env, clientFor(inv.conf))
}

export async function ipamCmdCheck(inv: Invocation): Promise<void> {
  if (inv.conf.prevResult === undefined) throw new CniError(ERR.invalidConfig, 'prevResult: is missing (CHECK needs the result of ADD)')
  const addrs = (parseResult(inv.conf.prevResult).ips ?? []).map((i) => i.address.split('/')[0] as string)
  if (addrs.length === 0) throw new CniError(ERR_CHECK, 'prevResult.ips: no address to check')
  await checkHeld(inv.conf, inv.env, clientFor(inv.conf), addrs)
}

export async function ipamCmdStatus(inv: Invocation): Promise<void> {
  await status(clientFor(inv.conf))
}

export async function ipamCmdGc(inv: Invocation): Promise<void> {
  await collect(inv.conf, validHandles(inv.conf.raw, inv.conf.name), clientFor(inv.conf))
}
