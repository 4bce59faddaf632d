// The `pinto` main plugin: one handler per verb (STYLE 14). ADD is a straight line that gives its addresses
// back if a later step fails; DEL is idempotent; CHECK reads the kernel. Wiring details live in wiring*.ts.

import { closeSync, existsSync, openSync, readFileSync, readSync } from 'node:fs'
import { type NetConf, handleOf, podIdentity, validAttachments } from './config.js'
import { oweRelease, settleRelease } from './release-spool.js'
import { delegate } from './delegate.js'
import { ERR_CHECK, assign, checkHeld, clientFor, collect, ipamSocket, release, status } from './ipam-core.js'
import { type IpamPort, OutcomeUnknown } from './ipam-client.js'
import { type CniIp, type CniResult, parseResult } from './result.js'
import { type CniEnv, CniError, ERR } from './spec.js'
import { vethName } from './veth-name.js'
import { Dataplane } from './wiring.js'
import { addThroughAgent, delThroughAgent } from './agent-channel.js'
import { GATEWAY_V4, GATEWAY_V6, HOST_MAC, type Veth, type Wiring, checkWiring, ownedBy, podMacFrom } from './wiring-plan.js'

const DEFAULT_MTU = 1500

export interface Invocation {
  readonly conf: NetConf
  readonly env: CniEnv
  /** The config text as received, handed unchanged to a delegated IPAM plugin. */
  readonly stdin: string
}

function ipamType(conf: NetConf): string {
  if (conf.ipam === undefined) throw new CniError(ERR.invalidConfig, 'ipam: is missing; pinto needs an IPAM plugin (pinto-ipam or e.g. host-local)')
  return conf.ipam.type
}

/** mtu 0 or absent: what the agent wrote (felix knows the tunnel overhead), else 1500. */
export function effectiveMtu(conf: NetConf): number {
  if (conf.mtu !== 0) return conf.mtu
  let text: string
  try {
    text = readFileSync(conf.mtuFile, 'utf8').trim()
  } catch {
    return DEFAULT_MTU
  }
  const n = Number(text)
  if (!/^\d+$/.test(text) || n < 68 || n > 65535) throw new CniError(ERR.invalidConfig, `mtu_file ${conf.mtuFile}: ${JSON.stringify(text)} is not an MTU in 68..65535`)
  return n
}

function hostVethOf(inv: Invocation): string {
  return vethName(inv.conf.vethPrefix, podIdentity(inv.env.args), inv.env.containerId)
}

const bare = (cidr: string): string => cidr.split('/')[0] as string

/** Random bytes from the kernel, without loading node:crypto (a cost on every cold start) for five of them. */
function randomBytes(n: number): Uint8Array {
  const out = new Uint8Array(n)
  const fd = openSync('/dev/urandom', 'r')
  try {
    if (readSync(fd, out) !== n) throw new CniError(ERR.io, `/dev/urandom gave fewer than ${n} bytes`)
  } finally {
    closeSync(fd)
  }
  return out
}

/** The pod's first address of each family from an IPAM result, without length. */
function pick(ips: readonly CniIp[]): { v4: string | undefined; v6: string | undefined } {
  return { v4: ips.map((i) => bare(i.address)).find((a) => !a.includes(':')), v6: ips.map((i) => bare(i.address)).find((a) => a.includes(':')) }
}

async function ipamAdd(inv: Invocation, client: IpamPort = clientFor(inv.conf)): Promise<{ v4: string | undefined; v6: string | undefined }> {
  const type = ipamType(inv.conf)
  if (type === 'pinto-ipam') {
    // In-process rather than exec'ing pinto-ipam: the same request, without a second Node.js start per pod.
    const r = await assign(inv.conf, inv.env, client)
    // Answered: a release an earlier ADD of this container left owed would now free this pod's addresses.
    settleRelease(ipamSocket(inv.conf), handleOf(inv.conf.name, inv.env.containerId))
    return { v4: r.ipv4[0]?.address, v6: r.ipv6[0]?.address }
  }
  const r = await delegate(type, 'ADD', inv.stdin, inv.env.path)
  const got = pick(r?.ips ?? [])
  if (got.v4 === undefined && got.v6 === undefined) throw new CniError(ERR.io, `${type} ADD returned no address`)
  return got
}

/**
 * The assign went out and no answer came (the agent died in it): the addresses may be held. The handle is
 * this container's alone, so it is released, retried while the agent restarts (a DaemonSet brings it
 * back in seconds), for at most 10 s. The release is noted as owed first (release-spool.ts): past the
 * 10 s, pinto-node makes it when it starts (unless a later ADD wired the pod), as does the runtime's DEL.
 * Returns the error ADD answers: released, it is "try again later", as for an agent that was not running.
 */
