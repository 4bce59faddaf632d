// The cluster bench/ipam-scale.ts loads into each datastore: N nodes and M pods as pinto's IPAM would have
// written them (the pool, each node's Node resource, its confirmed affinities and blocks, a handle per pod),
// as pinto's own key/value records built with ipam/'s record functions. Each datastore's preload writes
// these records in its own layout. Pure: no I/O.

import { encodeResource, resourceKey } from '../config/resources/index.js'
import type { Resource } from '../config/resources/index.js'
import { type Cidr, formatCidr } from '../net/index.js'
import { blockAutoAssign, hostAffinity, newBlock } from '../ipam/block.js'
import { HandleClaim } from '../ipam/handle-claim.js'
import { blockCandidates, toPool } from '../ipam/pools.js'
import { affinityKey, affinityRecord, blockKey, handleKey } from '../ipam/records.js'

// 198.18.0.0/15 has 131,072 addresses, fewer than 150,000 pods: the pods are IPv6, in Calico's default /122 blocks.
export const POOL = { name: 'bench-v6', cidr: '2001:db8:1::/64', blockSize: 122 }

export const nodeName = (i: number): string => `node-${String(i).padStart(5, '0')}`

/** The labels a kubelet gives its Node, and a rack label for selectors: the same in both datastores. */
export function nodeLabels(i: number): Record<string, string> {
  return {
    'beta.kubernetes.io/arch': 'amd64', 'beta.kubernetes.io/os': 'linux', 'kubernetes.io/arch': 'amd64', 'kubernetes.io/os': 'linux',
    'kubernetes.io/hostname': nodeName(i), 'topology.kubernetes.io/zone': `zone-${i % 3}`, rack: `r${i % 40}`,
  }
}

/** The node's address: in one of the three documentation /24s. */
export function nodeAddress(i: number): string {
  const net = ['192.0.2', '198.51.100', '203.0.113'][i % 3] as string
  return `${net}.${1 + (Math.floor(i / 3) % 254)}`
}

function nodeResource(i: number): Resource {
  return {
    apiVersion: 'projectcalico.org/v3', kind: 'Node',
    metadata: { name: nodeName(i), labels: nodeLabels(i) },
    spec: { bgp: { ipv4Address: `${nodeAddress(i)}/24` } },
  }
}

export interface ScaleRecord {
  readonly key: string
  readonly value: string
}

/**
 * The records in the order a preload writes them: the BGPConfiguration (no node-to-node mesh: 5,000 nodes peer
 * through route reflectors, not with each other), the pool, then per node its Node resource, and per block
 * its affinity, the block and the handles of the pods in it. Pods are spread evenly over the nodes.
 */
export function* scaleRecords(nodes: number, allocations: number): Generator<ScaleRecord> {
  const pool = toPool(POOL)
  yield { key: resourceKey('BGPConfiguration', 'default'), value: encodeResource({ apiVersion: 'projectcalico.org/v3', kind: 'BGPConfiguration', metadata: { name: 'default' }, spec: { nodeToNodeMeshEnabled: false, asNumber: 64512 } }) }
  yield { key: resourceKey('IPPool', POOL.name), value: encodeResource({ apiVersion: 'projectcalico.org/v3', kind: 'IPPool', metadata: { name: POOL.name }, spec: { cidr: POOL.cidr, blockSize: POOL.blockSize, nodeSelector: 'all()' } }) }
  const claimTime = new Date().toISOString()
  let pod = 0
  for (let n = 0; n < nodes; n++) {
    const node = nodeName(n)
    yield { key: resourceKey('Node', node), value: encodeResource(nodeResource(n)) }
    const mine = Math.floor(allocations / nodes) + (n < allocations % nodes ? 1 : 0)
    const candidates = blockCandidates(pool, node)
    for (let left = mine; left > 0;) {
      const cidr = candidates.next().value as Cidr
      const block = newBlock(cidr, hostAffinity(node), claimTime, Date.now() * 1000)
      const handles: string[] = []
      while (left > 0 && block.unallocated.length > 0) {
        const handle = `k8s-pod-network.preload-${pod}`
        blockAutoAssign(block, 1, handle, { node, namespace: 'preload', pod: `preload-${pod}` })
        handles.push(handle)
        left--
        pod++
      }
      yield { key: affinityKey(node, cidr), value: JSON.stringify(affinityRecord(node, cidr, 'confirmed')) }
      yield { key: blockKey(cidr), value: JSON.stringify(block) }
      for (const h of handles) yield { key: handleKey(h), value: HandleClaim.createValue(h, { [formatCidr(cidr)]: 1 }) }
    }
  }
}
