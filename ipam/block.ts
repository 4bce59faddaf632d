// The allocation block: one blockSize slice of a pool, its per-ordinal allocations, FIFO free list,
// attributes and per-address sequence numbers (Calico's AllocationBlock). Pure: functions mutate the
// record they are given (always a freshly decoded copy) and never touch the datastore or a clock.

import { type Cidr, type Family, cidrContains, cidrSize, formatAddr, formatCidr, readCidr } from '../net/index.js'

export interface AllocationAttribute {
  readonly handleId: string | null
  /** Owner data: namespace, pod, node, type... */
  readonly secondary: Readonly<Record<string, string>>
}

export interface AllocationBlock {
  cidr: string
  /** `host:<node>`, or null for a block nobody owns (its affinity was released while addresses were in use). */
  affinity: string | null
  affinityClaimTime: string | null
  /** One entry per ordinal: null when free, else the index into `attributes`. */
  allocations: (number | null)[]
  /** Free ordinals, a FIFO: allocation takes from the head, release appends to the tail. */
  unallocated: number[]
  attributes: AllocationAttribute[]
  /** The next sequence number to hand out; starts from a clock value so a recreated block never repeats one. */
  sequenceNumber: number
  sequenceNumberForAllocation: Record<string, number>
}

export interface AssignedAddress {
  readonly address: string
  readonly ordinal: number
  readonly sequenceNumber: number
}

/** Addresses that are never handed out automatically (Calico's IPReservation). */
export type IsReserved = (family: Family, value: bigint) => boolean
export const noReservations: IsReserved = () => false

export function hostAffinity(node: string): string {
  return `host:${node}`
}

/** The node of a `host:` affinity, or undefined. */
export function affinityNode(block: AllocationBlock): string | undefined {
  return block.affinity?.startsWith('host:') === true ? block.affinity.slice(5) : undefined
}

export function newBlock(cidr: Cidr, affinity: string | null, claimTime: string, sequenceBase: number): AllocationBlock {
  const size = cidrSize(cidr)
  // Blocks are kept small (20..32 / 116..128 bits of prefix would still be huge for v6, hence the check).
  if (size > 1n << 16n) throw new RangeError(`block ${formatCidr(cidr)} has ${size} addresses; at most 65536 are supported`)
  const n = Number(size)
  return {
    cidr: formatCidr(cidr),
    affinity,
    affinityClaimTime: affinity === null ? null : claimTime,
    allocations: new Array<number | null>(n).fill(null),
    // Calico hands out every address of a block, network and broadcast included: pods get /32 routes.
    unallocated: Array.from({ length: n }, (_, i) => i),
    attributes: [],
    sequenceNumber: sequenceBase,
    sequenceNumberForAllocation: {},
  }
}

export function blockCidr(block: AllocationBlock): Cidr {
  return readCidr(block.cidr, 'block.cidr')
}

export function ordinalAddress(cidr: Cidr, ordinal: number): string {
  return formatAddr(cidr.family, cidr.base + BigInt(ordinal))
}

/** The ordinal of `address` in the block, or undefined when it lies outside. */
export function addressOrdinal(cidr: Cidr, family: Family, value: bigint): number | undefined {
  return cidrContains(cidr, family, value) ? Number(value - cidr.base) : undefined
}

function sameSecondary(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
  const ka = Object.keys(a)
  return ka.length === Object.keys(b).length && ka.every((k) => a[k] === b[k])
}

function findOrAddAttribute(block: AllocationBlock, handleId: string | null, secondary: Readonly<Record<string, string>>): number {
  const i = block.attributes.findIndex((a) => a.handleId === handleId && sameSecondary(a.secondary, secondary))
  if (i >= 0) return i
  block.attributes.push({ handleId, secondary: { ...secondary } })
  return block.attributes.length - 1
}

function stampSequence(block: AllocationBlock, ordinal: number): number {
  const seq = block.sequenceNumber
  block.sequenceNumberForAllocation[String(ordinal)] = seq
  block.sequenceNumber = seq + 1
  return seq
}

/** Takes up to `num` free addresses from the head of the FIFO, skipping reserved ones (which stay free, in place). */
export function blockAutoAssign(
  block: AllocationBlock,
  num: number,
  handleId: string | null,
  secondary: Readonly<Record<string, string>>,
  isReserved: IsReserved = noReservations,
): AssignedAddress[] {
  const cidr = blockCidr(block)
  const out: AssignedAddress[] = []
  const kept: number[] = []
  let attr: number | undefined
  for (let i = 0; i < block.unallocated.length; i++) {
    const ord = block.unallocated[i] as number
    if (out.length >= num || isReserved(cidr.family, cidr.base + BigInt(ord))) {
      kept.push(ord)
      continue
    }
    attr ??= findOrAddAttribute(block, handleId, secondary)
    block.allocations[ord] = attr
    out.push({ address: ordinalAddress(cidr, ord), ordinal: ord, sequenceNumber: stampSequence(block, ord) })
  }
  block.unallocated = kept
  return out
}

/** Assigns one given ordinal; throws when it is taken. Reservations do not apply: asking by address is deliberate. */
export function blockAssign(
  block: AllocationBlock,
  ordinal: number,
  handleId: string | null,
  secondary: Readonly<Record<string, string>>,
): AssignedAddress {
  const cidr = blockCidr(block)
  if (ordinal < 0 || ordinal >= block.allocations.length) throw new RangeError(`ordinal ${ordinal} is outside block ${block.cidr}`)
  if (block.allocations[ordinal] !== null) {
    throw new Error(`${ordinalAddress(cidr, ordinal)} is already assigned (block ${block.cidr})`)
  }
  block.allocations[ordinal] = findOrAddAttribute(block, handleId, secondary)
  block.unallocated = block.unallocated.filter((o) => o !== ordinal)
  return { address: ordinalAddress(cidr, ordinal), ordinal, sequenceNumber: stampSequence(block, ordinal) }
}

