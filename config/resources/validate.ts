// Cross-field rules of each kind, after the schema walk has checked every single field: Calico's
// validator.go struct rules, its calicoctl client rules (default-only BGPConfiguration fields) and the
// IPAM config rules of ipam.go. Pure: takes a resource, records problems at field paths.

import { AddrError, cidrsOverlap, parseAddr, parseCidr, parseIfAddr, tryAddr, type Cidr, type Family } from '../../net/index.js'
import type { PathSegment, Problems } from './errors.js'
import { checkCommunity, checkName, parsedOrUndefined, parsePeerIP } from './scalars.js'
import type { BGPConfiguration, BGPFilter, BGPFilterRule, BGPPeer, IPAMConfig, IPPool, Node, Resource } from './types.js'

type Path = readonly PathSegment[]

const LINK_LOCAL: Readonly<Record<Family, Cidr>> = { 4: parseCidr('169.254.0.0/16'), 6: parseCidr('fe80::/10') }

export const BLOCK_SIZE_RANGE: Readonly<Record<Family, readonly [number, number]>> = { 4: [20, 32], 6: [116, 128] }

/**
 * Fields Calico's client refuses on a per-node (`node.<name>`) BGPConfiguration, and serviceLoadBalancerAggregation,
 * which Calico reads from `default` only (a per-node value would do nothing).
 */
export const DEFAULT_ONLY_BGP_FIELDS = [
  'nodeToNodeMeshEnabled',
  'asNumber',
  'serviceLoadBalancerIPs',
  'serviceExternalIPs',
  'serviceClusterIPs',
  'serviceLoadBalancerAggregation',
  'nodeMeshPassword',
  'nodeMeshMaxRestartTime',
] as const

export function validateResource(r: Resource, base: Path, problems: Problems): void {
  switch (r.kind) {
    case 'BGPConfiguration':
      return validateBGPConfiguration(r, base, problems)
    case 'BGPPeer':
      return validateBGPPeer(r, base, problems)
    case 'BGPFilter':
      return validateBGPFilter(r, base, problems)
    case 'Node':
      return validateNode(r, base, problems)
    case 'IPPool':
      validateIPPool(r, base, problems)
      return
    case 'IPAMConfig':
      return validateIPAMConfig(r, base, problems)
    default: {
      const never: never = r
      throw new Error(`unknown kind ${JSON.stringify(never)}`)
    }
  }
}

function validateBGPConfiguration(r: BGPConfiguration, base: Path, problems: Problems): void {
  const name = r.metadata.name
  const spec = r.spec
  const at = (...p: PathSegment[]): PathSegment[] => [...base, 'spec', ...p]
  if (name !== 'default' && name !== '') {
    const node = name.startsWith('node.') ? name.slice('node.'.length) : undefined
    if (node === undefined || node === '' || checkName(node) !== undefined) {
      problems.add([...base, 'metadata', 'name'], `BGPConfiguration name must be "default" or "node.<nodename>", got ${JSON.stringify(name)}`)
    }
    for (const field of DEFAULT_ONLY_BGP_FIELDS) {
      if (spec[field] !== undefined) problems.add(at(field), `${field} can only be set on the "default" BGPConfiguration`)
    }
  }
  if (spec.nodeToNodeMeshEnabled === false) {
    if (spec.nodeMeshPassword !== undefined) problems.add(at('nodeMeshPassword'), 'nodeMeshPassword cannot be set when nodeToNodeMeshEnabled is false')
    if (spec.nodeMeshMaxRestartTime !== undefined) {
      problems.add(at('nodeMeshMaxRestartTime'), 'nodeMeshMaxRestartTime cannot be set when nodeToNodeMeshEnabled is false')
    }
  }
  const communities = spec.communities ?? []
  const defined = new Set(communities.map((c) => c.name))
  if (communities.length > 0 && (spec.prefixAdvertisements ?? []).length === 0) {
    problems.add(at('communities'), 'communities are defined but not used by any prefixAdvertisements entry')
  }
  ;(spec.prefixAdvertisements ?? []).forEach((pa, i) => {
    pa.communities.forEach((c, j) => {
      if (!defined.has(c) && checkCommunity(c) !== undefined) {
        problems.add(at('prefixAdvertisements', i, 'communities', j), `${JSON.stringify(c)} is neither a community value nor a name defined in spec.communities`)
      }
    })
  })
}

