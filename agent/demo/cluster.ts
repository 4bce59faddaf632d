// A local pinto cluster made of network namespaces, for the demo, the end-to-end tests and the benches:
// the fabric, node namespaces running real pinto-node processes (or the DaemonSet's pods under podman,
// podman-nodes.ts) on one store, pods wired by the real CNI plugin, and an optional BIRD top-of-rack. It
// owns every process, pod, namespace and directory it makes and removes them all in destroy(); what it
// observes lives in observe.ts.

import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, openSync, closeSync } from 'node:fs'
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { execa } from 'execa'
import { openDatastore, encodeResource, resourceKey, type Resource } from '../../config/index.js'
import { isAlive, killQuietly, Namespaces, nsExec, sweepStale, TEMP_PREFIX, ip } from './netns.js'
import type { DemoTopology, Encap } from './options.js'
import { startTor, TOR_ADDRESS, TOR_AS, type Tor } from './tor.js'
import { startEtcd, type DemoEtcd } from './etcd.js'
import { AGENT_NODE_FLAGS, PLUGIN_EXEC_ENV } from '../node-flags.js'
import { installCni } from '../install-cni.js'
import { readManifest } from './kube-manifest.js'
import { CLUSTER_AS, clusterResources, POOL_CIDR, RR_CLUSTER_ID } from './cluster-resources.js'
import { filledManifest, NODE_IMAGE, PodmanNodes, sweepStalePods } from './podman-nodes.js'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..')
export const NODE_BIN = join(ROOT, 'bin', 'pinto-node.js')
export const PINTOCTL_BIN = join(ROOT, 'bin', 'pintoctl.js')
export const BUNDLE = join(ROOT, 'dist', 'bundle')
export const API_PORT = 9099
export { CLUSTER_AS, POOL_CIDR, RR_CLUSTER_ID }
/** The fabric host of the cluster's etcd, when the datastore is etcd. */
export const ETCD_ADDRESS = '192.0.2.2'

export interface ClusterSpec {
  readonly nodes: number
  readonly encap?: Encap
  readonly topology?: DemoTopology
  readonly tor?: boolean
  /** What the top-of-rack originates (default 203.0.113.0/24); the idle bench gives it many prefixes. */
  readonly torPrefixes?: readonly string[]
  /**
   * Where the agents keep the cluster's state: one embedded store in the temp dir (default), or an etcd on a
   * fabric host of its own (192.0.2.2), with TLS and client certificates when `etcd-tls`.
   */
  readonly datastore?: 'embedded' | 'etcd' | 'etcd-tls'
  /**
   * How each node runs pinto-node: a process (default), or the DaemonSet's pod from deploy/kubernetes run
   * by `podman kube play` in the node's namespace, its CNI plugins those the pod's install-cni put in the
   * node's root. podman needs an etcd datastore (etcd-tls unless `etcd` is asked for).
   */
  readonly runtime?: 'process' | 'podman'
  /** The image the podman runtime plays (default localhost/pinto-node:<version>, `npm run image`). */
  readonly image?: string
  /** Extra environment for every agent (e.g. PINTO_LOG_LEVEL). */
  readonly env?: Readonly<Record<string, string>>
  /** The Node.js that runs pinto-node, by absolute path (default: this one). */
  readonly node?: string
  /** The plugins installed: the bundles under this Node.js (default) or the single executable (dist/sea). */
  readonly plugins?: 'bundle' | 'sea'
  /** Progress lines for a person; silent when absent. */
  readonly say?: (line: string) => void
}

export interface DemoNode {
  readonly name: string
  readonly ns: string
  readonly address: string
  readonly dir: string
  readonly socket: string
  readonly mtuFile: string
  readonly log: string
  readonly reflector: boolean
  agent: ChildProcess | undefined
}

/** The pods' MTU the podman runtime writes into pinto-config (veth_mtu). */
export const PODMAN_MTU = 1400

