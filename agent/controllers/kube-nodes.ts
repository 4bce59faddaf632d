// Calico's node controller, off the kubernetes datastore (etcd, embedded): a pinto Node tied to a Kubernetes Node
// (an orchRef with orchestrator k8s, which each agent writes on its own Node when its Kubernetes Node exists) is
// deleted once that Kubernetes Node is gone, so `kubectl delete node` starts the node clean-up's grace period
// (node-gc.ts) as it does on the kubernetes datastore. Nodes without such an orchRef (hosts pinto runs on outside
// Kubernetes, written by hand) are never touched.
//
// One agent does it, chosen by a rule every agent computes alike and with no election: among the Nodes tied to
// Kubernetes, sorted by name, the first whose Kubernetes Node exists and is Ready. An agent asks only about the
// Nodes named before its own, nearest first, and stops at the first that is there: one GET, from the API server's
// watch cache, every CHECK_MS on every agent but the leader, which alone lists and watches every Kubernetes Node.
// When the leader's Kubernetes Node goes or stops being Ready, the next agent leads within CHECK_MS; two that
// both lead for a moment delete the same Nodes with compare-and-delete, and one of them finds nothing to do.

import type { Logger } from 'pino'
import { DatastoreError, decodeResource, Informer, type KubeHttp, type KubeObject, resourceKey, type Node } from '../../config/index.js'
import { isJsonObject as isObject } from '../../config/index.js'
import { Coalescer } from './coalescer.js'
import type { AgentContext } from './context.js'

/** How often an agent that does not lead asks whether it should. */
export const CHECK_MS = 30_000

/** The Kubernetes Node a pinto Node is tied to, by its orchRef with orchestrator k8s (Calico's). */
export function kubeNodeOf(node: Node): string | undefined {
  const ref = node.spec.orchRefs?.find((r) => r.orchestrator.toLowerCase() === 'k8s' || r.orchestrator.toLowerCase() === 'kubernetes')
  return ref === undefined ? undefined : (ref.nodeName ?? node.metadata.name)
}

/** The Kubernetes Nodes of the pinto Nodes named before `me` and tied to Kubernetes, nearest first. Pure. */
export function askBefore(nodes: readonly Node[], me: string): string[] {
  return nodes
    .filter((n) => n.metadata.name < me)
    .sort((a, b) => (a.metadata.name < b.metadata.name ? 1 : -1))
    .map(kubeNodeOf)
    .filter((k): k is string => k !== undefined)
}

/** The pinto Nodes tied to a Kubernetes Node that `kube` does not hold. Pure. */
export function orphans(nodes: readonly Node[], kube: ReadonlySet<string>): Node[] {
  return nodes.filter((n) => {
    const k = kubeNodeOf(n)
    return k !== undefined && !kube.has(k)
  })
}

/** The tied Nodes, name and Kubernetes Node, as one string: what the rule and the clean-up depend on. Pure. */
export function tiedNodes(nodes: readonly Node[]): string {
  return nodes
    .flatMap((n) => {
      const k = kubeNodeOf(n)
      return k === undefined ? [] : [`${n.metadata.name}=${k}`]
    })
    .sort()
    .join(',')
}

/** Whether a core v1 Node's Ready condition is True. */
export function isReady(node: unknown): boolean {
  if (!isObject(node) || !isObject(node['status']) || !Array.isArray(node['status']['conditions'])) return false
  return node['status']['conditions'].some((c: unknown) => isObject(c) && c['type'] === 'Ready' && c['status'] === 'True')
}

export class KubeNodeController {
  private readonly log: Logger
  private readonly job: Coalescer
  /** Every Kubernetes Node, while this agent leads. */
  private informer: Informer<KubeObject> | undefined
  private offInformer: (() => void) | undefined
  private offCluster: (() => void) | undefined
  private timer: NodeJS.Timeout | undefined
  private stopped = false
  /** The tied Nodes as last run on (name and Kubernetes Node): other changes of the cluster ask nothing. */
  private tied = ''

  constructor(
    private readonly ctx: AgentContext,
    private readonly http: KubeHttp,
  ) {
    this.log = ctx.log.child({ component: 'kube-nodes' })
    this.job = new Coalescer(() => this.run(), (err) => this.log.error({ err: err.message }, `deleting the Nodes of deleted Kubernetes Nodes failed; tried again in ${CHECK_MS / 1000} s`))
  }