async function releaseUnknown(inv: Invocation, client: IpamPort, err: OutcomeUnknown): Promise<CniError> {
  const socket = ipamSocket(inv.conf)
  const handle = handleOf(inv.conf.name, inv.env.containerId)
  let owed = false
  try {
    oweRelease(socket, { handle, containerId: inv.env.containerId, hostVeth: hostVethOf(inv) })
    owed = true
  } catch {
    // No note (the socket's directory is gone): the retries below and the runtime's DEL remain.
  }
  const until = Date.now() + 10_000
  for (;;) {
    try {
      await ipamDel(inv, client)
      settleRelease(socket, handle)
      return new CniError(ERR.tryAgainLater, `pinto-node is not running: it went away before answering (${err.message}); what it may have assigned to this container was released`, err.details)
    } catch (e) {
      if (!(e instanceof CniError) || e.code !== ERR.tryAgainLater || Date.now() > until) {
        return owed ? new OutcomeUnknown(new CniError(err.code, `${err.message}; pinto-node releases what it may have assigned to this container when it starts again`, err.details)) : err
      }
      await new Promise((r) => setTimeout(r, 200))
    }
  }
}

/** ADD's IPAM failed: a request whose outcome is not known is released first. */
async function ipamFailed(inv: Invocation, client: IpamPort, err: unknown): Promise<unknown> {
  return err instanceof OutcomeUnknown ? releaseUnknown(inv, client, err) : err
}

async function ipamDel(inv: Invocation, client: IpamPort = clientFor(inv.conf)): Promise<void> {
  const type = ipamType(inv.conf)
  if (type === 'pinto-ipam') await release(inv.conf, inv.env, client)
  else await delegate(type, 'DEL', inv.stdin, inv.env.path)
}

/**
 * Waits until pinto-ipam's request is on the agent's socket (or has failed): spawning `ip` holds the
 * thread, and the agent should spend that time on the request. Nothing to wait for with another IPAM type.
 */
async function requestOut(ipam: string | undefined, client: IpamPort, pending: Promise<unknown>): Promise<void> {
  if (ipam === 'pinto-ipam') await Promise.race([client.sent, pending.catch(() => undefined)])
}

function resultOf(inv: Invocation, w: Wiring): CniResult {
  const ips: CniIp[] = []
  const routes = []
  if (w.v4 !== undefined) {
    ips.push({ address: `${w.v4}/32`, interface: 1 })
    routes.push({ dst: '0.0.0.0/0', gw: GATEWAY_V4 })
  }
  if (w.v6 !== undefined) {
    ips.push({ address: `${w.v6}/128`, interface: 1 })
    routes.push({ dst: '::/0', gw: GATEWAY_V6 })
  }
  return {
    cniVersion: inv.conf.cniVersion,
    interfaces: [{ name: w.hostVeth, mac: HOST_MAC }, { name: w.ifname, mac: w.podMac, mtu: w.mtu, sandbox: inv.env.netns }],
    ips,
    routes,
    dns: {},
  }
}

/**
 * ADD. In the plugin's own process with pinto-ipam, the whole ADD goes to pinto-node first (agent-channel.ts),
 * which runs this same function with its IPAM in-process (`port`); the plugin does it itself only when the
 * agent cannot (no channel, a config too large for it, a netns it cannot see).
 */
export async function cmdAdd(inv: Invocation, dp = new Dataplane(), port?: IpamPort): Promise<CniResult> {
  const { env } = inv
  if (!existsSync(env.netns)) throw new CniError(ERR.unknownContainer, `CNI_NETNS: ${env.netns} does not exist`)
  if (port === undefined && inv.conf.ipam?.type === 'pinto-ipam') {
    const done = await addThroughAgent(inv)
    if (done !== undefined) return done
  }
  const client = port ?? clientFor(inv.conf)
  const veth: Veth = { ifname: env.ifname, hostVeth: hostVethOf(inv), mtu: effectiveMtu(inv.conf), podMac: podMacFrom(randomBytes(5)), owner: env.containerId }
  return dp.exclusive(veth.hostVeth, async () => {
    const recorded = await dp.owner(veth.hostVeth)
    if (recorded !== undefined && ownedBy(recorded, veth.owner)) return addAgain(inv, veth, dp, client)
    // Another container's veth under this pod's name: the pod's old sandbox, gone or going. The new sandbox
    // takes the name; the old container's addresses stay its own until its DEL (or GC) releases them.
    if (recorded !== undefined) await dp.removeHostVeth(veth.hostVeth)
    // The veth needs no address: its ip starts while the IPAM request is out (sent first, since a spawn
    // holds the thread), and whichever of the two failed, the other is undone.
    const ipam = ipamAdd(inv, client)
    await requestOut(ipamType(inv.conf), client, ipam)
    const [addrs, wired] = await Promise.allSettled([ipam, dp.wire(veth, env.netns, ipam)])
    if (addrs.status === 'rejected' || wired.status === 'rejected') {
      if (addrs.status === 'fulfilled') await ipamDel(inv, client).catch(() => undefined)
      throw addrs.status === 'rejected' ? await ipamFailed(inv, client, addrs.reason) : (wired as PromiseRejectedResult).reason
    }
    const w: Wiring = { ...veth, ...addrs.value }
    return resultOf(inv, w)
  })
}

