// Applies, removes and reads a pod's wiring through `ip` (pod side via `ip -n` or nsenter on CNI_NETNS), or,
// given an rtnetlink port (pinto-node's), makes and removes it through sockets in the two namespaces; the
// host-side sysctls through /proc/sys/net of the plugin's own netns. What to write is decided in wiring-plan.

import { existsSync, readFileSync, readdirSync, statSync, statfsSync } from 'node:fs'
import { writeFile } from 'node:fs/promises'
import { type Runner, run as defaultRun } from './exec.js'
import { CniError, ERR } from './spec.js'
import type { LinkOp } from '../felix/index.js'
import { type SideState, type Veth, VETH_LINES, type Wiring, hostBatch, hostOps, hostRepairBatch, hostSysctls, podBatch, podOps, podRepairBatch, sideState, vethLines, vethOps } from './wiring-plan.js'

const NO_DEVICE = /Cannot find device|does not exist/

/** Whether two paths name the same file (a namespace, say); false when either is missing. */
export function sameFile(a: string, b: string): boolean {
  try {
    const x = statSync(a)
    const y = statSync(b)
    return x.ino === y.ino && x.dev === y.dev
  } catch {
    return false
  }
}

/** statfs(2)'s f_type of the namespace filesystem (NSFS_MAGIC). */
const NSFS_MAGIC = 0x6e736673

/**
 * Refuses a CNI_NETNS that cannot be a pod's network namespace, before anything is made: one that does not
 * exist (code 3, as the spec has it), a file that is no namespace, or this process's own namespace (code 4:
 * wiring "the pod" there would take the host's interfaces).
 */
export function checkNetns(netns: string): void {
  if (!existsSync(netns)) throw new CniError(ERR.unknownContainer, `CNI_NETNS: ${netns} does not exist`)
  let type: number | undefined
  try {
    type = statfsSync(netns).type
  } catch {
    // Not readable here: ip finds out, and ADD's failure path undoes what it made.
  }
  if (type !== undefined && type !== NSFS_MAGIC) throw new CniError(ERR.invalidEnv, `CNI_NETNS: ${netns} is not a network namespace`)
  if (sameFile(netns, '/proc/self/ns/net')) throw new CniError(ERR.invalidEnv, `CNI_NETNS: ${netns} is the plugin's own network namespace, not a pod's`)
}

/**
 * The ifalias of every link in this process's netns that has one (link name to alias): /sys where it shows
 * this netns, else one `ip`. What host veths record (wiring-plan.ts ownedBy, aliasNames).
 */
export async function readAliases(run: Runner = defaultRun): Promise<Map<string, string>> {
  const out = new Map<string, string>()
  if (sysfsShowsOurNetns()) {
    for (const name of readdirSync('/sys/class/net')) {
      try {
        const alias = readFileSync(`/sys/class/net/${name}/ifalias`, 'utf8').replace(/\n$/, '')
        if (alias !== '') out.set(name, alias)
      } catch {
        // gone meanwhile, or not a link
      }
    }
    return out
  }
  const r = await run('ip', ['-j', 'link', 'show'])
  if (r.code !== 0) throw new CniError(ERR.io, `listing host links: ${r.stderr.trim()}`)
  for (const l of JSON.parse(r.stdout) as { ifname?: string; ifalias?: string }[]) {
    if (l.ifname !== undefined && l.ifalias !== undefined && l.ifalias !== '') out.set(l.ifname, l.ifalias)
  }
  return out
}

/** `ip` in the pod's netns: `ip -n NAME` when CNI_NETNS is a named netns (one exec fewer), else nsenter. */
function podIpCommand(netns: string): [string, string[]] {
  const m = /^\/(?:var\/)?run\/netns\/([^/]+)$/.exec(netns)
  // Only where ip looks for named namespaces.
  if (m !== null && sameFile(netns, `/var/run/netns/${m[1]}`)) return ['ip', ['-n', m[1] as string]]
  return ['nsenter', [`--net=${netns}`, 'ip']]
}

