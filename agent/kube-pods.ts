// pinto-node's view of the pods on its node, in either datastore mode: the apiserver connection (the kubernetes
// datastore's own, else one from KUBECONFIG or the in-cluster ServiceAccount; with neither, these features are off
// and the composition root says so once, with NO_CREDENTIALS_PODS), a watched cache of this node's pods, the IPAM service's pod hooks (pod-ipam.ts), the
// podIP annotation writer (with its restore from IPAM once the pods are listed) and the pod GC. The IPAM controller
// and ipam-service-main compose it around their service.

import type { Datastore } from '../config/index.js'
import { Informer, type InformerEvent, KubeHttp, type KubeObject, type KubeSource } from '../config/index.js'
import { type AllocationBlock } from '../ipam/index.js'
import { Dataplane, aliasNames } from '../cni/index.js'
import { loadPoolSpecs } from './ipam-service-pools.js'
import { POD_ANNOTATIONS } from './pod-annotations.js'
import { PodGc } from './pod-gc.js'
import { PodIpAnnotations } from './pod-ip-annotations.js'
import { type PodApi, PodIpam } from './pod-ipam.js'

/** Requests of our own connection (etcd mode) are answered within this, or fail. */
const REQUEST_TIMEOUT_MS = 5000

/** What is off without Kubernetes credentials, for the one line the composition root logs. */
export const NO_CREDENTIALS_PODS = 'pods\' cni.projectcalico.org annotations are not read or written, and pods gone without a CNI DEL keep their addresses'

export type KubeLog = (level: 'info' | 'warn', msg: string, fields: Record<string, unknown>) => void

export interface KubePodsOptions {
  readonly node: string
  /** The datastore: its apiserver connection when it is the kubernetes datastore, and the IP pools. */
  readonly store: Datastore
  /** Credentials for etcd mode (settings' kube); unused when the datastore has its own connection. */
  readonly source: KubeSource | undefined
  /** PINTO_POD_GC_GRACE_SECONDS; 0 turns the pod GC off. */
  readonly gcGraceSeconds: number
  readonly log: KubeLog
}

/** What the pod GC and the annotations' restore need of the IPAM service beside it. */
export interface PodGcIpam {
  release(body: { handle: string }): Promise<unknown>
  busy(handle: string): boolean
  /** Whether the handle waits in the recovery's release queue: its release will clear the pod's annotations. */
  releasing(handle: string): boolean
}

/** The apiserver connection a datastore carries (the kubernetes datastore's `api`), if any. */
function apiOf(store: Datastore): KubeHttp | undefined {
  const api = (store as { api?: unknown }).api
  return api instanceof KubeHttp ? api : undefined
}

export class KubePods implements PodApi {
  /** The hooks the IPAM service is built with; they do nothing until start() has connected. */
  readonly ipamHooks: PodIpam
  private connection: { readonly http: KubeHttp; readonly own: boolean } | undefined
  private informer: Informer | undefined
  /** Every namespace, for their pool annotations: an ADD then reads neither its pod nor its namespace. */
  private namespaces: Informer | undefined
  private writer: PodIpAnnotations | undefined
  private podGc: PodGc | undefined
  private isSynced = false
  /** The IPAM service's side, once attachIpam() has it: the restore waits for both it and the pods' list. */
  private ipam: { readonly service: PodGcIpam; readonly blocks: () => Promise<Iterable<AllocationBlock>> } | undefined
  private restoring: Promise<void> | undefined
  private stopped = false

  constructor(private readonly o: KubePodsOptions) {
    this.ipamHooks = new PodIpam({
      api: () => (this.connection !== undefined ? this : undefined),
      pools: () => loadPoolSpecs(o.store),
      log: (msg, fields) => o.log('info', msg, fields),
    })
  }

  get http(): KubeHttp {
    if (this.connection === undefined) throw new Error('not connected to the Kubernetes API')
    return this.connection.http
  }

  get annotations(): PodIpAnnotations {
    if (this.writer === undefined) throw new Error('not connected to the Kubernetes API')
    return this.writer
  }

  /** The pod GC, once started (tests). */
  get gc(): PodGc | undefined {
    return this.podGc
  }

