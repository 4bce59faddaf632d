// The pools, VTEPs and local node that felix's render tests share: one pool per encapsulation mode, node b
// on our subnet, node c across a router.

import type { IPPool } from '../../config/resources/index.js'
import type { LocalNodeInfo, RemoteVtep } from '../../felix/index.js'

export function pool(name: string, cidr: string, spec: Partial<IPPool['spec']> = {}): IPPool {
  return { apiVersion: 'projectcalico.org/v3', kind: 'IPPool', metadata: { name }, spec: { cidr, ...spec } }
}

export const pools: IPPool[] = [
  pool('plain', '198.18.0.0/20'),
  pool('ipip', '198.18.16.0/20', { ipipMode: 'Always' }),
  pool('ipipx', '198.18.32.0/20', { ipipMode: 'CrossSubnet' }),
  pool('vx', '198.18.48.0/20', { vxlanMode: 'Always' }),
  pool('vxx', '198.18.64.0/20', { vxlanMode: 'CrossSubnet' }),
  pool('v6', '2001:db8:1::/48'),
]

export const vteps: RemoteVtep[] = [
  { nodeName: 'b', nodeAddress: '192.0.2.12', tunnelAddress: '198.18.48.65', mac: '66:00:00:00:00:02' },
  { nodeName: 'c', nodeAddress: '198.51.100.13', tunnelAddress: '198.18.48.129', mac: '66:00:00:00:00:03' },
]

export const localNode: LocalNodeInfo = { name: 'a', ipv4Address: '192.0.2.11/24', ipv6Address: '2001:db8::11/64', parentInterface: 'eth0' }