/** Set once /sys/class/net was seen to list this process's netns (it lists the netns that mounted it). */
let sysfsIsOurs = false

/**
 * Whether /sys/class/net lists the same links as /proc/net/dev, which is always this process's netns (links
 * are symlinks there; a file such as bonding_masters is not one).
 */
function sysfsShowsOurNetns(): boolean {
  if (sysfsIsOurs) return true
  try {
    const proc = readFileSync('/proc/net/dev', 'utf8').split('\n').slice(2).map((l) => l.split(':')[0]?.trim() ?? '').filter((n) => n !== '')
    const sys = new Set(readdirSync('/sys/class/net', { withFileTypes: true }).filter((d) => d.isSymbolicLink()).map((d) => d.name))
    sysfsIsOurs = proc.length === sys.size && proc.every((n) => sys.has(n))
  } catch {
    return false
  }
  return sysfsIsOurs
}

/**
 * The host side's sysctls, written from libuv's threads: a forwarding switch takes the kernel's lock on links (or
 * asks to be made again), which must not hold the main thread.
 */
async function writeHostSysctls(w: Pick<Wiring, 'hostVeth' | 'v6'>): Promise<void> {
  for (const [path, value] of hostSysctls(w.hostVeth, w.v6 !== undefined)) await writeFile(`/proc/sys/net/${path}`, value)
}

/** An rtnetlink socket in one namespace (felix/netns-rtnl.ts NetnsRtnl). */
export interface RtnlSession {
  /** Writes `ops` in order; the first refused throws an error whose `index` says which. */
  run(ops: readonly LinkOp[]): Promise<void>
  /** Deletes a link; done once `gone` is true or the kernel answered. A missing link is no failure. */
  remove(dev: string, gone?: () => boolean): Promise<void>
  close(): void
}

/** Opens sockets: in the namespace at a path, or this process's own for undefined. */
export interface RtnlPort {
  open(netns: string | undefined): RtnlSession
}

/** The op a failed run stopped at (an error from RtnlSession.run), -1 when unknown. */
function refusedAt(err: unknown): number {
  const i = (err as { index?: unknown }).index
  return typeof i === 'number' ? i : -1
}

const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err))

export class Dataplane {
  /** The work under way per host veth name, so that one pod's ADD and DEL in this process never interleave. */
  private readonly busy = new Map<string, Promise<unknown>>()

  constructor(
    private readonly run: Runner = defaultRun,
    /** Given, the veth is made, wired and removed through rtnetlink; reads and repairs stay with `ip`. */
    private readonly rtnl?: RtnlPort,
  ) {}

