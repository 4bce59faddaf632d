// What this node advertises, from the IPAM blocks: each block affine to it as one prefix, and each
// address it borrowed from another node's block as a /32 (/128); never its own pods' /32s inside its
// blocks. Pure: blocks in, prefix texts out.

import { type AllocationBlock, blockCidr, hostAffinity, ordinalAddress } from '../ipam/index.js'
import { formatCidr } from '../net/index.js'

export interface Origination {
  /** Blocks this node owns ("198.18.0.0/26"): advertised, and blackholed locally. */
  readonly blocks: readonly string[]
  /** Addresses this node uses in other nodes' blocks: advertised as host routes. */
  readonly borrowed: readonly string[]
}

export function originationFor(node: string, blocks: Iterable<AllocationBlock>): Origination {
  const mine = hostAffinity(node)
  const own: string[] = []
  const borrowed: string[] = []
  for (const b of blocks) {
    const cidr = blockCidr(b)
    if (b.affinity === mine) {
      own.push(formatCidr(cidr))
      continue
    }
    b.allocations.forEach((attrIndex, ordinal) => {
      if (attrIndex === null) return
      if (b.attributes[attrIndex]?.secondary['node'] !== node) return
      const addr = ordinalAddress(cidr, ordinal)
      borrowed.push(`${addr}/${addr.includes(':') ? 128 : 32}`)
    })
  }
  own.sort()
  borrowed.sort()
  return { blocks: own, borrowed }
}
