// The field tables of each kind pinto accepts: Calico's names, types and single-field formats.
// Known Calico fields pinto does not implement are listed as unsupported so the error says so.
// Cross-field rules (node vs nodeSelector, IPIP on IPv6, ...) are in validate.ts.

import { parseDuration, DurationError } from '../duration.js'
import { parseSelector, SelectorError } from '../selector.js'
import { parseCidr, parseIfAddr, type Family } from '../../net/index.js'
import { addrReason, checkCommunity, checkIP, checkInterfaceGlob, checkMAC, checkName, parsePeerIP } from './scalars.js'
import type { Field, ObjectField } from './schema.js'
import type { ResourceKind } from './types.js'

const str = (check?: (v: string) => string | undefined): Field => (check === undefined ? { t: 'string' } : { t: 'string', check })
const oneOf = (...values: string[]): Field => ({ t: 'string', enum: values })
const bool: Field = { t: 'bool' }
const asn: Field = { t: 'asn' }
const int = (min: number, max: number): Field => ({ t: 'int', min, max })
const list = (of: Field, min?: number, max?: number): Field => ({ t: 'list', of, ...(min !== undefined ? { min } : {}), ...(max !== undefined ? { max } : {}) })
const obj = (fields: Record<string, Field>, required: string[] = [], unsupported: string[] = []): ObjectField => ({ t: 'object', fields, required, unsupported })

export function checkSelector(text: string): string | undefined {
  try {
    parseSelector(text)
    return undefined
  } catch (e) {
    if (e instanceof SelectorError) return `invalid selector ${JSON.stringify(text)}: ${e.reason} at offset ${e.offset}`
    throw e
  }
}

export function checkDuration(text: string): string | undefined {
  try {
    if (parseDuration(text) < 0) return `duration ${JSON.stringify(text)} must not be negative`
    return undefined
  } catch (e) {
    if (e instanceof DurationError) return `${e.message} (Go duration syntax, e.g. "120s", "1m30s", "500ms")`
    throw e
  }
}

/** A network written as Calico's `net` validator wants it: strictly masked, or a bare address. */
function network(family?: Family): (v: string) => string | undefined {
  return (v) => addrReason(() => parseCidr(v, 'value', { bare: true, ...(family !== undefined ? { family } : {}) }))
}

/** An address with its subnet length, "addr/len" (host bits expected), or a bare address. */
function addressWithPrefix(family: Family): (v: string) => string | undefined {
  return (v) => addrReason(() => parseIfAddr(v, 'value', { bare: true, family }))
}

const ipv4 = (v: string): string | undefined => checkIP(v, 4)

const name = str(checkName)
const selector = str(checkSelector)
const duration = str(checkDuration)
const password = obj({ secretKeyRef: obj({ name: str(), key: str(), optional: bool }, ['key']) })
const cidrBlock = obj({ cidr: str(network()) }, ['cidr'])

export const METADATA: ObjectField = obj(
  {
    name,
    labels: { t: 'labels' },
    annotations: { t: 'annotations' },
    resourceVersion: str(),
    uid: str(),
    creationTimestamp: str(),
  },
  ['name'],
  ['namespace', 'generation', 'generateName', 'finalizers', 'ownerReferences', 'managedFields', 'deletionTimestamp'],
)

const BGP_CONFIGURATION = obj(
  {
    logSeverityScreen: oneOf('Trace', 'Debug', 'Info', 'Warning', 'Error', 'Fatal'),
    nodeToNodeMeshEnabled: bool,
    asNumber: asn,
    serviceLoadBalancerIPs: list(cidrBlock),
    serviceExternalIPs: list(cidrBlock),
    serviceClusterIPs: list(cidrBlock),
    communities: list(obj({ name, value: str(checkCommunity) }, ['name', 'value']), 0, 500),
    prefixAdvertisements: list(obj({ cidr: str(network()), communities: list(str()) }, ['cidr', 'communities']), 0, 500),
    listenPort: int(1, 65535),
    nodeMeshPassword: password,
    nodeMeshMaxRestartTime: duration,
    bindMode: oneOf('None', 'NodeIP'),
    ignoredInterfaces: list(str((v) => (v === '*' ? '"*" would ignore every interface' : checkInterfaceGlob(v)))),
    serviceLoadBalancerAggregation: oneOf('Enabled', 'Disabled'),
  },
  [],
  ['localWorkloadPeeringIPV4', 'localWorkloadPeeringIPV6', 'programClusterRoutes', 'ipv4NormalRoutePriority', 'ipv6NormalRoutePriority'],
)

