// The BGP peers controller: the sessions this node should have, from the datastore (the mesh, reflectors,
// BGPPeers), their passwords (re-read when a Secret volume changes) and BFD, applied to the speaker so that
// only changed sessions are touched. It tells felix of the static routes to peers with reachableBy.

import type { Logger } from 'pino'
import type { BfdSessionSpec, BgpSpeaker, PeerConfig, SpeakerBfd } from '../../bgp/index.js'
import { deepEqual, nodeAddressNames } from '../../config/index.js'
import type { LearnedRoute } from '../../felix/index.js'
import { serviceCidrs } from '../advertisements.js'
import { parseBfdAnnotation } from '../bfd-annotation.js'
import { desiredPeers, type DesiredPeer, type PeerProblem } from '../bgp-peers.js'
import { BgpSecrets } from '../bgp-secrets.js'
import type { AnnouncementRefusals } from '../refusals.js'
import { Coalescer } from './coalescer.js'
import { bgpConfig, followResources, type AgentContext } from './context.js'
import { PeerPolicies } from './peer-policies.js'

export class PeersController {
  private readonly log: Logger
  private readonly bfdLog: Logger
  private readonly job: Coalescer
  private readonly secrets: BgpSecrets
  private readonly policies: PeerPolicies
  private secretsTimer: NodeJS.Timeout | undefined
  private unsubscribe: (() => void) | undefined
  /** What the last computation could not use, for the status API. */
  problems: string[] = []
  /** Set once the peers have been computed and handed to the speaker. */
  computed = false
  /** Static routes to BGP peers with reachableBy, for felix. */
  staticRoutes: readonly LearnedRoute[] = []

  constructor(
    private readonly ctx: AgentContext,
    private readonly speaker: BgpSpeaker,
    private readonly bfd: SpeakerBfd,
    refusals: AnnouncementRefusals,
    /** Called when the static routes changed. */
    private readonly onStaticRoutes: () => void,
  ) {
    this.log = ctx.log
    this.bfdLog = ctx.log.child({ component: 'bfd' })
    this.job = new Coalescer(() => this.sync(), (err) => this.log.error({ err: err.message }, 'peer update failed'))
    this.secrets = new BgpSecrets(ctx.settings.secretsDir)
    this.policies = new PeerPolicies(refusals)
  }

  /** Every peer has sent its table (End-of-RIB), as far as the computed peers go. */
  get tablesIn(): boolean {
    return this.computed && this.speaker.synced()
  }

  start(): void {
    this.unsubscribe = followResources(this.ctx, this.job)
    // A Secret volume is updated in place (kubelet swaps its ..data link): a changed key re-keys the
    // listener and resets the session through the next peer update.
    this.secretsTimer = setInterval(() => {
      void this.secrets.changed().then((changed) => {
        if (!changed) return
        this.log.info({ dir: this.secrets.dir }, 'a BGP password changed: peers updated')
        this.job.trigger()
      })
    }, 2000)
    this.secretsTimer.unref()
  }

  async stop(): Promise<void> {
    clearInterval(this.secretsTimer)
    this.unsubscribe?.()
    await this.job.idle()
  }

  settled(): Promise<void> {
    return this.job.idle()
  }

  private async sync(): Promise<void> {
    const { cluster, settings, addresses } = this.ctx
    const config = bgpConfig(this.ctx)
    const meshBfd = this.meshBfd()
    const nodes = cluster.list('Node')
    const { peers, problems } = desiredPeers({ localNode: settings.nodeName, nodes, peers: cluster.list('BGPPeer'), config, ...(meshBfd.params !== undefined ? { meshBfd: meshBfd.params } : {}) })
    if (meshBfd.problem !== undefined) problems.push(meshBfd.problem)
    this.problems = problems.map((p) => `${p.resource}: ${p.message}`)
    for (const p of problems) this.log.warn({ resource: p.resource }, p.message)
    const inputs = {
      filters: new Map(cluster.list('BGPFilter').map((f) => [f.metadata.name, f])),
      pools: cluster.list('IPPool'),
      services: serviceCidrs(config),
      localAddress6: addresses.v6?.address,
      restartTime: settings.restartTime,
    }
    const nodeAddresses = nodeAddressNames(nodes)
    const configs: PeerConfig[] = []
    this.secrets.begin()
    for (const p of peers) {
      const password = p.password ? await this.secrets.resolve(p.password) : { password: undefined }
      if ('error' in password) {
        this.problems.push(password.error)
        this.log.error({ peer: p.name }, `${password.error}: the session waits for it`)
      }
      try {
        configs.push(this.policies.configFor(p, inputs, p.node !== undefined || nodeAddresses.has(p.address), password))
      } catch (err) {
        this.log.warn({ peer: p.name }, `peer left out: ${(err as Error).message}`)
      }
    }
    const summary = this.speaker.setPeers(configs)
    // reachableBy: Calico's static route to the peer through the gateway, programmed by felix.
    const routes = peers.flatMap((p) => (p.reachableBy !== undefined ? [{ prefix: `${p.address}/${p.family === 'ipv6' ? 128 : 32}`, nextHops: [{ address: p.reachableBy }] }] : []))
    if (!deepEqual(routes, this.staticRoutes)) {
      this.staticRoutes = routes
      this.onStaticRoutes()
    }
    await this.bfd.sync(this.bfdSpecs(peers))
    this.computed = true
    if (summary.added.length + summary.removed.length + summary.reset.length + summary.updated.length > 0) this.log.info(summary, 'BGP peers updated')
  }

  /** The BFD sessions the peers ask for, each from this node's address of the peer's family unless the peer names one. */
  private bfdSpecs(peers: readonly DesiredPeer[]): BfdSessionSpec[] {
    const { v4, v6 } = this.ctx.addresses
    const specs: BfdSessionSpec[] = []
    for (const p of peers) {
      if (p.bfd === undefined) continue
      const local = p.localAddress ?? (p.family === 'ipv6' ? v6?.address : v4?.address)
      if (local === undefined) {
        this.bfdLog.warn({ peer: p.name }, `BFD left out: this node has no ${p.family} address to send from`)
        continue
      }
      specs.push({ name: p.name, peerAddress: p.address, localAddress: local, family: p.family, params: p.bfd })
    }
    return specs
  }

  /** BFD for the mesh: the pinto.dev/bfd annotation of BGPConfiguration node.<name>, else default. */
  private meshBfd(): { params?: ReturnType<typeof parseBfdAnnotation>; problem?: PeerProblem } {
    const cluster = this.ctx.cluster
    const own = cluster.get('BGPConfiguration', `node.${this.ctx.settings.nodeName}`)
    const source = own?.metadata.annotations?.['pinto.dev/bfd'] !== undefined ? own : cluster.get('BGPConfiguration', 'default')
    try {
      return { params: parseBfdAnnotation(source?.metadata.annotations) }
    } catch (err) {
      return { problem: { resource: `BGPConfiguration ${source?.metadata.name}`, message: `${(err as Error).message}; the mesh runs without BFD` } }
    }
  }
}
