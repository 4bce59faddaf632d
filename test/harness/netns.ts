// Test topologies as network namespaces: one fabric namespace holding a bridge, node namespaces joined to
// it by veth pairs, and every process started inside them. Nothing is ever created in the machine's own
// namespace (veths are born inside the fabric), and destroy() removes everything, even after a failure.

import { randomBytes } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { execa, type Options, type ResultPromise } from 'execa'
import { waitFor } from './wait.js'
import { isAlive } from './pid.js'
import { killQuietly, namespacePids, sweepDeadRuns } from '../../agent/demo/processes.js'

/** Namespaces made here are named pth<creator pid>-<random>-<role>, so a sweep can tell stale ones apart. */
const NAME_RE = /^pth(\d+)-([0-9a-f]{6})-/

export interface NodeSpec {
  /** Short role name, e.g. "bird"; becomes part of the namespace name. */
  readonly name: string
  /** IPv4 address with length, from 192.0.2.0/24, 198.51.100.0/24 or 203.0.113.0/24. */
  readonly v4?: string
  /** IPv6 address with length, from 2001:db8::/32. */
  readonly v6?: string
}

export interface NetNode {
  readonly name: string
  /** The namespace's name, for `ip netns exec`. */
  readonly ns: string
  /** The node's interface on the fabric (always eth0 inside the node). */
  readonly ifname: string
  /** Address without length, or undefined when the spec had none. */
  readonly v4: string | undefined
  readonly v6: string | undefined
}

/** Anything with tap's teardown; keeps this module free of a tap import. */
export interface Teardown {
  teardown(fn: () => unknown): void
}

const DOC_V4 = [/^192\.0\.2\./, /^198\.51\.100\./, /^203\.0\.113\./]

function checkAddress(field: string, cidr: string | undefined, v6: boolean): void {
  if (cidr === undefined) return
  const [addr, len] = cidr.split('/')
  if (addr === undefined || len === undefined || !/^\d+$/.test(len)) throw new Error(`${field}: "${cidr}" is not ADDRESS/LENGTH`)
  const ok = v6 ? addr.toLowerCase().startsWith('2001:db8:') : DOC_V4.some((re) => re.test(addr))
  if (!ok) throw new Error(`${field}: ${cidr} is outside the documentation ranges tests may use`)
}

let sweptOnce: Promise<string[]> | undefined

export class Topology {
  readonly id: string
  readonly fabric: string
  readonly nodes = new Map<string, NetNode>()
  private readonly namespaces: string[] = []
  private readonly children = new Set<ResultPromise>()
  private readonly pids = new Set<number>()
  private readonly dirs: string[] = []
  private destroyed = false

  private constructor(id: string) {
    this.id = id
    this.fabric = `pth${process.pid}-${id}-fabric`
  }

  /** Creates the fabric (bridge br0) and registers destroy() with `t.teardown` when given. */
  static async create(t?: Teardown): Promise<Topology> {
    // A harness killed outright (tap's timeout, SIGKILL) never ran its teardown; its leftovers go here.
    sweptOnce ??= sweepStaleNamespaces()
    await sweptOnce
    const topo = new Topology(randomBytes(3).toString('hex'))
    // Registered before anything exists, so a failure halfway through still cleans up.
    t?.teardown(() => topo.destroy())
    await topo.addNamespace(topo.fabric)
    await topo.ip(topo.fabric, ['link', 'add', 'br0', 'type', 'bridge'])
    await topo.ip(topo.fabric, ['link', 'set', 'br0', 'up'])
    return topo
  }

  /** A node namespace with eth0 on the fabric bridge, loopback up and the given addresses. */
  async addNode(spec: NodeSpec): Promise<NetNode> {
    if (!/^[a-z0-9]{1,12}$/.test(spec.name)) throw new Error(`node.name: "${spec.name}" must be 1-12 of [a-z0-9]`)
    if (this.nodes.has(spec.name)) throw new Error(`node.name: "${spec.name}" already exists in this topology`)
    checkAddress(`node ${spec.name}.v4`, spec.v4, false)
    checkAddress(`node ${spec.name}.v6`, spec.v6, true)
    const ns = `pth${process.pid}-${this.id}-${spec.name}`
    await this.addNamespace(ns)
    // No duplicate address detection: a tentative IPv6 address cannot be bound until DAD ends, and the
    // link-local one must be usable as a BGP next hop at once. Set before eth0 exists so it inherits.
    for (const key of ['all', 'default']) {
      await this.exec(ns, 'sysctl', ['-q', '-w', `net.ipv6.conf.${key}.accept_dad=0`])
    }
    const port = `p-${spec.name}`
    await this.ip(this.fabric, ['link', 'add', port, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns])
    await this.ip(this.fabric, ['link', 'set', port, 'master', 'br0'])
    await this.ip(this.fabric, ['link', 'set', port, 'up'])
    await this.ip(ns, ['link', 'set', 'lo', 'up'])
    // A MAC derived from the node's position keeps the IPv6 link-local address (and so captured next hops)
    // the same from run to run.
    await this.ip(ns, ['link', 'set', 'eth0', 'address', stableMac(spec.v4, this.nodes.size + 1)])
    if (spec.v4 !== undefined) await this.ip(ns, ['addr', 'add', spec.v4, 'dev', 'eth0'])
    if (spec.v6 !== undefined) await this.ip(ns, ['-6', 'addr', 'add', spec.v6, 'dev', 'eth0', 'nodad'])
    await this.ip(ns, ['link', 'set', 'eth0', 'up'])
    const node: NetNode = { name: spec.name, ns, ifname: 'eth0', v4: spec.v4?.split('/')[0], v6: spec.v6?.split('/')[0] }
    this.nodes.set(spec.name, node)
    return node
  }

