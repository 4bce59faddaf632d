// The podIP annotations derived from IPAM at start (agent/pod-ip-restore.ts): only this node's primary attachments
// with their pod recorded, IPv4 before IPv6, nothing for a pod whose annotations already match (in any order of
// podIPs) or that the cache lacks, and a pod with several sandboxes' allocations matched by its containerID only.
import t from 'tap'
import { heldByPods, podIpsToWrite } from '../../agent/pod-ip-restore.js'
import type { KubeObject } from '../../config/index.js'
import type { AllocationBlock } from '../../ipam/index.js'

const A = 'cni.projectcalico.org'

/** A block of `cidr` whose ordinals `taken` hold the attributes given. */
function block(cidr: string, size: number, taken: Record<number, { handle: string; attrs: Record<string, string> }>): AllocationBlock {
  const allocations: (number | null)[] = Array<null>(size).fill(null)
  const attributes: AllocationBlock['attributes'] = []
  for (const [ord, a] of Object.entries(taken)) {
    allocations[Number(ord)] = attributes.length
    attributes.push({ handleId: a.handle, secondary: a.attrs })
  }
  return { cidr, affinity: 'host:n1', affinityClaimTime: null, allocations, unallocated: [], attributes, sequenceNumber: 0, sequenceNumberForAllocation: {} }
}

const attrs = (pod: string, containerID: string, extra: Record<string, string> = {}): Record<string, string> => ({ namespace: 'team', pod, containerID, node: 'n1', ifname: 'eth0', ...extra })
const pods = (list: Record<string, Record<string, string>>) => (key: string): KubeObject | undefined => {
  const [namespace, name] = key.split('/') as [string, string]
  const a = list[name]
  return namespace === 'team' && a !== undefined ? { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace, annotations: a } } : undefined
}

const v4 = block('198.18.0.0/26', 64, {
  5: { handle: 'net.c-web', attrs: attrs('web', 'c-web') },
  6: { handle: 'net.c-db', attrs: attrs('db', 'c-db') },
  7: { handle: 'net.c-other', attrs: attrs('other', 'c-other', { node: 'n2' }) },
  8: { handle: 'net.c-web:net1', attrs: attrs('web', 'c-web', { ifname: 'net1' }) },
  9: { handle: 'net.c-gone', attrs: attrs('gone', 'c-gone') },
  10: { handle: 'net.c-two-old', attrs: attrs('two', 'c-two-old') },
  11: { handle: 'net.c-two-new', attrs: attrs('two', 'c-two-new') },
  12: { handle: 'net.ipam-only', attrs: { node: 'n1' } },
})
const v6 = block('2001:db8:18::/122', 64, { 3: { handle: 'net.c-web', attrs: attrs('web', 'c-web') } })

t.test('this node\'s primary attachments with their pod, any node\'s block', async (t) => {
  const held = heldByPods('n1', [v4, v6], () => false)
  t.same([...held.keys()].sort(), ['net.c-db', 'net.c-gone', 'net.c-two-new', 'net.c-two-old', 'net.c-web'])
  t.same(held.get('net.c-web'), { namespace: 'team', name: 'web', containerId: 'c-web', v4: ['198.18.0.5'], v6: ['2001:db8:18::3'] })
  t.same([...heldByPods('n1', [v4], (h) => h === 'net.c-db').keys()].sort(), ['net.c-gone', 'net.c-two-new', 'net.c-two-old', 'net.c-web'], 'a skipped handle is left out')
})

t.test('what differs is written, IPv4 first; what matches, a pod the cache lacks, and an unnamed sandbox are left', async (t) => {
  const held = heldByPods('n1', [v4, v6], () => false)
  const writes = podIpsToWrite(held, pods({
    web: {},
    db: { [`${A}/podIP`]: '198.18.0.6/32', [`${A}/podIPs`]: '198.18.0.6/32', [`${A}/containerID`]: 'c-db' },
    two: { [`${A}/podIP`]: '', [`${A}/podIPs`]: '', [`${A}/containerID`]: 'c-two-gone' },
  }))
  t.same(writes, [{ namespace: 'team', name: 'web', handle: 'net.c-web', containerId: 'c-web', ips: ['198.18.0.5/32', '2001:db8:18::3/128'] }])

  const again = podIpsToWrite(held, pods({
    web: { [`${A}/podIP`]: '198.18.0.5/32', [`${A}/podIPs`]: '2001:db8:18::3/128,198.18.0.5/32', [`${A}/containerID`]: 'c-web' },
    db: { [`${A}/podIP`]: '', [`${A}/podIPs`]: '', [`${A}/containerID`]: 'c-db' },
    two: { [`${A}/containerID`]: 'c-two-new' },
  }))
  t.same(again.map((w) => `${w.name} ${w.containerId} ${w.ips.join(',')}`).sort(), ['db c-db 198.18.0.6/32', 'two c-two-new 198.18.0.11/32'],
    'podIPs in another order matches; cleared annotations of a held allocation, and the sandbox containerID names, are written')
})
