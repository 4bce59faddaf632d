// pinto-node's composition root: it opens the datastore and follows the cluster, detects the node's
// addresses, builds the speaker, felix and the controllers (registration, IPAM, node clean-up, peers,
// Services, origination, the dataplane feed, and off the kubernetes datastore the Kubernetes Node's labels and
// deleted Kubernetes Nodes) and the REST API, starts them in order and stops them in reverse. On a graceful stop
// it leaves kernel routes in place and closes sessions without NOTIFICATION, so peers keep our routes while we
// restart.

import { createHash } from 'node:crypto'
import { pino, type Logger } from 'pino'
import { BgpSpeaker, SpeakerBfd } from '../bgp/index.js'
import { FanoutDatastore, Informer, type KubeHttp, openDatastore, parseDatastoreSpec, type Datastore, type Node } from '../config/index.js'
import { Dataplane, ExecaRunner, RouteSocket, type ProcessRunner } from '../felix/index.js'
import { FibApplyLog } from './api/index.js'
import { ClusterState } from './cluster-state.js'
import { bgpConfig, type AgentContext } from './controllers/context.js'
import { DataplaneFeed } from './controllers/dataplane-feed.js'
import { IpamController } from './controllers/ipam.js'
import { KubeNodeLabels } from './controllers/kube-node-labels.js'
import { KubeNodeController } from './controllers/kube-nodes.js'
import { NodeGc } from './controllers/node-gc.js'
import { OriginationController } from './controllers/origination.js'
import { PeersController } from './controllers/peers.js'
import { detectNodeAddresses, Registration } from './controllers/registration.js'
import { RestApi } from './controllers/rest-api.js'
import { ServicesController } from './controllers/services.js'
import { MonitoredDatastore } from './datastore-health.js'
import { NO_CREDENTIALS_PODS } from './kube-pods.js'
import { openKubernetesApi, type KubernetesApi } from './kubernetes-api.js'
import { AnnouncementRefusals } from './refusals.js'
import { fanoutEndpoints } from './fanout/endpoints.js'
import { FANOUT_ROOTS } from './fanout/roots.js'
import { readFanoutToken } from './fanout/token.js'
import type { AgentSettings, FanoutSetting } from './settings.js'

export class PintoNode {
  readonly log: Logger
  private readonly runner: ProcessRunner
  /** Commands run in this process's own namespace (no runner handed in), so a route socket may be opened. */
  private readonly ownNamespace: boolean
  /** Who may announce pod addresses: refusals and affinity conflicts, for the log, API and metrics. */
  readonly refusals: AnnouncementRefusals
  readonly applyLog = new FibApplyLog()
  readonly startedAt = Date.now()
  // What start() builds, in that order; stop() takes down whatever of it there is.
  private store: MonitoredDatastore | undefined
  private cluster: ClusterState | undefined
  private registration: Registration | undefined
  private ipam: IpamController | undefined
  private speaker: BgpSpeaker | undefined
  private bfd: SpeakerBfd | undefined
  private gc: NodeGc | undefined
  private kube: KubernetesApi | undefined
  private services: ServicesController | undefined
  private peers: PeersController | undefined
  private origination: OriginationController | undefined
  private dataplane: Dataplane | undefined
  private routeSocket: RouteSocket | undefined
  private feed: DataplaneFeed | undefined
  private api: RestApi | undefined
  private kubeLabels: KubeNodeLabels | undefined
  private kubeNodes: KubeNodeController | undefined

  constructor(
    readonly settings: AgentSettings,
    deps: { logger?: Logger; runner?: ProcessRunner } = {},
  ) {
    this.log = deps.logger ?? pino({ level: settings.logLevel })
    this.runner = deps.runner ?? new ExecaRunner()
    this.ownNamespace = deps.runner === undefined
    this.refusals = new AnnouncementRefusals(this.log.child({ component: 'announcements' }))
  }

