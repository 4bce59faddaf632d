// Whether this node is ready, with calico-node's BGP semantics (its `bird-ready` check). Pure: the
// caller passes peers, uptime and the other inputs; /readyz only renders the verdict.

import type { PeerStatus } from '../../bgp/index.js'
import type { ApiDeps, ReadinessInputs } from './deps.js'

export interface Readiness {
  readonly ready: boolean
  /** Why not ready (Calico's wording where it has one), or what made it ready. */
  readonly reason: string
  readonly established: number
  readonly peers: number
}

/**
 * The start-up window: right after the agent starts, its routes may not have reached the other nodes
 * yet. Reporting ready then would let a rolling update move on to the next node while this one is still
 * cut off, so during the window every configured peer must be Established (and no graceful restart of
 * ours may still be running). After the window one Established peer is enough: other nodes going down
 * must not make the whole mesh report not-ready. A node with no peers at all is ready (a one-node
 * cluster, or routing done elsewhere).
 */
export function judgeReadiness(peers: readonly Pick<PeerStatus, 'address' | 'state'>[], uptimeSeconds: number, inputs: ReadinessInputs): Readiness {
  const down = peers.filter((p) => p.state !== 'Established').map((p) => p.address)
  const established = peers.length - down.length
  const base = { established, peers: peers.length }
  for (const c of inputs.checks?.() ?? []) {
    if (!c.ok) return { ...base, ready: false, reason: `${c.name} not ready${c.detail !== undefined ? `: ${c.detail}` : ''}` }
  }
  if (peers.length === 0) return { ...base, ready: true, reason: 'no BGP peers configured' }
  if (uptimeSeconds < inputs.startupWindowSeconds) {
    if (down.length > 0) return { ...base, ready: false, reason: `BGP not established with ${down.join(',')}` }
    if (inputs.gracefulRestartInProgress?.() === true) return { ...base, ready: false, reason: 'graceful restart in progress' }
    return { ...base, ready: true, reason: 'all BGP peers established' }
  }
  if (established > 0) return { ...base, ready: true, reason: `BGP established with ${established} of ${peers.length} peers` }
  return { ...base, ready: false, reason: `BGP not established with ${down.join(',')}` }
}

/** The verdict for this agent now. */
export function readinessReply(deps: Pick<ApiDeps, 'bgp' | 'uptimeSeconds' | 'readiness'>): Readiness {
  return judgeReadiness(deps.bgp.peerStatus(), deps.uptimeSeconds(), deps.readiness)
}
