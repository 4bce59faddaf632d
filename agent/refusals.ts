// The record of what this node refused or flagged about who announces pod addresses: per peer, the pool
// prefixes a non-node peer announced (counted, the latest kept for the API), and blocks a node announced
// without holding their affinity. It logs each new case once; it never decides anything itself.

import type { Logger } from 'pino'
import { Counter, Gauge, type Registry } from 'prom-client'
import type { AffinityConflict } from '../felix/index.js'

const RECENT = 16
/** Distinct cases logged before the memory of them starts over (a flood must not grow it without bound). */
const LOGGED_MAX = 10_000

export interface PeerRefusals {
  /** Announcements refused since the agent started (a re-announcement counts again). */
  readonly total: number
  /** The latest distinct prefixes refused, newest last. */
  readonly recent: readonly string[]
}


export class AnnouncementRefusals {
  private readonly peers = new Map<string, { total: number; recent: string[] }>()
  private conflicts: readonly AffinityConflict[] = []
  private readonly logged = new Set<string>()

  constructor(private readonly log: Logger) {}

  poolPrefixRefused(peer: string, prefix: string): void {
    let p = this.peers.get(peer)
    if (p === undefined) this.peers.set(peer, (p = { total: 0, recent: [] }))
    p.total++
    const at = p.recent.indexOf(prefix)
    if (at >= 0) p.recent.splice(at, 1)
    p.recent.push(prefix)
    if (p.recent.length > RECENT) p.recent.shift()
    const key = `${peer} ${prefix}`
    if (!this.logged.has(key)) {
      this.remember(key)
      this.log.warn({ peer, prefix }, 'refused a pool prefix from a peer that is not a cluster node (no BGPFilter of the peer accepts it)')
    }
  }

  forPeer(peer: string): PeerRefusals {
    const p = this.peers.get(peer)
    return { total: p?.total ?? 0, recent: [...(p?.recent ?? [])] }
  }

  /** Replaces the current affinity conflicts, logging those not seen before. */
  setAffinityConflicts(conflicts: readonly AffinityConflict[]): void {
    for (const c of conflicts) {
      const key = `affinity ${c.block} ${c.affineNode} ${c.announcedBy.join(',')}`
      if (this.logged.has(key)) continue
      this.remember(key)
      this.log.warn(c, 'a block is announced by a node that does not hold its affinity: the affine node\'s route is used')
    }
    this.conflicts = conflicts
  }

  affinityConflicts(): readonly AffinityConflict[] {
    return this.conflicts
  }

  private remember(key: string): void {
    if (this.logged.size >= LOGGED_MAX) this.logged.clear()
    this.logged.add(key)
  }
}

/** /metrics: refused pool prefixes per peer, and the number of blocks with an affinity conflict. */
export function registerAnnouncementMetrics(registry: Registry, refusals: AnnouncementRefusals, peers: () => readonly string[]): void {
  new Counter({
    name: 'pinto_bgp_refused_pool_prefixes_total',
    help: 'Announcements of prefixes inside an IP pool refused from a peer that is not a cluster node (no BGPFilter of it accepts them)',
    labelNames: ['peer'],
    registers: [registry],
    collect() {
      this.reset()
      for (const peer of peers()) this.inc({ peer }, refusals.forPeer(peer).total)
    },
  })
  new Gauge({
    name: 'pinto_bgp_affinity_conflicts',
    help: 'Blocks announced by a node that does not hold their affinity in the datastore',
    registers: [registry],
    collect() {
      this.set(refusals.affinityConflicts().length)
    },
  })
}
