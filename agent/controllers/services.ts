// The Services controller: the Service addresses this node advertises (service-routes.ts decides them), from informers
// on every Service and EndpointSlice in the cluster, as kube-proxy watches them, and the default BGPConfiguration and
// this node's labels from the cluster state. Changes are coalesced and worked out per Service touched; origination
// hears when the set changed. It watches only while BGPConfiguration names a service range.

import type { Logger } from 'pino'
import { Informer, objectKey, type InformerEvent, type KubeHttp, type KubeObject } from '../../config/index.js'
import { compileServiceRanges, hasServiceRanges, serviceDecision, serviceNode, sliceServiceKey, type ServiceNode, type ServiceRanges } from '../service-routes.js'
import { Coalescer } from './coalescer.js'
import { followResources, type AgentContext } from './context.js'

export const SERVICES_PATH = '/api/v1/services'
export const ENDPOINT_SLICES_PATH = '/apis/discovery.k8s.io/v1/endpointslices'

/** The informers of one watching stretch, with what they index. */
interface Watching {
  readonly services: Informer
  readonly slices: Informer
  /** Service (namespace/name) -> its EndpointSlices by their own key. */
  readonly slicesOf: Map<string, Map<string, KubeObject>>
  synced: boolean
  readonly stop: () => void
}

export interface RequestCounts {
  readonly requests: number
  readonly streams: number
  readonly lists: number
  readonly watches: number
  readonly relists: number
}

export class ServicesController {
  private readonly log: Logger
  private readonly job: Coalescer
  private watching: Watching | undefined
  private unsubscribe: (() => void) | undefined
  /** Service -> the prefixes advertised for it. */
  private readonly perService = new Map<string, readonly string[]>()
  /** Prefix -> the Services it is advertised for (two Services may share an external IP). */
  private readonly refs = new Map<string, Set<string>>()
  /** Services to work out again at the next run; `all` after a change of ranges or labels. */
  private readonly dirty = new Set<string>()
  private all = true
  private inputsKey = ''
  /** The first run has decided whether Services are watched at all. */
  private decided = false
  private readonly problemsLogged = new Set<string>()
  /** Informers' lists and watches of stretches already ended, for the request figures. */
  private readonly ended = { lists: 0, watches: 0, relists: 0 }

  constructor(
    private readonly ctx: AgentContext,
    private readonly http: KubeHttp,
    /** The set of prefixes changed, or the first lists are in. */
    private readonly onChange: () => void,
  ) {
    this.log = ctx.log.child({ component: 'services' })
    this.job = new Coalescer(() => this.sync(), (err) => this.log.error({ err: err.message }, 'service advertisement failed'))
  }

  start(): void {
    this.unsubscribe = followResources(this.ctx, this.job)
  }

  async stop(): Promise<void> {
    this.unsubscribe?.()
    this.stopWatching()
    await this.job.idle()
    this.log.info({ kubernetesApi: this.counts() }, 'Services no longer watched: requests of the connection pool, lists and watches of the Services and EndpointSlices')
  }

  settled(): Promise<void> {
    return this.job.idle()
  }

  /** Every Service address this node advertises now. */
  prefixes(): IterableIterator<string> {
    return this.refs.keys()
  }

  /** The Services and EndpointSlices are listed (or nothing needs them): the prefixes are the cluster's. */
  get synced(): boolean {
    return this.decided && (this.watching === undefined || this.watching.synced)
  }

  /** Requests made to the apiserver through this pool, and this controller's lists and watches. */
  counts(): RequestCounts {
    const w = this.watching
    const sum = (k: 'lists' | 'watches' | 'relists'): number => this.ended[k] + (w === undefined ? 0 : w.services.counts[k] + w.slices.counts[k])
    return { ...this.http.counts, lists: sum('lists'), watches: sum('watches'), relists: sum('relists') }
  }

  private inputs(): { ranges: ServiceRanges; node: ServiceNode } {
    const name = this.ctx.settings.nodeName
    const node = serviceNode(name, this.ctx.cluster.get('Node', name)?.metadata.labels)
    const spec = this.ctx.cluster.get('BGPConfiguration', 'default')?.spec ?? {}
    try {
      return { ranges: compileServiceRanges(spec), node }
    } catch (err) {
      this.logOnce(`BGPConfiguration default: ${(err as Error).message}`)
      return { ranges: { clusterIPs: [], externalIPs: [], loadBalancerIPs: [], aggregate: true }, node }
    }
  }

