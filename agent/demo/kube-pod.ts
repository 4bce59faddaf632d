// Turns the DaemonSet's pod template into the Pod its controller would make on one node, in the form
// `podman kube play` runs: env from fieldRef, ConfigMap and Secret resolved to values, each hostPath
// moved under the node's own root, Secret volumes turned into files to write there, the image optionally
// swapped. Pure: the caller writes the files and runs podman; anything it cannot honour is an error.
// Env is resolved here, not by podman: podman 4.3.1's kube play refuses fieldRef spec.nodeName.
import { posix } from 'node:path'
import type { KubeObject } from './kube-manifest.js'

export interface PodForNodeOptions {
  /** The DaemonSet document, as read from the manifest. */
  readonly daemonSet: KubeObject
  /** ConfigMaps and Secrets the template refers to (other documents are ignored). */
  readonly documents: readonly KubeObject[]
  /** The node's name: spec.nodeName, and what fieldRef spec.nodeName resolves to. */
  readonly nodeName: string
  /**
   * The Pod's name (default `<DaemonSet>-<node>`). The controller generates one per pod; a caller
   * sharing a podman store with others gives names of its own.
   */
  readonly podName?: string
  /** Every hostPath P becomes hostRoot + P, so a node's files stay in its own directory. */
  readonly hostRoot: string
  /** Host paths given their own place instead (e.g. /var/run/netns → /run/netns, where `ip netns` pins). */
  readonly hostPathOverrides?: Readonly<Record<string, string>>
  /** Replaces every container's image (a rolling update to a rebuilt image). */
  readonly image?: string
  /**
   * Overrides the template's restartPolicy (a DaemonSet's is Always). podman 4.3.1's kube play applies
   * the pod's policy to init containers too: under Always it restarts install-cni after it exits and
   * then fails ("failed to remove once init container ... as it is running"). OnFailure runs it once.
   */
  readonly restartPolicy?: 'Always' | 'OnFailure' | 'Never'
}

/** A file the kubelet would project into a volume; written by the caller under hostRoot. */
export interface NodeFile {
  readonly path: string
  readonly content: Buffer
  readonly mode: number
}

export interface PodForNode {
  readonly pod: KubeObject
  readonly files: readonly NodeFile[]
}

export class PodConversionError extends Error {
  constructor(field: string, message: string) {
    super(`${field}: ${message}`)
    this.name = 'PodConversionError'
  }
}

type Obj = Record<string, unknown>

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/

function isObj(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function field(obj: Obj, key: string, where: string): Obj {
  const v = obj[key]
  if (!isObj(v)) throw new PodConversionError(`${where}.${key}`, 'missing or not a mapping')
  return v
}

function list(obj: Obj, key: string, where: string): Obj[] {
  const v = obj[key]
  if (v === undefined) return []
  if (!Array.isArray(v) || !v.every(isObj)) throw new PodConversionError(`${where}.${key}`, 'not a list of mappings')
  return v
}

function named(docs: readonly KubeObject[], kind: string, name: string, namespace: string): Obj | undefined {
  return docs.find((d) => d.kind === kind && isObj(d.metadata) && d.metadata.name === name && (d.metadata.namespace ?? 'default') === namespace)
}

/** The Pod the DaemonSet controller would create on `nodeName`, and the files its volumes hold. */
export function podForNode(opts: PodForNodeOptions): PodForNode {
  const ds = opts.daemonSet
  if (ds.apiVersion !== 'apps/v1' || ds.kind !== 'DaemonSet') throw new PodConversionError('kind', `${String(ds.apiVersion)}/${String(ds.kind)} is not an apps/v1 DaemonSet`)
  if (!posix.isAbsolute(opts.hostRoot)) throw new PodConversionError('hostRoot', `${JSON.stringify(opts.hostRoot)} is not an absolute path`)
  const meta = field(ds, 'metadata', '')
  const dsName = String(meta.name)
  const namespace = typeof meta.namespace === 'string' ? meta.namespace : 'default'
  const template = structuredClone(field(field(ds, 'spec', ''), 'template', 'spec'))
  const spec = field(template, 'spec', 'spec.template')
  const tmeta = isObj(template.metadata) ? template.metadata : {}
  const podName = opts.podName ?? `${dsName}-${opts.nodeName}`
  const refs = { ...opts, namespace, podName }

  const files: NodeFile[] = []
  spec.volumes = list(spec, 'volumes', 'spec.template.spec').map((v, i) => volumeForNode(v, `spec.template.spec.volumes[${i}]`, refs, files))
  for (const kind of ['initContainers', 'containers'] as const) {
    list(spec, kind, 'spec.template.spec').forEach((c, i) => {
      const where = `spec.template.spec.${kind}[${i}]`
      if (c.envFrom !== undefined) throw new PodConversionError(`${where}.envFrom`, 'not resolved here; list each variable under env')
      c.env = list(c, 'env', where).map((e, j) => ({ name: e.name, value: envValue(e, `${where}.env[${j}]`, refs) }))
      if (opts.image !== undefined) c.image = opts.image
    })
  }
  spec.nodeName = opts.nodeName
  if (opts.restartPolicy !== undefined) spec.restartPolicy = opts.restartPolicy
  const pod: KubeObject = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: podName, namespace, labels: structuredClone(tmeta.labels ?? {}) },
    spec,
  }
  return { pod, files }
}

