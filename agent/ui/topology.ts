// The status page's picture of what one node sees: top-of-rack and other eBGP peers on top, route
// reflectors below them, this node, then the other nodes. Pure layout (positions in SVG units) from the
// API's peers and IPAM's block owners; the browser code only draws it.

export type Role = 'external' | 'reflector' | 'self' | 'node'

export interface TopologyPeer {
  readonly name: string
  readonly address: string
  /** The API's peer type: mesh, global, node-specific, reflector-client, reflector, or ibgp/ebgp. */
  readonly type: string
  readonly session: 'ibgp' | 'ebgp'
  readonly state: string
  readonly peerAsn: number
}

export interface TopologyInput {
  readonly self: { readonly name: string; readonly asn: number; readonly routerId: string }
  readonly peers: readonly TopologyPeer[]
  /** Nodes known from IPAM block affinities; those without a session of ours are drawn unlinked (or via the reflectors). */
  readonly nodes?: readonly string[]
}

export interface PlacedNode {
  readonly id: string
  readonly label: string
  readonly detail: string
  readonly role: Role
  readonly x: number
  readonly y: number
  /** The session's state for peers; undefined for this node and for nodes we have no session with. */
  readonly state: string | undefined
}

export interface Edge {
  readonly from: string
  readonly to: string
  /** The session's state; undefined for a path we only infer (a node reached through the reflectors). */
  readonly state: string | undefined
}

export interface Layout {
  readonly width: number
  readonly height: number
  readonly nodes: readonly PlacedNode[]
  readonly edges: readonly Edge[]
  readonly rows: readonly { readonly role: Role; readonly y: number; readonly label: string }[]
}

export const SPACING_X = 150
export const SPACING_Y = 96
/** Wider rows wrap, so a large cluster stays readable. */
export const PER_ROW = 8
const MARGIN_X = 90
const MARGIN_Y = 44

const ROW_LABELS: Record<Role, string> = { external: 'eBGP peers (top of rack)', reflector: 'route reflectors', self: 'this node', node: 'nodes' }

export function roleOf(p: TopologyPeer): Role {
  if (p.session === 'ebgp') return 'external'
  if (p.type === 'reflector') return 'reflector'
  return 'node'
}

/**
 * The node a node-to-node session reaches: agent/bgp-peers.ts names them `mesh-NODE`, `mesh6-NODE`,
 * `node-NODE` or `node6-NODE`; any other peer is its own box.
 */
export function nodeOfPeer(peerName: string): string {
  const m = /^(?:mesh|node)6?-(.+)$/.exec(peerName)
  return m?.[1] ?? peerName
}

/** One box's state from its sessions: Established only when every one is. */
function worst(states: readonly string[]): string {
  return states.find((s) => s !== 'Established') ?? 'Established'
}

interface Box {
  readonly id: string
  readonly label: string
  readonly detail: string
  readonly state: string | undefined
}

export function layoutTopology(input: TopologyInput): Layout {
  const self = input.self
  const peers = [...input.peers].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  const groups: Record<Role, Box[]> = { external: [], reflector: [], self: [], node: [] }
  // The IPv4 and IPv6 sessions to one node share its box.
  const boxes = new Map<string, { role: Role; label: string; peers: TopologyPeer[] }>()
  for (const p of peers) {
    const role = roleOf(p)
    const label = role === 'external' ? p.name : nodeOfPeer(p.name)
    const key = `${role}:${label}`
    const b = boxes.get(key)
    if (b === undefined) boxes.set(key, { role, label, peers: [p] })
    else b.peers.push(p)
  }
  for (const [key, b] of boxes) {
    const addresses = b.peers.map((p) => p.address).join(' · ')
    groups[b.role].push({ id: key, label: b.label, detail: b.role === 'external' ? `AS ${b.peers[0]!.peerAsn} · ${addresses}` : addresses, state: worst(b.peers.map((p) => p.state)) })
  }
  groups.self.push({ id: 'self', label: self.name, detail: `AS ${self.asn} · ${self.routerId}`, state: undefined })
  const linked = new Set([...boxes.values()].map((b) => b.label))
  const indirect = [...new Set(input.nodes ?? [])].filter((n) => n !== self.name && !linked.has(n)).sort()
  for (const n of indirect) groups.node.push({ id: `node:${n}`, label: n, detail: 'no session of ours', state: undefined })

  const order: Role[] = ['external', 'reflector', 'self', 'node']
  const lines: { role: Role; members: Box[] }[] = []
  for (const role of order) {
    const g = groups[role]
    for (let i = 0; i < g.length; i += PER_ROW) lines.push({ role, members: g.slice(i, i + PER_ROW) })
  }
  const widest = Math.max(1, ...lines.map((l) => l.members.length))
  const width = 2 * MARGIN_X + (widest - 1) * SPACING_X
  const nodes: PlacedNode[] = []
  const rows: { role: Role; y: number; label: string }[] = []
  lines.forEach((line, r) => {
    const y = MARGIN_Y + r * SPACING_Y
    // A node with reflector clients is a route reflector itself (RFC 4456); the API says so only through them.
    const label = line.role === 'self' && peers.some((p) => p.type === 'reflector-client') ? 'this node · route reflector' : ROW_LABELS[line.role]
    if (rows.every((x) => x.role !== line.role)) rows.push({ role: line.role, y, label })
    const start = width / 2 - ((line.members.length - 1) * SPACING_X) / 2
    line.members.forEach((m, i) => nodes.push({ ...m, role: line.role, x: start + i * SPACING_X, y }))
  })
  const edges: Edge[] = [...groups.external, ...groups.reflector, ...groups.node].filter((b) => b.state !== undefined).map((b) => ({ from: 'self', to: b.id, state: b.state }))
  const reflectors = groups.reflector
  for (const n of indirect) for (const rr of reflectors) edges.push({ from: rr.id, to: `node:${n}`, state: undefined })
  return { width, height: 2 * MARGIN_Y + (lines.length - 1) * SPACING_Y, nodes, edges, rows }
}