  /**
   * Connects (reading credentials only; the apiserver may be down) and starts watching this node's pods. Call
   * before the IPAM service takes requests, so that no ADD goes by its pod's annotations unread.
   */
  async start(): Promise<void> {
    const own = apiOf(this.o.store)
    if (own !== undefined) this.connection = { http: own, own: false }
    else if (this.o.source !== undefined) this.connection = { http: await KubeHttp.connect(this.o.source, REQUEST_TIMEOUT_MS), own: true }
    else return // the composition root says once what is off without credentials (NO_CREDENTIALS_PODS)
    const http = this.connection.http
    this.writer = new PodIpAnnotations(http, this.o.log)
    const informer = (this.informer = new Informer(http, { path: '/api/v1/pods', what: `pods on node ${this.o.node}`, fieldSelector: `spec.nodeName=${this.o.node}` }, (err) => this.o.log('warn', 'watching this node\'s pods failed; retrying', { err: err.message })))
    this.namespaces = new Informer(http, { path: '/api/v1/namespaces', what: 'namespaces' }, (err) => this.o.log('warn', 'watching namespaces failed (an ADD reads its pod\'s namespace meanwhile); retrying', { err: err.message }))
    void this.namespaces.start()
    informer.onEvent((e: InformerEvent<KubeObject>) => {
      if (e.type === 'deleted') this.podGc?.trigger()
    })
    void informer.start().then(() => {
      this.isSynced = true
      this.o.log('info', 'this node\'s pods listed from the Kubernetes API', { node: this.o.node, pods: informer.size })
      this.podGc?.trigger()
      this.startRestore()
    })
    this.o.log('info', 'reading pods from the Kubernetes API: cni.projectcalico.org annotations honoured', { server: http.server, podGcGraceSeconds: this.o.gcGraceSeconds })
  }

  /**
   * Takes the IPAM service beside it: once this node's pods are listed, their podIP annotations are restored from
   * its allocations; and the pod GC starts (unless it is off). Without a connection, nothing.
   */
  attachIpam(ipam: PodGcIpam, blocks: () => Promise<Iterable<AllocationBlock>>): void {
    if (this.connection === undefined) return
    this.ipam = { service: ipam, blocks }
    this.startRestore()
    if (this.o.gcGraceSeconds === 0) return
    const dp = new Dataplane()
    this.podGc = new PodGc({
      node: this.o.node,
      graceMs: this.o.gcGraceSeconds * 1000,
      pods: { synced: () => this.isSynced, has: (key) => this.informer?.get(key) !== undefined },
      http: this.connection.http,
      blocks,
      release: (handle) => ipam.release({ handle }),
      busy: (handle) => ipam.busy(handle),
      unwire: async (handle) => {
        const names = await dp.linksNaming((alias) => aliasNames(alias, handle))
        for (const n of names) await dp.removeHostVeth(n)
        return names
      },
      log: this.o.log,
    })
    this.podGc.start()
  }

  /**
   * The annotations' restore (PodIpam.restore), once, when the pods are listed and the IPAM service attached; a
   * failure to read the blocks is tried again until it reads or the agent stops.
   */
  private startRestore(): void {
    const ipam = this.ipam
    if (!this.isSynced || ipam === undefined || this.restoring !== undefined) return
    this.restoring = (async () => {
      for (let delay = 1000; !this.stopped; delay = Math.min(30_000, delay * 2)) {
        try {
          const r = this.ipamHooks.restore(this.o.node, await ipam.blocks(), (h) => ipam.service.busy(h) || ipam.service.releasing(h))
          if (r.written + r.cleared > 0) this.o.log('info', 'podIP annotations an earlier run left unwritten, from this node\'s allocations', { node: this.o.node, pods: r.written, cleared: r.cleared })
          return
        } catch (err) {
          this.o.log('warn', 'reading the IPAM blocks to restore pods\' podIP annotations failed; retrying', { err: (err as Error).message, retryMs: delay })
          await new Promise((resolve) => setTimeout(resolve, delay).unref())
        }
      }
    })()
  }

  synced(): boolean {
    return this.isSynced
  }

  pod(key: string): KubeObject | undefined {
    return this.informer?.get(key)
  }

  namespace(name: string): KubeObject | undefined {
    return this.namespaces?.get(name)
  }

  podOfContainer(containerId: string): { namespace: string; name: string } | undefined {
    for (const p of this.informer?.list() ?? []) {
      const namespace = p.metadata['namespace']
      if (p.metadata.annotations?.[POD_ANNOTATIONS.containerID] === containerId && typeof namespace === 'string') return { namespace, name: p.metadata.name }
    }
    return undefined
  }

  async stop(): Promise<void> {
    this.stopped = true
    await this.podGc?.stop()
    this.informer?.close()
    this.namespaces?.close()
    await this.writer?.close()
    if (this.connection?.own === true) this.connection.http.close()
  }
}
