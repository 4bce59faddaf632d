// Recovery for a node that is gone for good: its agent and its journal went with it, so what its pods held
// is read from the datastore itself (blocks affine to it, allocations naming it) once its Node resource is
// deleted, and given back to the pools, as Calico's kube-controllers do. Any agent may do it; the
// datastore's compare-and-swap makes doing it twice harmless. Never the agent's own node.

import { type AllocationBlock, type Ipam, affinityNode } from '../../ipam/index.js'

/** The nodes `blocks` name (by affinity, or in an allocation's `node` attribute) that `live` lacks, each with its allocations' handles. */
export function deletedNodes(blocks: Iterable<AllocationBlock>, live: ReadonlySet<string>, self: string): Map<string, Set<string>> {
  const gone = new Map<string, Set<string>>()
  for (const b of blocks) {
    const owner = affinityNode(b)
    if (owner !== undefined && !live.has(owner) && !gone.has(owner)) gone.set(owner, new Set())
    for (const a of b.attributes) {
      const n = a.secondary['node']
      if (n !== undefined && !live.has(n) && a.handleId) {
        let set = gone.get(n)
        if (!set) gone.set(n, (set = new Set()))
        set.add(a.handleId)
      }
    }
  }
  gone.delete(self)
  return gone
}

/** Releases each deleted node's handles, then its blocks and affinities; `done` is told each node's counts. */
export async function releaseDeletedNodes(ipam: Ipam, gone: ReadonlyMap<string, ReadonlySet<string>>, done: (node: string, handles: number, blocks: number) => void): Promise<void> {
  for (const [node, handles] of gone) {
    for (const h of handles) await ipam.releaseByHandle(h)
    done(node, handles.size, await ipam.releaseHostAffinities(node))
  }
}