interface Refs extends PodForNodeOptions {
  readonly namespace: string
  readonly podName: string
}

function envValue(e: Obj, where: string, refs: Refs): string {
  if (typeof e.name !== 'string') throw new PodConversionError(`${where}.name`, 'missing')
  if (e.valueFrom === undefined) {
    if (e.value !== undefined && typeof e.value !== 'string') throw new PodConversionError(`${where}.value`, 'not a string')
    if (typeof e.value === 'string' && /\$\(/.test(e.value)) throw new PodConversionError(`${where}.value`, '$(VAR) references are not expanded here')
    return e.value ?? ''
  }
  const from = field(e, 'valueFrom', where)
  const [source, ...more] = Object.keys(from)
  if (source === undefined || more.length > 0) throw new PodConversionError(`${where}.valueFrom`, 'needs exactly one source')
  const ref = field(from, source, `${where}.valueFrom`)
  const at = `${where}.valueFrom.${source}`
  switch (source) {
    case 'fieldRef': {
      const values: Record<string, string> = { 'spec.nodeName': refs.nodeName, 'metadata.name': refs.podName, 'metadata.namespace': refs.namespace }
      const v = values[String(ref.fieldPath)]
      if (v === undefined) throw new PodConversionError(`${at}.fieldPath`, `${JSON.stringify(ref.fieldPath)} is not resolved here (only ${Object.keys(values).join(', ')})`)
      return v
    }
    case 'configMapKeyRef':
    case 'secretKeyRef': {
      const kind = source === 'configMapKeyRef' ? 'ConfigMap' : 'Secret'
      const doc = named(refs.documents, kind, String(ref.name), refs.namespace)
      const data = doc && isObj(doc.data) ? doc.data : undefined
      const raw = data?.[String(ref.key)]
      if (typeof raw !== 'string') {
        if (ref.optional === true) return ''
        throw new PodConversionError(at, doc ? `${kind} ${String(ref.name)} has no key ${JSON.stringify(ref.key)}` : `no ${kind} ${String(ref.name)} in ${refs.namespace}`)
      }
      return kind === 'Secret' ? Buffer.from(raw, 'base64').toString('utf8') : raw
    }
    default:
      throw new PodConversionError(at, 'not resolved here (fieldRef, configMapKeyRef and secretKeyRef are)')
  }
}

function volumeForNode(v: Obj, where: string, refs: Refs, files: NodeFile[]): Obj {
  const name = String(v.name)
  if (isObj(v.hostPath)) {
    const path = String(v.hostPath.path)
    if (!posix.isAbsolute(path)) throw new PodConversionError(`${where}.hostPath.path`, `${JSON.stringify(path)} is not absolute`)
    const moved = refs.hostPathOverrides?.[path] ?? posix.join(refs.hostRoot, path)
    return { ...v, hostPath: { ...v.hostPath, path: moved } }
  }
  if (isObj(v.secret)) {
    const secretName = String(v.secret.secretName)
    if (v.secret.items !== undefined) throw new PodConversionError(`${where}.secret.items`, 'not projected here; the whole Secret is')
    const doc = named(refs.documents, 'Secret', secretName, refs.namespace)
    if (!doc) {
      if (v.secret.optional !== true) throw new PodConversionError(`${where}.secret.secretName`, `no Secret ${secretName} in ${refs.namespace}`)
    }
    const mode = typeof v.secret.defaultMode === 'number' ? v.secret.defaultMode : 0o644
    // The kubelet projects a Secret per pod; here it lands under the node's root, per pod and volume.
    const dir = posix.join(refs.hostRoot, 'var/lib/kubelet/pods', refs.podName, 'volumes/kubernetes.io~secret', name)
    const data = doc && isObj(doc.data) ? doc.data : {}
    for (const [key, value] of Object.entries(data)) {
      if (typeof value !== 'string' || !BASE64.test(value)) throw new PodConversionError(`Secret ${secretName} data.${key}`, 'not a base64 string')
      files.push({ path: posix.join(dir, key), content: Buffer.from(value, 'base64'), mode })
    }
    return { name, hostPath: { path: dir, type: 'DirectoryOrCreate' } }
  }
  throw new PodConversionError(where, `volume ${name}: only hostPath and secret volumes are converted`)
}