export interface ReleaseRequest {
  readonly ordinal: number
  /** When given, release only if the address still belongs to this handle. */
  readonly handleId?: string
  /** When given, release only if the address still carries this sequence number (it was not released and reused). */
  readonly sequenceNumber?: number
}

export type ReleaseSkip = 'not-allocated' | 'bad-sequence' | 'bad-handle'

export interface ReleaseOutcome {
  readonly released: { readonly ordinal: number; readonly handleId: string | null }[]
  readonly skipped: { readonly ordinal: number; readonly reason: ReleaseSkip }[]
}

/** Drops attributes no allocation points at any more and renumbers the rest. */
function compactAttributes(block: AllocationBlock): void {
  const used = new Set<number>()
  for (const a of block.allocations) if (a !== null) used.add(a)
  if (used.size === block.attributes.length) return
  const remap = new Map<number, number>()
  const kept: AllocationAttribute[] = []
  block.attributes.forEach((a, i) => {
    if (used.has(i)) {
      remap.set(i, kept.length)
      kept.push(a)
    }
  })
  block.attributes = kept
  block.allocations = block.allocations.map((a) => (a === null ? null : (remap.get(a) ?? null)))
}

/** Releases what the requests allow; a request whose handle or sequence number is stale is skipped, never applied. */
export function blockRelease(block: AllocationBlock, requests: readonly ReleaseRequest[]): ReleaseOutcome {
  const released: { ordinal: number; handleId: string | null }[] = []
  const skipped: { ordinal: number; reason: ReleaseSkip }[] = []
  const seen = new Set<number>()
  for (const r of requests) {
    if (seen.has(r.ordinal)) continue
    seen.add(r.ordinal)
    const attrIdx = block.allocations[r.ordinal]
    if (attrIdx === null || attrIdx === undefined) {
      skipped.push({ ordinal: r.ordinal, reason: 'not-allocated' })
      continue
    }
    if (r.sequenceNumber !== undefined && block.sequenceNumberForAllocation[String(r.ordinal)] !== r.sequenceNumber) {
      skipped.push({ ordinal: r.ordinal, reason: 'bad-sequence' })
      continue
    }
    const handleId = block.attributes[attrIdx]?.handleId ?? null
    if (r.handleId !== undefined && handleId !== r.handleId) {
      skipped.push({ ordinal: r.ordinal, reason: 'bad-handle' })
      continue
    }
    block.allocations[r.ordinal] = null
    delete block.sequenceNumberForAllocation[String(r.ordinal)]
    block.unallocated.push(r.ordinal)
    released.push({ ordinal: r.ordinal, handleId })
  }
  compactAttributes(block)
  return { released, skipped }
}

/** The ordinals held by `handleId`, in ordinal order. */
export function blockOrdinalsOf(block: AllocationBlock, handleId: string): number[] {
  const out: number[] = []
  block.allocations.forEach((a, ord) => {
    if (a !== null && block.attributes[a]?.handleId === handleId) out.push(ord)
  })
  return out
}

export function blockReleaseByHandle(block: AllocationBlock, handleId: string): ReleaseOutcome {
  return blockRelease(block, blockOrdinalsOf(block, handleId).map((ordinal) => ({ ordinal, handleId })))
}

export function blockInUse(block: AllocationBlock): number {
  return block.allocations.reduce<number>((n, a) => (a === null ? n : n + 1), 0)
}

export function blockIsEmpty(block: AllocationBlock): boolean {
  return blockInUse(block) === 0
}

/** Free addresses that could be handed out automatically (reserved ones excluded). */
export function blockFree(block: AllocationBlock, isReserved: IsReserved = noReservations): number {
  const cidr = blockCidr(block)
  return block.unallocated.reduce((n, ord) => (isReserved(cidr.family, cidr.base + BigInt(ord)) ? n : n + 1), 0)
}

/** Structural problems of a decoded block, each naming its field path; empty when sound. */
export function blockProblems(block: AllocationBlock): string[] {
  const p: string[] = []
  let cidr: Cidr
  try {
    cidr = blockCidr(block)
  } catch (err) {
    return [(err as Error).message]
  }
  const n = Number(cidrSize(cidr))
  if (block.allocations.length !== n) p.push(`allocations: ${block.allocations.length} entries, the block has ${n} addresses`)
  const free = new Set<number>()
  block.unallocated.forEach((o, i) => {
    if (!Number.isInteger(o) || o < 0 || o >= n) p.push(`unallocated[${i}]: ${o} is not an ordinal of the block`)
    else if (free.has(o)) p.push(`unallocated[${i}]: ordinal ${o} is listed twice`)
    else if (block.allocations[o] !== null) p.push(`unallocated[${i}]: ordinal ${o} is also allocated`)
    free.add(o)
  })
  block.allocations.forEach((a, o) => {
    if (a === null) {
      if (!free.has(o)) p.push(`allocations[${o}]: free but missing from unallocated`)
    } else {
      if (a < 0 || a >= block.attributes.length) p.push(`allocations[${o}]: attribute index ${a} out of range`)
      if (block.sequenceNumberForAllocation[String(o)] === undefined) p.push(`sequenceNumberForAllocation[${o}]: missing`)
    }
  })
  return p
}