const BGP_PEER = obj(
  {
    node: name,
    nodeSelector: selector,
    peerIP: str((v) => {
      const p = parsePeerIP(v)
      return typeof p === 'string' ? p : undefined
    }),
    asNumber: asn,
    localASNumber: asn,
    peerSelector: selector,
    keepOriginalNextHop: bool,
    nextHopMode: oneOf('Auto', 'Self', 'Keep'),
    password,
    sourceAddress: oneOf('UseNodeIP', 'None'),
    maxRestartTime: duration,
    keepaliveTime: duration,
    numAllowedLocalASNumbers: int(0, 2147483647),
    ttlSecurity: int(0, 255),
    reachableBy: str((v) => checkIP(v)),
    filters: list(name),
    reversePeering: oneOf('Auto', 'Manual'),
  },
  [],
  ['localWorkloadSelector'],
)

function filterRule(version: Family): ObjectField {
  const maxLen = version === 4 ? 32 : 128
  return obj(
    {
      cidr: str(network(version)),
      prefixLength: obj({ min: int(0, maxLen), max: int(0, maxLen) }),
      matchOperator: oneOf('Equal', 'NotEqual', 'In', 'NotIn'),
      source: oneOf('RemotePeers'),
      interface: str(checkInterfaceGlob),
      peerType: oneOf('eBGP', 'iBGP'),
      communities: obj({ values: list(str(checkCommunity), 1, 1) }, ['values']),
      asPathPrefix: list(asn),
      priority: int(1, 2147483646),
      action: oneOf('Accept', 'Reject'),
      operations: list(
        obj({
          addCommunity: obj({ value: str(checkCommunity) }, ['value']),
          prependASPath: obj({ prefix: list(asn, 1, 10) }, ['prefix']),
          setPriority: obj({ value: int(1, 2147483646) }, ['value']),
        }),
        1,
        10,
      ),
    },
    ['action'],
  )
}

const BGP_FILTER = obj({
  exportV4: list(filterRule(4)),
  importV4: list(filterRule(4)),
  exportV6: list(filterRule(6)),
  importV6: list(filterRule(6)),
})

const NODE = obj(
  {
    bgp: obj({
      asNumber: asn,
      ipv4Address: str(addressWithPrefix(4)),
      ipv6Address: str(addressWithPrefix(6)),
      ipv4IPIPTunnelAddr: str(ipv4),
      routeReflectorClusterID: str(ipv4),
    }),
    ipv4VXLANTunnelAddr: str(ipv4),
    vxlanTunnelMACAddr: str(checkMAC),
    addresses: list(obj({ address: str(), type: oneOf('CalicoNodeIP', 'InternalIP', 'ExternalIP') }, ['address'])),
    orchRefs: list(obj({ nodeName: str(), orchestrator: str() }, ['orchestrator'])),
  },
  [],
  // IPv6 VXLAN: pinto's dataplane programs VXLAN for IPv4 pools only.
  ['wireguard', 'ipv6VXLANTunnelAddr', 'vxlanTunnelMACAddrV6'],
)

const NODE_STATUS = obj({ podCIDRs: list(str(network())) }, [], ['wireguardPublicKey', 'wireguardPublicKeyV6'])

const IP_POOL = obj(
  {
    cidr: str(),
    blockSize: int(0, 128),
    ipipMode: oneOf('Never', 'Always', 'CrossSubnet'),
    vxlanMode: oneOf('Never', 'Always', 'CrossSubnet'),
    natOutgoing: bool,
    disabled: bool,
    disableBGPExport: bool,
    nodeSelector: selector,
    allowedUses: list(oneOf('Workload', 'Tunnel', 'LoadBalancer')),
    assignmentMode: oneOf('Automatic', 'Manual'),
  },
  ['cidr'],
  // ipip and nat-outgoing are Calico's v1 spellings, long deprecated.
  ['namespaceSelector', 'ipip', 'nat-outgoing'],
)

const IPAM_CONFIG = obj(
  { strictAffinity: bool, autoAllocateBlocks: bool, maxBlocksPerHost: int(0, 1000000) },
  [],
  ['ipCooldownSeconds', 'kubeVirtVMAddressPersistence'],
)

export const SPEC_SCHEMAS: Readonly<Record<ResourceKind, ObjectField>> = {
  BGPConfiguration: BGP_CONFIGURATION,
  BGPPeer: BGP_PEER,
  BGPFilter: BGP_FILTER,
  Node: NODE,
  IPPool: IP_POOL,
  IPAMConfig: IPAM_CONFIG,
}

export const STATUS_SCHEMAS: Readonly<Partial<Record<ResourceKind, ObjectField>>> = { Node: NODE_STATUS }