function validateBGPPeer(r: BGPPeer, base: Path, problems: Problems): void {
  const s = r.spec
  const at = (...p: PathSegment[]): PathSegment[] => [...base, 'spec', ...p]
  if (s.node !== undefined && s.nodeSelector !== undefined) problems.add(at('node'), 'node must be empty when nodeSelector is set')
  if (s.peerIP !== undefined && s.peerSelector !== undefined) problems.add(at('peerIP'), 'peerIP must be empty when peerSelector is set')
  if (s.asNumber !== undefined && s.peerSelector !== undefined) {
    problems.add(at('asNumber'), "asNumber must be empty when peerSelector is set (the AS comes from each selected node's spec.bgp.asNumber or the global AS)")
  }
  if (s.keepOriginalNextHop === true && s.nextHopMode !== undefined) {
    problems.add(at('keepOriginalNextHop'), 'keepOriginalNextHop is deprecated and must not be true when nextHopMode is set')
  }
  if (s.reachableBy !== undefined) {
    const gw = parsedOrUndefined(() => parseAddr(s.reachableBy ?? '', 'spec.reachableBy'))
    const peer = s.peerIP !== undefined ? parsePeerIP(s.peerIP) : undefined
    if (s.peerIP === undefined) problems.add(at('reachableBy'), 'reachableBy needs peerIP')
    else if (gw !== undefined && typeof peer === 'object' && gw.family !== peer.ip.family) {
      problems.add(at('reachableBy'), 'reachableBy and peerIP are of different address families')
    }
  }
}

function validateBGPFilter(r: BGPFilter, base: Path, problems: Problems): void {
  for (const list of ['exportV4', 'importV4', 'exportV6', 'importV6'] as const) {
    r.spec[list]?.forEach((rule, i) => validateFilterRule(rule, [...base, 'spec', list, i], problems))
  }
}

function validateFilterRule(rule: BGPFilterRule, at: Path, problems: Problems): void {
  if (rule.cidr !== undefined && rule.matchOperator === undefined) problems.add([...at, 'matchOperator'], 'matchOperator is required when cidr is set')
  if (rule.cidr === undefined && rule.matchOperator !== undefined) problems.add([...at, 'cidr'], 'cidr is required when matchOperator is set')
  if (rule.cidr === undefined && rule.prefixLength !== undefined) problems.add([...at, 'prefixLength'], 'cidr is required when prefixLength is set')
  const pl = rule.prefixLength
  if (pl !== undefined && rule.cidr !== undefined) {
    // Calico's validator takes these, but the BIRD it renders them for cannot run them: a range
    // {lo,hi} with lo > hi fails the whole BIRD configuration, and `net = [set]` fails every route
    // that reaches the rule at run time. Refused here instead, naming the field.
    const c = parsedOrUndefined(() => parseIfAddr(rule.cidr ?? '', 'cidr', { bare: true }).cidr)
    if (c !== undefined) {
      const lo = Math.max(c.prefix, pl.min ?? 0)
      const hi = Math.min(c.family === 4 ? 32 : 128, pl.max ?? 128)
      if (lo > hi) problems.add([...at, 'prefixLength'], `the range {${lo},${hi}} (cidr /${c.prefix}, min ${pl.min ?? '-'}, max ${pl.max ?? '-'}) matches no prefix length; BIRD refuses it`)
    }
    if (rule.matchOperator === 'Equal' || rule.matchOperator === 'NotEqual') {
      problems.add([...at, 'prefixLength'], `prefixLength needs matchOperator In or NotIn, not ${rule.matchOperator}`)
    }
  }
  if ((rule.operations ?? []).length > 0 && rule.action === 'Reject') {
    problems.add([...at, 'operations'], 'operations may only be used with action Accept')
  }
  rule.operations?.forEach((op, i) => {
    const set = [op.addCommunity, op.prependASPath, op.setPriority].filter((x) => x !== undefined).length
    if (set !== 1) {
      problems.add([...at, 'operations', i], `exactly one of addCommunity, prependASPath or setPriority must be set, got ${set}`)
    }
  })
}

