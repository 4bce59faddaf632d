// Which Service addresses this node advertises, as Calico's route generator (confd's routes.go) decides: a /32
// (/128) per Service for its cluster IPs, external IPs and LoadBalancer ingress IPs that fall inside BGPConfiguration's
// serviceClusterIPs, serviceExternalIPs and serviceLoadBalancerIPs, from this node when the Service's traffic policy
// and its EndpointSlices say so; and which of those ranges every node originates whole. Pure: objects in, prefixes
// out; reading the Kubernetes API and originating the prefixes are the controllers'.

import { formatPrefix, parsePrefix, prefixMatcher, type Prefix } from '../bgp/index.js'
import { objectKey, type BGPConfigurationSpec, type KubeObject } from '../config/index.js'

/** Kubernetes' label that keeps a node out of load balancing; Calico honours it for service advertisement. */
export const EXCLUDE_LABEL = 'node.kubernetes.io/exclude-from-external-load-balancers'
/** The label naming the Service an EndpointSlice belongs to. */
export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name'

interface Range {
  readonly cidr: string
  readonly inside: (p: Prefix) => boolean
  /** A single address (/32, /128): advertised per Service, never whole by every node. */
  readonly single: boolean
}

/** BGPConfiguration's service ranges, compiled; what per-Service advertisement depends on besides the objects. */
export interface ServiceRanges {
  readonly clusterIPs: readonly Range[]
  readonly externalIPs: readonly Range[]
  readonly loadBalancerIPs: readonly Range[]
  /** serviceLoadBalancerAggregation Enabled (the default): a Cluster Service is covered by the ranges alone. */
  readonly aggregate: boolean
}

const FIELDS = { clusterIPs: 'serviceClusterIPs', externalIPs: 'serviceExternalIPs', loadBalancerIPs: 'serviceLoadBalancerIPs' } as const

/** Throws an Error naming the field (spec.serviceLoadBalancerIPs[1].cidr) of a range that is not a prefix. */
export function compileServiceRanges(config: BGPConfigurationSpec): ServiceRanges {
  const compile = (field: (typeof FIELDS)[keyof typeof FIELDS]): Range[] =>
    (config[field] ?? []).map(({ cidr }, i) => {
      const at = `spec.${field}[${i}]`
      let p: Prefix
      try {
        p = parsePrefix(cidr)
      } catch (e) {
        throw new Error(`${at}.cidr: ${(e as Error).message}`)
      }
      return { cidr, inside: prefixMatcher(cidr, 'In', p.afi, undefined, at), single: p.len === (p.afi === 1 ? 32 : 128) }
    })
  return {
    clusterIPs: compile(FIELDS.clusterIPs),
    externalIPs: compile(FIELDS.externalIPs),
    loadBalancerIPs: compile(FIELDS.loadBalancerIPs),
    aggregate: config.serviceLoadBalancerAggregation !== 'Disabled',
  }
}

/** Does BGPConfiguration name any service range (else nothing here needs the Services)? */
export function hasServiceRanges(r: ServiceRanges): boolean {
  return r.clusterIPs.length + r.externalIPs.length + r.loadBalancerIPs.length > 0
}

/** This node as service advertisement sees it. */
export interface ServiceNode {
  readonly name: string
  /** Labelled node.kubernetes.io/exclude-from-external-load-balancers=true: it advertises no service address. */
  readonly excluded: boolean
}

export function serviceNode(name: string, labels: Readonly<Record<string, string>> | undefined): ServiceNode {
  return { name, excluded: labels?.[EXCLUDE_LABEL] === 'true' }
}

/**
 * The ranges this node originates whole, every node alike (Calico's global routes): the cluster IP ranges; the
 * external IP ranges and, with aggregation, the LoadBalancer ranges, but not their single addresses when Services
 * are read (those go per Service, so that a Local Service's address comes only from nodes with its endpoints).
 * None on an excluded node.
 */
export function originatedServiceRanges(config: BGPConfigurationSpec, node: Pick<ServiceNode, 'excluded'>, perService: boolean): string[] {
  if (node.excluded) return []
  const ranges = compileServiceRanges(config)
  const whole = (rs: readonly Range[]): string[] => rs.filter((r) => !(perService && r.single)).map((r) => r.cidr)
  const out: string[] = []
  for (const cidr of [...ranges.clusterIPs.map((r) => r.cidr), ...whole(ranges.externalIPs), ...(ranges.aggregate ? whole(ranges.loadBalancerIPs) : [])]) {
    if (!out.includes(cidr)) out.push(cidr)
  }
  return out
}