  private async sync(): Promise<void> {
    // Events a watch chunk or a list delivers together are worked out in one run.
    await new Promise((resolve) => setImmediate(resolve))
    const { ranges, node } = this.inputs()
    this.decided = true
    if (!hasServiceRanges(ranges)) {
      if (this.watching !== undefined) {
        this.log.info('BGPConfiguration names no service range: Services are no longer watched')
        this.stopWatching()
      }
      return this.apply(new Set(this.perService.keys()), () => ({ prefixes: [], reason: 'BGPConfiguration names no service range' }))
    }
    const w = this.watching ?? this.startWatching()
    if (!w.synced) return
    const key = JSON.stringify([node, ranges.aggregate, ...[ranges.clusterIPs, ranges.externalIPs, ranges.loadBalancerIPs].map((rs) => rs.map((r) => r.cidr))])
    if (key !== this.inputsKey) {
      this.inputsKey = key
      this.all = true
    }
    const keys = this.all ? new Set([...w.services.list().map(objectKey), ...this.perService.keys()]) : new Set(this.dirty)
    this.all = false
    this.dirty.clear()
    this.apply(keys, (k) => {
      const svc = w.services.get(k)
      if (svc === undefined) return { prefixes: [], reason: 'deleted' }
      const d = serviceDecision(svc, w.slicesOf.get(k)?.values() ?? [], ranges, node)
      for (const p of d.problems) this.logOnce(p)
      return d
    })
  }

  /** Works out `keys` again and tells origination when the set of prefixes changed. */
  private apply(keys: Set<string>, decide: (key: string) => { readonly prefixes: readonly string[]; readonly reason: string }): void {
    let changed = false
    for (const k of keys) {
      const { prefixes: next, reason } = decide(k)
      const before = this.perService.get(k) ?? []
      if (before.length === next.length && before.every((p, i) => p === next[i])) continue
      for (const p of before) {
        if (next.includes(p)) continue
        const set = this.refs.get(p)
        set?.delete(k)
        if (set?.size === 0) {
          this.refs.delete(p)
          changed = true
          this.log.info({ prefix: p, service: k, reason }, 'Service address withdrawn')
        }
      }
      for (const p of next) {
        if (before.includes(p)) continue
        const set = this.refs.get(p) ?? new Set<string>()
        if (set.size === 0) {
          changed = true
          this.log.info({ prefix: p, service: k, reason }, 'Service address advertised')
        }
        this.refs.set(p, set.add(k))
      }
      if (next.length === 0) this.perService.delete(k)
      else this.perService.set(k, next)
    }
    if (changed) this.onChange()
  }

  private startWatching(): Watching {
    const onError = (what: string) => (err: Error): void => this.log.warn({ err: err.message }, `${what}: the Kubernetes API is not answering; the Service addresses advertised stay as they are`)
    const services = new Informer(this.http, { path: SERVICES_PATH, what: 'Services' }, onError('Services'))
    const slices = new Informer(this.http, { path: ENDPOINT_SLICES_PATH, what: 'EndpointSlices' }, onError('EndpointSlices'))
    const slicesOf = new Map<string, Map<string, KubeObject>>()
    const offServices = services.onEvent((e) => this.touched(objectKey(e.object)))
    const offSlices = slices.onEvent((e) => this.sliceEvent(slicesOf, e))
    const w: Watching = {
      services,
      slices,
      slicesOf,
      synced: false,
      stop: () => {
        offServices()
        offSlices()
        services.close()
        slices.close()
      },
    }
    this.watching = w
    this.all = true
    this.log.info({ from: this.http.server }, 'watching Services and EndpointSlices')
    void Promise.all([services.start(), slices.start()]).then(() => {
      if (this.watching !== w) return
      w.synced = true
      this.all = true
      this.log.info({ services: services.size, endpointSlices: slices.size }, 'Services and EndpointSlices listed')
      this.job.trigger()
      // Origination holds End-of-RIB after a restart until the Service addresses are known.
      this.onChange()
    })
    return w
  }

  private stopWatching(): void {
    const w = this.watching
    if (w === undefined) return
    for (const k of ['lists', 'watches', 'relists'] as const) this.ended[k] += w.services.counts[k] + w.slices.counts[k]
    w.stop()
    this.watching = undefined
  }

  private touched(key: string): void {
    this.dirty.add(key)
    this.job.trigger()
  }

  /** Keeps the index of slices by Service; a slice relabelled to another Service touches both. */
  private sliceEvent(slicesOf: Map<string, Map<string, KubeObject>>, e: InformerEvent<KubeObject>): void {
    const own = objectKey(e.object)
    const prior = e.old ?? (e.type === 'deleted' ? e.object : undefined)
    const before = prior === undefined ? undefined : sliceServiceKey(prior)
    const after = e.type === 'deleted' ? undefined : sliceServiceKey(e.object)
    if (before !== undefined && before !== after) {
      const m = slicesOf.get(before)
      m?.delete(own)
      if (m?.size === 0) slicesOf.delete(before)
      this.touched(before)
    }
    if (after !== undefined) {
      const m = slicesOf.get(after) ?? new Map<string, KubeObject>()
      slicesOf.set(after, m.set(own, e.object))
      this.touched(after)
    }
  }

  private logOnce(problem: string): void {
    if (this.problemsLogged.has(problem)) return
    if (this.problemsLogged.size > 1000) this.problemsLogged.clear()
    this.problemsLogged.add(problem)
    this.log.warn({ problem }, 'a Service value could not be read; the rest of the Service still counts')
  }
}
