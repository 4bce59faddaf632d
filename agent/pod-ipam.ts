// The pod's side of the IPAM service's ADD and DEL: before an assign queues, its pod and the pod's namespace are
// read from the apiserver (together) and Calico's annotations shape the assignment (pod-annotations.ts);
// after an assign or a release by handle, the pod's podIP annotations are written or cleared (pod-ip-annotations.ts).
// With no apiserver connection it changes nothing. It decides no allocation: ipam/ assigns.

import { DatastoreError, type KubeHttp, type KubeObject, isJsonObject } from '../config/index.js'
import type { Family } from '../net/index.js'
import { type AllocationBlock, type AutoAssignRequest, type AutoAssignResult, type IpamAddress, type Ipam, IpamError, type PoolSpec } from '../ipam/index.js'
import { PRIMARY_IFNAME } from '../cni/index.js'
import { type AnnotatedObject, type PodIpamAsk, checkFixedAddresses, familyPools, namespaceMatters, readPodIpamAsk, refuse, resolveAnnotatedPools } from './pod-annotations.js'
import type { PodIpAnnotations } from './pod-ip-annotations.js'
import { heldByPods, podIpsToWrite } from './pod-ip-restore.js'

/** What the hooks need of the apiserver side (kube-pods.ts), present once it is connected. */
export interface PodApi {
  readonly http: KubeHttp
  readonly annotations: PodIpAnnotations
  /** Whether the watched cache of this node's pods has had its first list. */
  synced(): boolean
  /** The pod on this node whose containerID annotation names `containerId`, from the watched cache. */
  podOfContainer(containerId: string): { readonly namespace: string; readonly name: string } | undefined
  /** The pod `namespace/name` on this node, from the watched cache. */
  pod(key: string): KubeObject | undefined
  /** The namespace `name` from the watched cache; undefined when it is not there (or not listed yet). */
  namespace(name: string): KubeObject | undefined
}

/** How one ADD assigns, when the pod's annotations decide it. */
export type PodAssign = (ipam: Ipam) => Promise<AutoAssignResult>

interface PodRef {
  readonly namespace: string
  readonly name: string
  readonly containerId: string
}

/** The container of a primary attachment's handle `<network>.<containerID>`; undefined for another interface's. */
function containerOfHandle(handle: string): string | undefined {
  if (handle.includes(':')) return undefined
  const dot = handle.lastIndexOf('.')
  return dot < 0 ? undefined : handle.slice(dot + 1) || undefined
}

function annotationsOf(o: unknown): Record<string, string> {
  const meta = isJsonObject(o) && isJsonObject(o.metadata) ? o.metadata : {}
  const a = isJsonObject(meta.annotations) ? meta.annotations : {}
  return Object.fromEntries(Object.entries(a).filter((e): e is [string, string] => typeof e[1] === 'string'))
}

export class PodIpam {
  /** Handles assigned in this run, and whose pod they are: what a release clears. */
  private readonly byHandle = new Map<string, PodRef>()
  /** Until restore() has run: handles released in this run (their allocations may linger in a watched copy)... */
  private releasedHere: Set<string> | undefined = new Set()
  /** ...and the containers whose clear waited for the pods' first list, to find their pod by. */
  private readonly clearsUnsynced = new Set<string>()

  constructor(
    private readonly options: {
      readonly api: () => PodApi | undefined
      readonly pools: () => Promise<readonly PoolSpec[]>
      readonly log: (msg: string, fields: Record<string, unknown>) => void
    },
  ) {}