function validateNode(r: Node, base: Path, problems: Problems): void {
  if (r.spec.bgp !== undefined && Object.keys(r.spec.bgp).length === 0) {
    problems.add([...base, 'spec', 'bgp'], 'spec.bgp must not be empty (omit it instead)')
  }
}

/** Parses a pool's CIDR and checks it like Calico's validateIPPoolSpec; returns it when usable. */
export function validateIPPool(r: IPPool, base: Path, problems: Problems): Cidr | undefined {
  const s = r.spec
  const at = (...p: PathSegment[]): PathSegment[] => [...base, 'spec', ...p]
  if (s.cidr === undefined) return undefined // already reported as required
  const strict = tryAddr(() => parseCidr(s.cidr ?? '', 'spec.cidr', { bare: true }))
  if (strict instanceof AddrError) problems.add(at('cidr'), strict.reason)
  // Host bits set: the rest is still checked against the network it names.
  const c = strict instanceof AddrError ? parsedOrUndefined(() => parseIfAddr(s.cidr ?? '', 'spec.cidr', { bare: true }).cidr) : strict
  if (c === undefined) return undefined
  if (cidrsOverlap(c, LINK_LOCAL[c.family])) {
    problems.add(at('cidr'), `IP pool range overlaps with the IPv${c.family} link-local range ${c.family === 4 ? '169.254.0.0/16' : 'fe80::/10'}`)
  }
  const [lo, hi] = BLOCK_SIZE_RANGE[c.family]
  const blockSize = s.blockSize ?? (c.family === 4 ? 26 : 122)
  if (s.blockSize !== undefined && (s.blockSize < lo || s.blockSize > hi)) {
    problems.add(at('blockSize'), `blockSize ${s.blockSize} is out of range ${lo}-${hi} for an IPv${c.family} pool`)
  } else if (s.disabled !== true && c.prefix > blockSize) {
    // Calico skips this for disabled pools: they are never cut into blocks.
    problems.add(at('cidr'), `IP pool /${c.prefix} is smaller than its blocks (/${blockSize}); it must be at least as large as a block`)
  }
  const ipip = s.ipipMode !== undefined && s.ipipMode !== 'Never'
  const vxlan = s.vxlanMode !== undefined && s.vxlanMode !== 'Never'
  if (c.family === 6 && ipip) problems.add(at('ipipMode'), 'ipipMode other than Never is not supported on an IPv6 pool')
  if (ipip && vxlan) problems.add(at('ipipMode'), 'ipipMode and vxlanMode cannot both be enabled')
  const uses = s.allowedUses ?? []
  if (uses.includes('LoadBalancer')) {
    if (ipip || vxlan) problems.add(at(ipip ? 'ipipMode' : 'vxlanMode'), 'a LoadBalancer pool cannot use IPIP or VXLAN')
    if (uses.some((u) => u !== 'LoadBalancer')) problems.add(at('allowedUses'), 'LoadBalancer cannot be combined with Workload or Tunnel')
    if (s.nodeSelector !== undefined && s.nodeSelector !== 'all()') problems.add(at('nodeSelector'), 'a LoadBalancer pool must have nodeSelector all()')
    if (s.disableBGPExport === true) problems.add(at('disableBGPExport'), 'a LoadBalancer pool cannot disable BGP export')
  }
  if (s.nodeSelector?.includes('global(') === true) problems.add(at('nodeSelector'), 'global() is not a valid selector for an IPPool nodeSelector')
  return c
}

function validateIPAMConfig(r: IPAMConfig, base: Path, problems: Problems): void {
  // Calico's client refuses any other name. ipam.go's SetIPAMConfig (calicoctl ipam configure) also
  // refuses strictAffinity false with autoAllocateBlocks false or with maxBlocksPerHost > 0, but an
  // applied IPAMConfiguration resource is not held to those: its validator takes both, and so does
  // pinto's IPAM (borrowing when the node is at its block limit, as Calico's does).
  if (r.metadata.name !== 'default' && r.metadata.name !== '') {
    problems.add([...base, 'metadata', 'name'], `IPAMConfiguration is a singleton named "default", got ${JSON.stringify(r.metadata.name)}`)
  }
}
