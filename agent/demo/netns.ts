// The demo's network namespaces: a fabric namespace holding bridge br0, node namespaces joined to it by
// veth pairs born inside the fabric, and pod namespaces. Names carry the creating pid, so a later run can
// sweep what a killed run left. It never creates anything in the machine's own namespace.

import { randomBytes } from 'node:crypto'
import { execa } from 'execa'
import { isAlive, killQuietly, namespacePids, sweepDeadRuns } from './processes.js'

/** pdm<creator pid>-<6 hex>-<role> */
const NAME_RE = /^pdm(\d+)-([0-9a-f]{6})-/
export const TEMP_PREFIX = 'pinto-demo-'

export { isAlive, killQuietly, namespacePids } from './processes.js'

export async function ip(ns: string, args: readonly string[]): Promise<string> {
  return String((await execa('ip', ['-n', ns, ...args])).stdout)
}

/** Runs a command inside a namespace; rejects with its stderr on failure. */
export async function nsExec(ns: string, cmd: string, args: readonly string[], opts: { timeoutMs?: number; input?: string; env?: Record<string, string> } = {}): Promise<string> {
  const r = await execa('ip', ['netns', 'exec', ns, cmd, ...args], {
    ...(opts.timeoutMs !== undefined ? { timeout: opts.timeoutMs } : {}),
    ...(opts.input !== undefined ? { input: opts.input } : {}),
    ...(opts.env !== undefined ? { env: opts.env, extendEnv: true } : {}),
  })
  return String(r.stdout)
}

export class Namespaces {
  readonly id = randomBytes(3).toString('hex')
  readonly prefix = `pdm${process.pid}-${this.id}`
  readonly made: string[] = []
  /** Set when the cluster is being removed: nothing new may be made. */
  closed = false
  /** Kill with SIGKILL and wait less (a second Ctrl-C). */
  hurry = false

  name(role: string): string {
    return `${this.prefix}-${role}`
  }

  async add(role: string): Promise<string> {
    const ns = this.name(role)
    if (this.closed) throw new Error(`not making namespace ${ns}: the cluster is being removed`)
    await execa('ip', ['netns', 'add', ns])
    // destroy() may have begun while `ip` ran: then this one is removed here, not left behind.
    if (this.closed) {
      await deleteNamespace(ns)
      throw new Error(`not keeping namespace ${ns}: the cluster is being removed`)
    }
    this.made.push(ns)
    await ip(ns, ['link', 'set', 'lo', 'up'])
    return ns
  }

  /** Deletes one namespace made here (a pod's, say) with whatever still runs in it. */
  async remove(ns: string): Promise<void> {
    const i = this.made.indexOf(ns)
    if (i < 0) return
    for (const pid of await namespacePids(ns)) killQuietly(pid, 'SIGKILL')
    // One that stays busy is kept in `made`: destroy() tries it again once every process is gone.
    if (await deleteNamespace(ns, 0)) this.made.splice(this.made.indexOf(ns), 1)
  }

  /** The fabric: a namespace with bridge br0. */
  async fabric(): Promise<string> {
    const ns = await this.add('fabric')
    await ip(ns, ['link', 'add', 'br0', 'type', 'bridge'])
    await ip(ns, ['link', 'set', 'br0', 'up'])
    return ns
  }

  /** A host on the fabric: eth0 with `cidr`, plus an optional default gateway. */
  async host(role: string, cidr: string, gateway?: string): Promise<string> {
    const fabric = this.name('fabric')
    const ns = await this.add(role)
    const port = `p-${role}`.slice(0, 15)
    await ip(fabric, ['link', 'add', port, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns])
    await ip(fabric, ['link', 'set', port, 'master', 'br0'])
    await ip(fabric, ['link', 'set', port, 'up'])
    await ip(ns, ['addr', 'add', cidr, 'dev', 'eth0'])
    await ip(ns, ['link', 'set', 'eth0', 'up'])
    // A node with a default route, like a real one: proxy ARP for the pods' 169.254.1.1 gateway
    // answers only when the host can route the address.
    if (gateway !== undefined) await ip(ns, ['route', 'add', 'default', 'via', gateway, 'dev', 'eth0'])
    return ns
  }

  /** Kills every process inside our namespaces, then deletes them (pods and nodes before the fabric). */
  async destroy(): Promise<void> {
    this.closed = true
    const pids = new Set<number>()
    for (const ns of this.made) for (const pid of await namespacePids(ns)) pids.add(pid)
    for (const pid of pids) killQuietly(pid, this.hurry ? 'SIGKILL' : 'SIGTERM')
    const deadline = Date.now() + 3000
    while ([...pids].some(isAlive) && Date.now() < deadline && !this.hurry) await new Promise((r) => setTimeout(r, 50))
    for (const pid of pids) if (isAlive(pid)) killQuietly(pid, 'SIGKILL')
    // A namespace an add() in flight makes meanwhile is taken too: the loop runs until none is left.
    const left: string[] = []
    while (this.made.length > 0) {
      const ns = this.made.pop() as string
      if (!(await deleteNamespace(ns))) left.push(ns)
    }
    if (left.length > 0) throw new Error(`could not delete namespaces ${left.join(', ')}: ip netns del kept failing for 5 s`)
  }
}

/**
 * `ip netns del`, retried for up to `retryMs`: a namespace file is busy while another mount namespace holds
 * a copy of its mount (a process under `ip netns exec`, a container with /run/netns) and is going away.
 * False if it stayed.
 */
async function deleteNamespace(ns: string, retryMs = 5000): Promise<boolean> {
  const until = Date.now() + retryMs
  for (;;) {
    const r = await execa('ip', ['netns', 'del', ns], { reject: false })
    if (r.exitCode === 0 || /No such file/.test(String(r.stderr))) return true
    if (Date.now() > until) return false
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

/** Removes what a killed demo left: its namespaces (with their processes) and temp dirs. Live runs are left alone. */
export function sweepStale(): Promise<string[]> {
  return sweepDeadRuns(NAME_RE, (entry) => (entry.startsWith(TEMP_PREFIX) ? entry.slice(TEMP_PREFIX.length, TEMP_PREFIX.length + 6) : undefined))
}