/** What this node advertises for one Service, and why (for the log). */
export interface ServiceDecision {
  /** namespace/name */
  readonly key: string
  /** Canonical /32 and /128 prefixes, each once. */
  readonly prefixes: readonly string[]
  readonly reason: string
  /** Values that could not be read, each naming the object and field; the rest of the Service still counts. */
  readonly problems: readonly string[]
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
const text = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined)

/** The Service (namespace/name) an EndpointSlice serves, from its kubernetes.io/service-name label. */
export function sliceServiceKey(slice: KubeObject): string | undefined {
  const name = slice.metadata.labels?.[SERVICE_NAME_LABEL]
  const ns = text(slice.metadata['namespace'])
  return name === undefined || name === '' || ns === undefined ? undefined : `${ns}/${name}`
}

/** A list of strings at `field`, with a problem for what is not one. */
function strings(v: unknown, field: string, problems: string[]): string[] {
  if (v === undefined || v === null) return []
  if (!Array.isArray(v)) {
    problems.push(`${field}: not a list`)
    return []
  }
  return v.flatMap((x, i) => (typeof x === 'string' ? [x] : (problems.push(`${field}[${i}]: not a string`), [])))
}

interface Address {
  readonly field: string
  readonly prefix: Prefix | undefined
}

/** An address as a host prefix; a problem naming the field when it is not one. */
function address(value: string, field: string, problems: string[]): Address {
  try {
    if (!value.includes('/')) return { field, prefix: parsePrefix(value) }
  } catch {
    // named below
  }
  problems.push(`${field}: ${JSON.stringify(value)} is not an IP address`)
  return { field, prefix: undefined }
}

const within = (a: Address, ranges: readonly Range[], single = false): boolean => a.prefix !== undefined && ranges.some((r) => (!single || r.single) && r.inside(a.prefix!))

/** discovery.k8s.io/v1: a nil `ready` is to be read as ready. */
export function endpointReady(endpoint: Record<string, unknown>): boolean {
  return !isObject(endpoint['conditions']) || endpoint['conditions']['ready'] !== false
}

/**
 * What this node advertises for a Service, given the EndpointSlices labelled with its name. As Calico: only
 * ClusterIP, NodePort and LoadBalancer Services with a cluster IP; externalTrafficPolicy Local from nodes holding
 * one of its endpoints; Cluster from every node, per Service only when aggregation is Disabled (while it has an
 * endpoint anywhere) or when an address falls in a single-address range (serviceLoadBalancerIPs or
 * serviceExternalIPs entry /32, /128). An endpoint counts when its condition `ready` is not false; an
 * EndpointSlice counts when its addressType is one of the Service's ipFamilies. The addresses are the cluster IPs
 * inside serviceClusterIPs, the external IPs inside serviceExternalIPs and the ingress IPs inside
 * serviceLoadBalancerIPs.
 */
