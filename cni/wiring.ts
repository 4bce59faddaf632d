// Applies, removes and reads a pod's wiring through `ip` (pod side via nsenter on CNI_NETNS) and the
// host-side sysctls through /proc/sys/net of the plugin's own netns. What to write is decided in wiring-plan.

import { existsSync, writeFileSync } from 'node:fs'
import { type Runner, run as defaultRun } from './exec.js'
import { CniError, ERR } from './spec.js'
import { type SideState, type Wiring, hostBatch, hostSysctls, podBatch, sideState } from './wiring-plan.js'

const NO_DEVICE = /Cannot find device|does not exist/

export class Dataplane {
  constructor(private readonly run: Runner = defaultRun) {}

  private inPod(netns: string, args: readonly string[], input?: string): ReturnType<Runner> {
    return this.run('nsenter', [`--net=${netns}`, 'ip', ...args], input === undefined ? {} : { input })
  }

  /** Whether a link of this name exists in the plugin's own netns (a stat, no process). */
  hostLinkExists(name: string): boolean {
    return existsSync(`/proc/sys/net/ipv4/conf/${name}`)
  }

  /** Creates the veth pair, addresses and routes; on any failure removes what it made and throws. */
  async wire(w: Wiring, netns: string): Promise<void> {
    const pod = await this.inPod(netns, ['-batch', '-'], podBatch(w, process.pid))
    if (pod.code !== 0) {
      await this.removeHostVeth(w.hostVeth)
      throw new CniError(ERR.io, `wiring ${w.ifname} in ${netns} failed: ${pod.stderr.trim()}`)
    }
    try {
      for (const [path, value] of hostSysctls(w.hostVeth, w.v6 !== undefined)) writeFileSync(`/proc/sys/net/${path}`, value)
      const host = await this.run('ip', ['-batch', '-'], { input: hostBatch(w) })
      if (host.code !== 0) throw new CniError(ERR.io, `wiring host veth ${w.hostVeth} failed: ${host.stderr.trim()}`)
    } catch (err) {
      // Deleting the host end removes the pod end with it.
      await this.removeHostVeth(w.hostVeth)
      if (err instanceof CniError) throw err
      throw new CniError(ERR.io, `wiring host veth ${w.hostVeth} failed: ${(err as Error).message}`)
    }
  }

  async removeHostVeth(name: string): Promise<void> {
    if (!this.hostLinkExists(name)) return
    const r = await this.run('ip', ['link', 'del', name])
    if (r.code !== 0 && !NO_DEVICE.test(r.stderr)) throw new CniError(ERR.io, `deleting host veth ${name}: ${r.stderr.trim()}`)
  }

  /** DEL's wiring part: a missing netns or link is success (the spec asks DEL to be idempotent). */
  async unwire(hostVeth: string, ifname: string, netns: string): Promise<void> {
    if (netns !== '' && existsSync(netns)) {
      const r = await this.inPod(netns, ['link', 'del', ifname])
      if (r.code !== 0 && !NO_DEVICE.test(r.stderr) && existsSync(netns)) {
        throw new CniError(ERR.io, `deleting ${ifname} in ${netns}: ${r.stderr.trim()}`)
      }
    }
    await this.removeHostVeth(hostVeth)
  }

  /** The kernel's view of both ends, for CHECK and for an ADD of an already-wired container. */
  async read(hostVeth: string, ifname: string, netns: string): Promise<{ pod: SideState; host: SideState }> {
    const pod4 = await this.inPod(netns, ['-j', '-batch', '-'], `addr show dev ${ifname}\nroute show dev ${ifname}\n`)
    const pod6 = pod4.code === 0 ? await this.inPod(netns, ['-j', '-6', 'route', 'show', 'dev', ifname]) : undefined
    const [podLink, podRoutes] = pod4.code === 0 ? pod4.stdout.trim().split('\n') : []
    const host4 = await this.run('ip', ['-j', '-batch', '-'], { input: `link show dev ${hostVeth}\nroute show dev ${hostVeth}\n` })
    const host6 = host4.code === 0 ? await this.run('ip', ['-j', '-6', 'route', 'show', 'dev', hostVeth]) : undefined
    const [hostLink, hostRoutes] = host4.code === 0 ? host4.stdout.trim().split('\n') : []
    return {
      pod: sideState(podLink, [podRoutes ?? '', pod6?.stdout.trim() ?? '']),
      host: sideState(hostLink, [hostRoutes ?? '', host6?.stdout.trim() ?? '']),
    }
  }
}
