// The `pinto-ipam` IPAM plugin: a standard CNI IPAM result from the agent's allocation, so it also serves
// the reference ptp. Addresses carry their block's length and Calico's 169.254.1.1 as gateway, which ptp
// puts on its host veth and routes the block through; it wires nothing itself.

import { validAttachments } from './config.js'
import { ERR_CHECK, assign, checkHeld, clientFor, collect, release, status } from './ipam-core.js'
import type { Invocation } from './pinto-plugin.js'
import { type CniIp, type CniResult, parseResult } from './result.js'
import { CniError, ERR } from './spec.js'
import { GATEWAY_V4, GATEWAY_V6 } from './wiring-plan.js'

export async function ipamCmdAdd(inv: Invocation): Promise<CniResult> {
  const r = await assign(inv.conf, inv.env, clientFor(inv.conf))
  const len = (block: string): string => block.split('/')[1] ?? ''
  const ips: CniIp[] = [
    ...r.ipv4.map((a) => ({ address: `${a.address}/${len(a.block)}`, gateway: GATEWAY_V4 })),
    ...r.ipv6.map((a) => ({ address: `${a.address}/${len(a.block)}`, gateway: GATEWAY_V6 })),
  ]
  // No routes: a main plugin configures IPAM routes before it makes the gateway reachable (ptp does), so a
  // default route via 169.254.1.1 would fail there; ptp itself routes the block via the gateway.
  return { cniVersion: inv.conf.cniVersion, ips, routes: [], dns: {} }
}

export async function ipamCmdDel(inv: Invocation): Promise<void> {
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
  await collect(inv.conf, validAttachments(inv.conf.raw), clientFor(inv.conf))
}
