// bench/reflect-cluster: the cluster the reflection bench runs, as an operator would write it. The Calico
// resources (two reflector Nodes with a cluster ID, one BGPPeer selecting them for every node, a Node per
// simulated client, mesh off) and the same topology as BIRD 2 configuration, one `protocol bgp` per
// client as Calico's confd renders it. Pure: text and objects out; the bench writes and runs them.

import type { Resource } from '../config/resources/index.js'
import { clientAddress, formatIpv4, NODES_CIDR, POOL_CIDR, type Plan } from './reflect-plan.js'

export const CLUSTER_AS = 64512
export const CLUSTER_ID = '244.0.0.1'
export const REFLECTORS = [
  { name: 'rr1', address: '192.0.2.1' },
  { name: 'rr2', address: '192.0.2.2' },
] as const

const v3 = 'projectcalico.org/v3'

export function clusterResources(plan: Plan, extraNodes: readonly { name: string; address: string }[] = []): Resource[] {
  const out: Resource[] = [
    { apiVersion: v3, kind: 'IPPool', metadata: { name: 'bench-pool' }, spec: { cidr: POOL_CIDR, blockSize: 26, ipipMode: 'Never', vxlanMode: 'Never', natOutgoing: false, nodeSelector: 'all()' } },
    // bindMode NodeIP: each reflector listens on its own address, so two share the namespace.
    { apiVersion: v3, kind: 'BGPConfiguration', metadata: { name: 'default' }, spec: { asNumber: CLUSTER_AS, nodeToNodeMeshEnabled: false, bindMode: 'NodeIP', logSeverityScreen: 'Warning' } },
    { apiVersion: v3, kind: 'BGPPeer', metadata: { name: 'peer-with-route-reflectors' }, spec: { nodeSelector: 'all()', peerSelector: "route-reflector == 'true'" } },
  ]
  for (const r of REFLECTORS) {
    out.push({ apiVersion: v3, kind: 'Node', metadata: { name: r.name, labels: { 'route-reflector': 'true' } }, spec: { bgp: { ipv4Address: `${r.address}/24`, routeReflectorClusterID: CLUSTER_ID } } })
  }
  for (let i = 0; i < plan.clients; i++) {
    out.push({ apiVersion: v3, kind: 'Node', metadata: { name: `node-${i}` }, spec: { bgp: { ipv4Address: `${formatIpv4(clientAddress(i))}/${NODES_CIDR.split('/')[1]}` } } })
  }
  for (const n of extraNodes) out.push({ apiVersion: v3, kind: 'Node', metadata: { name: n.name }, spec: { bgp: { ipv4Address: `${n.address}/24` } } })
  return out
}

/**
 * BIRD 2 as reflector `k` of REFLECTORS, as Calico's confd renders a reflector: a template for its
 * clients, a protocol per client, and the session to the other reflector (same cluster, not a client).
 * `strict bind` makes each listen on its own address only, as bindMode NodeIP does for pinto.
 */
export function birdConfig(plan: Plan, k: number, dir: string, extraClients: readonly string[] = []): string {
  const me = REFLECTORS[k]!
  const lines = [
    `log "${dir}/bird.log" { warning, error, fatal };`,
    `router id ${me.address};`,
    'protocol device { scan time 60; }',
    // Next hops of iBGP routes resolve recursively: the clients' addresses through lo.
    `protocol static { ipv4; route ${NODES_CIDR} via "lo"; }`,
    'template bgp rrc {',
    `  local ${me.address} as ${CLUSTER_AS};`,
    '  strict bind yes;',
    '  rr client;',
    `  rr cluster id ${CLUSTER_ID};`,
    '  passive on;',
    '  hold time 240;',
    '  ipv4 { import all; export all; };',
    '}',
  ]
  for (const r of REFLECTORS) {
    if (r === me) continue
    lines.push(`protocol bgp ${r.name} { local ${me.address} as ${CLUSTER_AS}; strict bind yes; neighbor ${r.address} as ${CLUSTER_AS}; rr cluster id ${CLUSTER_ID}; ipv4 { import all; export all; }; }`)
  }
  for (let i = 0; i < plan.clients; i++) lines.push(`protocol bgp c${i} from rrc { neighbor ${formatIpv4(clientAddress(i))} as ${CLUSTER_AS}; }`)
  extraClients.forEach((a, i) => lines.push(`protocol bgp x${i} from rrc { neighbor ${a} as ${CLUSTER_AS}; }`))
  return lines.join('\n') + '\n'
}
