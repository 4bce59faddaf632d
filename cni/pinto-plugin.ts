// The `pinto` main plugin: one handler per verb (STYLE 14). ADD is a straight line that gives its addresses
// back if a later step fails; DEL is idempotent; CHECK reads the kernel. Wiring details live in wiring*.ts.

import { closeSync, openSync, readFileSync, readSync } from 'node:fs'
import { type NetConf, handleOf, podIdentity, validHandles } from './config.js'
import { oweRelease, settleRelease } from './release-spool.js'
import { delegate } from './delegate.js'
import { ERR_CHECK, assign, checkHeld, clientFor, collect, ipamSocket, release, status } from './ipam-core.js'
import { type IpamPort, OutcomeUnknown } from './ipam-client.js'
import { type CniIp, type CniResult, type CniRoute, parseResult } from './result.js'
import { type CniEnv, CniError, ERR } from './spec.js'
import { vethName } from './veth-name.js'
import { Dataplane, checkNetns, sameFile } from './wiring.js'
import { addThroughAgent, delThroughAgent } from './agent-channel.js'
import { GATEWAY_V4, GATEWAY_V6, HOST_MAC, type SideState, type Veth, type Wiring, checkWiring, foreignWiring, holdsRoutes, ownedBy, podMacFrom, sameContainer } from './wiring-plan.js'

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
  return vethName(inv.conf.vethPrefix, podIdentity(inv.env.args), inv.env.containerId, inv.env.ifname)
}

/** The attachment's id: its IPAM handle, which its host veth records as its ifalias. */
function attachmentOf(inv: Invocation): string {
  return handleOf(inv.conf.name, inv.env.containerId, inv.env.ifname)
}

/** What is known of the attachment's veth before its MTU and MAC are. */
function vethOf(inv: Invocation): Pick<Veth, 'ifname' | 'hostVeth' | 'owner' | 'containerId'> {
  return { ifname: inv.env.ifname, hostVeth: hostVethOf(inv), owner: attachmentOf(inv), containerId: inv.env.containerId }
}

/**
 * The host veths that are this attachment's live wiring, whatever their names (an ADD without the CNI_ARGS
 * of the one that wired it computes another), found by their ifalias. Asked on failure paths only, where
 * undefined (the links could not be read) counts as wired: keeping an attachment's addresses is the safe
 * mistake, since its DEL frees them.
 */
async function wiredAs(inv: Invocation, dp: Dataplane): Promise<string[] | undefined> {
  const { owner, containerId } = vethOf(inv)
  return dp.linksNaming((alias) => alias === owner || alias === containerId).catch(() => undefined)
}

/** `err` with the note that the attachment's live wiring and addresses were left as they were. */
function keptLive(err: unknown, veths: readonly string[] | undefined): unknown {
  if (!(err instanceof CniError)) return err
  const where = veths === undefined || veths.length === 0 ? '' : ` (host veth ${veths.join(', ')})`
  return new CniError(err.code, `${err.message}; this attachment is wired already${where}: its wiring and addresses are left as they were`, err.details)
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
    settleRelease(ipamSocket(inv.conf), attachmentOf(inv))
    return { v4: r.ipv4[0]?.address, v6: r.ipv6[0]?.address }
  }
  const r = await delegate(type, 'ADD', inv.stdin, inv.env.path)
  const got = pick(r?.ips ?? [])
  if (got.v4 === undefined && got.v6 === undefined) throw new CniError(ERR.io, `${type} ADD returned no address`)
  return got
}

/**
 * The assign went out and no answer came (the agent died in it): the addresses may be held. The handle is
 * this attachment's alone (and no wiring of it is live: the caller asked), so it is released, retried while the agent restarts (a DaemonSet brings it
 * back in seconds), for at most 10 s. The release is noted as owed first (release-spool.ts): past the
 * 10 s, pinto-node makes it when it starts (unless a later ADD wired the pod), as does the runtime's DEL.
 * Returns the error ADD answers: released, it is "try again later", as for an agent that was not running.
 */