export interface DemoPod {
  readonly name: string
  readonly node: string
  readonly ns: string
  readonly address: string
  readonly containerId: string
}

export class DemoError extends Error {}

/** A failed ADD leaves its sandbox (namespace) as a runtime's does, for the DEL that tears it down. */
export class AddFailed extends DemoError {
  constructor(readonly pod: DemoPod, message: string) {
    super(message)
  }
}

/** Can this kernel make ipip links? Tried in a scratch namespace, which is removed again. */
export async function kernelHasIpip(): Promise<{ ok: boolean; reason: string }> {
  const ns = `pdm${process.pid}-ipipcheck`
  await execa('ip', ['netns', 'add', ns])
  try {
    const r = await execa('ip', ['-n', ns, 'link', 'add', 'name', 't', 'type', 'ipip'], { reject: false })
    return { ok: r.exitCode === 0, reason: String(r.stderr).trim() }
  } finally {
    await execa('ip', ['netns', 'del', ns], { reject: false })
  }
}

export async function birdInstalled(): Promise<boolean> {
  const r = await execa('bird', ['--version'], { reject: false })
  return r.exitCode === 0 || /BIRD/i.test(String(r.stderr))
}

export class DemoCluster {
  readonly nodes: DemoNode[] = []
  readonly pods: DemoPod[] = []
  tor: Tor | undefined
  etcd: DemoEtcd | undefined
  /** The podman runtime's pods, with runtime 'podman'. */
  podman: PodmanNodes | undefined
  private readonly netns = new Namespaces()
  private dir = ''
  private podSeq = 0
  private readonly podsMade = new Map<string, number>()
  private destroying: Promise<void> | undefined
  private hurry = false

  private constructor(readonly spec: ClusterSpec) {}

  get id(): string {
    return this.netns.id
  }

  /** The agents' PINTO_DATASTORE. */
  get store(): string {
    return this.etcd?.datastore ?? join(this.dir, 'store')
  }

  /** The datastore settings an agent or pintoctl needs besides PINTO_DATASTORE (etcd's TLS files). */
  get storeEnv(): Record<string, string> {
    const tls = this.etcd?.tls
    return tls === undefined ? {} : { PINTO_ETCD_CA_CERT_FILE: tls.ca, PINTO_ETCD_CERT_FILE: tls.cert, PINTO_ETCD_KEY_FILE: tls.key }
  }

  get cniPath(): string {
    return join(this.dir, 'cni-bin')
  }

  get fabric(): string {
    return this.netns.name('fabric')
  }

  /** Builds the namespaces and resources and starts every agent; on failure everything is removed again. */
  static async create(spec: ClusterSpec): Promise<DemoCluster> {
    const c = DemoCluster.prepare(spec)
    await c.start()
    return c
  }

  /** A cluster not built yet, so a caller can hold it (and destroy it on a signal) while start() runs. */
  static prepare(spec: ClusterSpec): DemoCluster {
    return new DemoCluster(spec)
  }

  async start(): Promise<void> {
    try {
      await this.build()
    } catch (err) {
      await this.destroy({ hurry: true })
      throw err
    }
  }

  private say(line: string): void {
    this.spec.say?.(line)
  }