  /**
   * The assignment the pod's annotations ask for, or undefined for an ordinary one (no apiserver, no pod named in
   * the request, no annotation, or a pod the apiserver does not have). A bad annotation is refused ('invalid',
   * naming it) before anything is assigned; an apiserver that cannot be read fails the ADD as 'unavailable' (the
   * runtime tries again): its annotations might have asked for other addresses.
   */
  async plan(req: AutoAssignRequest): Promise<PodAssign | undefined> {
    const api = this.options.api()
    const namespace = req.attrs?.['namespace']
    const name = req.attrs?.['pod']
    if (api === undefined || namespace === undefined || namespace === '' || name === undefined || name === '') return undefined
    const podWhere = `pod ${namespace}/${name}`
    // From the watched caches when they hold them: the kubelet runs a pod it learnt of through its own watch, which
    // the apiserver fed as it fed ours. Else both read at once, one round trip: the namespace is needed unless the
    // pod's own annotations settle everything.
    const cachedNs = api.namespace(namespace)
    const nsRead = cachedNs !== undefined ? Promise.resolve(cachedNs) : this.read(api.http, `/api/v1/namespaces/${encodeURIComponent(namespace)}`, `namespace ${namespace}`)
    nsRead.catch(() => undefined)
    const cachedPod = api.pod(`${namespace}/${name}`)
    const pod = cachedPod !== undefined && cachedPod.metadata['deletionTimestamp'] === undefined ? cachedPod : await this.read(api.http, `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods/${encodeURIComponent(name)}`, podWhere)
    if (pod === undefined) {
      this.options.log('the pod of an ADD is not in the Kubernetes API: no annotations to honour', { pod: `${namespace}/${name}`, handle: req.handle })
      return undefined
    }
    const podAnnotations = annotationsOf(pod)
    let ns: AnnotatedObject | undefined
    if (namespaceMatters(podAnnotations)) {
      const nsObject = await nsRead
      if (nsObject !== undefined) ns = { on: `namespace ${namespace} (of ${podWhere})`, annotations: annotationsOf(nsObject) }
    }
    const ask = readPodIpamAsk({ on: podWhere, annotations: podAnnotations }, ns)
    const fixed = ask.fixed
    if (fixed !== undefined) return (ipam) => this.assignFixed(ipam, req, fixed)
    if (ask.pools[4] !== undefined || ask.pools[6] !== undefined || ask.families !== undefined) return (ipam) => this.assignFromPools(ipam, req, ask)
    return undefined
  }

  /** The object at `path`, undefined when the apiserver has none; a failure to read it is 'unavailable'. */
  private async read(http: KubeHttp, path: string, what: string): Promise<unknown> {
    let r
    try {
      r = await http.request('GET', path)
    } catch (err) {
      throw new DatastoreError('unavailable', `reading ${what} for its cni.projectcalico.org annotations: ${(err as Error).message}`)
    }
    if (r.status === 404) return undefined
    if (r.status === 200 && isJsonObject(r.body)) return r.body
    const message = isJsonObject(r.body) && typeof r.body.message === 'string' ? r.body.message : r.text.trim().slice(0, 200)
    const hint = r.status === 401 || r.status === 403 ? ' (pinto-node needs pods get and namespaces get)' : ''
    throw new DatastoreError('unavailable', `kubernetes apiserver ${http.server}: reading ${what} for its cni.projectcalico.org annotations: ${r.status} ${message}${hint}`)
  }

  /** ipv4pools / ipv6pools / ipFamilies: autoAssign restricted per family to the pools named, checked now. */
  private async assignFromPools(ipam: Ipam, req: AutoAssignRequest, ask: PodIpamAsk): Promise<AutoAssignResult> {
    const pools = await this.options.pools()
    const annotated: Partial<Record<Family, readonly string[]>> = {}
    for (const f of [4, 6] as const) {
      const a = ask.pools[f]
      if (a !== undefined) annotated[f] = resolveAnnotatedPools(a, f, pools)
    }
    const fam = ask.families
    const num4 = fam === undefined ? req.num4 : fam.v4 ? 1 : 0
    const num6 = fam === undefined ? req.num6 : fam.v6 ? 1 : 0
    if (fam !== undefined && num4 === 0 && num6 === 0) throw refuse(fam.found, 'names no IP family to assign')
    const { pools: configured, ...rest } = req
    try {
      return await ipam.autoAssign({ ...rest, num4, num6, familyPools: familyPools(configured, annotated, pools) })
    } catch (err) {
      const names = ([4, 6] as const).flatMap((f) => (ask.pools[f] === undefined ? [] : [`${ask.pools[f].found.name} on ${ask.pools[f].found.on}`]))
      if (err instanceof IpamError && (err.code === 'no-pool' || err.code === 'exhausted') && names.length > 0) throw new IpamError(err.code, `${err.message} (the pools of annotation ${names.join(' and ')})`)
      throw err
    }
  }

