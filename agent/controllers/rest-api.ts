// pinto-node's REST API over the controllers: what it reads of each (the speaker, IPAM, felix's routes
// and applies, readiness, BFD, announcements), the one admin action, and the metrics registry. It listens
// on TCP (read-only without the token) and on the agent's API socket.

import { Registry } from 'prom-client'
import type { BgpSpeaker, SpeakerBfd } from '../../bgp/index.js'
import type { Dataplane } from '../../felix/index.js'
import { buildApi, ipamReads, listenApi, speakerReads, type ApiListeners, type FibApplyLog } from '../api/index.js'
import { registerBfdMetrics } from '../bfd-metrics.js'
import { registerCniMetrics, registerIpamSafetyMetrics } from '../metrics.js'
import { registerAnnouncementMetrics, type AnnouncementRefusals } from '../refusals.js'
import type { AgentContext } from './context.js'
import type { IpamController } from './ipam.js'

/** The parts the API reads. */
export interface ApiParts {
  readonly speaker: BgpSpeaker
  readonly bfd: SpeakerBfd
  readonly ipam: IpamController
  readonly refusals: AnnouncementRefusals
  readonly applyLog: FibApplyLog
  /** felix, when the dataplane is on, and whether it programs the kernel yet. */
  readonly dataplane?: { readonly felix: Dataplane; synced(): boolean }
  /** Whether the BGP peers have been computed. */
  peersComputed(): boolean
}

export class RestApi {
  private listeners: ApiListeners | undefined

  constructor(
    private readonly ctx: AgentContext,
    private readonly parts: ApiParts,
  ) {}

  async start(): Promise<void> {
    const { settings: s, startedAt } = this.ctx
    const { speaker, dataplane, applyLog } = this.parts
    const app = await buildApi({
      node: s.nodeName,
      uptimeSeconds: () => Math.floor((Date.now() - startedAt) / 1000),
      bgp: speakerReads(speaker),
      ipam: { ...ipamReads(this.parts.ipam.ipam), heldBlocks: () => this.ctx.cluster.blocks() },
      ...(dataplane ? { fib: { routes: () => dataplane.felix.routes(), count: () => dataplane.felix.desired.count(), stats: () => applyLog.stats() } } : {}),
      datastore: this.ctx.store,
      bfd: this.parts.bfd,
      readiness: {
        startupWindowSeconds: s.readyWindowSeconds,
        gracefulRestartInProgress: () => dataplane !== undefined && !dataplane.synced(),
        checks: () => {
          const ok = this.parts.peersComputed()
          return [{ name: 'peers', ok, ...(ok ? {} : { detail: 'BGP peers not computed yet' }) }]
        },
      },
      actions: { refreshPeer: (name, direction) => speaker.refresh(name, direction) },
      metrics: this.metricsRegistry(),
      announcements: this.parts.refusals,
      ...(s.apiToken !== undefined ? { token: s.apiToken } : {}),
    })
    const host = s.apiListen.host.includes(':') ? `[${s.apiListen.host}]` : s.apiListen.host
    this.listeners = await listenApi(app, { tcp: `${host}:${s.apiListen.port}`, socket: s.apiSocket })
    this.ctx.log.info({ tcp: this.listeners.tcp, socket: this.listeners.socket }, 'REST API listening (TCP read-only; changes over the socket or with the token)')
  }

  async stop(): Promise<void> {
    await this.listeners?.close()
  }

  private metricsRegistry(): Registry {
    const { bfd, ipam, refusals, speaker } = this.parts
    const registry = new Registry()
    registerBfdMetrics(registry, () => bfd.sessions())
    registerIpamSafetyMetrics(registry, {
      repaired: () => ipam.repair?.repaired ?? {},
      pendingReleases: () => ipam.service.recovery.pendingReleases,
      addsRolledBack: () => ipam.service.recovery.rolledBack,
      blocksClaimedAhead: () => ipam.service.ahead.claimed,
    })
    registerAnnouncementMetrics(registry, refusals, () => speaker.peerStatus().map((p) => p.name))
    if (ipam.cni !== undefined) ipam.cni.onAnswer = registerCniMetrics(registry)
    return registry
  }
}