  /**
   * Runs `fn` once the work under way on host veth `name` in this process is done. In pinto-node, which serves
   * every plugin of the node, the DEL of a pod's old sandbox cannot then read the veth's owner, let the new
   * sandbox's ADD replace the veth, and delete the new one.
   */
  async exclusive<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const mine = (this.busy.get(name) ?? Promise.resolve()).then(fn, fn)
    const tail = mine.catch(() => undefined)
    this.busy.set(name, tail)
    try {
      return await mine
    } finally {
      if (this.busy.get(name) === tail) this.busy.delete(name)
    }
  }

  /**
   * The container ID recorded on host veth `name` (its ifalias, '' when none), or undefined when there is no
   * such link. A file read from /sys; `ip` only where /sys shows another netns than this process's.
   */
  async owner(name: string): Promise<string | undefined> {
    if (!this.hostLinkExists(name)) return undefined
    if (sysfsShowsOurNetns()) {
      try {
        return readFileSync(`/sys/class/net/${name}/ifalias`, 'utf8').replace(/\n$/, '')
      } catch {
        // Gone meanwhile, or /sys no longer shows this netns: ask ip.
      }
    }
    const r = await this.run('ip', ['-j', 'link', 'show', 'dev', name])
    if (r.code !== 0) {
      if (NO_DEVICE.test(r.stderr)) return undefined
      throw new CniError(ERR.io, `reading host veth ${name}: ${r.stderr.trim()}`)
    }
    return (JSON.parse(r.stdout) as { ifalias?: string }[])[0]?.ifalias ?? ''
  }

  private inPod(netns: string, args: readonly string[], input?: string | AsyncIterable<string>): ReturnType<Runner> {
    const [cmd, head] = podIpCommand(netns)
    return this.run(cmd, [...head, ...args], input === undefined ? {} : { input })
  }

  /** Whether a link of this name exists in the plugin's own netns (a stat, no process). */
  hostLinkExists(name: string): boolean {
    return existsSync(`/proc/sys/net/ipv4/conf/${name}`)
  }

  /**
   * Wires a pod, begun before its addresses are known. One `ip` in the pod makes the veth at once and
   * configures the pod side when `addresses` come; one `ip` in the host netns, started alongside, configures
   * the host side once the addresses and the host end are both there. ADD starts both while its IPAM
   * request is out, so their start-up is off the pod's path. On any failure the veth is removed; a failure of
   * `addresses` is left to the caller, which also releases them if the wiring failed.
   */
  async wire(v: Veth, netns: string, addresses: Promise<Pick<Wiring, 'v4' | 'v6'>>): Promise<void> {
    if (this.rtnl !== undefined) return this.wireRtnl(this.rtnl, v, netns, addresses)
    const got = addresses.then(
      (a) => ({ ...v, ...a }),
      () => undefined,
    )
    let podEnded = false
    const pod = this.inPod(netns, ['-batch', '-'], lines(vethLines(v, process.pid), got.then((w) => (w !== undefined ? podBatch(w) : undefined)))).finally(() => (podEnded = true))
    const hostLines = got.then(async (w) => {
      // The pod's ip makes both ends in one step; wait for it (or its end, if it failed).
      while (w !== undefined && !this.hostLinkExists(v.hostVeth) && !podEnded) await new Promise((r) => setTimeout(r, 1))
      if (w === undefined || !this.hostLinkExists(v.hostVeth)) return undefined
      await writeHostSysctls(w)
      return hostBatch(w)
    })
    const host = this.run('ip', ['-batch', '-'], { input: lines(undefined, hostLines.catch(() => undefined)) })
    const [p, h, hl] = await Promise.allSettled([pod, host, hostLines])
    // The batch line the pod's ip stopped at, 0 for none: 1 made nothing, 2 and 3 left the pair in the pod.
    const failedLine = p.status === 'fulfilled' && p.value.code !== 0 ? Number(/Command failed -:(\d+)$/m.exec(p.value.stderr)?.[1] ?? 0) : 0
    const failure = ((): CniError | undefined => {
      if (p.status === 'rejected') return new CniError(ERR.io, `creating veth ${v.ifname}/${v.hostVeth} in ${netns} failed: ${(p.reason as Error).message}`)
      if (p.value.code !== 0) {
        const atCreate = failedLine >= 1 && failedLine <= VETH_LINES
        return new CniError(ERR.io, `${atCreate ? `creating veth ${v.ifname}/${v.hostVeth}` : `wiring ${v.ifname}`} in ${netns} failed: ${p.value.stderr.trim()}`)
      }
      if (hl.status === 'rejected') return new CniError(ERR.io, `wiring host veth ${v.hostVeth} failed: ${(hl.reason as Error).message}`)
      if (h.status === 'rejected' || h.value.code !== 0) return new CniError(ERR.io, `wiring host veth ${v.hostVeth} failed: ${h.status === 'rejected' ? (h.reason as Error).message : h.value.stderr.trim()}`)
      return undefined
    })()
    if (failure === undefined && (await got) !== undefined) return
    // Deleting the host end removes the pod end with it; a host veth of that name not made here is left.
    if (failedLine > 1 && failedLine <= VETH_LINES) await this.inPod(netns, ['link', 'del', v.ifname])
    else if ((await this.owner(v.hostVeth).catch(() => undefined)) === v.owner) await this.removeHostVeth(v.hostVeth)
    if (failure !== undefined) throw failure
  }

  /**
   * wire() through rtnetlink: the pair made from this process's namespace with its pod end straight in the
   * pod's (vethOps), then, once the addresses come, the pod side through a socket opened in the pod's
   * namespace, the host sysctls and the host side. Failures are undone as in wire().
   */
  private async wireRtnl(rtnl: RtnlPort, v: Veth, netns: string, addresses: Promise<Pick<Wiring, 'v4' | 'v6'>>): Promise<void> {
    // Taken now: the addresses may fail while the pair is being made.
    const wiring = addresses.then(
      (a) => ({ ...v, ...a }),
      () => undefined,
    )
    const host = rtnl.open(undefined)
    try {
      await host.run(vethOps(v, netns))
    } catch (err) {
      // Refused after the pair was made (its owner): it goes, the pod end with it.
      if (refusedAt(err) > 0) await host.remove(v.hostVeth, () => !this.hostLinkExists(v.hostVeth)).catch(() => undefined)
      throw new CniError(ERR.io, `creating veth ${v.ifname}/${v.hostVeth} in ${netns} failed: ${messageOf(err)}`)
    } finally {
      host.close()
    }
    const got = await wiring
    const failure = got === undefined ? undefined : await this.configure(rtnl, got, netns)
    if (failure === undefined && got !== undefined) return
    // Deleting the host end removes the pod end with it; a host veth of that name not made here is left.
    if ((await this.owner(v.hostVeth).catch(() => undefined)) === v.owner) await this.removeHostVeth(v.hostVeth)
    if (failure !== undefined) throw failure
  }

  /** The pod side, the host sysctls, the host side: the first failure, or undefined. */
  private async configure(rtnl: RtnlPort, w: Wiring, netns: string): Promise<CniError | undefined> {
    let pod: RtnlSession | undefined
    try {
      pod = rtnl.open(netns)
      await pod.run(podOps(w))
    } catch (err) {
      return new CniError(ERR.io, `wiring ${w.ifname} in ${netns} failed: ${messageOf(err)}`)
    } finally {
      pod?.close()
    }
    let host: RtnlSession | undefined
    try {
      await writeHostSysctls(w)
      host = rtnl.open(undefined)
      await host.run(hostOps(w))
      return undefined
    } catch (err) {
      return new CniError(ERR.io, `wiring host veth ${w.hostVeth} failed: ${messageOf(err)}`)
    } finally {
      host?.close()
    }
  }

  /**
   * Deletes a veth by its host end, which takes the pod end with it. Done once the link is out of the
   * namespace: the kernel unlists both ends, drops their addresses and routes and then waits for the
   * devices' last references (an RCU grace period) before `ip` gets its answer. Nothing can
   * reach or reuse the old devices in that time and their names are free again, so the wait is left to
   * `ip` alone. If `ip` ends first (say, with an error), its answer is the one that counts.
   */
  async removeHostVeth(name: string): Promise<void> {
    if (!this.hostLinkExists(name)) return
    if (this.rtnl !== undefined) {
      const host = this.rtnl.open(undefined)
      try {
        await host.remove(name, () => !this.hostLinkExists(name))
      } catch (err) {
        throw new CniError(ERR.io, `deleting host veth ${name}: ${messageOf(err)}`)
      } finally {
        host.close()
      }
      return
    }
    // As a batch of one line: inside pinto-node, an `ip -batch -` is already running for it (warm-runner).
    const r = await this.run('ip', ['-batch', '-'], { input: `link del ${name}\n`, leaveWhen: () => !this.hostLinkExists(name) })
    if (r.code !== 0 && !NO_DEVICE.test(r.stderr)) throw new CniError(ERR.io, `deleting host veth ${name}: ${r.stderr.trim()}`)
  }

  /**
   * DEL's wiring part: a missing netns or link is success (the spec asks DEL to be idempotent). `hostVeth` is
   * the host end when it belongs to this attachment, undefined when there is none or it is another's:
   * then only `ifname` in the attachment's own netns goes.
   */
  async unwire(hostVeth: string | undefined, ifname: string, netns: string): Promise<void> {
    // Deleting the host end takes the pod end with it, without ip entering the pod's netns.
    if (hostVeth !== undefined && this.hostLinkExists(hostVeth)) return this.removeHostVeth(hostVeth)
    if (netns !== '' && existsSync(netns) && this.rtnl !== undefined) {
      try {
        const pod = this.rtnl.open(netns)
        try {
          await pod.remove(ifname)
        } finally {
          pod.close()
        }
      } catch (err) {
        if (existsSync(netns)) throw new CniError(ERR.io, `deleting ${ifname} in ${netns}: ${messageOf(err)}`)
      }
    } else if (netns !== '' && existsSync(netns)) {
      const r = await this.inPod(netns, ['link', 'del', ifname])
      if (r.code !== 0 && !NO_DEVICE.test(r.stderr) && existsSync(netns)) {
        throw new CniError(ERR.io, `deleting ${ifname} in ${netns}: ${r.stderr.trim()}`)
      }
    }
    if (hostVeth !== undefined) await this.removeHostVeth(hostVeth)
  }

  /** The host links whose ifalias passes `names` (an attachment's veths, wherever their names came from). */
  async linksNaming(names: (alias: string) => boolean): Promise<string[]> {
    return [...(await readAliases(this.run))].filter(([, alias]) => names(alias)).map(([name]) => name)
  }

  /**
   * Brings a drifted wiring back to `w` in place (wiring-plan.ts podRepairBatch): the pod side, the host
   * sysctls, the host side. Nothing is removed first, so a failure leaves at least what was there.
   */
  async repair(w: Wiring, netns: string): Promise<void> {
    const pod = await this.inPod(netns, ['-batch', '-'], podRepairBatch(w))
    if (pod.code !== 0) throw new CniError(ERR.io, `repairing ${w.ifname} in ${netns} failed: ${pod.stderr.trim()}`)
    try {
      await writeHostSysctls(w)
    } catch (err) {
      throw new CniError(ERR.io, `repairing host veth ${w.hostVeth} failed: ${(err as Error).message}`)
    }
    const host = await this.run('ip', ['-batch', '-'], { input: hostRepairBatch(w) })
    if (host.code !== 0) throw new CniError(ERR.io, `repairing host veth ${w.hostVeth} failed: ${host.stderr.trim()}`)
  }

  /** The kernel's view of both ends, for CHECK and for an ADD of an already-wired container. */
  async read(hostVeth: string, ifname: string, netns: string): Promise<{ pod: SideState; host: SideState }> {
    const pod4 = await this.inPod(netns, ['-j', '-batch', '-'], `addr show dev ${ifname}\nroute show dev ${ifname}\nneigh show dev ${ifname}\n`)
    const pod6 = pod4.code === 0 ? await this.inPod(netns, ['-j', '-6', 'route', 'show', 'dev', ifname]) : undefined
    const [podLink, podRoutes, podNeigh] = pod4.code === 0 ? pod4.stdout.trim().split('\n') : []
    const host4 = await this.run('ip', ['-j', '-batch', '-'], { input: `link show dev ${hostVeth}\nroute show dev ${hostVeth}\n` })
    const host6 = host4.code === 0 ? await this.run('ip', ['-j', '-6', 'route', 'show', 'dev', hostVeth]) : undefined
    const [hostLink, hostRoutes] = host4.code === 0 ? host4.stdout.trim().split('\n') : []
    return {
      pod: sideState(podLink, [podRoutes ?? '', pod6?.stdout.trim() ?? ''], podNeigh ?? ''),
      host: sideState(hostLink, [hostRoutes ?? '', host6?.stdout.trim() ?? '']),
    }
  }
}

/** `first` at once, then `rest` when it comes (nothing more if it comes undefined). */
async function* lines(first: string | undefined, rest: Promise<string | undefined>): AsyncGenerator<string> {
  if (first !== undefined) yield first
  const more = await rest
  if (more !== undefined) yield more
}
