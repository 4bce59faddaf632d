// pinto's Node as Calico keeps it in a Kubernetes cluster: the core v1 Node (registered by the kubelet) with the
// BGP and tunnel fields in `projectcalico.org/...` annotations, its labels the Node's own, its addresses, orchRefs
// and podCIDRs derived from the Node. Both ways: the projection a reader sees, and the Node a write makes of it
// (annotations only; the labels belong to Kubernetes). Pure: no I/O.

import { type KubeObject, invalid, isObject, parseValue } from './objects.js'
import { V3_API_VERSION } from './resource-objects.js'

/** pinto's Node fields and Calico's annotations for them (libcalico-go backend/k8s/resources/node.go). */
export const NODE_BGP_ANNOTATIONS = {
  ipv4Address: 'projectcalico.org/IPv4Address',
  ipv6Address: 'projectcalico.org/IPv6Address',
  asNumber: 'projectcalico.org/ASNumber',
  ipv4IPIPTunnelAddr: 'projectcalico.org/IPv4IPIPTunnelAddr',
  routeReflectorClusterID: 'projectcalico.org/RouteReflectorClusterID',
} as const
export const NODE_SPEC_ANNOTATIONS = {
  ipv4VXLANTunnelAddr: 'projectcalico.org/IPv4VXLANTunnelAddr',
  vxlanTunnelMACAddr: 'projectcalico.org/VXLANTunnelMACAddr',
} as const

/** Calico's AS number text: plain ("64512") or asdot ("1.10"); anything else is handed on for the decoder to name. */
function asNumberOf(text: string): number | string {
  const m = /^(\d+)(?:\.(\d+))?$/.exec(text)
  if (m === null) return text
  const n = m[2] === undefined ? Number(m[1]) : Number(m[1]) * 65536 + Number(m[2])
  return Number.isSafeInteger(n) ? n : text
}

interface KubeNodeAddress {
  readonly type?: unknown
  readonly address?: unknown
}

/** The pinto Node a core Node reads as, JSON. */
export function nodeValue(node: KubeObject): string {
  const ann = node.metadata.annotations ?? {}
  const bgp: Record<string, unknown> = {}
  for (const [field, name] of Object.entries(NODE_BGP_ANNOTATIONS)) {
    const v = ann[name]
    if (v !== undefined && v !== '') bgp[field] = field === 'asNumber' ? asNumberOf(v) : v
  }
  const spec: Record<string, unknown> = {}
  if (Object.keys(bgp).length > 0) spec.bgp = bgp
  for (const [field, name] of Object.entries(NODE_SPEC_ANNOTATIONS)) {
    const v = ann[name]
    if (v !== undefined && v !== '') spec[field] = v
  }
  const addresses: { address: string; type: string }[] = []
  for (const field of ['ipv4Address', 'ipv6Address'] as const) {
    const v = bgp[field]
    if (typeof v === 'string') addresses.push({ address: v, type: 'CalicoNodeIP' })
  }
  const status = isObject(node.status) ? node.status : {}
  for (const a of Array.isArray(status.addresses) ? (status.addresses as KubeNodeAddress[]) : []) {
    if ((a.type === 'InternalIP' || a.type === 'ExternalIP') && typeof a.address === 'string') addresses.push({ address: a.address, type: a.type })
  }
  if (addresses.length > 0) spec.addresses = addresses
  spec.orchRefs = [{ nodeName: node.metadata.name, orchestrator: 'k8s' }]
  const podCIDRs = isObject(node.spec) && Array.isArray(node.spec.podCIDRs) ? node.spec.podCIDRs : []
  const labels = node.metadata.labels
  return JSON.stringify({
    apiVersion: V3_API_VERSION,
    kind: 'Node',
    metadata: { name: node.metadata.name, ...(labels !== undefined && Object.keys(labels).length > 0 ? { labels } : {}) },
    spec,
    ...(podCIDRs.length > 0 ? { status: { podCIDRs } } : {}),
  })
}

const sameMap = (a: Readonly<Record<string, unknown>>, b: Readonly<Record<string, unknown>>): boolean =>
  Object.keys(a).length === Object.keys(b).length && Object.entries(a).every(([k, v]) => b[k] === v)

/**
 * The core Node a write of pinto Node `value` makes of `current`: the Calico annotations set from the value's
 * fields and removed where it has none, everything else as it was. The labels are Kubernetes': a value that
 * names other labels than the Node's is refused, as are v3 annotations (a core Node has no place for them).
 * spec.addresses, spec.orchRefs and status are derived from the Node and not written.
 */
export function nodeWithValue(key: string, value: string, current: KubeObject): KubeObject {
  const r = parseValue(key, value)
  if (r.kind !== 'Node') throw invalid(key, `kind: the value is ${JSON.stringify(r.kind)}, the key holds Node`)
  const meta = isObject(r.metadata) ? r.metadata : {}
  if (meta.name !== current.metadata.name) throw invalid(key, `metadata.name: the value names ${JSON.stringify(meta.name)}, the key ${JSON.stringify(current.metadata.name)}`)
  if (meta.labels !== undefined && !(isObject(meta.labels) && sameMap(meta.labels, current.metadata.labels ?? {}))) {
    throw invalid(key, "metadata.labels: a Node's labels are the Kubernetes Node's own; change them there (kubectl label node), not through pinto")
  }
  if (isObject(meta.annotations) && Object.keys(meta.annotations).length > 0) {
    throw invalid(key, 'metadata.annotations: a Node on the kubernetes datastore keeps no v3 annotations; annotate the Kubernetes Node instead')
  }
  const spec = isObject(r.spec) ? r.spec : {}
  const bgp = isObject(spec.bgp) ? spec.bgp : {}
  const ann: Record<string, string> = { ...(current.metadata.annotations ?? {}) }
  const set = (name: string, v: unknown, field: string): void => {
    if (v === undefined || v === null || v === '') delete ann[name]
    else if (typeof v === 'string' || (typeof v === 'number' && field === 'spec.bgp.asNumber')) ann[name] = String(v)
    else throw invalid(key, `${field}: expected ${field === 'spec.bgp.asNumber' ? 'a number' : 'a string'}, found ${JSON.stringify(v)}`)
  }
  for (const [field, name] of Object.entries(NODE_BGP_ANNOTATIONS)) set(name, bgp[field], `spec.bgp.${field}`)
  for (const [field, name] of Object.entries(NODE_SPEC_ANNOTATIONS)) set(name, spec[field], `spec.${field}`)
  return { ...current, metadata: { ...current.metadata, annotations: ann } }
}