  async start(): Promise<void> {
    const s = this.settings
    const log = this.log
    log.info({ node: s.nodeName, datastore: s.datastore }, 'pinto-node starting')
    if (s.etcdTls.ca !== undefined || s.etcdTls.cert !== undefined) {
      log.info({ caFile: s.etcdTls.ca, certFile: s.etcdTls.cert, keyFile: s.etcdTls.key }, 'etcd TLS files read once now; restart pinto-node to use renewed ones')
    }
    const opened = await openDatastore(s.datastore, { etcdTls: s.etcdTls })
    const kube = (this.kube = await this.openKubernetes(opened))
    const followed = s.fanout === undefined ? opened : await this.openFanout(opened, s.fanout, kube)
    const store = (this.store = new MonitoredDatastore(followed, { log: log.child({ component: 'datastore' }) }))
    const cluster = (this.cluster = new ClusterState(store, log.child({ component: 'datastore' }), { node: s.nodeName }))
    await cluster.start()
    const addresses = await detectNodeAddresses(this.runner, { settings: s, cluster, log })
    const ctx: AgentContext = { settings: s, log, store, cluster, addresses, startedAt: this.startedAt }

    const onKubernetes = parseDatastoreSpec(s.datastore).kind === 'kubernetes'
    const registration = (this.registration = new Registration(ctx))
    if (onKubernetes) await registration.awaitKubernetesNode()
    else if (kube !== undefined) await registration.tieToKubernetes(kube.http)
    await registration.register()
    const ipam = (this.ipam = new IpamController(ctx))
    await ipam.start()
    await registration.ensureTunnelAddresses(ipam.ipam)

    const restartingFor = await registration.restartWindow()
    const speaker = (this.speaker = newSpeaker(ctx, restartingFor))
    if (restartingFor > 0) log.info({ seconds: restartingFor }, 'restarting within the graceful-restart window: peers are asked to keep our routes')
    await speaker.start()
    const bfd = (this.bfd = new SpeakerBfd(speaker, log.child({ component: 'bfd' }), s.bfdPort))

    const gc = (this.gc = new NodeGc(ctx, ipam.ipam, () => {
      this.peers?.trigger()
      this.feed?.trigger()
    }))
    const nodes = (): Node[] => gc.nodes()
    const peers = (this.peers = new PeersController(ctx, speaker, bfd, this.refusals, () => this.feed?.trigger(), nodes))
    const services = (this.services = kube !== undefined ? new ServicesController(ctx, kube.http, () => this.origination?.trigger()) : undefined)
    if (!onKubernetes && kube !== undefined) {
      this.kubeLabels = newKubeNodeLabels(ctx, kube.http, log)
      this.kubeNodes = new KubeNodeController(ctx, kube.http)
    }
    const origination = (this.origination = new OriginationController(ctx, speaker, {
      restarting: restartingFor > 0,
      tablesIn: () => peers.tablesIn,
      onBlocks: () => this.feed?.trigger(),
      ...(services !== undefined ? { services } : {}),
    }))
    let feed: DataplaneFeed | undefined
    if (s.dataplane === 'kernel') {
      const dataplane = (this.dataplane = await this.openFelix(speaker))
      feed = this.feed = new DataplaneFeed(ctx, dataplane, speaker, {
        refusals: this.refusals,
        tablesIn: () => peers.tablesIn,
        localBlocks: () => origination.blocks,
        staticRoutes: () => peers.staticRoutes,
        tunnels: () => registration.tunnels,
        nodes,
      })
    }
    const dataplane = this.dataplane
    this.api = new RestApi(ctx, {
      speaker,
      bfd,
      ipam,
      refusals: this.refusals,
      applyLog: this.applyLog,
      ...(dataplane !== undefined && feed !== undefined ? { dataplane: { felix: dataplane, synced: () => feed.synced } } : {}),
      peersComputed: () => peers.computed,
    })
    await this.api.start()

    // The order the controllers hear of the cluster's changes in, and first run.
    gc.start()
    peers.start()
    services?.start()
    origination.start()
    feed?.start()
    this.kubeLabels?.start()
    this.kubeNodes?.start()
    await registration.start()
    log.info('pinto-node started')
  }

  /**
   * The Kubernetes API (the kubernetes datastore's, or KUBECONFIG / the in-cluster ServiceAccount beside another
   * datastore), for the Services controller and, off the kubernetes datastore, the Node labels and deleted Nodes;
   * without credentials, none, said once.
   */
  private async openKubernetes(datastore: Datastore): Promise<KubernetesApi | undefined> {
    const kube = await openKubernetesApi(datastore, process.env)
    const without = 'Service addresses are not advertised (the service ranges are), the Node labels are not synced, a deleted Kubernetes Node does not delete its Node'
    if (kube === undefined) {
      this.log.info(`no Kubernetes credentials (KUBECONFIG or the in-cluster ServiceAccount): ${without}, ${NO_CREDENTIALS_PODS}`)
      return undefined
    }
    if (kube instanceof Error) {
      this.log.warn({ err: kube.message }, `the Kubernetes API cannot be used: ${without}`)
      return undefined
    }
    this.log.info({ from: kube.from }, 'Service addresses follow the Kubernetes API')
    return kube
  }

  /**
   * The datastore with what every agent follows served by the fan-out (pinto-fanout): its replicas as given, or
   * the ready endpoints of its Service, read through the Kubernetes API.
   */
  private async openFanout(store: Datastore, fanout: FanoutSetting, kube: KubernetesApi | undefined): Promise<Datastore> {
    const s = this.settings
    const token = s.fanoutTokenFile === undefined ? undefined : readFanoutToken(s.fanoutTokenFile)
    let addresses: readonly string[]
    let resolve: (() => Promise<string[]>) | undefined
    if ('service' in fanout) {
      const { namespace, name } = fanout.service
      if (kube === undefined) throw new Error(`PINTO_FANOUT_SERVICE=${namespace}/${name}: the Kubernetes API cannot be used to find it`)
      resolve = () => fanoutEndpoints(kube.http, namespace, name)
      addresses = await resolve()
    } else addresses = fanout.addresses
    // Agents spread over the replicas by node name; each moves on to the next one after a failure.
    const start = [...s.nodeName].reduce((h, c) => (h * 31 + c.charCodeAt(0)) >>> 0, 7)
    this.log.info({ addresses, ...('service' in fanout ? { service: `${fanout.service.namespace}/${fanout.service.name}` } : {}) }, 'following the cluster through the fan-out')
    return new FanoutDatastore(store, { roots: FANOUT_ROOTS, addresses, start, token, resolve })
  }