async function releaseUnknown(inv: Invocation, client: IpamPort, err: OutcomeUnknown): Promise<CniError> {
  const socket = ipamSocket(inv.conf)
  const handle = attachmentOf(inv)
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

/**
 * ADD's IPAM failed: a request whose outcome is not known is released first, unless the attachment is
 * wired already (`live`, from wiredAs): then what its handle holds is that wiring's, and stays.
 */
async function ipamFailed(inv: Invocation, client: IpamPort, err: unknown, live: readonly string[] | undefined): Promise<unknown> {
  if (live === undefined || live.length > 0) return keptLive(err, live)
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

/** ADD's result: the host veth, the pod interface, its addresses and (on the primary interface) the default routes. */
function resultOf(inv: Invocation, w: Wiring): CniResult {
  const ips: CniIp[] = []
  const routes: CniRoute[] = []
  const dflt = holdsRoutes(w.ifname)
  if (w.v4 !== undefined) {
    ips.push({ address: `${w.v4}/32`, interface: 1 })
    if (dflt) routes.push({ dst: '0.0.0.0/0', gw: GATEWAY_V4 })
  }
  if (w.v6 !== undefined) {
    ips.push({ address: `${w.v6}/128`, interface: 1 })
    if (dflt) routes.push({ dst: '::/0', gw: GATEWAY_V6 })
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
 * agent cannot (no channel, a config too large for it, a netns it cannot see). A failed ADD undoes what it
 * made and nothing else: an attachment already wired (a repeated ADD) keeps its veth and its addresses.
 */
export async function cmdAdd(inv: Invocation, dp = new Dataplane(), port?: IpamPort): Promise<CniResult> {
  const { env } = inv
  checkNetns(env.netns)
  if (port === undefined && inv.conf.ipam?.type === 'pinto-ipam') {
    const done = await addThroughAgent(inv)
    if (done !== undefined) return done
  }
  const client = port ?? clientFor(inv.conf)
  const veth: Veth = { ...vethOf(inv), mtu: effectiveMtu(inv.conf), podMac: podMacFrom(randomBytes(5)) }
  return dp.exclusive(veth.hostVeth, async () => {
    const recorded = await dp.owner(veth.hostVeth)
    if (recorded !== undefined && ownedBy(recorded, veth)) return addAgain(inv, veth, dp, client)
    if (recorded !== undefined && sameContainer(recorded, env.containerId)) {
      throw new CniError(ERR.io, `host veth ${veth.hostVeth} is ${recorded}'s, another attachment of container ${env.containerId}: left as it is`)
    }
    // Another container's veth under this pod's name: the pod's old sandbox, gone or going. The new sandbox
    // takes the name; the old container's addresses stay its own until its DEL (or GC) releases them.
    if (recorded !== undefined) await dp.removeHostVeth(veth.hostVeth)
    // The veth needs no address: its ip starts while the IPAM request is out (sent first, since a spawn
    // holds the thread), and whichever of the two failed, the other is undone.
    const ipam = ipamAdd(inv, client)
    await requestOut(ipamType(inv.conf), client, ipam)
    const [addrs, wired] = await Promise.allSettled([ipam, dp.wire(veth, env.netns, ipam)])
    if (addrs.status === 'rejected' || wired.status === 'rejected') {
      // The veth this ADD made is gone (wire() removes it). The addresses go too, unless the attachment is
      // wired under another name: a repeated ADD without its first one's CNI_ARGS got the addresses that
      // wiring holds, and they stay its own.
      const live = await wiredAs(inv, dp)
      if (addrs.status === 'rejected') throw await ipamFailed(inv, client, addrs.reason, live)
      const reason = (wired as PromiseRejectedResult).reason as unknown
      if (live === undefined || live.length > 0) throw keptLive(reason, live)
      await ipamDel(inv, client).catch(() => undefined)
      throw reason
    }
    const w: Wiring = { ...veth, ...addrs.value }
    return resultOf(inv, w)
  })
}

/**
 * A repeated ADD of an attachment whose veth is there. As ADD left it: the same result. Drifted (a route
 * gone, the link down): repaired in place, nothing removed first. Anything else (its pod end not this
 * netns's CNI_IFNAME, an address IPAM does not hold for it): an error, and the wiring is left as it is. No
 * failure here releases anything: the addresses are the live attachment's.
 */
async function addAgain(inv: Invocation, veth: Veth, dp: Dataplane, client: IpamPort): Promise<CniResult> {
  const { env } = inv
  let w: Wiring
  try {
    w = { ...veth, ...(await ipamAdd(inv, client)) }
  } catch (err) {
    throw keptLive(err, [veth.hostVeth])
  }
  const seen = await dp.read(w.hostVeth, env.ifname, env.netns)
  if (checkWiring({ ...w, podMac: '' }, seen.pod, seen.host).length === 0 && seen.pod.link?.mtu === w.mtu) {
    return resultOf(inv, { ...w, podMac: seen.pod.link.mac })
  }
  const foreign = foreignWiring(w, env.netns, seen.pod, seen.host)
  if (foreign !== undefined) throw new CniError(ERR.io, `${foreign}: the attachment is left as it is (DEL it, then ADD)`)
  try {
    await dp.repair(w, env.netns)
  } catch (err) {
    throw keptLive(err, [veth.hostVeth])
  }
  const after = await dp.read(w.hostVeth, env.ifname, env.netns)
  const left = checkWiring({ ...w, podMac: '' }, after.pod, after.host)
  if (left.length > 0 || after.pod.link === undefined) throw new CniError(ERR.io, `repairing ${w.ifname} in ${env.netns} left: ${left.join('; ')}`)
  return resultOf(inv, { ...w, podMac: after.pod.link.mac })
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
  const veth = vethOf(inv)
  await dp.exclusive(veth.hostVeth, async () => {
    // The IPAM handle is this attachment's alone; the host veth only when it records this attachment (a
    // recreated sandbox's veth has the same name and is left to its own DEL).
    const released = ipamDel(inv, client)
    // No ipam section is DEL's error to report after the veth is gone, not before.
    await requestOut(inv.conf.ipam?.type, client, released)
    const [unwired, freed] = await Promise.allSettled([unwire(inv, veth, dp), released])
    if (unwired.status === 'rejected') throw unwired.reason
    if (freed.status === 'rejected') throw freed.reason
  })
}

/**
 * DEL's wiring part: the veth under the name DEL computes when it records this attachment. When there is
 * none of that name (a DEL without the CNI_ARGS its ADD had), the veth recording this attachment in its
 * ifalias goes, wherever its netns went: else its host route would outlive the address it routes.
 */
async function unwire(inv: Invocation, v: ReturnType<typeof vethOf>, dp: Dataplane): Promise<void> {
  const { env } = inv
  const recorded = await dp.owner(v.hostVeth)
  if (recorded !== undefined) return dp.unwire(ownedBy(recorded, v) ? v.hostVeth : undefined, env.ifname, env.netns)
  await dp.unwire(undefined, env.ifname, env.netns)
  for (const name of await dp.linksNaming((alias) => alias === v.owner)) await dp.removeHostVeth(name)
}

/** A prevResult route as `ip -j route` shows it on the pod's interface (wiring-plan.ts sideState). */
function shownRoute(r: CniRoute): string {
  const dst = r.dst === '0.0.0.0/0' || r.dst === '::/0' ? 'default' : r.dst.replace(/\/(32|128)$/, '')
  return r.gw === undefined ? dst : `${dst} via ${r.gw}`
}

/**
 * The attachment prevResult describes, against this CHECK's: its pod interface must be CNI_IFNAME in
 * CNI_NETNS, its host interface (when it names one) this attachment's veth. Returns the pod interface's index.
 */
function prevAttachment(inv: Invocation, prev: CniResult, hostVeth: string): number {
  const { env } = inv
  const ifaces = prev.interfaces ?? []
  const pod = ifaces.findIndex((i) => i.sandbox !== undefined)
  const named = ifaces[pod]
  if (named === undefined) throw new CniError(ERR_CHECK, 'CHECK failed: prevResult.interfaces names no interface in a sandbox')
  if (named.name !== env.ifname) throw new CniError(ERR_CHECK, `CHECK failed: prevResult.interfaces[${pod}] is ${named.name}, not CNI_IFNAME ${env.ifname}`)
  if (named.sandbox !== env.netns && !sameFile(named.sandbox as string, env.netns)) {
    throw new CniError(ERR_CHECK, `CHECK failed: prevResult.interfaces[${pod}].sandbox is ${named.sandbox}, not CNI_NETNS ${env.netns}`)
  }
  const host = ifaces.find((i) => i.sandbox === undefined)
  if (host !== undefined && host.name !== hostVeth) throw new CniError(ERR_CHECK, `CHECK failed: prevResult names host veth ${host.name}, but this attachment's is ${hostVeth}`)
  return pod
}

/** The addresses and routes prevResult gives the pod interface that it lacks, as sentences (checkWiring's wording). */
function missing(ifname: string, ips: readonly CniIp[], prev: CniResult, pod: SideState): string[] {
  return [
    ...ips.filter((i) => !pod.addrs.includes(i.address)).map((i) => `${ifname}'s addresses lacks ${i.address}`),
    ...(prev.routes ?? []).map(shownRoute).filter((r) => !pod.routes.includes(r)).map((r) => `the pod's interface lacks prevResult's route ${r}`),
  ]
}

/** CHECK: what prevResult says of this attachment (interface, sandbox, addresses, routes) is what the kernel and IPAM hold. */
export async function cmdCheck(inv: Invocation, dp = new Dataplane()): Promise<void> {
  const { env, conf } = inv
  if (conf.prevResult === undefined) throw new CniError(ERR.invalidConfig, 'prevResult: is missing (CHECK needs the result of ADD)')
  const prev = parseResult(conf.prevResult)
  checkNetns(env.netns)
  const hostVeth = hostVethOf(inv)
  const podIndex = prevAttachment(inv, prev, hostVeth)
  // The pod interface's addresses (one naming no interface is taken as its).
  const ips = (prev.ips ?? []).filter((i) => i.interface === undefined || i.interface === podIndex)
  const w: Wiring = { ...vethOf(inv), mtu: 0, podMac: prev.interfaces?.[podIndex]?.mac ?? '', ...pick(ips) }
  if (w.v4 === undefined && w.v6 === undefined) throw new CniError(ERR.invalidConfig, `prevResult.ips: no address on ${env.ifname} to check`)
  const seen = await dp.read(w.hostVeth, env.ifname, env.netns)
  const problems = [...new Set([...checkWiring(w, seen.pod, seen.host), ...missing(env.ifname, ips, prev, seen.pod)])]
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
  if (type === 'pinto-ipam') await collect(inv.conf, validHandles(inv.conf.raw, inv.conf.name), clientFor(inv.conf))
  else await delegate(type, 'GC', inv.stdin, inv.env.path)
}
