// A local pinto cluster made of network namespaces, for the demo, the end-to-end tests and the benches:
// the fabric, node namespaces running real pinto-node processes (or the DaemonSet's pods under podman,
// podman-nodes.ts) on one store, pods (cluster-pods.ts) wired by the real CNI plugin, and an optional BIRD
// top-of-rack. It owns every process, pod, namespace and directory it makes and removes them all in
// destroy(); what it observes lives in observe.ts.

import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Resource } from '../../config/index.js'
import { deleteResource, listKeys, writeResources } from './cluster-store.js'
import { isAlive, killQuietly, Namespaces, nsExec, sweepStale, TEMP_PREFIX, ip } from './netns.js'
import { startTor, TOR_ADDRESS, TOR_AS, type Tor } from './tor.js'
import { startEtcd, type DemoEtcd } from './etcd.js'
import { installCni } from '../install-cni.js'
import { readManifest } from './kube-manifest.js'
import { CLUSTER_AS, clusterResources, POOL_CIDR, RR_CLUSTER_ID } from './cluster-resources.js'
import { filledManifest, NODE_IMAGE, PodmanNodes, sweepStalePods } from './podman-nodes.js'
import { API_PORT, BUNDLE, DemoError, ETCD_ADDRESS, PINTOCTL_BIN, PODMAN_MTU, ROOT, type ClusterSpec, type DemoNode, type DemoPod } from './cluster-spec.js'
import { nodeAgentPid, startNodeAgent, stopNodeAgent } from './node-process.js'
import { DemoPods, type CniCommand, type CniOutcome } from './cluster-pods.js'

export * from './cluster-spec.js'
export { CLUSTER_AS, POOL_CIDR, RR_CLUSTER_ID }

export class DemoCluster {
  readonly nodes: DemoNode[] = []
  tor: Tor | undefined
  etcd: DemoEtcd | undefined
  /** The podman runtime's pods, with runtime 'podman'. */
  podman: PodmanNodes | undefined
  private readonly netns = new Namespaces()
  private readonly wiring = new DemoPods(this, this.netns)
  private dir = ''
  private destroying: Promise<void> | undefined
  private hurry = false

  private constructor(readonly spec: ClusterSpec) {}

  /** The pods wired and not deleted, in the order they were added. */
  get pods(): DemoPod[] {
    return this.wiring.list
  }

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

    // Two lines: with a 7-digit pid and the temp dir's path, one would pass the demo's 100 columns.
    this.say(`building ${spec.nodes} nodes (namespaces ${this.netns.prefix}-*)`)
    if (datastore !== 'etcd' && datastore !== 'etcd-tls') this.say(`datastore in ${this.store}`)
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
  writeResources(resources: readonly Resource[]): Promise<void> {
    return writeResources(this, resources)
  }

  deleteResource(kind: Resource['kind'], name: string): Promise<boolean> {
    return deleteResource(this, kind, name)
  }

  /** Reads keys under a prefix from the store (e.g. IPAM affinities). */
  listKeys(prefix: string): Promise<{ key: string; value: string }[]> {
    return listKeys(this, prefix)
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
    await startNodeAgent(n, { node: this.spec.node ?? process.execPath, env: this.agentEnv(n), timeoutMs })
    this.say(`${n.name}: pinto-node running (pid ${n.agent?.pid}) at ${n.address}`)
  }

  /** Stops an agent: SIGTERM is pinto-node's graceful stop, SIGKILL a crash. Resolves when it is gone. */
  async stopAgent(n: DemoNode, signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 10_000): Promise<void> {
    if (this.podman) return this.podman.stop(n, signal === 'SIGKILL' ? 0 : Math.ceil(timeoutMs / 1000))
    return stopNodeAgent(n, signal, timeoutMs)
  }

  /** Is the node's pinto-node (process or pod) running? */
  agentRunning(n: DemoNode): boolean {
    return this.podman ? this.podman.running(n) : this.agentPid(n) !== undefined
  }

  /** The agent process's pid (process runtime only). */
  agentPid(n: DemoNode): number | undefined {
    return nodeAgentPid(n)
  }

  /** A pod: a namespace wired by the real `pinto` CNI plugin (ADD, exec'd in the node's namespace). */
  addPod(n: DemoNode, opts: { ipv4Pools?: readonly string[] } = {}): Promise<DemoPod> {
    return this.wiring.add(n, opts)
  }

  delPod(pod: DemoPod): Promise<void> {
    return this.wiring.del(pod)
  }

  cni(n: DemoNode, command: CniCommand, pod: Pick<DemoPod, 'name' | 'ns' | 'containerId'>, ipv4Pools?: readonly string[]): Promise<CniOutcome> {
    return this.wiring.cni(n, command, pod, ipv4Pools)
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