  /** felix's dataplane, writing through its own rtnetlink socket when it can. */
  private async openFelix(speaker: BgpSpeaker): Promise<Dataplane> {
    const s = this.settings
    if (s.routeWriter === 'netlink' && this.ownNamespace) {
      const opened = await RouteSocket.open()
      if (opened instanceof Error) this.log.warn({ err: opened.message }, 'no rtnetlink route socket: felix writes routes through ip -batch')
      else {
        this.routeSocket = opened
        this.log.info('felix writes routes through its rtnetlink route socket')
      }
    }
    return new Dataplane({
      ...(this.routeSocket !== undefined ? { routeSocket: this.routeSocket } : {}),
      protocol: s.routeProtocol,
      resyncSeconds: s.resyncSeconds,
      mtuFile: s.mtuFile,
      log: this.log.child({ component: 'felix' }),
      runner: this.runner,
      nextHops: speaker.nextHops,
      onApply: (result, seconds) => this.applyLog.record(result, seconds),
    })
  }

  /** Waits until the controllers' work has caught up (for tests). */
  async settled(): Promise<void> {
    await this.gc?.settled()
    await this.peers?.settled()
    await this.services?.settled()
    await this.origination?.settled()
    await this.feed?.settled()
    await this.kubeLabels?.settled()
    await this.kubeNodes?.settled()
  }

  /** Graceful (default): sessions closed without NOTIFICATION, kernel routes left, restart marker kept. */
  async stop(opts: { graceful?: boolean } = {}): Promise<void> {
    const graceful = opts.graceful ?? true
    // The controllers go quiet first (timers, subscriptions, work in flight), so that nothing reaches
    // felix or the speaker while they close: the kernel keeps its routes.
    await this.registration?.stop()
    this.cluster?.close()
    const quiet = async (c: { stop(): Promise<void> } | undefined): Promise<void> => c?.stop().catch((err: Error) => this.log.warn({ err: err.message }, 'a controller did not stop cleanly'))
    await quiet(this.gc)
    await quiet(this.peers)
    await quiet(this.services)
    await quiet(this.origination)
    await quiet(this.feed)
    await quiet(this.kubeLabels)
    await quiet(this.kubeNodes)
    await this.api?.stop()
    await this.bfd?.close()
    await this.speaker?.stop(graceful ? { graceful: true } : { message: 'pinto-node stopped' })
    await this.dataplane?.stop()
    this.routeSocket?.close()
    await this.ipam?.stop()
    this.kube?.close()
    await this.store?.close()
    this.log.info({ graceful }, 'pinto-node stopped; kernel routes left in place')
  }
}

/** The sync of this node's Kubernetes Node labels onto its Node (etcd or the embedded store): one watch of its own Node. */
function newKubeNodeLabels(ctx: AgentContext, http: KubeHttp, log: Logger): KubeNodeLabels {
  const name = ctx.settings.nodeName
  const informer = new Informer(http, { path: '/api/v1/nodes', what: `Kubernetes Node ${name}`, fieldSelector: `metadata.name=${name}` }, (err) =>
    log.child({ component: 'kube-node-labels' }).warn({ err: err.message }, 'the Kubernetes API does not answer: the Node labels are synced when it does'),
  )
  return new KubeNodeLabels(ctx, informer)
}

/** The speaker as BGPConfiguration and the Node resource say, read once at start as calico-node does. */
function newSpeaker(ctx: AgentContext, restartingFor: number): BgpSpeaker {
  const { settings: s, addresses } = ctx
  const me = ctx.cluster.get('Node', s.nodeName)
  const clusterId = me?.spec.bgp?.routeReflectorClusterID
  const config = bgpConfig(ctx)
  return new BgpSpeaker({
    asn: me?.spec.bgp?.asNumber ?? config.asNumber ?? 64512,
    routerId: addresses.v4?.address ?? routerIdFromName(s.nodeName),
    // bindMode NodeIP: listen on the node's addresses only. listenPort: the port mesh peers reach us on,
    // so the one we listen on; PINTO_BGP_PORT without it.
    listen: { port: config.listenPort ?? s.bgpPort, ...(config.bindMode === 'NodeIP' ? { hosts: [addresses.v4?.address, addresses.v6?.address].filter((a): a is string => a !== undefined) } : {}) },
    ...(clusterId !== undefined ? { clusterId } : {}),
    multipath: true,
    restartingFor,
    holdEndOfRib: true,
    logger: bgpLogger(ctx.log, config.logSeverityScreen),
  })
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