/** A repeated ADD of the veth's own container: if the pod is wired as asked, answer with what is there; else wire it again. */
async function addAgain(inv: Invocation, veth: Veth, dp: Dataplane, client: IpamPort): Promise<CniResult> {
  const { env } = inv
  const w: Wiring = { ...veth, ...(await ipamAdd(inv, client).catch(async (err: unknown) => { throw await ipamFailed(inv, client, err) })) }
  try {
    const seen = await dp.read(w.hostVeth, env.ifname, env.netns)
    if (checkWiring({ ...w, podMac: '' }, seen.pod, seen.host).length === 0 && seen.pod.link?.mtu === w.mtu) {
      return resultOf(inv, { ...w, podMac: seen.pod.link.mac })
    }
    await dp.unwire(w.hostVeth, env.ifname, env.netns)
    await dp.wire(w, env.netns, Promise.resolve(w))
  } catch (err) {
    await ipamDel(inv, client).catch(() => undefined)
    throw err
  }
  return resultOf(inv, w)
}

/**
 * The veth and the addresses go at once. Neither pinto's IPAM (first-in-first-out reuse) nor host-local
 * (round robin) hands a released address out again before the other free ones, so no new pod takes it
 * while its old route lingers for the millisecond or two the kernel takes to unlist the veth. The release
 * request goes out first: spawning `ip` holds the thread, and the agent spends that time releasing.
 */
export async function cmdDel(inv: Invocation, dp = new Dataplane(), port?: IpamPort): Promise<void> {
  const { env } = inv
  if (env.notOurs !== undefined) return
  // As for ADD: with pinto-ipam, pinto-node does it when it can.
  if (port === undefined && inv.conf.ipam?.type === 'pinto-ipam' && (await delThroughAgent(inv))) return
  const client = port ?? clientFor(inv.conf)
  const hostVeth = hostVethOf(inv)
  await dp.exclusive(hostVeth, async () => {
    // The IPAM handle is this container's alone; the host veth only when it records this container (a
    // recreated sandbox's veth has the same name and is left to its own DEL).
    const released = ipamDel(inv, client)
    // No ipam section is DEL's error to report after the veth is gone, not before.
    await requestOut(inv.conf.ipam?.type, client, released)
    const unwiring = dp.owner(hostVeth).then((recorded) => dp.unwire(recorded !== undefined && ownedBy(recorded, env.containerId) ? hostVeth : undefined, env.ifname, env.netns))
    const [unwired, freed] = await Promise.allSettled([unwiring, released])
    if (unwired.status === 'rejected') throw unwired.reason
    if (freed.status === 'rejected') throw freed.reason
  })
}

export async function cmdCheck(inv: Invocation, dp = new Dataplane()): Promise<void> {
  const { env, conf } = inv
  if (conf.prevResult === undefined) throw new CniError(ERR.invalidConfig, 'prevResult: is missing (CHECK needs the result of ADD)')
  const prev = parseResult(conf.prevResult)
  if (!existsSync(env.netns)) throw new CniError(ERR.unknownContainer, `CNI_NETNS: ${env.netns} does not exist`)
  const podIf = (prev.interfaces ?? []).find((i) => i.name === env.ifname && i.sandbox !== undefined)
  const w: Wiring = { ifname: env.ifname, hostVeth: hostVethOf(inv), mtu: 0, podMac: podIf?.mac ?? '', owner: env.containerId, ...pick(prev.ips ?? []) }
  if (w.v4 === undefined && w.v6 === undefined) throw new CniError(ERR.invalidConfig, 'prevResult.ips: no address to check')
  const seen = await dp.read(w.hostVeth, env.ifname, env.netns)
  const problems = checkWiring(w, seen.pod, seen.host)
  if (problems.length > 0) throw new CniError(ERR_CHECK, `CHECK failed: ${problems.join('; ')}`)
  const type = ipamType(conf)
  if (type === 'pinto-ipam') await checkHeld(conf, env, clientFor(conf), [w.v4, w.v6].filter((a): a is string => a !== undefined))
  else await delegate(type, 'CHECK', inv.stdin, env.path)
}

export async function cmdStatus(inv: Invocation): Promise<void> {
  const type = ipamType(inv.conf)
  if (type === 'pinto-ipam') await status(clientFor(inv.conf))
  else await delegate(type, 'STATUS', inv.stdin, inv.env.path)
}

export async function cmdGc(inv: Invocation): Promise<void> {
  const type = ipamType(inv.conf)
  if (type === 'pinto-ipam') await collect(inv.conf, validAttachments(inv.conf.raw), clientFor(inv.conf))
  else await delegate(type, 'GC', inv.stdin, inv.env.path)
}
