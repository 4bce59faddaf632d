// TypeScript shapes of the projectcalico.org/v3 kinds pinto accepts, with Calico's field names.
// These are the resources "as written": optional fields stay absent until withDefaults() fills them.
// Types only; the schema tables in schema-kinds.ts are what parsing checks against.

export const API_VERSION = 'projectcalico.org/v3'

export interface ObjectMeta {
  name: string
  labels?: Record<string, string>
  annotations?: Record<string, string>
  resourceVersion?: string
  uid?: string
  creationTimestamp?: string
}

export interface SecretKeyRef {
  name?: string
  key: string
  optional?: boolean
}

export interface BGPPassword {
  secretKeyRef?: SecretKeyRef
}

export interface CIDRBlock {
  cidr: string
}

export interface Community {
  name: string
  value: string
}

export interface PrefixAdvertisement {
  cidr: string
  communities: string[]
}

export type LogSeverity = 'Trace' | 'Debug' | 'Info' | 'Warning' | 'Error' | 'Fatal'

export interface BGPConfigurationSpec {
  logSeverityScreen?: LogSeverity
  nodeToNodeMeshEnabled?: boolean
  asNumber?: number
  serviceLoadBalancerIPs?: CIDRBlock[]
  serviceExternalIPs?: CIDRBlock[]
  serviceClusterIPs?: CIDRBlock[]
  communities?: Community[]
  prefixAdvertisements?: PrefixAdvertisement[]
  listenPort?: number
  nodeMeshPassword?: BGPPassword
  /** Go duration text, e.g. "120s"; parseDuration() reads it. */
  nodeMeshMaxRestartTime?: string
  bindMode?: 'None' | 'NodeIP'
  ignoredInterfaces?: string[]
  /** Enabled (the default): a Cluster Service's LoadBalancer address is covered by its range alone; Disabled: per Service. */
  serviceLoadBalancerAggregation?: 'Enabled' | 'Disabled'
}

export interface BGPConfiguration {
  apiVersion: typeof API_VERSION
  kind: 'BGPConfiguration'
  metadata: ObjectMeta
  spec: BGPConfigurationSpec
}

export type NextHopMode = 'Auto' | 'Self' | 'Keep'

export interface BGPPeerSpec {
  node?: string
  nodeSelector?: string
  peerIP?: string
  asNumber?: number
  localASNumber?: number
  peerSelector?: string
  keepOriginalNextHop?: boolean
  nextHopMode?: NextHopMode
  password?: BGPPassword
  sourceAddress?: 'UseNodeIP' | 'None'
  maxRestartTime?: string
  keepaliveTime?: string
  numAllowedLocalASNumbers?: number
  ttlSecurity?: number
  reachableBy?: string
  filters?: string[]
  reversePeering?: 'Auto' | 'Manual'
}

export interface BGPPeer {
  apiVersion: typeof API_VERSION
  kind: 'BGPPeer'
  metadata: ObjectMeta
  spec: BGPPeerSpec
}

export type MatchOperator = 'Equal' | 'NotEqual' | 'In' | 'NotIn'

export interface BGPFilterOperation {
  addCommunity?: { value: string }
  prependASPath?: { prefix: number[] }
  setPriority?: { value: number }
}

export interface BGPFilterRule {
  cidr?: string
  prefixLength?: { min?: number; max?: number }
  matchOperator?: MatchOperator
  source?: 'RemotePeers'
  interface?: string
  peerType?: 'eBGP' | 'iBGP'
  communities?: { values: string[] }
  asPathPrefix?: number[]
  priority?: number
  action: 'Accept' | 'Reject'
  operations?: BGPFilterOperation[]
}

export interface BGPFilterSpec {
  exportV4?: BGPFilterRule[]
  importV4?: BGPFilterRule[]
  exportV6?: BGPFilterRule[]
  importV6?: BGPFilterRule[]
}

export interface BGPFilter {
  apiVersion: typeof API_VERSION
  kind: 'BGPFilter'
  metadata: ObjectMeta
  spec: BGPFilterSpec
}

export interface NodeBGPSpec {
  asNumber?: number
  /** "addr/len": the node's address and its subnet's prefix length (CrossSubnet uses it). */
  ipv4Address?: string
  ipv6Address?: string
  ipv4IPIPTunnelAddr?: string
  /** IPv4 dotted form; setting it makes the node a route reflector. */
  routeReflectorClusterID?: string
}

export interface NodeSpec {
  bgp?: NodeBGPSpec
  ipv4VXLANTunnelAddr?: string
  vxlanTunnelMACAddr?: string
  addresses?: { address: string; type?: 'CalicoNodeIP' | 'InternalIP' | 'ExternalIP' }[]
  orchRefs?: { nodeName?: string; orchestrator: string }[]
}

export interface Node {
  apiVersion: typeof API_VERSION
  kind: 'Node'
  metadata: ObjectMeta
  spec: NodeSpec
  status?: { podCIDRs?: string[] }
}

export type EncapMode = 'Never' | 'Always' | 'CrossSubnet'
export type AllowedUse = 'Workload' | 'Tunnel' | 'LoadBalancer'

export interface IPPoolSpec {
  cidr: string
  blockSize?: number
  ipipMode?: EncapMode
  vxlanMode?: EncapMode
  natOutgoing?: boolean
  disabled?: boolean
  disableBGPExport?: boolean
  nodeSelector?: string
  allowedUses?: AllowedUse[]
  assignmentMode?: 'Automatic' | 'Manual'
}

export interface IPPool {
  apiVersion: typeof API_VERSION
  kind: 'IPPool'
  metadata: ObjectMeta
  spec: IPPoolSpec
}

export interface IPAMConfigSpec {
  strictAffinity?: boolean
  autoAllocateBlocks?: boolean
  /** 0 or absent means the default of 20 (withDefaults fills it in). */
  maxBlocksPerHost?: number
}

/** Calico's v3 kind is IPAMConfiguration; both spellings parse, and pinto stores it as IPAMConfig. */
export interface IPAMConfig {
  apiVersion: typeof API_VERSION
  kind: 'IPAMConfig'
  metadata: ObjectMeta
  spec: IPAMConfigSpec
}

export type Resource = BGPConfiguration | BGPPeer | BGPFilter | Node | IPPool | IPAMConfig
export type ResourceKind = Resource['kind']
export type ResourceOfKind<K extends ResourceKind> = Extract<Resource, { kind: K }>

export const RESOURCE_KINDS: readonly ResourceKind[] = ['BGPConfiguration', 'BGPPeer', 'BGPFilter', 'Node', 'IPPool', 'IPAMConfig']
