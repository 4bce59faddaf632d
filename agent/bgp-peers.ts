// Which BGP sessions this node should have, from the cluster's resources, as Calico's confd decides
// them for BIRD: the node-to-node mesh, route-reflector topologies (Node routeReflectorClusterID,
// BGPPeer nodeSelector/peerSelector, with the reverse peerings), and explicit global and per-node
// BGPPeers. Pure: resources in, peer descriptions out; the speaker is configured from them elsewhere.

import { type BGPConfigurationSpec, type BGPPeer, type Node, parseDuration, parseSelector, peerEndpoint } from '../config/index.js'
import { AddrError, readAddr, tryAddr } from '../net/index.js'
import type { PasswordRef } from './bgp-secrets.js'
import type { BfdParameters } from '../bgp/index.js'
import { parseBfdAnnotation } from './bfd-annotation.js'

export type PeerKind = 'mesh' | 'global' | 'node-specific' | 'reflector-client' | 'reflector' | 'node-selector'

export interface DesiredPeer {
  /** Stable across recomputations, so unchanged sessions are left alone. */
  readonly name: string
  readonly kind: PeerKind
  readonly address: string
  readonly port: number
  readonly family: 'ipv4' | 'ipv6'
  readonly peerAsn: number
  readonly localAsn: number
  /** Source address to bind: the node's own address of that family. */
  readonly localAddress: string | undefined
  readonly passive: boolean
  readonly rrClient: boolean
  readonly nextHopMode: 'auto' | 'self' | 'keep'
  readonly allowLocalAs: number
  readonly restartTime: number | undefined
  readonly keepaliveTime: number | undefined
  /** BGPFilter names, in order. */
  readonly filters: readonly string[]
  /** The remote node, for node-to-node sessions. */
  readonly node?: string
  /** Where the TCP-MD5 password comes from (BGPPeer password, BGPConfiguration nodeMeshPassword). */
  readonly password?: PasswordRef
  /** GTSM hops (BGPPeer ttlSecurity); 0 is off. */
  readonly ttlSecurity: number
  /** BGPPeer reachableBy: the gateway of a static /32 (/128) route to the peer, which felix programs. */
  readonly reachableBy?: string
  /** BFD beside this session (the pinto.dev/bfd annotation), single hop only. */
  readonly bfd?: BfdParameters
}

export interface PeerProblem {
  readonly resource: string
  readonly message: string
}

export interface ClusterView {
  readonly localNode: string
  readonly nodes: readonly Node[]
  readonly peers: readonly BGPPeer[]
  /** The effective BGPConfiguration for this node (global merged with node.<name>). */
  readonly config: BGPConfigurationSpec
  /** BFD for the node-to-node mesh (the pinto.dev/bfd annotation of the BGPConfiguration). */
  readonly meshBfd?: BfdParameters
}

const addrOf = (cidr: string | undefined): string | undefined => cidr?.split('/')[0]

function nodeAsn(node: Node, config: BGPConfigurationSpec): number {
  return node.spec.bgp?.asNumber ?? config.asNumber ?? 64512
}

/** The numerically higher address opens the connection; the other waits (Calico's mesh, so GR is never aborted by a race). */
export function higherAddress(a: string, b: string): boolean {
  const x = tryAddr(() => readAddr(a))
  const y = tryAddr(() => readAddr(b))
  if (!(x instanceof AddrError) && !(y instanceof AddrError) && x.family === y.family) return x.value > y.value
  return a > b
}

function labelsOf(node: Node): Record<string, string> {
  return { ...(node.metadata.labels ?? {}) }
}

/** Does a BGPPeer apply to this node (node, nodeSelector, or global)? */
function appliesTo(peer: BGPPeer, node: Node): boolean {
  if (peer.spec.node !== undefined) return peer.spec.node === node.metadata.name
  if (peer.spec.nodeSelector !== undefined) return parseSelector(peer.spec.nodeSelector).matches(labelsOf(node))
  return true
}

function seconds(text: string | undefined): number | undefined {
  return text === undefined ? undefined : Math.round(parseDuration(text) / 1000)
}

