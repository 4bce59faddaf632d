// The IPAM service for the CNI plugins and what keeps it right: the service on the agent's socket, the
// CNI channel through which the agent does pods' ADDs (an optimisation: without it the plugins wire pods
// themselves), the periodic repair of this node's IPAM records, and this node's pods as the Kubernetes API
// has them (their Calico annotations, and the pod GC). Started early, stopped last.

import type { Ipam } from '../../ipam/index.js'
import { CniService } from '../cni-service.js'
import { IpamService } from '../ipam-service.js'
import { KubePods } from '../kube-pods.js'
import { NodeIpamRepair } from '../recovery/index.js'
import type { AgentContext } from './context.js'

export class IpamController {
  readonly service: IpamService
  cni: CniService | undefined
  repair: NodeIpamRepair | undefined
  /** This node's pods as the Kubernetes API has them: their annotations, and the pod GC. */
  readonly pods: KubePods
  /** The IPAM parts' log, as they take it: a message and its fields. */
  private readonly log: (msg: string, fields: Record<string, unknown>) => void

  constructor(private readonly ctx: AgentContext) {
    const s = ctx.settings
    const ipamLog = ctx.log.child({ component: 'ipam' })
    this.log = (msg, fields) => ipamLog.info(fields, msg)
    const kubeLog = ctx.log.child({ component: 'pods' })
    this.pods = new KubePods({ node: s.nodeName, store: ctx.store.inner, source: s.kube, gcGraceSeconds: s.podGcGraceSeconds, log: (level, msg, fields) => kubeLog[level](fields, msg) })
    this.service = new IpamService({ store: ctx.store, cluster: ctx.cluster, node: s.nodeName, socket: s.socket, mtuFile: s.mtuFile, stateDir: s.stateDir, claimAheadBelow: s.ipamClaimAhead, pods: this.pods.ipamHooks, log: this.log, onDatastoreBack: () => void this.repair?.trigger() })
  }

  get ipam(): Ipam {
    return this.service.ipam
  }

  async start(): Promise<void> {
    const { settings: s, log } = this.ctx
    await this.pods.start()
    await this.service.listen()
    log.info({ socket: s.socket }, 'IPAM service listening for the CNI plugins')
    const cni = new CniService({ socket: s.socket, ipam: this.service })
    try {
      await cni.listen()
      this.cni = cni
      log.info({ fifo: `${s.socket}.requests` }, 'CNI channel open: pinto-node does the ADDs of pods with pinto-ipam')
    } catch (err) {
      // An optimisation only: without it the plugins do their ADDs themselves.
      log.warn({ err: (err as Error).message }, 'CNI channel not opened; the plugins will wire pods themselves')
    }
    if (s.ipamRepairSeconds > 0) {
      const service = this.service
      const cluster = this.ctx.cluster
      this.repair = new NodeIpamRepair({ ipam: service.ipam, node: s.nodeName, busy: (h) => service.busy(h) || this.cni?.busy(h) === true, graceMs: s.ipamRepairGraceSeconds * 1000, log: this.log, blocks: () => cluster.blocks() })
      this.repair.start(s.ipamRepairSeconds * 1000)
    }
    // The watched blocks: no read of the datastore per scan.
    this.pods.attachIpam({ release: (body) => this.service.release(body), busy: (h) => this.service.busy(h) || this.cni?.busy(h) === true, releasing: (h) => this.service.recovery.releaseWanted(h) }, async () => this.ctx.cluster.blocks())
  }

  async stop(): Promise<void> {
    await this.pods.stop()
    await this.repair?.stop()
    await this.cni?.close()
    await this.service.close()
  }
}
