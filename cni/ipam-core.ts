// The IPAM steps both plugins share: assign, release, check and GC of one network's handles through the
// agent's service. No wiring and no output formatting here.

import { type NetConf, handleOf, podIdentity } from './config.js'
import { type AssignReply, IpamClient, type IpamPort } from './ipam-client.js'
import { type CniEnv, CniError, ERR } from './spec.js'

/** The agent's IPAM socket the network's plugins talk to. */
export function ipamSocket(conf: NetConf): string {
  return conf.ipam?.socket ?? conf.socket
}

export function clientFor(conf: NetConf): IpamClient {
  return new IpamClient(ipamSocket(conf))
}

export function assign(conf: NetConf, env: CniEnv, client: IpamPort): Promise<AssignReply> {
  const ipam = conf.ipam
  if (ipam === undefined) throw new CniError(ERR.invalidConfig, 'ipam: is missing')
  const pod = podIdentity(env.args)
  return client.assign({
    handle: handleOf(conf.name, env.containerId, env.ifname),
    ...(conf.nodename !== undefined ? { node: conf.nodename } : {}),
    num4: ipam.assignIpv4 ? 1 : 0,
    num6: ipam.assignIpv6 ? 1 : 0,
    attrs: { network: conf.name, containerID: env.containerId, ifname: env.ifname, ...(pod ? { namespace: pod.namespace, pod: pod.pod } : {}) },
    pools: [...ipam.ipv4Pools, ...ipam.ipv6Pools],
  })
}

export async function release(conf: NetConf, env: CniEnv, client: IpamPort): Promise<void> {
  await client.releaseByHandle(handleOf(conf.name, env.containerId, env.ifname))
}

/** CHECK's IPAM part: the handle still holds every address the previous result names. */
export async function checkHeld(conf: NetConf, env: CniEnv, client: IpamPort, addresses: readonly string[]): Promise<void> {
  const handle = handleOf(conf.name, env.containerId, env.ifname)
  const held = new Set((await client.allocations(handle)).filter((a) => a.handle === handle).map((a) => a.address))
  const missing = addresses.filter((a) => !held.has(a))
  if (missing.length > 0) throw new CniError(ERR_CHECK, `IPAM: ${missing.join(', ')} no longer allocated to ${handle}`)
}

/** GC: releases every handle of this network that is not one of the valid attachments' (config.ts validHandles). */
export async function collect(conf: NetConf, valid: ReadonlySet<string>, client: IpamPort): Promise<string[]> {
  const stale = new Set<string>()
  for (const a of await client.allocations(`${conf.name}.`)) {
    // The prefix also matches a network named `<name>.<more>`: its attribute says whose the handle is.
    if ((a.attrs['network'] ?? conf.name) === conf.name && !valid.has(a.handle)) stale.add(a.handle)
  }
  for (const h of stale) await client.releaseByHandle(h)
  return [...stale]
}

export async function status(client: IpamPort): Promise<void> {
  let s
  try {
    s = await client.status()
  } catch (err) {
    throw new CniError(ERR.notAvailable, (err as Error).message, err instanceof CniError ? err.details : '')
  }
  if (!s.ready) throw new CniError(ERR.notAvailable, `pinto-node on ${s.node} is not ready: ${s.reason ?? 'unknown reason'}`)
}

/** Plugin-specific code (the spec leaves 100+ to plugins): CHECK found the attachment not as ADD left it. */
export const ERR_CHECK = 100
