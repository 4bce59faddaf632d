// bench/reflect-plan: what the reflection bench's simulated nodes are and announce, the same in the
// orchestrator and in every client process. Pure: client count in, addresses, blocks, borrowed /32s and
// the index of every route the bench tracks out. No sockets, no files.

/** The pool the simulated nodes' blocks come from: 100.64.0.0/10 holds 65,536 /26s (198.18.0.0/15 only 2,048). */
export const POOL_CIDR = '100.64.0.0/10'
export const POOL_BASE = ((100 << 24) | (64 << 16)) >>> 0
export const BLOCK_BITS = 26
const BLOCK_SIZE = 1 << (32 - BLOCK_BITS)
export const MAX_CLIENTS = 250 * 512
/** The simulated nodes' addresses (RFC 2544's benchmarking range), on the bench namespace's lo: every address in it is local there. */
export const NODES_CIDR = '198.18.0.0/15'
const NODES_BASE = ((198 << 24) | (18 << 16)) >>> 0

/** Client i's node address: 198.18.0.1 on, the last octet in 1..250 (no .0 or .255). */
export function clientAddress(i: number): number {
  return (NODES_BASE + Math.floor(i / 250) * 256 + (i % 250) + 1) >>> 0
}

export function formatIpv4(n: number): string {
  return `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`
}

/** A small deterministic mix, so block and borrow counts look random but agree across processes. */
function mix(i: number, salt: number): number {
  let h = (i * 0x9e3779b1 + salt * 0x85ebca77) >>> 0
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d) >>> 0
  h = Math.imul(h ^ (h >>> 15), 0x846ca68b) >>> 0
  return (h ^ (h >>> 16)) >>> 0
}

export interface Plan {
  readonly clients: number
  /** Client i's blocks are block indices firstBlock[i] .. firstBlock[i+1]-1 (1 to 4 of them). */
  readonly firstBlock: Uint32Array
  /** Blocks announced at start; blocks from here on are the spares the changes announce and withdraw. */
  readonly blocks: number
  readonly spares: number
  /** Borrowed /32s: address and owner (the client announcing it), 0 to 2 per client from a neighbour's block. */
  readonly borrowed: readonly { readonly address: number; readonly client: number }[]
  /** Routes every client holds at the end of the cold start: blocks plus borrowed /32s. */
  readonly routes: number
  /** Index space of tracked routes: blocks, then spares, then borrowed /32s. */
  readonly universe: number
}

export function makePlan(clients: number, spares: number): Plan {
  if (!Number.isInteger(clients) || clients < 2 || clients > MAX_CLIENTS) throw new Error(`--clients: ${clients} must be 2..${MAX_CLIENTS}`)
  const firstBlock = new Uint32Array(clients + 1)
  for (let i = 0; i < clients; i++) firstBlock[i + 1] = firstBlock[i]! + 1 + (mix(i, 1) % 4)
  const blocks = firstBlock[clients]!
  if ((blocks + spares) * BLOCK_SIZE > 1 << 22) throw new Error(`--clients: ${clients} need more /26s than ${POOL_CIDR} holds`)
  const borrowed: { address: number; client: number }[] = []
  for (let i = 0; i < clients; i++) {
    // Borrowed addresses come from the top of the next client's first block (its own allocations start at the bottom).
    const from = firstBlock[(i + 1) % clients]!
    for (let k = 0; k < mix(i, 2) % 3; k++) borrowed.push({ address: (POOL_BASE + from * BLOCK_SIZE + BLOCK_SIZE - 1 - k - 2 * (i % 8)) >>> 0, client: i })
  }
  return { clients, firstBlock, blocks, spares, borrowed, routes: blocks + borrowed.length, universe: blocks + spares + borrowed.length }
}

export function blockAddress(block: number): number {
  return (POOL_BASE + block * BLOCK_SIZE) >>> 0
}

/** The client a spare is announced by: spread over the clients. */
export function spareOwner(plan: Plan, spare: number): number {
  return (spare * 7919 + 13) % plan.clients
}

/** Route indices of what client i originates at start. */
export function ownRoutes(plan: Plan, i: number): number[] {
  const out: number[] = []
  for (let b = plan.firstBlock[i]!; b < plan.firstBlock[i + 1]!; b++) out.push(b)
  plan.borrowed.forEach((r, k) => {
    if (r.client === i) out.push(plan.blocks + plan.spares + k)
  })
  return out
}

/** Maps an announced prefix back to its route index, -1 for a prefix the plan does not know. */
export function routeIndexer(plan: Plan): (address: number, length: number) => number {
  const byAddress = new Map<number, number>()
  plan.borrowed.forEach((r, k) => byAddress.set(r.address, plan.blocks + plan.spares + k))
  const end = plan.blocks + plan.spares
  return (address, length) => {
    if (length === BLOCK_BITS) {
      const off = (address - POOL_BASE) >>> 0
      const b = off / BLOCK_SIZE
      return off % BLOCK_SIZE === 0 && b < end ? b : -1
    }
    if (length === 32) return byAddress.get(address) ?? -1
    return -1
  }
}

/** The prefix of route index r: [address, length]. */
export function routePrefix(plan: Plan, r: number): [number, number] {
  if (r < plan.blocks + plan.spares) return [blockAddress(r), BLOCK_BITS]
  return [plan.borrowed[r - plan.blocks - plan.spares]!.address, 32]
}
