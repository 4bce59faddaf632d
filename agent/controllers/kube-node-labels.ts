// This node's Kubernetes Node labels onto its pinto Node, on a datastore other than Kubernetes (etcd, embedded),
// as Calico's kube-controllers sync them in etcd mode: the labels Kubernetes has are set, a label Kubernetes no
// longer has is removed, and labels set through pinto that Kubernetes never had are kept. The labels last synced
// are kept in the annotation projectcalico.org/kube-labels, as Calico keeps them. Each agent watches its own Node
// only (one list and one watch by field selector), so the API server sees one watch per node and nothing more.

import type { Logger } from 'pino'
import { DatastoreError, type Informer, type KubeObject, decodeResource, deepEqual, encodeResource, resourceKey, type Node } from '../../config/index.js'
import { Coalescer } from './coalescer.js'
import type { AgentContext } from './context.js'

/** Calico's record of the labels it last copied from the Kubernetes Node. */
export const KUBE_LABELS_ANNOTATION = 'projectcalico.org/kube-labels'

type Labels = Readonly<Record<string, string>>

function parseLabels(text: string | undefined): Labels {
  if (text === undefined) return {}
  try {
    const v = JSON.parse(text) as unknown
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return {}
    return Object.fromEntries(Object.entries(v).filter((e): e is [string, string] => typeof e[1] === 'string'))
  } catch {
    return {}
  }
}

/**
 * The pinto Node with the Kubernetes Node's `kube` labels synced onto it: those set, those the last sync copied
 * and Kubernetes no longer has removed, the others kept; the annotation records `kube`. Pure.
 */
export function withKubeLabels(node: Node, kube: Labels): Node {
  const before = parseLabels(node.metadata.annotations?.[KUBE_LABELS_ANNOTATION])
  const labels: Record<string, string> = { ...(node.metadata.labels ?? {}) }
  for (const k of Object.keys(before)) if (!(k in kube)) delete labels[k]
  Object.assign(labels, kube)
  const annotations = { ...(node.metadata.annotations ?? {}), [KUBE_LABELS_ANNOTATION]: JSON.stringify(sorted(kube)) }
  const metadata: Node['metadata'] = { ...node.metadata, labels, annotations }
  if (Object.keys(labels).length === 0) delete metadata.labels
  return { ...node, metadata }
}

function sorted(l: Labels): Labels {
  return Object.fromEntries(Object.entries(l).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
}

export class KubeNodeLabels {
  private readonly log: Logger
  private readonly job: Coalescer
  private unsubscribe: (() => void) | undefined
  private offEvents: (() => void) | undefined

  constructor(
    private readonly ctx: AgentContext,
    /** A watch of this node's Kubernetes Node alone (fieldSelector metadata.name=<node>). */
    private readonly informer: Informer<KubeObject>,
  ) {
    this.log = ctx.log.child({ component: 'kube-node-labels' })
    this.job = new Coalescer(() => this.sync(), (err) => this.log.error({ err: err.message }, 'syncing the Kubernetes Node labels failed; tried again at the next change'))
  }

  start(): void {
    const name = this.ctx.settings.nodeName
    this.offEvents = this.informer.onEvent((e) => {
      if (e.object.metadata.name === name && e.type !== 'deleted') this.job.trigger()
    })
    // A write through pinto that dropped the synced labels (an apply of the Node) is put right.
    this.unsubscribe = this.ctx.cluster.onChange((topic) => {
      if (topic === 'resources') this.job.trigger()
    })
    this.log.info({ node: name }, `syncing the labels of Kubernetes Node ${JSON.stringify(name)} onto its Node`)
    void this.informer.start().then(() => {
      if (this.informer.get(name) === undefined) this.log.warn({ node: name }, `there is no Kubernetes Node ${JSON.stringify(name)} (PINTO_NODENAME must be the kubelet's node name): its labels are synced once it exists`)
      this.job.trigger()
    })
  }

  async stop(): Promise<void> {
    this.offEvents?.()
    this.unsubscribe?.()
    this.informer.close()
    await this.job.idle()
  }

  settled(): Promise<void> {
    return this.job.idle()
  }

  private async sync(): Promise<void> {
    const name = this.ctx.settings.nodeName
    const kube = this.informer.get(name)
    if (kube === undefined) return
    const want = kube.metadata.labels ?? {}
    const mine = this.ctx.cluster.get('Node', name)
    if (mine === undefined || deepEqual(withKubeLabels(mine, want), mine)) return
    const key = resourceKey('Node', name)
    for (let attempt = 0; attempt < 10; attempt++) {
      const kv = await this.ctx.store.get(key)
      if (kv === undefined) return
      const node = decodeResource(kv.value, key, 'Node')
      const next = withKubeLabels(node, want)
      if (deepEqual(next, node)) return
      try {
        await this.ctx.store.update(key, encodeResource(next), kv.revision)
        this.log.info({ node: name, labels: next.metadata.labels ?? {} }, 'Kubernetes Node labels synced onto the Node')
        return
      } catch (err) {
        if (err instanceof DatastoreError && err.code === 'conflict') continue
        throw err
      }
    }
    throw new Error(`Node ${name}: gave up syncing its labels after 10 conflicting writes`)
  }
}
