// felix's own narrow input: what it must make true in the kernel, as plain data the agent assembles from
// the speaker's Loc-RIB, the pools, IPAM's local blocks and the Node resources. Types only; no logic and
// no knowledge of BGP, the datastore or how the kernel is reached.

import type { IPPool } from '../config/index.js'

export interface LearnedNextHop {
  /** The node that originated the prefix, when known; used to find its VTEP. */
  readonly nodeName?: string
  /** The BGP next hop: the remote node's IP (or a router's, for routes from outside the mesh). */
  readonly address: string
}

/** A remote block (or borrowed /32) from the Loc-RIB. Several next hops mean ECMP. */
export interface LearnedRoute {
  readonly prefix: string
  readonly nextHops: readonly LearnedNextHop[]
  /** The kernel route's metric (Calico's route priority); the kernel's default when absent. */
  readonly metric?: number
}

/** A remote node's VXLAN endpoint, as published on its Node resource. */
export interface RemoteVtep {
  readonly nodeName: string
  /** The node's IP on the fabric: where encapsulated packets go (FDB destination). */
  readonly nodeAddress: string
  /** The node's vxlan.pinto address (Node `ipv4VXLANTunnelAddr`): the routes' gateway. */
  readonly tunnelAddress: string
  /** The node's vxlan.pinto MAC (Node `vxlanTunnelMACAddr`). */
  readonly mac: string
}

export interface LocalNodeInfo {
  readonly name: string
  /** "addr/len" as Node `bgp.ipv4Address`: the length defines "our subnet" for CrossSubnet. */
  readonly ipv4Address?: string
  readonly ipv6Address?: string
  /** The interface holding the node's address: no-encap and same-subnet routes leave through it. */
  readonly parentInterface: string
}

/** A pod the agent knows about: its /32 (or /128) route on a pinto veth is never cleaned up. */
export interface LocalWorkload {
  readonly address: string
}

export interface DesiredState {
  readonly pools: readonly IPPool[]
  readonly routes: readonly LearnedRoute[]
  /** This node's IPAM blocks (CIDRs): each gets a blackhole route. */
  readonly localBlocks: readonly string[]
  readonly vteps: readonly RemoteVtep[]
  readonly localNode: LocalNodeInfo
  /**
   * Pods on this node. Absent means "not known yet": felix then leaves every veth route alone; present,
   * a /32 on a pinto veth for an address not listed is deleted once its grace period has passed.
   */
  readonly workloads?: readonly LocalWorkload[]
}
