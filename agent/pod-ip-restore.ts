// The podIP annotations this node's pods should carry, derived from what IPAM holds: for each pod on this node with
// an allocation of ours (its primary attachment's handle, recorded with namespace, pod and containerID), the
// addresses and container an ADD writes. What is pending is not journalled: a restart derives it again from IPAM and
// the pods. Pure: blocks and pods in, the pods whose annotations differ out.

import type { KubeObject } from '../config/index.js'
import { type AllocationBlock, blockCidr, ordinalAddress } from '../ipam/index.js'
import { PRIMARY_IFNAME } from '../cni/index.js'
import { POD_ANNOTATIONS } from './pod-annotations.js'

export interface PodIpSet {
  readonly namespace: string
  readonly name: string
  readonly handle: string
  readonly containerId: string
  /** As an ADD writes them: IPv4 first (/32), then IPv6 (/128), each in address order. */
  readonly ips: readonly string[]
}

interface Held {
  readonly namespace: string
  readonly name: string
  readonly containerId: string
  readonly v4: string[]
  readonly v6: string[]
}

/** This node's primary attachments' handles, with their pod and addresses, from the blocks (any node's block). */
export function heldByPods(node: string, blocks: Iterable<AllocationBlock>, skip: (handle: string) => boolean): Map<string, Held> {
  const out = new Map<string, Held>()
  for (const b of blocks) {
    let cidr: ReturnType<typeof blockCidr> | undefined
    b.allocations.forEach((idx, ord) => {
      const a = idx === null ? undefined : b.attributes[idx]
      const s = a?.secondary
      const handle = a?.handleId
      if (s === undefined || !handle || s['node'] !== node || !s['namespace'] || !s['pod'] || !s['containerID']) return
      if ((s['ifname'] ?? PRIMARY_IFNAME) !== PRIMARY_IFNAME || skip(handle)) return
      cidr ??= blockCidr(b)
      let h = out.get(handle)
      if (h === undefined) out.set(handle, (h = { namespace: s['namespace'], name: s['pod'], containerId: s['containerID'], v4: [], v6: [] }))
      ;(cidr.family === 4 ? h.v4 : h.v6).push(ordinalAddress(cidr, ord))
    })
  }
  return out
}

/**
 * The pods whose podIP, podIPs or containerID annotations differ from what their allocation says. A pod is looked
 * up by `pod(namespace/name)`; one the cache lacks is left to the pod GC. A pod with several sandboxes' allocations
 * is matched to the one its containerID names, and left alone when it names none of them (which is current is not
 * known here).
 */
export function podIpsToWrite(held: ReadonlyMap<string, Held>, pod: (key: string) => KubeObject | undefined): PodIpSet[] {
  const byPod = new Map<string, [string, Held][]>()
  for (const [handle, h] of held) {
    const key = `${h.namespace}/${h.name}`
    byPod.set(key, [...(byPod.get(key) ?? []), [handle, h]])
  }
  const out: PodIpSet[] = []
  for (const [key, candidates] of byPod) {
    const o = pod(key)
    if (o === undefined) continue
    const a = o.metadata.annotations ?? {}
    const named = candidates.find(([, h]) => h.containerId === a[POD_ANNOTATIONS.containerID])
    const chosen = named ?? (candidates.length === 1 ? candidates[0] : undefined)
    if (chosen === undefined) continue
    const [handle, h] = chosen
    const byAddress = (x: string, y: string): number => x.localeCompare(y, 'en', { numeric: true })
    const ips = [...[...h.v4].sort(byAddress).map((x) => `${x}/32`), ...[...h.v6].sort(byAddress).map((x) => `${x}/128`)]
    const have = (a[POD_ANNOTATIONS.podIPs] ?? '').split(',').filter((x) => x !== '')
    // podIP is the ADD's first address: any of the set in the first family (an ADD of several lists them as assigned).
    const first = a[POD_ANNOTATIONS.podIP] ?? ''
    const same = a[POD_ANNOTATIONS.containerID] === h.containerId && have.length === ips.length && ips.every((x) => have.includes(x)) && ips.includes(first) && first.endsWith('/32') === ips[0]?.endsWith('/32')
    if (!same) out.push({ namespace: h.namespace, name: h.name, handle, containerId: h.containerId, ips })
  }
  return out
}
