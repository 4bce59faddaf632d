// Which node's announcement of a block is routed to: the node holding the block's affinity in the
// datastore. A block announced by other nodes too (a stale or duplicate affinity) is reported, and the
// affine node's path is used whenever it announces the block. Pure: learned routes and blocks in.

import type { LearnedNextHop, LearnedRoute } from './desired-state.js'

export type NextHop = LearnedNextHop

/** A block announced by nodes other than the one holding its affinity. */
export interface AffinityConflict {
  readonly block: string
  /** The node holding the block's affinity in the datastore, whose route wins. */
  readonly affineNode: string
  /** The nodes that announce the block too. */
  readonly announcedBy: readonly string[]
}

export interface OwnerResolution {
  readonly routes: LearnedRoute[]
  readonly conflicts: AffinityConflict[]
}

/**
 * `owners`: block CIDR text -> the node holding its affinity. `announcers(prefix)`: the next hops of every
 * path the RIB holds for the prefix (not only the best ones). `me`: this node, whose own blocks never come
 * from BGP; another node announcing one of them is a conflict too.
 */
export function preferAffineNodes(
  routes: readonly LearnedRoute[],
  owners: ReadonlyMap<string, string>,
  announcers: (prefix: string) => readonly NextHop[],
  me: string,
): OwnerResolution {
  const out: LearnedRoute[] = []
  const conflicts: AffinityConflict[] = []
  const seen = new Set<string>()
  const check = (block: string, owner: string, hops: readonly NextHop[]): NextHop[] => {
    const others = [...new Set(hops.map((h) => h.nodeName).filter((n): n is string => n !== undefined && n !== owner))].sort()
    if (others.length > 0 && !seen.has(block)) {
      seen.add(block)
      conflicts.push({ block, affineNode: owner, announcedBy: others })
    }
    return hops.filter((h) => h.nodeName === owner)
  }
  for (const r of routes) {
    const owner = owners.get(r.prefix)
    if (owner === undefined) {
      out.push(r)
      continue
    }
    const affine = check(r.prefix, owner, announcers(r.prefix))
    if (owner === me) continue
    // The route keeps its metric (a BGPFilter priority): only the next hops narrow to the affine node's.
    if (affine.length > 0) out.push({ ...r, nextHops: affine })
    // The affine node does not announce it: the others' paths are all there is.
    else out.push(r)
  }
  // Our own blocks are best through our local path and never among the learned routes.
  for (const [block, owner] of owners) if (owner === me && !seen.has(block)) check(block, owner, announcers(block))
  return { routes: out, conflicts }
}