export function serviceDecision(svc: KubeObject, slices: Iterable<KubeObject>, ranges: ServiceRanges, node: ServiceNode): ServiceDecision {
  const key = objectKey(svc)
  const problems: string[] = []
  const none = (reason: string): ServiceDecision => ({ key, prefixes: [], reason, problems: problems.map((p) => `Service ${key}: ${p}`) })
  if (node.excluded) return none(`this node is labelled ${EXCLUDE_LABEL}=true`)
  const spec = isObject(svc.spec) ? svc.spec : {}
  const type = text(spec['type']) ?? 'ClusterIP'
  if (type !== 'ClusterIP' && type !== 'NodePort' && type !== 'LoadBalancer') return none(`type ${type}`)
  const clusterIP = text(spec['clusterIP'])
  if (clusterIP === undefined || clusterIP === 'None') return none('no cluster IP (headless)')

  const clusterIPs = (spec['clusterIPs'] === undefined ? [clusterIP] : strings(spec['clusterIPs'], 'spec.clusterIPs', problems)).map((a, i) =>
    address(a, spec['clusterIPs'] === undefined ? 'spec.clusterIP' : `spec.clusterIPs[${i}]`, problems),
  )
  const externalIPs = strings(spec['externalIPs'], 'spec.externalIPs', problems).map((a, i) => address(a, `spec.externalIPs[${i}]`, problems))
  const lb = isObject(svc.status) && isObject(svc.status['loadBalancer']) ? svc.status['loadBalancer'] : {}
  const ingress = lb['ingress'] === undefined ? [] : Array.isArray(lb['ingress']) ? lb['ingress'] : (problems.push('status.loadBalancer.ingress: not a list'), [])
  const ingressIPs = ingress.flatMap((g, i) => (isObject(g) && text(g['ip']) !== undefined ? [address(g['ip'] as string, `status.loadBalancer.ingress[${i}].ip`, problems)] : []))

  const policy = text(spec['externalTrafficPolicy'])
  const local = policy === 'Local'
  const advertise = (reason: string): ServiceDecision => {
    const out = new Set<string>()
    for (const a of clusterIPs) if (within(a, ranges.clusterIPs)) out.add(formatPrefix(a.prefix!))
    for (const a of externalIPs) if (within(a, ranges.externalIPs)) out.add(formatPrefix(a.prefix!))
    for (const a of ingressIPs) if (within(a, ranges.loadBalancerIPs)) out.add(formatPrefix(a.prefix!))
    return { key, prefixes: [...out].sort(), reason, problems: problems.map((p) => `Service ${key}: ${p}`) }
  }

  if (policy === 'Cluster') {
    const specLb = text(spec['loadBalancerIP'])
    const lbSingles = [...ingressIPs, ...(specLb === undefined ? [] : [address(specLb, 'spec.loadBalancerIP', problems)])]
    if (type === 'LoadBalancer' && lbSingles.some((a) => within(a, ranges.loadBalancerIPs, true))) return advertise('Cluster, its LoadBalancer address is a single-address range')
    if (externalIPs.some((a) => within(a, ranges.externalIPs, true))) return advertise('Cluster, an external IP is a single-address range')
  }
  if (!local && ranges.aggregate) return none(`externalTrafficPolicy ${policy ?? 'unset'}: covered by the ranges every node originates`)

  const families = new Set(strings(spec['ipFamilies'], 'spec.ipFamilies', problems))
  if (families.size === 0) for (const a of clusterIPs) if (a.prefix !== undefined) families.add(a.prefix.afi === 1 ? 'IPv4' : 'IPv6')
  for (const slice of slices) {
    if (!families.has(String(slice['addressType']))) continue
    const endpoints = slice['endpoints']
    if (endpoints === undefined || endpoints === null) continue
    if (!Array.isArray(endpoints)) {
      problems.push(`EndpointSlice ${objectKey(slice)}: endpoints: not a list`)
      continue
    }
    for (const e of endpoints) {
      if (!isObject(e) || !endpointReady(e)) continue
      if (!local) return advertise('Cluster with aggregation Disabled, a ready endpoint')
      if (e['nodeName'] === node.name) return advertise('Local, a ready endpoint on this node')
    }
  }
  return none(local ? 'Local, no ready endpoint on this node' : 'no ready endpoint')
}

export interface ServiceRoutesInput {
  readonly services: readonly KubeObject[]
  readonly slices: readonly KubeObject[]
  /** The default BGPConfiguration's spec (its service fields are default-only). */
  readonly config: BGPConfigurationSpec
  readonly node: ServiceNode
}

/** Every Service address this node advertises: prefix -> the Services (namespace/name) it is advertised for. */
export function serviceRoutes(input: ServiceRoutesInput): { readonly routes: Map<string, string[]>; readonly problems: string[] } {
  const ranges = compileServiceRanges(input.config)
  const byService = new Map<string, KubeObject[]>()
  for (const s of input.slices) {
    const k = sliceServiceKey(s)
    if (k !== undefined) byService.set(k, [...(byService.get(k) ?? []), s])
  }
  const routes = new Map<string, string[]>()
  const problems: string[] = []
  for (const svc of input.services) {
    const d = serviceDecision(svc, byService.get(objectKey(svc)) ?? [], ranges, input.node)
    problems.push(...d.problems)
    for (const p of d.prefixes) routes.set(p, [...(routes.get(p) ?? []), d.key].sort())
  }
  return { routes: new Map([...routes].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))), problems }
}
