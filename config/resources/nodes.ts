// What other folders read off Node resources beyond their fields: which node each BGP address is. Pure.

import type { Node } from './types.js'

/**
 * Each node's BGP addresses (`spec.bgp.ipv4Address` and `ipv6Address`, without the prefix length) to the
 * node's name; an address two nodes claim goes to the later one. felix names the node behind a next hop
 * with it, and the agent tells node sessions from other peers.
 */
export function nodeAddressNames(nodes: readonly Node[]): Map<string, string> {
  const out = new Map<string, string>()
  for (const n of nodes) {
    for (const a of [n.spec.bgp?.ipv4Address, n.spec.bgp?.ipv6Address]) if (a) out.set(a.split('/')[0]!, n.metadata.name)
  }
  return out
}
