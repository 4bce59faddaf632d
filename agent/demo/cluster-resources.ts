// The Calico resources a demo cluster starts with: its IPv4 pool (unless pinto-config makes it), the BGP
// configuration, route reflectors' Node resources and the BGPPeers of the topology and the top-of-rack.
// Pure: the cluster writes them (cluster.ts).
import type { Resource } from '../../config/index.js'
import type { DemoTopology, Encap } from './options.js'
import { TOR_ADDRESS, TOR_AS } from './tor.js'

export const POOL_CIDR = '198.18.0.0/15'
export const CLUSTER_AS = 64512
export const RR_CLUSTER_ID = '244.0.0.1'

export interface ResourceSpec {
  readonly encap?: Encap
  readonly topology?: DemoTopology
  readonly tor?: boolean
  readonly runtime?: 'process' | 'podman'
}

export function clusterResources(spec: ResourceSpec, reflectors: readonly { readonly name: string; readonly address: string }[]): Resource[] {
  const encap = spec.encap ?? 'none'
  // Under podman the pool is the one pinto-config describes, which the first pinto-node creates.
  const pool: Resource[] = spec.runtime === 'podman' ? [] : [
    {
      apiVersion: 'projectcalico.org/v3',
      kind: 'IPPool',
      metadata: { name: 'demo-ipv4-pool' },
      spec: { cidr: POOL_CIDR, blockSize: 26, ipipMode: encap === 'ipip' ? 'Always' : 'Never', vxlanMode: encap === 'vxlan' ? 'Always' : 'Never', natOutgoing: false, nodeSelector: 'all()' },
    },
  ]
  const out: Resource[] = [
    ...pool,
    { apiVersion: 'projectcalico.org/v3', kind: 'BGPConfiguration', metadata: { name: 'default' }, spec: { asNumber: CLUSTER_AS, nodeToNodeMeshEnabled: spec.topology !== 'rr' } },
  ]
  for (const n of reflectors) {
    // Written before the agent starts: it reads its cluster ID once, when the speaker is made.
    out.push({
      apiVersion: 'projectcalico.org/v3',
      kind: 'Node',
      metadata: { name: n.name, labels: { 'route-reflector': 'true' } },
      spec: { bgp: { ipv4Address: `${n.address}/24`, routeReflectorClusterID: RR_CLUSTER_ID } },
    })
  }
  if (spec.topology === 'rr') {
    out.push({ apiVersion: 'projectcalico.org/v3', kind: 'BGPPeer', metadata: { name: 'peer-with-route-reflectors' }, spec: { nodeSelector: 'all()', peerSelector: "route-reflector == 'true'" } })
  }
  if (spec.tor === true) {
    out.push({ apiVersion: 'projectcalico.org/v3', kind: 'BGPPeer', metadata: { name: 'tor' }, spec: { peerIP: TOR_ADDRESS, asNumber: TOR_AS } })
  }
  return out
}