  start(): void {
    this.offCluster = this.ctx.cluster.onChange((topic) => {
      if (topic === 'resources' && tiedNodes(this.ctx.cluster.list('Node')) !== this.tied) this.job.trigger()
    })
    this.job.trigger()
  }

  async stop(): Promise<void> {
    this.stopped = true
    clearTimeout(this.timer)
    this.offCluster?.()
    this.unlead()
    await this.job.idle()
  }

  settled(): Promise<void> {
    return this.job.idle()
  }

  private async run(): Promise<void> {
    clearTimeout(this.timer)
    if (this.stopped) return
    this.tied = tiedNodes(this.ctx.cluster.list('Node'))
    try {
      if (await this.shouldLead()) await this.lead()
      else this.unlead()
    } finally {
      if (!this.stopped) this.timer = setTimeout(() => this.job.trigger(), CHECK_MS)
    }
  }

  /** Tied to Kubernetes ourselves, and no Node named before ours has a Ready Kubernetes Node. */
  private async shouldLead(): Promise<boolean> {
    const nodes = this.ctx.cluster.list('Node')
    const me = nodes.find((n) => n.metadata.name === this.ctx.settings.nodeName)
    if (me === undefined || kubeNodeOf(me) === undefined) return false
    for (const name of askBefore(nodes, me.metadata.name)) {
      // resourceVersion=0: any version will do, so the API server answers from its watch cache.
      const r = await this.http.request('GET', `/api/v1/nodes/${encodeURIComponent(name)}`, { resourceVersion: '0' })
      if (r.status === 404) continue
      if (r.status !== 200) throw new Error(`GET Kubernetes Node ${name}: HTTP ${r.status} ${r.text.slice(0, 200)}`)
      if (isReady(r.body)) return false
    }
    return true
  }

  private async lead(): Promise<void> {
    if (this.informer === undefined) {
      const informer = (this.informer = new Informer(this.http, { path: '/api/v1/nodes', what: 'Kubernetes Nodes' }, (err) => this.log.warn({ err: err.message }, 'the Kubernetes API does not answer: the Nodes of deleted Kubernetes Nodes are deleted when it does')))
      this.offInformer = informer.onEvent((e) => {
        if (e.type === 'deleted') this.job.trigger()
      })
      this.log.info({ node: this.ctx.settings.nodeName }, 'this node deletes the Nodes whose Kubernetes Node is deleted (the first Ready node by name does)')
      await informer.start()
      if (this.informer !== informer) return
    }
    const kube = new Set(this.informer.list().map((o) => o.metadata.name))
    for (const node of orphans(this.ctx.cluster.list('Node'), kube)) await this.deleteIfGone(node)
  }

  private unlead(): void {
    if (this.informer === undefined) return
    this.offInformer?.()
    this.informer.close()
    this.informer = undefined
    if (!this.stopped) this.log.info('another node deletes the Nodes of deleted Kubernetes Nodes now')
  }

  /** The pinto Node, compare-and-deleted if its Kubernetes Node is still absent when asked directly. */
  private async deleteIfGone(node: Node): Promise<void> {
    const name = node.metadata.name
    const kubeName = kubeNodeOf(node) as string
    const r = await this.http.request('GET', `/api/v1/nodes/${encodeURIComponent(kubeName)}`)
    if (r.status === 200) return
    if (r.status !== 404) throw new Error(`GET Kubernetes Node ${kubeName}: HTTP ${r.status} ${r.text.slice(0, 200)}`)
    const key = resourceKey('Node', name)
    const kv = await this.ctx.store.get(key)
    if (kv === undefined || kubeNodeOf(decodeResource(kv.value, key, 'Node')) !== kubeName) return
    try {
      await this.ctx.store.delete(key, kv.revision)
    } catch (err) {
      // Changed or deleted meanwhile: the next run looks again.
      if (err instanceof DatastoreError && (err.code === 'conflict' || err.code === 'not-found')) return
      throw err
    }
    this.log.info({ node: name, kubernetesNode: kubeName }, `Kubernetes Node ${JSON.stringify(kubeName)} is deleted: deleted its Node ${JSON.stringify(name)} (its IPAM is released after the grace period)`)
  }
}
