// pinto-node: the one place that wires everything together. It registers the Node, makes the default
// pool, serves IPAM to the CNI plugins, computes BGP peers from the datastore and follows changes,
// originates its blocks, feeds felix from the Loc-RIB, and serves the REST API. On SIGTERM it leaves
// kernel routes in place and closes sessions without NOTIFICATION so peers keep its routes.

import { createHash } from 'node:crypto'
import { mkdir, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { pino, type Logger } from 'pino'
import { BgpSpeaker } from '../bgp/speaker.js'
import { formatPrefix, parsePrefix } from '../bgp/codec/nlri.js'
import { ACCEPT_ALL, compileBgpFilters } from '../bgp/policy/index.js'
import { compilePoolGuard, guardPoolPrefixes } from '../bgp/policy/pool-guard.js'
import { compileCommunityRules, communitiesFor, exportAllowList, serviceCidrs, type CommunityRule } from './advertisements.js'
import { AnnouncementRefusals, registerAnnouncementMetrics } from './refusals.js'
import type { Policy } from '../bgp/rib/types.js'
import type { PeerConfig } from '../bgp/session/peer-config.js'
import { DatastoreError, type Datastore } from '../config/datastore.js'
import { openDatastore } from '../config/datastore-open.js'
import { MonitoredDatastore } from './datastore-health.js'
import { effectiveBGPConfiguration, encodeResource, decodeResource, resourceKey, type BGPFilter, type IPPool, type Node } from '../config/resources/index.js'
import { Dataplane, ExecaRunner, LearnedFeed, RouteSocket, type LearnedRoute, type ProcessRunner, type ProgramRules } from '../felix/index.js'
import { IpamService } from './ipam-service.js'
import { CniService } from './cni-service.js'
import { NodeIpamRepair } from './ipam-repair.js'
import { registerIpamSafetyMetrics } from './metrics.js'
import { ClusterState } from './cluster-state.js'
import { desiredPeers, type DesiredPeer } from './bgp-peers.js'
import { BgpSecrets, type ResolvedPassword } from './bgp-secrets.js'
import { NodeBfd } from './bfd-sessions.js'
import { registerBfdMetrics } from './bfd-metrics.js'
import { parseBfdAnnotation } from './bfd-annotation.js'
import { originationFor, type Origination } from './origination.js'
import { detectAddress, type DetectedAddress } from './autodetect.js'
import type { AgentSettings } from './settings.js'
import { blockCidr, ordinalAddress, type AllocationBlock } from '../ipam/block.js'
import { Registry } from 'prom-client'
import { buildApi, FibApplyLog, ipamReads, listenApi, speakerReads, type ApiListeners } from './api/index.js'

/** Runs `fn` at most once at a time; calls during a run coalesce into one more run. */
class Coalescer {
  private running: Promise<void> | undefined
  private again = false
  constructor(
    private readonly fn: () => Promise<void>,
    private readonly onError: (err: Error) => void,
  ) {}
  trigger(): void {
    if (this.running) {
      this.again = true
      return
    }
    this.running = (async () => {
      do {
        this.again = false
        await this.fn().catch(this.onError)
      } while (this.again)
    })().finally(() => {
      this.running = undefined
    })
  }
  async idle(): Promise<void> {
    while (this.running) await this.running
  }
}

/** A stable, locally administered unicast MAC for the node's VTEP. */
export function vtepMac(nodeName: string): string {
  const h = createHash('sha256').update(`pinto-vtep:${nodeName}`).digest()
  h[0] = (h[0]! & 0xfe) | 0x02
  return [...h.subarray(0, 6)].map((b) => b.toString(16).padStart(2, '0')).join(':')
}

export class PintoNode {
  readonly log: Logger
  private store!: MonitoredDatastore
  private cluster!: ClusterState
  speaker!: BgpSpeaker
  private bfd: NodeBfd | undefined
  ipamService!: IpamService
  cniService: CniService | undefined
  ipamRepair: NodeIpamRepair | undefined
  dataplane: Dataplane | undefined
  /** The Loc-RIB's deltas into the dataplane's desired table. */
  private feed: LearnedFeed | undefined
  private readonly runner: ProcessRunner
  /** Commands run in this process's own namespace (no runner handed in), so a route socket may be opened. */
  private readonly ownNamespace: boolean
  private routeSocket: RouteSocket | undefined
  private v4: DetectedAddress | undefined
  private v6: DetectedAddress | undefined
  private origination: Origination = { blocks: [], borrowed: [] }
  /** Prefix -> the attributes it was originated with (JSON), so a change of communities re-originates it. */
  private readonly originated = new Map<string, string>()
  /** Who may announce pod addresses: refusals and affinity conflicts, for the log, API and metrics. */
  readonly refusals: AnnouncementRefusals
  private vxlan: { address: string; mac: string } | undefined
  private ipipAddress: string | undefined
  private readonly policyCache = new Map<string, Policy>()
  private heartbeat: NodeJS.Timeout | undefined
  private dataplaneSynced = false
  /** Set once the first dataplane update after the sync has finished (devices, NAT, monitor, first write). */
  private dataplaneStarted = false
  private workloadsTimer: NodeJS.Timeout | undefined
  private peersComputed = false
  private syncTimer: NodeJS.Timeout | undefined
  private eorTimer: NodeJS.Timeout | undefined
  /** Started within the graceful-restart window of a previous run: peers hold our routes as stale. */
  private restarting = false
  /** End-of-RIB may follow our table (released once; the speaker holds it until then). */
  private endOfRibReleased = false
  private readonly peersJob: Coalescer
  private readonly originJob: Coalescer
  private readonly dataplaneJob: Coalescer
  /** Writes what the Loc-RIB's deltas changed in felix's desired routes. */
  private readonly fibJob: Coalescer
  /** Static routes to BGP peers with reachableBy, for felix. */
  private peerRoutes: LearnedRoute[] = []
  private readonly unsubscribe: (() => void)[] = []
  readonly startedAt = Date.now()
  private api: ApiListeners | undefined
  readonly applyLog = new FibApplyLog()
  problems: string[] = []
  private secrets: BgpSecrets
  private secretsTimer: NodeJS.Timeout | undefined

  constructor(
    readonly settings: AgentSettings,
    deps: { logger?: Logger; runner?: ProcessRunner } = {},
  ) {
    this.log = deps.logger ?? pino({ level: settings.logLevel })
    this.runner = deps.runner ?? new ExecaRunner()
    this.refusals = new AnnouncementRefusals(this.log.child({ component: 'announcements' }))
    this.ownNamespace = deps.runner === undefined
    const fail = (what: string) => (err: Error) => this.log.error({ err: err.message }, `${what} failed`)
    this.peersJob = new Coalescer(() => this.syncPeers(), fail('peer update'))
    this.originJob = new Coalescer(() => this.syncOrigination(), fail('origination'))
    this.dataplaneJob = new Coalescer(() => this.syncDataplane(), fail('dataplane update'))
    this.fibJob = new Coalescer(async () => {
      if (this.dataplaneSynced) await this.dataplane?.applyChanges()
    }, fail('route update'))
    this.secrets = new BgpSecrets(settings.secretsDir)
  }

  get nodeName(): string {
    return this.settings.nodeName
  }

  get address(): DetectedAddress | undefined {
    return this.v4
  }

  async start(): Promise<void> {
    const s = this.settings
    this.log.info({ node: s.nodeName, datastore: s.datastore }, 'pinto-node starting')

    if (s.etcdTls.ca !== undefined || s.etcdTls.cert !== undefined) {
      this.log.info({ caFile: s.etcdTls.ca, certFile: s.etcdTls.cert, keyFile: s.etcdTls.key }, 'etcd TLS files read once now; restart pinto-node to use renewed ones')
    }
    this.store = new MonitoredDatastore(await openDatastore(s.datastore, { etcdTls: s.etcdTls }), { log: this.log.child({ component: 'datastore' }) })
    this.cluster = new ClusterState(this.store, this.log.child({ component: 'datastore' }))
    await this.cluster.start()
    // BGPConfiguration ignoredInterfaces: never the node's address (read once, at start).
    const ignored = this.bgpConfig().ignoredInterfaces ?? []
    this.v4 = await detectAddress(this.runner, s.ip, 4, ignored)
    this.v6 = await detectAddress(this.runner, s.ip6, 6, ignored)
    if (this.v4 === undefined && this.v6 === undefined) throw new Error(`PINTO_IP: no address found for this node (${s.ip.kind})`)
    if (this.v4) this.log.info({ address: `${this.v4.address}/${this.v4.prefixLength}`, interface: this.v4.interface }, `node IPv4 address: ${this.v4.reason}`)
    if (this.v6) this.log.info({ address: `${this.v6.address}/${this.v6.prefixLength}`, interface: this.v6.interface }, `node IPv6 address: ${this.v6.reason}`)
    await this.ensureDefaultPools()
    await this.registerNode()

    const ipamLog = this.log.child({ component: 'ipam' })
    const logTo = (msg: string, fields: Record<string, unknown>): void => ipamLog.info(fields, msg)
    this.ipamService = new IpamService({ store: this.store, cluster: this.cluster, node: s.nodeName, socket: s.socket, mtuFile: s.mtuFile, stateDir: s.stateDir, claimAheadBelow: s.ipamClaimAhead, log: logTo, onDatastoreBack: () => void this.ipamRepair?.trigger() })
    await this.ipamService.listen()
    this.log.info({ socket: s.socket }, 'IPAM service listening for the CNI plugins')
    const cni = new CniService({ socket: s.socket, ipam: this.ipamService, stateDir: s.stateDir, log: logTo })
    try {
      await cni.listen()
      this.cniService = cni
      this.log.info({ fifo: `${s.socket}.requests` }, 'CNI channel open: pinto-node does the ADDs of pods with pinto-ipam')
    } catch (err) {
      // An optimisation only: without it the plugins do their ADDs themselves.
      this.log.warn({ err: (err as Error).message }, 'CNI channel not opened; the plugins will wire pods themselves')
    }
    if (s.ipamRepairSeconds > 0) {
      const service = this.ipamService
      this.ipamRepair = new NodeIpamRepair({ ipam: service.ipam, node: s.nodeName, busy: (h) => service.busy(h) || this.cniService?.busy(h) === true, graceMs: s.ipamRepairGraceSeconds * 1000, log: logTo })
      this.ipamRepair.start(s.ipamRepairSeconds * 1000)
    }
    await this.ensureTunnelAddresses()

    const restartingFor = await this.restartWindow()
    const me = this.cluster.get('Node', s.nodeName)
    const clusterId = me?.spec.bgp?.routeReflectorClusterID
    const config = this.bgpConfig()
    this.speaker = new BgpSpeaker({
      asn: me?.spec.bgp?.asNumber ?? config.asNumber ?? 64512,
      routerId: this.v4?.address ?? routerIdFromName(s.nodeName),
      // bindMode NodeIP: listen on the node's addresses only (read at start, as calico-node does).
      // listenPort: the port mesh peers reach us on, so the one we listen on; PINTO_BGP_PORT without it.
      listen: { port: config.listenPort ?? s.bgpPort, ...(config.bindMode === 'NodeIP' ? { hosts: [this.v4?.address, this.v6?.address].filter((a): a is string => a !== undefined) } : {}) },
      ...(clusterId !== undefined ? { clusterId } : {}),
      multipath: true,
      restartingFor,
      holdEndOfRib: true,
      logger: bgpLogger(this.log, config.logSeverityScreen),
    })
    this.restarting = restartingFor > 0
    if (this.restarting) this.log.info({ seconds: restartingFor }, 'restarting within the graceful-restart window: peers are asked to keep our routes')
    await this.speaker.start()
    this.bfd = new NodeBfd(this.speaker, this.log.child({ component: 'bfd' }), s.bfdPort)

    if (s.dataplane === 'kernel') {
      if (s.routeWriter === 'netlink' && this.ownNamespace) {
        const opened = await RouteSocket.open()
        if (opened instanceof Error) this.log.warn({ err: opened.message }, 'no rtnetlink route socket: felix writes routes through ip -batch')
        else {
          this.routeSocket = opened
          this.log.info('felix writes routes through its rtnetlink route socket')
        }
      }
      this.dataplane = new Dataplane({
        ...(this.routeSocket !== undefined ? { routeSocket: this.routeSocket } : {}),
        protocol: s.routeProtocol,
        resyncSeconds: s.resyncSeconds,
        mtuFile: s.mtuFile,
        log: this.log.child({ component: 'felix' }),
        runner: this.runner,
        nextHops: this.speaker.rib.nextHops,
        onApply: (result, seconds) => this.applyLog.record(result, seconds),
      })
      const feed = new LearnedFeed(this.speaker.rib, this.dataplane.desired, (conflicts) => this.refusals.setAffinityConflicts(conflicts))
      this.feed = feed
      feed.reseed()
      this.unsubscribe.push(
        this.speaker.rib.subscribeDeltas((deltas) => {
          feed.apply(deltas)
          this.fibJob.trigger()
        }),
      )
    }
    await this.startApi()
    this.unsubscribe.push(
      this.cluster.onChange((topic, blocks) => {
        if (topic === 'resources') {
          this.peersJob.trigger()
          // BGPConfiguration's prefixAdvertisements and service CIDRs change what we originate.
          this.originJob.trigger()
          this.dataplaneJob.trigger()
          return
        }
        this.originJob.trigger()
        // Another node's allocations change nothing in our kernel (its routes come over BGP).
        if (blocks.length > 0 && !blocks.some((b) => b !== undefined && this.concerns(b))) return
        // IPAM writes come in bursts while pods start: origination follows at once (it is what other
        // nodes wait for); felix learns of new pods and our new blocks' blackholes within a second,
        // well inside its veth grace period (the pods' own /32s are more specific than a blackhole).
        this.workloadsTimer ??= setTimeout(() => {
          this.workloadsTimer = undefined
          this.dataplaneJob.trigger()
        }, 1000)
      }),
    )
    this.peersJob.trigger()
    this.originJob.trigger()
    this.dataplaneJob.trigger()
    // A Secret volume is updated in place (kubelet swaps its ..data link): a changed key re-keys the
    // listener and resets the session through the next peer update.
    this.secretsTimer = setInterval(() => {
      void this.secrets.changed().then((changed) => {
        if (!changed) return
        this.log.info({ dir: this.secrets.dir }, 'a BGP password changed: peers updated')
        this.peersJob.trigger()
      })
    }, 2000)
    this.secretsTimer.unref()
    await this.beat()
    this.heartbeat = setInterval(() => void this.beat(), 10_000)
    this.heartbeat.unref()
    this.log.info('pinto-node started')
  }

  private async startApi(): Promise<void> {
    const s = this.settings
    const dataplane = this.dataplane
    const app = await buildApi({
      node: s.nodeName,
      uptimeSeconds: () => Math.floor((Date.now() - this.startedAt) / 1000),
      bgp: speakerReads(this.speaker),
      ipam: ipamReads(this.ipamService.ipam),
      ...(dataplane ? { fib: { routes: () => dataplane.routes(), count: () => dataplane.desired.count(), stats: () => this.applyLog.stats() } } : {}),
      datastore: this.store,
      ...(this.bfd ? { bfd: this.bfd } : {}),
      readiness: {
        startupWindowSeconds: s.readyWindowSeconds,
        gracefulRestartInProgress: () => dataplane !== undefined && !this.dataplaneSynced,
        checks: () => [{ name: 'peers', ok: this.peersComputed, ...(this.peersComputed ? {} : { detail: 'BGP peers not computed yet' }) }],
      },
      actions: { refreshPeer: (name, direction) => this.speaker.refresh(name, direction) },
      metrics: this.metricsRegistry(),
      announcements: this.refusals,
      ...(s.apiToken !== undefined ? { token: s.apiToken } : {}),
    })
    this.api = await listenApi(app, { tcp: `${s.apiListen.host.includes(':') ? `[${s.apiListen.host}]` : s.apiListen.host}:${s.apiListen.port}`, socket: s.apiSocket })
    this.log.info({ tcp: this.api.tcp, socket: this.api.socket }, 'REST API listening (TCP read-only; changes over the socket or with the token)')
  }

  private metricsRegistry(): Registry {
    const registry = new Registry()
    registerBfdMetrics(registry, () => this.bfd?.sessions() ?? [])
    registerIpamSafetyMetrics(registry, {
      repaired: () => this.ipamRepair?.repaired ?? {},
      pendingReleases: () => this.ipamService.pending?.size ?? 0,
      addsRolledBack: () => this.cniService?.rolledBack ?? 0,
      blocksClaimedAhead: () => this.ipamService.ahead.claimed,
    })
    registerAnnouncementMetrics(registry, this.refusals, () => this.speaker.peerStatus().map((p) => p.name))
    return registry
  }

  /** Waits until the background jobs have caught up (for tests). */
  async settled(): Promise<void> {
    await this.peersJob.idle()
    await this.originJob.idle()
    await this.dataplaneJob.idle()
    await this.fibJob.idle()
  }

  /** Graceful (default): sessions closed without NOTIFICATION, kernel routes left, restart marker kept. */
  async stop(opts: { graceful?: boolean } = {}): Promise<void> {
    const graceful = opts.graceful ?? true
    clearInterval(this.heartbeat)
    clearInterval(this.secretsTimer)
    clearTimeout(this.syncTimer)
    clearTimeout(this.eorTimer)
    clearTimeout(this.workloadsTimer)
    for (const u of this.unsubscribe) u()
    this.cluster?.close()
    await this.settled().catch(() => undefined)
    await this.api?.close()
    await this.bfd?.close()
    await this.speaker?.stop(graceful ? { graceful: true } : { message: 'pinto-node stopped' })
    await this.dataplane?.stop()
    this.routeSocket?.close()
    await this.ipamRepair?.stop()
    await this.cniService?.close()
    await this.ipamService?.close()
    await this.store?.close()
    this.log.info({ graceful }, 'pinto-node stopped; kernel routes left in place')
  }

  // ---- registration ---------------------------------------------------------------------------

  /** BFD for the mesh: the pinto.dev/bfd annotation of BGPConfiguration node.<name>, else default. */
  private meshBfd(): { params?: ReturnType<typeof parseBfdAnnotation>; problem?: { resource: string; message: string } } {
    const own = this.cluster.get('BGPConfiguration', `node.${this.settings.nodeName}`)
    const source = own?.metadata.annotations?.['pinto.dev/bfd'] !== undefined ? own : this.cluster.get('BGPConfiguration', 'default')
    try {
      return { params: parseBfdAnnotation(source?.metadata.annotations) }
    } catch (err) {
      return { problem: { resource: `BGPConfiguration ${source?.metadata.name}`, message: `${(err as Error).message}; the mesh runs without BFD` } }
    }
  }

  private bgpConfig(): ReturnType<typeof effectiveBGPConfiguration> {
    return effectiveBGPConfiguration(this.cluster.get('BGPConfiguration', 'default'), this.cluster.get('BGPConfiguration', `node.${this.settings.nodeName}`))
  }

  private async ensureDefaultPools(): Promise<void> {
    if (this.cluster.list('IPPool').length > 0) return
    const pools: IPPool[] = []
    const p4 = this.settings.ipv4Pool
    if (p4) {
      pools.push({
        apiVersion: 'projectcalico.org/v3',
        kind: 'IPPool',
        metadata: { name: 'default-ipv4-ippool' },
        spec: { cidr: p4.cidr, blockSize: p4.blockSize, ipipMode: p4.ipip, vxlanMode: p4.vxlan, natOutgoing: p4.natOutgoing, nodeSelector: 'all()' },
      })
    }
    const p6 = this.settings.ipv6Pool
    if (p6) pools.push({ apiVersion: 'projectcalico.org/v3', kind: 'IPPool', metadata: { name: 'default-ipv6-ippool' }, spec: { cidr: p6.cidr, blockSize: p6.blockSize, nodeSelector: 'all()' } })
    for (const pool of pools) {
      try {
        await this.store.create(resourceKey('IPPool', pool.metadata.name), encodeResource(pool))
        this.log.info({ pool: pool.metadata.name, cidr: pool.spec.cidr }, 'created the default IP pool')
      } catch (err) {
        if (!(err instanceof DatastoreError && err.code === 'exists')) throw err
      }
    }
  }

  /** Creates or updates our Node resource with what only we know; what operators set is kept. */
  private async updateNode(edit: (node: Node) => void): Promise<void> {
    const key = resourceKey('Node', this.settings.nodeName)
    for (let attempt = 0; attempt < 10; attempt++) {
      const kv = await this.store.get(key)
      const node: Node = kv
        ? decodeResource(kv.value, key, 'Node')
        : { apiVersion: 'projectcalico.org/v3', kind: 'Node', metadata: { name: this.settings.nodeName }, spec: {} }
      const before = JSON.stringify(node)
      edit(node)
      if (JSON.stringify(node) === before && kv) return
      try {
        if (kv) await this.store.update(key, encodeResource(node), kv.revision)
        else await this.store.create(key, encodeResource(node))
        return
      } catch (err) {
        if (err instanceof DatastoreError && (err.code === 'conflict' || err.code === 'exists')) continue
        throw err
      }
    }
    throw new Error(`Node ${this.settings.nodeName}: gave up updating after 10 conflicting writes`)
  }

  private async registerNode(): Promise<void> {
    await this.updateNode((node) => {
      const bgp = { ...(node.spec.bgp ?? {}) }
      if (this.v4) bgp.ipv4Address = `${this.v4.address}/${this.v4.prefixLength}`
      else delete bgp.ipv4Address
      if (this.v6) bgp.ipv6Address = `${this.v6.address}/${this.v6.prefixLength}`
      else delete bgp.ipv6Address
      if (this.settings.asNumber !== undefined) bgp.asNumber = this.settings.asNumber
      node.spec.bgp = bgp
      node.spec.addresses = [
        ...(this.v4 ? [{ address: `${this.v4.address}/${this.v4.prefixLength}`, type: 'CalicoNodeIP' as const }] : []),
        ...(this.v6 ? [{ address: `${this.v6.address}/${this.v6.prefixLength}`, type: 'CalicoNodeIP' as const }] : []),
      ]
    })
    this.log.info({ node: this.settings.nodeName }, 'Node registered')
  }

  /** Tunnel addresses from the pool, by handle, as Calico's allocateip does; published on the Node. */
  private async ensureTunnelAddresses(): Promise<void> {
    const pools = this.cluster.list('IPPool').filter((p) => !p.spec.disabled && !p.spec.cidr.includes(':'))
    const vxlanPool = pools.find((p) => (p.spec.vxlanMode ?? 'Never') !== 'Never')
    const ipipPool = pools.find((p) => (p.spec.ipipMode ?? 'Never') !== 'Never')
    const node = this.settings.nodeName
    const assign = async (handle: string, pool: IPPool, type: string): Promise<string | undefined> => {
      const r = await this.ipamService.ipam.autoAssign({ handle, node, num4: 1, attrs: { node, type }, pools: [pool.metadata.name], use: 'Tunnel' })
      return r.ipv4[0]?.address
    }
    if (vxlanPool) {
      const address = await assign(`vxlan-tunnel-addr-${node}`, vxlanPool, 'vxlanTunnelAddress')
      if (address) {
        this.vxlan = { address, mac: vtepMac(node) }
        await this.updateNode((n) => {
          n.spec.ipv4VXLANTunnelAddr = address
          n.spec.vxlanTunnelMACAddr = vtepMac(node)
        })
        this.log.info({ address, mac: this.vxlan.mac }, 'VXLAN tunnel endpoint')
      }
    }
    if (ipipPool) {
      const address = await assign(`ipip-tunnel-addr-${node}`, ipipPool, 'ipipTunnelAddress')
      if (address) {
        this.ipipAddress = address
        await this.updateNode((n) => {
          n.spec.bgp = { ...(n.spec.bgp ?? {}), ipv4IPIPTunnelAddr: address }
        })
        this.log.info({ address }, 'IPIP tunnel address')
      }
    }
  }

  /** Seconds to announce a restart for: we ran recently and did not stop for good. */
  private async restartWindow(): Promise<number> {
    const marker = this.markerPath()
    const st = await stat(marker).catch(() => undefined)
    if (!st) return 0
    const age = (Date.now() - st.mtimeMs) / 1000
    return age < this.settings.restartTime ? this.settings.restartTime : 0
  }

  private markerPath(): string {
    return join(this.settings.stateDir, `${this.settings.nodeName}.alive`)
  }

  private async beat(): Promise<void> {
    await mkdir(this.settings.stateDir, { recursive: true })
    await writeFile(this.markerPath(), String(Date.now())).catch(() => undefined)
  }

  // ---- BGP peers -------------------------------------------------------------------------------

  private async syncPeers(): Promise<void> {
    await this.releaseDeletedNodes()
    const meshBfd = this.meshBfd()
    const { peers, problems } = desiredPeers({
      localNode: this.settings.nodeName,
      nodes: this.cluster.list('Node'),
      peers: this.cluster.list('BGPPeer'),
      config: this.bgpConfig(),
      ...(meshBfd.params !== undefined ? { meshBfd: meshBfd.params } : {}),
    })
    if (meshBfd.problem !== undefined) problems.push(meshBfd.problem)
    this.problems = problems.map((p) => `${p.resource}: ${p.message}`)
    for (const p of problems) this.log.warn({ resource: p.resource }, p.message)
    const filters = new Map(this.cluster.list('BGPFilter').map((f) => [f.metadata.name, f]))
    const pools = this.cluster.list('IPPool')
    const nodeAddresses = new Set(this.cluster.list('Node').flatMap((n) => [n.spec.bgp?.ipv4Address, n.spec.bgp?.ipv6Address].filter((a): a is string => a !== undefined).map((a) => a.split('/')[0]!)))
    const services = serviceCidrs(this.bgpConfig())
    const configs: PeerConfig[] = []
    this.secrets.begin()
    for (const p of peers) {
      const password = p.password ? await this.secrets.resolve(p.password) : { password: undefined }
      if ('error' in password) {
        this.problems.push(password.error)
        this.log.error({ peer: p.name }, `${password.error}: the session waits for it`)
      }
      try {
        configs.push(this.peerConfig(p, filters, pools, services, p.node !== undefined || nodeAddresses.has(p.address), password))
      } catch (err) {
        this.log.warn({ peer: p.name }, `peer left out: ${(err as Error).message}`)
      }
    }
    const summary = this.speaker.setPeers(configs)
    // A removed peer's stale routes are swept from the RIB without a flush (BgpPeer.stop), so neither
    // felix nor the other peers would hear of it; flushing here hands the withdrawals out.
    if (summary.removed.length + summary.reset.length > 0) this.speaker.rib.flush()
    // reachableBy: Calico's static route to the peer through the gateway, programmed by felix.
    const peerRoutes = peers.flatMap((p) => (p.reachableBy !== undefined ? [{ prefix: `${p.address}/${p.family === 'ipv6' ? 128 : 32}`, nextHops: [{ address: p.reachableBy }] }] : []))
    if (JSON.stringify(peerRoutes) !== JSON.stringify(this.peerRoutes)) {
      this.peerRoutes = peerRoutes
      this.dataplaneJob.trigger()
    }
    await this.bfd?.sync(peers, { ...(this.v4 ? { v4: this.v4.address } : {}), ...(this.v6 ? { v6: this.v6.address } : {}) })
    this.peersComputed = true
    if (summary.added.length + summary.removed.length + summary.reset.length + summary.updated.length > 0) {
      this.log.info(summary, 'BGP peers updated')
    }
  }

  /**
   * A Node resource was deleted: its pods' addresses and its blocks go back to the pools (Calico's
   * kube-controllers do this). Every agent may do it; the CAS updates make doing it twice harmless.
   */
  private async releaseDeletedNodes(): Promise<void> {
    const live = new Set(this.cluster.list('Node').map((n) => n.metadata.name))
    const gone = new Map<string, Set<string>>() // node -> handles
    for (const b of this.cluster.blocks()) {
      const owner = b.affinity?.startsWith('host:') ? b.affinity.slice(5) : undefined
      if (owner !== undefined && !live.has(owner) && !gone.has(owner)) gone.set(owner, new Set())
      for (const a of b.attributes) {
        const n = a.secondary['node']
        if (n !== undefined && !live.has(n) && a.handleId) {
          let set = gone.get(n)
          if (!set) gone.set(n, (set = new Set()))
          set.add(a.handleId)
        }
      }
    }
    for (const [node, handles] of gone) {
      if (node === this.settings.nodeName) continue
      for (const h of handles) await this.ipamService.ipam.releaseByHandle(h)
      const released = await this.ipamService.ipam.releaseHostAffinities(node)
      this.log.info({ node, handles: handles.size, blocks: released }, 'released the IPAM of a deleted node')
    }
  }

  /** `toNode`: the peer is a cluster node (may announce pool prefixes, gets disableBGPExport pools). */
  private peerConfig(p: DesiredPeer, filters: ReadonlyMap<string, BGPFilter>, pools: readonly IPPool[], services: readonly string[], toNode: boolean, password: ResolvedPassword): PeerConfig {
    const named = p.filters.map((name) => {
      const f = filters.get(name)
      if (!f) throw new Error(`BGPFilter ${name} does not exist`)
      return f
    })
    // Calico appends its own export filter after the operator's: only pool and service routes leave the node.
    const exportPolicy = this.policy('export', [...named, exportAllowList(pools, services, toNode)])
    let importPolicy = named.length === 0 ? ACCEPT_ALL : this.policy('import', named)
    if (!toNode) importPolicy = this.guarded(importPolicy, pools, named)
    const v6 = p.family === 'ipv6'
    return {
      name: p.name,
      kind: p.kind,
      address: p.address,
      port: p.port,
      ...(p.localAddress !== undefined ? { localAddress: p.localAddress } : {}),
      ...(this.v6 ? { localAddress6: this.v6.address } : {}),
      peerAsn: p.peerAsn,
      localAsn: p.localAsn,
      passive: p.passive,
      families: v6 ? ['ipv6'] : ['ipv4'],
      rrClient: p.rrClient,
      nextHopMode: p.nextHopMode,
      allowLocalAs: p.allowLocalAs,
      restartTime: p.restartTime ?? this.settings.restartTime,
      ...(p.keepaliveTime !== undefined ? { keepaliveTime: p.keepaliveTime, holdTime: p.keepaliveTime * 3 } : {}),
      importPolicy,
      exportPolicy,
      ...('error' in password ? { transportError: password.error } : password.password !== undefined ? { password: password.password } : {}),
      ...(p.ttlSecurity > 0 ? { ttlSecurity: p.ttlSecurity } : {}),
    }
  }

  /**
   * A non-node peer's import policy behind the pool guard: prefixes inside a pool are refused unless one of
   * the peer's BGPFilters accepts them explicitly. Cached like policy(), by pools and filters.
   */
  private guarded(inner: Policy, pools: readonly IPPool[], named: readonly BGPFilter[]): Policy {
    const cidrs = pools.map((x) => x.spec.cidr).sort()
    const key = `guard:${JSON.stringify([cidrs, named.map((f) => [f.metadata.name, f.spec])])}`
    let p = this.policyCache.get(key)
    if (!p) {
      const guard = compilePoolGuard(cidrs, named)
      this.policyCache.set(key, (p = guardPoolPrefixes(inner, guard, (prefix, peer) => this.refusals.poolPrefixRefused(peer.name, formatPrefix(prefix)))))
    }
    return p
  }

  /** Compiled policies are cached by content, so unchanged peers keep the same object (no refresh). */
  private policy(direction: 'import' | 'export', filters: readonly Pick<BGPFilter, 'metadata' | 'spec'>[]): Policy {
    const key = `${direction}:${JSON.stringify(filters.map((f) => [f.metadata.name, f.spec]))}`
    let p = this.policyCache.get(key)
    if (!p) this.policyCache.set(key, (p = compileBgpFilters(filters, direction)))
    return p
  }

  // ---- origination and dataplane ---------------------------------------------------------------

  private async syncOrigination(): Promise<void> {
    const before = this.origination.blocks
    this.origination = originationFor(this.settings.nodeName, this.cluster.blocks())
    // A new or released block of ours is a blackhole route to write or remove now, as it is announced.
    if (JSON.stringify(before) !== JSON.stringify(this.origination.blocks)) this.dataplaneJob.trigger()
    const config = this.bgpConfig()
    let rules: CommunityRule[] = []
    try {
      rules = compileCommunityRules(config)
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'BGPConfiguration prefixAdvertisements not usable: routes originated without communities')
    }
    const want = new Set([...this.origination.blocks, ...this.origination.borrowed, ...serviceCidrs(config)])
    for (const text of want) {
      const prefix = parsePrefix(text)
      const attrs = communitiesFor(prefix, rules)
      const key = JSON.stringify(attrs)
      if (this.originated.get(text) !== key) {
        this.speaker.rib.originate(prefix, attrs)
        this.originated.set(text, key)
      }
    }
    for (const text of [...this.originated.keys()]) {
      if (!want.has(text)) {
        this.speaker.rib.withdrawOrigin(parsePrefix(text))
        this.originated.delete(text)
      }
    }
    this.speaker.rib.flush()
    this.releaseEndOfRibWhenSynced()
  }

  /**
   * End-of-RIB follows our table once everything we own is in the RIB and the peers have sent us their
   * tables, or the sync deadline has passed (RFC 4724 §4.1, selection deferral): a restarting node that
   * ended its table to a top-of-rack router before its iBGP peers' routes were in would have the router
   * drop, as stale, the paths through us to the other nodes' blocks, and take them again a second later.
   * Only a restarting node defers: peers keep nothing of a node that starts afresh, and nodes starting
   * together would otherwise each wait for the others' End-of-RIB until the deadline.
   */
  private releaseEndOfRibWhenSynced(): void {
    clearTimeout(this.eorTimer)
    this.eorTimer = undefined
    if (this.endOfRibReleased) return
    const waited = Date.now() - this.startedAt
    const synced = this.peersComputed && this.speaker.synced()
    if (this.restarting && !synced && waited < this.settings.syncDeadlineSeconds * 1000) {
      this.eorTimer = setTimeout(() => this.releaseEndOfRibWhenSynced(), 100)
      return
    }
    this.endOfRibReleased = true
    this.speaker.releaseEndOfRib()
    if (this.restarting) {
      this.log.info(
        { waitedMs: waited, peersSynced: synced },
        synced ? "every peer's table in: End-of-RIB follows ours" : 'not every peer sent its table in time: End-of-RIB follows ours anyway',
      )
    }
  }

  /** Whether a block is ours or holds one of our pods. */
  private concerns(b: AllocationBlock): boolean {
    const me = this.settings.nodeName
    if (b.affinity === `host:${me}`) return true
    return b.attributes.some((a) => a.secondary['node'] === me)
  }

  /** Addresses of this node's pods (from IPAM), so felix never removes their /32 routes. */
  private workloads(): string[] {
    const out: string[] = []
    for (const b of this.cluster.blocks()) {
      b.allocations.forEach((attrIndex, ordinal) => {
        if (attrIndex === null) return
        const attr = b.attributes[attrIndex]
        if (attr?.secondary['node'] === this.settings.nodeName && attr.handleId && !attr.handleId.includes('tunnel-addr')) {
          out.push(ordinalAddress(blockCidr(b), ordinal))
        }
      })
    }
    return out
  }

  private async syncDataplane(): Promise<void> {
    if (!this.dataplane) return
    // Like BIRD's kernel protocol in graceful restart: routes left by our previous run stay untouched
    // until the peers have sent us their tables (End-of-RIB), or a deadline passes.
    if (!this.dataplaneSynced) {
      const waited = Date.now() - this.startedAt
      const synced = this.peersComputed && this.speaker.synced()
      if (!synced && waited < this.settings.syncDeadlineSeconds * 1000) {
        this.syncTimer ??= setTimeout(() => {
          this.syncTimer = undefined
          this.dataplaneJob.trigger()
        }, 250)
        return
      }
      this.dataplaneSynced = true
      this.log.info({ waitedMs: waited, peersSynced: synced }, synced ? 'BGP tables in: programming the kernel' : 'not every peer sent its table in time: programming the kernel anyway')
    }
    const nodes = this.cluster.list('Node')
    this.feed?.setRules(this.programRules(nodes))
    const t0 = performance.now()
    await this.dataplane.update({
      nodeName: this.settings.nodeName,
      ipv4Address: this.v4 ? `${this.v4.address}/${this.v4.prefixLength}` : undefined,
      ipv6Address: this.v6 ? `${this.v6.address}/${this.v6.prefixLength}` : undefined,
      parentInterface: this.v4?.interface ?? this.v6?.interface ?? 'eth0',
      pools: this.cluster.list('IPPool'),
      nodes,
      localBlocks: this.origination.blocks,
      workloads: this.workloads(),
      ...(this.vxlan ? { vxlan: this.vxlan } : {}),
      ...(this.ipipAddress ? { ipipAddress: this.ipipAddress } : {}),
      staticRoutes: this.peerRoutes,
    })
    if (!this.dataplaneStarted) {
      // Until this update finished, the Loc-RIB's deltas were not written (felix was not started): those
      // that came while it ran are written now, not at the next delta or the periodic resync.
      this.dataplaneStarted = true
      this.fibJob.trigger()
      this.log.info({ ms: Math.round(performance.now() - t0), learnedRoutes: this.dataplane.desired.learnedCount }, 'dataplane started: devices, NAT and route monitor set up, first routes written')
    }
  }

  /**
   * Which learned routes felix programs: service ranges other nodes originate never (kube-proxy owns
   * service addresses, as Calico's rejectcidrs); a block goes to the node holding its affinity; a peer's
   * reachableBy route wins over anything learned for the same /32.
   */
  private programRules(nodes: readonly Node[]): ProgramRules {
    const nodeOfAddress = new Map<string, string>()
    for (const n of nodes) {
      for (const a of [n.spec.bgp?.ipv4Address, n.spec.bgp?.ipv6Address]) if (a !== undefined) nodeOfAddress.set(a.split('/')[0]!, n.metadata.name)
    }
    const owners = new Map<string, string>()
    for (const b of this.cluster.blocks()) {
      if (b.affinity?.startsWith('host:')) owners.set(formatPrefix(parsePrefix(b.cidr)), b.affinity.slice(5))
    }
    return { me: this.settings.nodeName, services: serviceCidrs(this.bgpConfig()), owners, fixed: this.peerRoutes.map((r) => r.prefix), nodeOfAddress }
  }

  /** What the REST API and metrics read. */
  get cache(): ClusterState {
    return this.cluster
  }

  get datastore(): Datastore {
    return this.store
  }
}

function routerIdFromName(name: string): string {
  const h = createHash('sha256').update(name).digest()
  return `${h[0]! | 1}.${h[1]}.${h[2]}.${h[3]}`
}

/** Calico's BGPConfiguration logSeverityScreen as pino levels. */
const SEVERITY: Readonly<Record<string, string>> = { Trace: 'trace', Debug: 'debug', Info: 'info', Warning: 'warn', Error: 'error', Fatal: 'fatal' }

/**
 * The speaker's logger: BGPConfiguration `logSeverityScreen` sets the level of the BGP logs (the speaker and
 * every session), as it sets BIRD's in Calico; unset, they follow PINTO_LOG_LEVEL. Read at start.
 */
function bgpLogger(log: Logger, severity: string | undefined): Logger {
  const child = log.child({ component: 'bgp' })
  const level = severity === undefined ? undefined : SEVERITY[severity]
  if (level !== undefined) child.level = level
  return child
}

