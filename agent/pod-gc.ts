// Pod GC: this node's allocations whose pod left the Kubernetes API with no CNI DEL (a kubelet killed, a pod force-
// deleted) are released, and their host wiring removed. An allocation is its handle's, and its pod is the one the
// ADD recorded in the allocation's attributes (namespace, pod, node). A handle is released only when its pod has
// been absent from the synced cache of this node's pods for the grace period and a GET of the pod then answers 404:
// a pod that exists never loses an address. Other nodes' allocations are theirs (or the deleted-Node GC's).

import type { KubeHttp } from '../config/index.js'
import type { AllocationBlock } from '../ipam/index.js'
import { Coalescer } from './controllers/coalescer.js'

export interface PodGcOptions {
  readonly node: string
  /** How long a pod must stay absent before its addresses go. */
  readonly graceMs: number
  /** The watched pods of this node, keyed namespace/name; `synced` false until the first list is in. */
  readonly pods: { synced(): boolean; has(key: string): boolean }
  readonly http: KubeHttp
  /** The IPAM blocks as they are now (the cluster's watched copy, or a read). */
  readonly blocks: () => Promise<Iterable<AllocationBlock>>
  /** Releases a handle through the IPAM service (its queue, and the pod's annotations cleared). */
  readonly release: (handle: string) => Promise<unknown>
  /** Whether an ADD or DEL of the handle is being served now: left alone this round. */
  readonly busy: (handle: string) => boolean
  /** Removes the host wiring that records the handle's attachment; returns the links removed. */
  readonly unwire: (handle: string) => Promise<readonly string[]>
  readonly log: (level: 'info' | 'warn', msg: string, fields: Record<string, unknown>) => void
  readonly now?: () => number
}

/** How often this node's allocations are looked at: a third of the grace, between 1 s and a minute. */
export function scanIntervalMs(graceMs: number): number {
  return Math.min(60_000, Math.max(1000, Math.floor(graceMs / 3)))
}

export class PodGc {
  /** Handle -> when its pod was first seen absent, and which pod that is. */
  private readonly absent = new Map<string, { readonly since: number; readonly pod: string }>()
  private readonly job: Coalescer
  private timer: NodeJS.Timeout | undefined
  private readonly now: () => number
  private failing = false
  /** Handles released, for the tests and the log. */
  released = 0

  constructor(private readonly o: PodGcOptions) {
    this.now = o.now ?? Date.now
    this.job = new Coalescer(() => this.scan(), (err) => {
      if (!this.failing) o.log('warn', 'pod GC failed; trying again at the next scan', { err: err.message })
      this.failing = true
    })
  }

  start(): void {
    this.timer = setInterval(() => this.job.trigger(), scanIntervalMs(this.o.graceMs))
    this.timer.unref()
    this.job.trigger()
  }

  /** A look now (a pod was deleted from the cache, say). */
  trigger(): void {
    this.job.trigger()
  }

  async stop(): Promise<void> {
    clearInterval(this.timer)
    await this.job.idle()
  }

  settled(): Promise<void> {
    return this.job.idle()
  }

  private async scan(): Promise<void> {
    if (!this.o.pods.synced()) return
    const now = this.now()
    const seen = new Set<string>()
    for (const b of await this.o.blocks()) {
      for (const a of b.attributes) {
        const s = a.secondary
        const handle = a.handleId
        if (!handle || s['node'] !== this.o.node || !s['namespace'] || !s['pod'] || seen.has(handle)) continue
        seen.add(handle)
        const pod = `${s['namespace']}/${s['pod']}`
        if (this.o.pods.has(pod)) this.absent.delete(handle)
        else if (!this.absent.has(handle)) this.absent.set(handle, { since: now, pod })
      }
    }
    for (const handle of this.absent.keys()) if (!seen.has(handle)) this.absent.delete(handle)
    for (const [handle, { since, pod }] of this.absent) {
      if (now - since < this.o.graceMs || this.o.busy(handle)) continue
      if (await this.exists(pod)) {
        this.absent.delete(handle)
        continue
      }
      const veths = await this.o.unwire(handle)
      await this.o.release(handle)
      this.absent.delete(handle)
      this.released++
      this.o.log('info', 'released the addresses of a pod gone from the Kubernetes API without a CNI DEL', { handle, pod, absentSeconds: Math.round((now - since) / 1000), hostVeths: veths })
    }
    if (this.failing) this.o.log('info', 'pod GC works again', {})
    this.failing = false
  }

  /** The apiserver's word on the pod, read now: only a 404 says it is gone. */
  private async exists(pod: string): Promise<boolean> {
    const [namespace, name] = pod.split('/') as [string, string]
    const r = await this.o.http.request('GET', `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}`)
    if (r.status === 404) return false
    if (r.status === 200) return true
    throw new Error(`kubernetes apiserver ${this.o.http.server}: reading pod ${pod} before releasing its addresses: ${r.status} ${r.text.trim().slice(0, 200)}`)
  }
}
