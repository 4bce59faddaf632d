// The annotations an ADD writes back on its pod (cni.projectcalico.org/podIP, podIPs, containerID) and a DEL clears
// (podIP and podIPs set to "", containerID kept, and only while it still names the DEL's container), each a merge
// patch of the pod's metadata through pods/<name>/status, as Calico writes them. Off the ADD's and the DEL's path:
// the latest wish per pod is applied by one worker per pod, retried with backoff while the apiserver fails, and
// dropped once the pod is gone or a newer wish replaces it. It never fails an ADD or a DEL.

import { type KubeHttp, type KubeResponse, isJsonObject } from '../config/index.js'
import { POD_ANNOTATIONS } from './pod-annotations.js'

/** Set: the container's addresses as CIDRs (198.18.0.5/32), first the one podIP names. Clear: for that container. */
export type PodIpWish =
  | { readonly kind: 'set'; readonly containerId: string; readonly ips: readonly string[] }
  | { readonly kind: 'clear'; readonly containerId: string }

type Log = (level: 'info' | 'warn', msg: string, fields: Record<string, unknown>) => void

const RETRY_MS = 500
const RETRY_MAX_MS = 30_000
const MERGE_PATCH = 'application/merge-patch+json'

interface Entry {
  readonly namespace: string
  readonly name: string
  readonly wish: PodIpWish
}

/** The pod was changed between our read and our write (resourceVersion precondition): read it again at once. */
class Stale extends Error {}

export class PodIpAnnotations {
  private readonly wishes = new Map<string, Entry>()
  private readonly workers = new Map<string, Promise<void>>()
  private readonly sleeping = new Map<string, { timer: NodeJS.Timeout; wake: () => void }>()
  private closed = false
  /** Patches that landed and attempts that failed, for the tests and the log. */
  readonly counts = { written: 0, cleared: 0, failed: 0 }

  constructor(
    private readonly http: KubeHttp,
    private readonly log: Log,
  ) {}

  /** Asks for the pod's annotations to become `wish`, replacing any wish not yet applied. */
  want(namespace: string, name: string, wish: PodIpWish): void {
    if (this.closed) return
    const key = `${namespace}/${name}`
    this.wishes.set(key, { namespace, name, wish })
    const asleep = this.sleeping.get(key)
    if (asleep !== undefined) asleep.wake() // a new wish is tried now, not after the old one's backoff
    if (!this.workers.has(key)) this.workers.set(key, this.work(key).finally(() => this.workers.delete(key)))
  }

  /** Resolves once no wish is waiting (tests). */
  async settled(): Promise<void> {
    while (this.workers.size > 0) await Promise.all([...this.workers.values()])
  }

  /** Stops retrying; patches in flight finish. */
  async close(): Promise<void> {
    this.closed = true
    for (const s of this.sleeping.values()) s.wake()
    await Promise.all([...this.workers.values()])
  }

  private async work(key: string): Promise<void> {
    let delay = RETRY_MS
    let failing = false
    for (;;) {
      const e = this.wishes.get(key)
      if (e === undefined || this.closed) return
      try {
        await this.apply(e)
        if (this.wishes.get(key) === e) this.wishes.delete(key)
        if (failing) this.log('info', 'pod annotations written after failing', { pod: key, containerId: e.wish.containerId })
        failing = false
        delay = RETRY_MS
      } catch (err) {
        if (err instanceof Stale) continue
        this.counts.failed++
        if (!failing) this.log('warn', 'writing the pod\'s cni.projectcalico.org annotations failed; retrying in the background (the pod keeps its network)', { pod: key, kind: e.wish.kind, containerId: e.wish.containerId, err: (err as Error).message })
        failing = true
        await this.sleep(key, delay)
        delay = Math.min(RETRY_MAX_MS, delay * 2)
      }
    }
  }

  private sleep(key: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const wake = (): void => {
        clearTimeout(timer)
        this.sleeping.delete(key)
        resolve()
      }
      const timer = setTimeout(wake, ms)
      timer.unref()
      this.sleeping.set(key, { timer, wake })
    })
  }

  private path(e: Entry): string {
    return `/api/v1/namespaces/${encodeURIComponent(e.namespace)}/pods/${encodeURIComponent(e.name)}`
  }

  private async apply(e: Entry): Promise<void> {
    const w = e.wish
    if (w.kind === 'set') {
      const annotations = { [POD_ANNOTATIONS.podIP]: w.ips[0] ?? '', [POD_ANNOTATIONS.podIPs]: w.ips.join(','), [POD_ANNOTATIONS.containerID]: w.containerId }
      const r = await this.http.request('PATCH', `${this.path(e)}/status`, undefined, { metadata: { annotations } }, MERGE_PATCH)
      if (r.status === 404) return
      if (r.status !== 200) throw this.failure(e, 'patch', r)
      this.counts.written++
      return
    }
    // Clear only the container's own annotations: a newer sandbox of the pod may have written its own since.
    const got = await this.http.request('GET', this.path(e))
    if (got.status === 404) return
    if (got.status !== 200 || !isJsonObject(got.body) || !isJsonObject(got.body.metadata)) throw this.failure(e, 'read', got)
    const meta = got.body.metadata
    const annotations = isJsonObject(meta.annotations) ? meta.annotations : {}
    const owner = annotations[POD_ANNOTATIONS.containerID]
    if (typeof owner === 'string' && owner !== '' && owner !== w.containerId) return
    if ((annotations[POD_ANNOTATIONS.podIP] ?? '') === '' && (annotations[POD_ANNOTATIONS.podIPs] ?? '') === '') return
    const patch = { metadata: { resourceVersion: meta.resourceVersion, uid: meta.uid, annotations: { [POD_ANNOTATIONS.podIP]: '', [POD_ANNOTATIONS.podIPs]: '' } } }
    const r = await this.http.request('PATCH', `${this.path(e)}/status`, undefined, patch, MERGE_PATCH)
    if (r.status === 404) return
    if (r.status === 409) throw new Stale()
    if (r.status !== 200) throw this.failure(e, 'patch', r)
    this.counts.cleared++
  }

  private failure(e: Entry, what: string, r: KubeResponse): Error {
    const message = isJsonObject(r.body) && typeof r.body.message === 'string' ? r.body.message : r.text.trim().slice(0, 200)
    const hint = r.status === 401 || r.status === 403 ? ' (pinto-node needs pods get and pods/status patch)' : ''
    return new Error(`kubernetes apiserver ${this.http.server}: ${what} pod ${e.namespace}/${e.name}: ${r.status} ${message}${hint}`)
  }
}