  private async build(): Promise<void> {
    const spec = this.spec
    if (!existsSync(join(BUNDLE, 'pinto.cjs')) || !existsSync(join(ROOT, 'dist', 'agent', 'pinto-node-main.js'))) {
      throw new DemoError(`pinto is not built: run \`npm run build\` in ${ROOT} first`)
    }
    const swept = await sweepStale()
    if (swept.length > 0) this.say(`removed ${swept.length} namespaces an earlier demo left behind`)
    const podmanMode = spec.runtime === 'podman'
    const sweptPods = podmanMode ? await sweepStalePods() : []
    if (sweptPods.length > 0) this.say(`removed ${sweptPods.length} pods an earlier demo left behind`)
    const datastore = podmanMode && spec.datastore !== 'etcd' ? 'etcd-tls' : spec.datastore
    this.dir = await mkdtemp(join(tmpdir(), `${TEMP_PREFIX}${this.netns.id}-`))
    await mkdir(this.cniPath)
    // As on a node: copies with this Node.js in their #! line, or the single executable (the runtime
    // execs them once per pod). Under podman each node has the plugins its pod's install-cni put in its root.
    if (spec.runtime === 'podman') this.say('plugins: those each node\'s install-cni writes')
    else if (spec.plugins === 'sea') installCni({ binDir: this.cniPath, confDir: undefined })
    else installCni({ binDir: this.cniPath, confDir: undefined, node: process.execPath, bundleDir: BUNDLE })

    this.say(`building ${spec.nodes} nodes (namespaces ${this.netns.prefix}-*)${datastore === 'etcd' || datastore === 'etcd-tls' ? '' : `, datastore in ${this.store}`}`)
    await this.netns.fabric()
    if (datastore === 'etcd' || datastore === 'etcd-tls') {
      const ns = await this.netns.host('etcd', `${ETCD_ADDRESS}/24`)
      this.etcd = await startEtcd(ns, ETCD_ADDRESS, join(this.dir, 'etcd'), { tls: datastore === 'etcd-tls' })
      this.say(`etcd at ${this.etcd.datastore}${this.etcd.tls ? ' (TLS, client certificates)' : ''}`)
    }
    const reflectors = spec.topology === 'rr' ? (spec.nodes >= 4 ? 2 : 1) : 0
    for (let i = 1; i <= spec.nodes; i++) {
      const name = `node${i}`
      const address = `192.0.2.${10 + i}`
      const ns = await this.netns.host(name, `${address}/24`, TOR_ADDRESS)
      const dir = join(this.dir, name)
      await mkdir(dir)
      // Under podman the pod's hostPaths are the node's root: its socket and MTU file are where the pod puts them.
      const root = join(dir, 'root')
      const [socket, mtuFile] = podmanMode ? [join(root, 'var/run/pinto/pinto.sock'), join(root, 'var/lib/pinto/mtu')] : [join(dir, 'pinto.sock'), join(dir, 'mtu')]
      this.nodes.push({ name, ns, address, dir, socket, mtuFile, log: join(dir, 'pinto-node.log'), reflector: i <= reflectors, agent: undefined })
    }
    if (podmanMode) {
      const encap = spec.encap ?? 'none'
      const docs = await filledManifest(readManifest(), {
        etcdEndpoints: this.store,
        etcdTls: this.etcd?.tls,
        nodeIp: 'interface=eth0',
        poolCidr: POOL_CIDR,
        ipip: encap === 'ipip' ? 'Always' : 'Never',
        vxlan: encap === 'vxlan' ? 'Always' : 'Never',
        mtu: PODMAN_MTU,
        ...(spec.env?.['PINTO_LOG_LEVEL'] !== undefined ? { logLevel: spec.env['PINTO_LOG_LEVEL'] } : {}),
      })
      this.podman = new PodmanNodes(docs, spec.image ?? NODE_IMAGE, this.netns.prefix)
      this.say(`pinto-node as the DaemonSet's pod from deploy/kubernetes, image ${this.podman.image}, played by podman in each node's namespace`)
    }
    await this.writeResources(clusterResources(spec, this.nodes.filter((x) => x.reflector)))
    if (spec.tor === true) {
      const ns = await this.netns.host('tor', `${TOR_ADDRESS}/24`)
      this.tor = await startTor(ns, join(this.dir, 'tor'), this.nodes.map((n) => ({ name: n.name, address: n.address, as: CLUSTER_AS })), spec.torPrefixes)
      this.say(`BIRD top-of-rack router at ${TOR_ADDRESS} (AS ${TOR_AS}), originating 203.0.113.0/24`)
    }
    for (const n of this.nodes) await this.startAgent(n)
  }