export function desiredPeers(view: ClusterView): { peers: DesiredPeer[]; problems: PeerProblem[] } {
  const problems: PeerProblem[] = []
  const me = view.nodes.find((n) => n.metadata.name === view.localNode)
  if (!me) return { peers: [], problems: [{ resource: `Node ${view.localNode}`, message: 'this node is not registered yet' }] }
  const myAsn = nodeAsn(me, view.config)
  const my4 = addrOf(me.spec.bgp?.ipv4Address)
  const my6 = addrOf(me.spec.bgp?.ipv6Address)
  const myCluster = me.spec.bgp?.routeReflectorClusterID
  const out = new Map<string, DesiredPeer>() // by address: the first way to reach a peer wins, as Calico dedupes
  const meshRestart = seconds(view.config.nodeMeshMaxRestartTime)

  const nodeSession = (other: Node, kind: PeerKind, base: Partial<DesiredPeer>): void => {
    if (other.metadata.name === me.metadata.name) return
    const otherCluster = other.spec.bgp?.routeReflectorClusterID
    // RFC 4456: a reflector treats every node outside its cluster as a client.
    const rrClient = myCluster !== undefined && otherCluster !== myCluster
    const kindNow: PeerKind = rrClient ? 'reflector-client' : myCluster === undefined && otherCluster !== undefined ? 'reflector' : kind
    for (const [family, mine, theirs] of [
      ['ipv4', my4, addrOf(other.spec.bgp?.ipv4Address)],
      ['ipv6', my6, addrOf(other.spec.bgp?.ipv6Address)],
    ] as const) {
      if (mine === undefined || theirs === undefined || out.has(theirs)) continue
      out.set(theirs, {
        name: `${kind === 'mesh' ? 'mesh' : 'node'}${family === 'ipv6' ? '6' : ''}-${other.metadata.name}`,
        kind: kindNow,
        address: theirs,
        port: view.config.listenPort ?? 179,
        family,
        peerAsn: nodeAsn(other, view.config),
        localAsn: myAsn,
        localAddress: mine,
        passive: !higherAddress(mine, theirs),
        rrClient,
        nextHopMode: 'auto',
        allowLocalAs: 0,
        restartTime: undefined,
        keepaliveTime: undefined,
        filters: [],
        node: other.metadata.name,
        ttlSecurity: 0,
        ...base,
      })
    }
  }

  // Explicit BGPPeers first (Calico renders them before the mesh), then the reverse peerings,
  // then the mesh; an address already peered is not peered twice.
  for (const peer of view.peers) {
    const where = `BGPPeer ${peer.metadata.name}`
    const spec = peer.spec
    let restartTime: number | undefined
    let keepaliveTime: number | undefined
    let bfd: BfdParameters | undefined
    try {
      restartTime = seconds(spec.maxRestartTime)
      keepaliveTime = seconds(spec.keepaliveTime)
      bfd = parseBfdAnnotation(peer.metadata.annotations)
    } catch (err) {
      problems.push({ resource: where, message: (err as Error).message })
      continue
    }
    const nextHopMode = spec.nextHopMode !== undefined ? (spec.nextHopMode.toLowerCase() as DesiredPeer['nextHopMode']) : spec.keepOriginalNextHop ? 'keep' : 'auto'
    const common = {
      nextHopMode,
      allowLocalAs: spec.numAllowedLocalASNumbers ?? 0,
      restartTime,
      keepaliveTime,
      filters: spec.filters ?? [],
      localAsn: spec.localASNumber ?? myAsn,
      ttlSecurity: spec.ttlSecurity ?? 0,
      ...(spec.reachableBy !== undefined ? { reachableBy: spec.reachableBy } : {}),
      ...(spec.password?.secretKeyRef !== undefined ? { password: { ref: spec.password.secretKeyRef, field: `${where}: spec.password.secretKeyRef` } } : {}),
      ...(bfd !== undefined ? { bfd } : {}),
    }
    if (appliesTo(peer, me)) {
      const endpoint = peerEndpoint(peer, view.config.listenPort ?? 179)
      if (endpoint) {
        if (out.has(endpoint.ip)) continue
        const v6 = endpoint.ip.includes(':')
        const local = v6 ? my6 : my4
        out.set(endpoint.ip, {
          name: `peer-${peer.metadata.name}${v6 ? '-6' : ''}`,
          kind: spec.node !== undefined || spec.nodeSelector !== undefined ? 'node-specific' : 'global',
          address: endpoint.ip,
          port: endpoint.port,
          family: v6 ? 'ipv6' : 'ipv4',
          peerAsn: spec.asNumber ?? myAsn,
          localAddress: spec.sourceAddress === 'None' ? undefined : local,
          passive: false,
          rrClient: false,
          ...common,
        })
      } else if (spec.peerSelector !== undefined) {
        const sel = parseSelector(spec.peerSelector)
        for (const other of view.nodes) if (sel.matches(labelsOf(other))) nodeSession(other, 'node-selector', common)
      }
    }
    // Reverse peering: a node picked by this BGPPeer's peerSelector peers back with the nodes it applies to.
    if (spec.peerSelector !== undefined && spec.reversePeering !== 'Manual' && parseSelector(spec.peerSelector).matches(labelsOf(me))) {
      for (const other of view.nodes) if (appliesTo(peer, other)) nodeSession(other, 'node-selector', common)
    }
  }
  if (view.config.nodeToNodeMeshEnabled !== false) {
    const ref = view.config.nodeMeshPassword?.secretKeyRef
    const password = ref !== undefined ? { password: { ref, field: 'BGPConfiguration default: spec.nodeMeshPassword.secretKeyRef' } } : {}
    for (const other of view.nodes) nodeSession(other, 'mesh', { restartTime: meshRestart, ...password, ...(view.meshBfd !== undefined ? { bfd: view.meshBfd } : {}) })
  }
  return { peers: [...out.values()], problems }
}
