// What the demo prints about a running cluster, as text for a person: its BGP peers, the top-of-rack's view,
// felix's routes, the pods, and how to reach each node's API and status page. Pure: the facts in, text out,
// every table and line no wider than DEMO_WIDTH; pintoctl demo gathers the facts and writes the text.

import type { KernelRouteRow, PeerRow } from './observe.js'
import { DEMO_WIDTH, table } from './tables.js'

const fit = { maxWidth: DEMO_WIDTH }

export interface StateFacts {
  readonly peers: readonly { readonly node: string; readonly rows: readonly PeerRow[]; readonly source: 'api' | 'tcp' }[]
  readonly tor?: { readonly address: string; readonly as: number; readonly sessions: ReadonlyMap<string, string>; readonly learned: readonly string[] }
  readonly routes: readonly { readonly node: string; readonly rows: readonly KernelRouteRow[] }[]
  readonly pods: readonly { readonly name: string; readonly node: string; readonly address: string }[]
}

export function stateReport(f: StateFacts): string {
  const peerRows = f.peers.flatMap((p) => (p.rows.length === 0 ? [[p.node, '(none)', '', '', '', '']] : p.rows.map((r) => [p.node, r.name, r.address, r.type, r.state, r.since])))
  let text = '\nBGP peers\n' + table(['node', 'peer', 'address', 'type', 'state', 'since'], peerRows, fit)
  if (f.peers.some((p) => p.source === 'tcp')) text += '(some nodes did not answer on their REST API; their rows are the TCP sessions on port 179)\n'
  if (f.tor !== undefined) {
    text += `\ntop-of-rack BIRD (${f.tor.address}, AS ${f.tor.as}): sessions and learned prefixes\n`
    text += table(['neighbor', 'state'], [...f.tor.sessions].map(([k, v]) => [k, v]), fit)
    text += table(['learned prefix'], f.tor.learned.map((p) => [p]), fit)
  }
  const routeRows = f.routes.flatMap((n) => n.rows.map((r) => [n.node, r.prefix, r.type === 'blackhole' ? 'blackhole (own block)' : r.via]))
  text += '\nroutes pinto programmed (kernel, proto 87)\n' + table(['node', 'prefix', 'next hop'], routeRows, fit)
  text += '\npods\n' + table(['pod', 'node', 'address'], f.pods.map((p) => [p.name, p.node, p.address]), fit)
  return text
}

export interface AccessFacts {
  readonly apiPort: number
  readonly nodes: readonly { readonly name: string; readonly address: string; readonly ns: string; readonly page: string | undefined }[]
  /** Where the agents' logs are: a path with nodeN for the node, or a `podman logs` command. */
  readonly logs: string
  readonly podNs: string | undefined
}

/** How to reach the nodes: a table of node, address, namespace and page, then commands one per line. */
export function accessReport(f: AccessFacts): string {
  const api = `http://127.0.0.1:${f.apiPort}`
  const rows = f.nodes.map((n) => [n.name, n.address, n.ns, n.page ?? '(no forward)'])
  const lines = [
    '',
    `REST APIs and status pages (each node serves both on 127.0.0.1:${f.apiPort} inside its namespace)`,
    table(['node', 'address', 'namespace', 'status page (from this machine)'], rows, fit).trimEnd(),
  ]
  const first = f.nodes[0]
  if (first !== undefined) {
    lines.push(
      "a node's REST API, from this machine (its namespace from the table):",
      `  ip netns exec ${first.ns} curl -s ${api}/v1/peers`,
      '  also /v1/status, /v1/events, /v1/routes?table=loc-rib, /v1/ipam/blocks, /metrics',
    )
  }
  const page = f.nodes.find((n) => n.page !== undefined)?.page
  if (page !== undefined) {
    const port = new URL(page).port
    lines.push('open a status page in a browser on this machine; from another one, forward it first:', `  ssh -L ${port}:127.0.0.1:${port} THIS-HOST, then open ${page}`)
  }
  if (first !== undefined) {
    lines.push(
      `no browser at hand: a PNG of ${first.name}'s page by Debian's chromium (apt-get install chromium),`,
      'whose D-Bus warnings do no harm:',
      `  ip netns exec ${first.ns} chromium --headless --no-sandbox --disable-gpu \\`,
      `    --virtual-time-budget=5000 --window-size=1400,1300 --screenshot=/tmp/${first.name}.png \\`,
      `    ${api}/`,
    )
  }
  lines.push(`agent logs: ${f.logs}`, `a pod's shell: ip netns exec ${f.podNs ?? '<pod namespace>'} sh`)
  return lines.join('\n') + '\n'
}