  /**
   * Writes resources (create, or overwrite what is there): straight into the embedded store, or through
   * `pintoctl apply` on etcd's host, since the machine's own namespace cannot reach etcd.
   */
  async writeResources(resources: readonly Resource[]): Promise<void> {
    if (this.etcd !== undefined) {
      await this.pintoctl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: resources }))
      return
    }
    const store = await openDatastore(this.store)
    try {
      for (const r of resources) {
        const key = resourceKey(r.kind, r.metadata.name)
        const old = await store.get(key)
        if (old) await store.update(key, encodeResource(r), old.revision)
        else await store.create(key, encodeResource(r))
      }
    } finally {
      await store.close()
    }
  }

  async deleteResource(kind: Resource['kind'], name: string): Promise<boolean> {
    if (this.etcd !== undefined) return this.pintoctl(['delete', kind, name]).then(() => true, () => false)
    const store = await openDatastore(this.store)
    try {
      const key = resourceKey(kind, name)
      const old = await store.get(key)
      if (!old) return false
      await store.delete(key, old.revision)
      return true
    } finally {
      await store.close()
    }
  }

  /** Reads keys under a prefix from the store (e.g. IPAM affinities). */
  async listKeys(prefix: string): Promise<{ key: string; value: string }[]> {
    if (this.etcd !== undefined) return this.etcd.list(prefix)
    const store = await openDatastore(this.store)
    try {
      return (await store.list(prefix)).items.map((kv) => ({ key: kv.key, value: kv.value }))
    } finally {
      await store.close()
    }
  }

  /** Runs pintoctl against the cluster's datastore from etcd's host (as an operator would from a node). */
  async pintoctl(args: readonly string[], input?: string): Promise<string> {
    if (this.etcd === undefined) throw new DemoError('pintoctl on the datastore host needs an etcd cluster')
    return nsExec(this.etcd.ns, process.execPath, [PINTOCTL_BIN, ...args], { timeoutMs: 20_000, env: { PINTO_DATASTORE: this.store, ...this.storeEnv }, ...(input !== undefined ? { input } : {}) })
  }

  node(name: string): DemoNode {
    const n = this.nodes.find((x) => x.name === name)
    if (!n) throw new DemoError(`no node ${name} in this cluster`)
    return n
  }

  agentEnv(n: DemoNode): Record<string, string> {
    return {
      PINTO_NODENAME: n.name,
      PINTO_IP: `${n.address}/24`,
      PINTO_DATASTORE: this.store,
      ...this.storeEnv,
      // Every path the agent uses is the node's own, under the demo's temp dir, never the host's defaults.
      PINTO_SOCKET: n.socket,
      PINTO_API_SOCKET: join(n.dir, 'api.sock'),
      PINTO_MTU_FILE: n.mtuFile,
      PINTO_STATE_DIR: n.dir,
      PINTO_API_LISTEN: `127.0.0.1:${API_PORT}`,
      PINTO_IPV4POOL_CIDR: POOL_CIDR,
      PINTO_READY_WINDOW_SECONDS: '10',
      ...(this.spec.env ?? {}),
    }
  }

  /** Starts the node's pinto-node (its log appended to n.log) and waits for its CNI socket. */
  async startAgent(n: DemoNode, timeoutMs = 20_000): Promise<void> {
    if (this.closing) throw new DemoError('the cluster is being removed')
    if (this.podman) {
      await this.podman.play(n, { timeoutMs: Math.max(timeoutMs, 60_000) })
      this.say(`${n.name}: pod ${this.podman.podName(n)} running (install-cni done, pinto-node up) at ${n.address}`)
      return
    }
    if (n.agent && n.agent.exitCode === null && n.agent.signalCode === null) throw new DemoError(`${n.name}: its agent is already running`)
    await rm(n.socket, { force: true })
    const fd = openSync(n.log, 'a')
    try {
      // `ip netns exec` execs the program, so the child's pid is pinto-node's own.
      n.agent = spawn('ip', ['netns', 'exec', n.ns, this.spec.node ?? process.execPath, ...AGENT_NODE_FLAGS, NODE_BIN], { env: { ...process.env, ...this.agentEnv(n) }, stdio: ['ignore', fd, fd] })
    } finally {
      closeSync(fd)
    }
    const child = n.agent
    const deadline = Date.now() + timeoutMs
    while (!existsSync(n.socket)) {
      if (child.exitCode !== null || child.signalCode !== null) throw new DemoError(`${n.name}: pinto-node exited (${child.exitCode ?? child.signalCode}) before it was ready; see ${n.log}`)
      if (Date.now() > deadline) throw new DemoError(`${n.name}: pinto-node not ready after ${timeoutMs} ms; see ${n.log}`)
      await new Promise((r) => setTimeout(r, 50))
    }
    this.say(`${n.name}: pinto-node running (pid ${child.pid}) at ${n.address}`)
  }

  /** Stops an agent: SIGTERM is pinto-node's graceful stop, SIGKILL a crash. Resolves when it is gone. */
  async stopAgent(n: DemoNode, signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 10_000): Promise<void> {
    if (this.podman) return this.podman.stop(n, signal === 'SIGKILL' ? 0 : Math.ceil(timeoutMs / 1000))
    const child = n.agent
    if (!child || child.exitCode !== null || child.signalCode !== null) return
    const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    child.kill(signal)
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    await gone
    clearTimeout(timer)
  }

  /** Is the node's pinto-node (process or pod) running? */
  agentRunning(n: DemoNode): boolean {
    return this.podman ? this.podman.running(n) : this.agentPid(n) !== undefined
  }

  /** The agent process's pid (process runtime only). */
  agentPid(n: DemoNode): number | undefined {
    const c = n.agent
    return c && c.exitCode === null && c.signalCode === null ? c.pid : undefined
  }

  /** A pod: a namespace wired by the real `pinto` CNI plugin (ADD, exec'd in the node's namespace). */
  /** `ipv4Pools`: the pools the pod's CNI config names (its ipam `ipv4_pools`), e.g. a Manual pool. */
  async addPod(n: DemoNode, opts: { ipv4Pools?: readonly string[] } = {}): Promise<DemoPod> {
    const seq = ++this.podSeq
    // Numbered per node (node1p1, node1p2, ...), never reused after a DEL: the name is the pod's identity.
    const nth = (this.podsMade.get(n.name) ?? 0) + 1
    this.podsMade.set(n.name, nth)
    const name = `${n.name}p${nth}`
    const ns = await this.netns.add(name)
    const pod = { name, node: n.name, ns, address: '', containerId: `demo-${this.netns.id}-${seq}` }
    const r = await this.cni(n, 'ADD', pod, opts.ipv4Pools)
    if (r.code !== 0) throw new AddFailed(pod, `${name}: CNI ADD failed (exit ${r.code}): ${r.stdout.trim()} ${r.stderr.trim()}`)
    const result = JSON.parse(r.stdout) as { ips?: { address: string }[] }
    const address = result.ips?.[0]?.address?.split('/')[0]
    if (address === undefined) throw new DemoError(`${name}: the CNI result has no IP address: ${r.stdout}`)
    const added = { ...pod, address }
    this.pods.push(added)
    return added
  }

  /** CNI DEL of a pod, then its namespace goes; a failed DEL leaves both (the caller may try again, as kubelet does). */
  async delPod(pod: DemoPod): Promise<void> {
    const r = await this.cni(this.node(pod.node), 'DEL', pod)
    if (r.code !== 0) throw new DemoError(`${pod.name}: CNI DEL failed (exit ${r.code}): ${r.stdout.trim()} ${r.stderr.trim()}`)
    await this.netns.remove(pod.ns)
    const i = this.pods.indexOf(pod)
    if (i >= 0) this.pods.splice(i, 1)
  }

  /** Execs the node's installed `pinto` plugin as a runtime does: the verb, the pod's identity, the network config on stdin. */
  async cni(n: DemoNode, command: 'ADD' | 'DEL' | 'CHECK', pod: Pick<DemoPod, 'name' | 'ns' | 'containerId'>, ipv4Pools?: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
    const cniEnv = {
      CNI_COMMAND: command,
      CNI_CONTAINERID: pod.containerId,
      CNI_NETNS: `/run/netns/${pod.ns}`,
      CNI_IFNAME: 'eth0',
      CNI_ARGS: `K8S_POD_NAMESPACE=demo;K8S_POD_NAME=${pod.name}`,
    }
    if (this.podman) {
      if (ipv4Pools !== undefined) throw new DemoError('ipv4Pools: the podman runtime uses the installed network config, which names no pool')
      return this.podman.cni(n, cniEnv)
    }
    const conf = {
      cniVersion: '1.0.0',
      name: 'pinto-demo',
      type: 'pinto',
      mtu_file: n.mtuFile,
      socket: n.socket,
      ipam: { type: 'pinto-ipam', socket: n.socket, ...(ipv4Pools !== undefined ? { ipv4_pools: ipv4Pools } : {}) },
    }
    const env = {
      ...cniEnv,
      CNI_PATH: this.cniPath,
      // The bundles start with `#!/usr/bin/env node`; sudo may have dropped node's directory from PATH.
      PATH: `${dirname(process.execPath)}:${process.env['PATH'] ?? '/usr/bin:/bin'}`,
      ...PLUGIN_EXEC_ENV,
    }
    const r = await execa('ip', ['netns', 'exec', n.ns, join(this.cniPath, 'pinto')], { input: JSON.stringify(conf), env, extendEnv: true, reject: false, timeout: 60_000 })
    return { code: r.exitCode ?? -1, stdout: String(r.stdout), stderr: String(r.stderr) }
  }

  async exec(ns: string, cmd: string, args: readonly string[], timeoutMs = 10_000): Promise<string> {
    return nsExec(ns, cmd, args, { timeoutMs })
  }

  async ip(ns: string, args: readonly string[]): Promise<string> {
    return ip(ns, args)
  }

  /**
   * Removes everything: agents (SIGTERM, their graceful stop), BIRD, every namespace, the temp dir. Safe to
   * call again and from a signal handler while start() runs; `hurry` (a second Ctrl-C) turns every wait
   * into SIGKILL. With PINTO_KEEP_TMP set the temp dir (logs, store) is kept.
   */
  destroy(opts: { hurry?: boolean } = {}): Promise<void> {
    if (opts.hurry === true && !this.hurry) {
      this.hurry = true
      this.netns.hurry = true
      for (const n of this.nodes) n.agent?.kill('SIGKILL')
    }
    this.netns.closed = true
    this.destroying ??= this.teardown()
    return this.destroying
  }

  get closing(): boolean {
    return this.destroying !== undefined
  }

  private async teardown(): Promise<void> {
    if (this.podman) await this.podman.destroy(this.hurry)
    await Promise.all(this.nodes.map((n) => this.stopAgent(n, this.hurry ? 'SIGKILL' : 'SIGTERM', this.hurry ? 200 : 3000).catch(() => undefined)))
    if (this.tor && isAlive(this.tor.pid)) killQuietly(this.tor.pid, 'SIGTERM')
    await this.etcd?.stop()
    await this.netns.destroy()
    if (this.dir !== '' && process.env['PINTO_KEEP_TMP'] === undefined) await rm(this.dir, { recursive: true, force: true })
  }
}