  /** ipAddrs: exactly these addresses, each in an enabled pool and free (or this handle's already). */
  private async assignFixed(ipam: Ipam, req: AutoAssignRequest, fixed: NonNullable<PodIpamAsk['fixed']>): Promise<AutoAssignResult> {
    checkFixedAddresses(fixed, await this.options.pools())
    const got: IpamAddress[] = []
    for (const { address } of fixed.addresses) {
      try {
        got.push(await ipam.assignIP({ address, handle: req.handle, node: req.node, attrs: req.attrs ?? {} }))
      } catch (err) {
        if (err instanceof IpamError && (err.code === 'in-use' || err.code === 'no-pool')) throw new IpamError(err.code, refuse(fixed.found, err.message).message)
        throw err
      }
    }
    return { ipv4: got.filter((a) => a.family === 4), ipv6: got.filter((a) => a.family === 6) }
  }

  /** An assign answered: the pod's primary attachment writes its addresses and container on the pod. */
  assigned(req: AutoAssignRequest, r: AutoAssignResult): void {
    const api = this.options.api()
    const a = req.attrs ?? {}
    const namespace = a['namespace']
    const name = a['pod']
    const containerId = a['containerID']
    if (api === undefined || !namespace || !name || !containerId || (a['ifname'] ?? PRIMARY_IFNAME) !== PRIMARY_IFNAME) return
    const ips = [...r.ipv4.map((x) => `${x.address}/32`), ...r.ipv6.map((x) => `${x.address}/128`)]
    if (ips.length === 0) return
    this.byHandle.set(req.handle, { namespace, name, containerId })
    this.releasedHere?.delete(req.handle)
    this.clearsUnsynced.delete(containerId)
    api.annotations.want(namespace, name, { kind: 'set', containerId, ips })
  }

  /**
   * A handle released (a DEL, the pod GC, or a release of the recovery queue): its pod's podIP and podIPs are
   * cleared while they are its container's. Before the pods' first list, the pod is looked for once it is in.
   */
  released(handle: string): void {
    const api = this.options.api()
    const known = this.byHandle.get(handle)
    this.byHandle.delete(handle)
    this.releasedHere?.add(handle)
    const containerId = known?.containerId ?? containerOfHandle(handle)
    if (api === undefined || containerId === undefined) return
    if (known === undefined && !api.synced()) return void this.clearsUnsynced.add(containerId)
    const pod = known ?? api.podOfContainer(containerId)
    if (pod !== undefined) api.annotations.want(pod.namespace, pod.name, { kind: 'clear', containerId })
  }

  /**
   * Once, when this node's pods are listed: the clears that waited for the list, then podIP, podIPs and
   * containerID written on each pod whose allocation (from `blocks`) they do not match: an earlier run's wish lost
   * with it. Handles assigned or released in this run, or `busy` now, are their request's to annotate. Returns
   * how many pods were asked to change.
   */
  restore(node: string, blocks: Iterable<AllocationBlock>, busy: (handle: string) => boolean): { written: number; cleared: number } {
    const api = this.options.api()
    const skipped = this.releasedHere ?? new Set<string>()
    this.releasedHere = undefined
    if (api === undefined) return { written: 0, cleared: 0 }
    let cleared = 0
    for (const containerId of this.clearsUnsynced) {
      const pod = api.podOfContainer(containerId)
      if (pod === undefined) continue
      api.annotations.want(pod.namespace, pod.name, { kind: 'clear', containerId })
      cleared++
    }
    this.clearsUnsynced.clear()
    const held = heldByPods(node, blocks, (h) => this.byHandle.has(h) || skipped.has(h) || busy(h))
    const writes = podIpsToWrite(held, (key) => api.pod(key))
    for (const w of writes) {
      this.byHandle.set(w.handle, { namespace: w.namespace, name: w.name, containerId: w.containerId })
      api.annotations.want(w.namespace, w.name, { kind: 'set', containerId: w.containerId, ips: w.ips })
    }
    return { written: writes.length, cleared }
  }
}