  node(name: string): NetNode {
    const n = this.nodes.get(name)
    if (n === undefined) throw new Error(`no node "${name}" in topology ${this.id}`)
    return n
  }

  /** Runs a command inside a namespace and waits for it; rejects with its stderr on a non-zero exit. */
  exec(ns: string, cmd: string, args: readonly string[], opts: Options = {}): ResultPromise<Options> {
    return execa('ip', ['netns', 'exec', ns, cmd, ...args], opts)
  }

  /**
   * Starts a long-running process inside a namespace. `ip netns exec` execs the command, so the
   * child's PID is the program's own; it is killed by destroy() if still running.
   */
  spawn(ns: string, cmd: string, args: readonly string[], opts: Options = {}): ResultPromise<Options> {
    const child = execa('ip', ['netns', 'exec', ns, cmd, ...args], { ...opts, reject: false })
    this.children.add(child)
    void child.finally(() => this.children.delete(child))
    return child
  }

  /** Remembers a PID (a daemon that forked itself) to be killed at destroy(). */
  trackPid(pid: number): void {
    this.pids.add(pid)
  }

  /** A private temp directory removed at destroy(). */
  async tempDir(label: string): Promise<string> {
    const dir = await mkdtemp(join(tmpdir(), `pth-${this.id}-${label}-`))
    this.dirs.push(dir)
    return dir
  }

  /** Kills every process left in our namespaces, deletes them and the temp dirs. Safe to call twice. */
  async destroy(): Promise<void> {
    if (this.destroyed) return
    this.destroyed = true
    for (const child of this.children) child.kill('SIGTERM')
    for (const pid of this.pids) killQuietly(pid, 'SIGTERM')
    const inNs = new Set<number>()
    for (const ns of this.namespaces) for (const pid of await namespacePids(ns)) inNs.add(pid)
    for (const pid of inNs) killQuietly(pid, 'SIGTERM')
    const all = [...this.pids, ...inNs, ...[...this.children].flatMap((c) => (c.pid === undefined ? [] : [c.pid]))]
    await waitFor(() => all.every((pid) => !isAlive(pid)), { timeoutMs: 3000, what: 'processes to exit' }).catch(() => {
      for (const pid of all) killQuietly(pid, 'SIGKILL')
    })
    // Node namespaces first: deleting them destroys the veths, then the fabric goes.
    for (const ns of [...this.namespaces].reverse()) {
      await execa('ip', ['netns', 'del', ns], { reject: false })
    }
    if (process.env['PINTO_KEEP_TMP'] === undefined) {
      for (const dir of this.dirs) await rm(dir, { recursive: true, force: true })
    }
  }

  private async addNamespace(ns: string): Promise<void> {
    await execa('ip', ['netns', 'add', ns])
    this.namespaces.push(ns)
  }

  private async ip(ns: string, args: readonly string[]): Promise<void> {
    await execa('ip', ['-n', ns, ...args])
  }
}

/** Convenience for tests: `const topo = await createTopology(t)`. */
export function createTopology(t?: Teardown): Promise<Topology> {
  return Topology.create(t)
}

function stableMac(v4: string | undefined, index: number): string {
  const octets = v4 !== undefined ? (v4.split('/')[0] ?? '').split('.').map(Number) : [0, 0, 0, index]
  return ['02', '00', ...octets.map((o) => o.toString(16).padStart(2, '0'))].join(':')
}

/**
 * Removes namespaces a killed harness left behind: those named by this module whose creating process is
 * gone. Namespaces of live harness processes (tests running side by side) are never touched.
 */
export function sweepStaleNamespaces(): Promise<string[]> {
  // The dead run's temp dirs (pth-<id>-<label>-XXXXXX), matched by its random id only.
  return sweepDeadRuns(NAME_RE, (entry) => /^pth-([0-9a-f]{6})-/.exec(entry)?.[1])
}
