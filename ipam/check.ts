// Leak check and repair over the IPAM records: finds allocations whose handle is gone, handles and addresses
// that disagree, blocks or affinities of deleted nodes, and addresses live interfaces use that IPAM does not
// hold for them; repair fixes them through the Ipam's CAS paths. Check only reads. Repair re-validates
// through sequence numbers and revisions, so a stale report never frees a reused address.

import { cidrContains, formatCidr, parseAddr, readCidr } from '../net/index.js'
import { type AllocationBlock, addressOrdinal, affinityNode, blockCidr, blockProblems, ordinalAddress } from './block.js'
import { type Ipam, sameCounts } from './ipam.js'
import { poolBlockOf } from './pools.js'
import { AFFINITIES_PREFIX, BLOCKS_PREFIX, HANDLES_PREFIX, decodeAffinity, decodeBlock, decodeHandle, handleKey } from './records.js'

export type Problem =
  | { readonly kind: 'leaked-allocation'; readonly address: string; readonly handle: string | null; readonly block: string; readonly sequenceNumber: number; readonly node?: string }
  | { readonly kind: 'address-without-handle'; readonly address: string; readonly handle: string | null; readonly block: string; readonly sequenceNumber: number }
  | { readonly kind: 'handle-without-addresses'; readonly handle: string; readonly revision: number }
  | { readonly kind: 'handle-count-mismatch'; readonly handle: string; readonly recorded: Readonly<Record<string, number>>; readonly actual: Readonly<Record<string, number>> }
  | { readonly kind: 'block-of-deleted-node'; readonly block: string; readonly node: string }
  | { readonly kind: 'affinity-of-deleted-node'; readonly block: string; readonly node: string }
  | { readonly kind: 'affinity-without-block'; readonly block: string; readonly node: string; readonly state: string; readonly revision: number }
  | { readonly kind: 'block-without-affinity'; readonly block: string; readonly node: string }
  | { readonly kind: 'invalid-record'; readonly key: string; readonly detail: string }
  | { readonly kind: 'live-address-unallocated'; readonly address: string; readonly link: string; readonly handle: string | null; readonly node?: string }
  | { readonly kind: 'live-address-elsewhere'; readonly address: string; readonly link: string; readonly handle: string; readonly holder: string | null }

/**
 * An address a live interface on the host uses: `link` routes it to a pod, and `handle` is the attachment
 * its ifalias records (null when it records none that names a handle, as an earlier pinto's did).
 */
export interface LiveAddress {
  readonly address: string
  readonly link: string
  readonly handle: string | null
}

export interface CheckInput {
  /** Handles whose workloads exist; without it allocations are not judged (Calico: missing attrs are assumed valid). */
  readonly liveHandles?: Iterable<string>
  /** Nodes that exist; without it no node is judged deleted. */
  readonly liveNodes?: Iterable<string>
  /** Addresses live interfaces use: each must be allocated, to the handle its interface records. */
  readonly liveAddresses?: Iterable<LiveAddress>
}

export interface CheckReport {
  readonly blocks: number
  readonly affinities: number
  readonly handles: number
  readonly allocations: number
  readonly problems: readonly Problem[]
}

export function describeProblem(p: Problem): string {
  switch (p.kind) {
    case 'leaked-allocation': return `${p.address} is allocated to ${p.handle ?? '(no handle)'} but not in use`
    case 'address-without-handle': return `${p.address} (block ${p.block}) is allocated to ${p.handle ?? '(no handle)'}, which has no handle record`
    case 'handle-without-addresses': return `handle ${p.handle} has no matching IPs`
    case 'handle-count-mismatch': return `handle ${p.handle} records ${JSON.stringify(p.recorded)} but blocks hold ${JSON.stringify(p.actual)}`
    case 'block-of-deleted-node': return `block ${p.block} is affine to deleted node ${p.node}`
    case 'affinity-of-deleted-node': return `affinity of deleted node ${p.node} for block ${p.block}`
    case 'affinity-without-block': return `${p.state} affinity of ${p.node} for block ${p.block}, which does not exist or is not affine to it`
    case 'block-without-affinity': return `block ${p.block} is affine to ${p.node}, which has no affinity record for it`
    case 'invalid-record': return `invalid record ${p.key}: ${p.detail}`
    case 'live-address-unallocated': return `${p.address} is in use by ${p.link}${p.handle === null ? '' : ` (${p.handle})`} but allocated to no handle`
    case 'live-address-elsewhere': return `${p.address} is in use by ${p.link} (${p.handle}) but allocated to ${p.holder ?? '(no handle)'}`
    default: {
      const never: never = p
      return never
    }
  }
}

/** Reads blocks, affinities and handles once and reports every disagreement. Best run on a quiet store. */
export async function checkIpam(ipam: Ipam, input: CheckInput = {}): Promise<CheckReport> {
  const live = input.liveHandles === undefined ? undefined : new Set(input.liveHandles)
  const nodes = input.liveNodes === undefined ? undefined : new Set(input.liveNodes)
  const [blockList, affList, handleList] = await Promise.all([BLOCKS_PREFIX, AFFINITIES_PREFIX, HANDLES_PREFIX].map((p) => ipam.store.list(p)))
  const problems: Problem[] = []
  const blocks = new Map<string, AllocationBlock>()
  for (const kv of blockList?.items ?? []) {
    try {
      const b = decodeBlock(kv.key, kv.value)
      const bad = blockProblems(b)
      if (bad.length > 0) problems.push({ kind: 'invalid-record', key: kv.key, detail: bad.join('; ') })
      else blocks.set(b.cidr, b)
    } catch (err) {
      problems.push({ kind: 'invalid-record', key: kv.key, detail: (err as Error).message })
    }
  }
  const handles = new Map<string, { blocks: Readonly<Record<string, number>>; revision: number }>()
  for (const kv of handleList?.items ?? []) {
    try {
      handles.set(kv.key.slice(HANDLES_PREFIX.length), { blocks: decodeHandle(kv.key, kv.value).blocks, revision: kv.revision })
    } catch (err) {
      problems.push({ kind: 'invalid-record', key: kv.key, detail: (err as Error).message })
    }
  }
  const affinities = new Set<string>()
  for (const kv of affList?.items ?? []) {
    let a
    try {
      a = decodeAffinity(kv.key, kv.value)
    } catch (err) {
      problems.push({ kind: 'invalid-record', key: kv.key, detail: (err as Error).message })
      continue
    }
    const cidr = formatCidrText(a.cidr)
    affinities.add(`${a.node} ${cidr}`)
    if (nodes !== undefined && !nodes.has(a.node)) problems.push({ kind: 'affinity-of-deleted-node', block: cidr, node: a.node })
    else if (a.state === 'confirmed' && blocks.get(cidr)?.affinity !== `host:${a.node}`) {
      problems.push({ kind: 'affinity-without-block', block: cidr, node: a.node, state: a.state, revision: kv.revision })
    }
  }
  // Tally what the blocks say each handle holds.
  const actual = new Map<string, Record<string, number>>()
  let allocations = 0
  for (const b of blocks.values()) {
    const cidr = blockCidr(b)
    const owner = affinityNode(b)
    if (owner !== undefined && nodes !== undefined && !nodes.has(owner)) problems.push({ kind: 'block-of-deleted-node', block: b.cidr, node: owner })
    else if (owner !== undefined && !affinities.has(`${owner} ${b.cidr}`)) problems.push({ kind: 'block-without-affinity', block: b.cidr, node: owner })
    b.allocations.forEach((attr, ord) => {
      if (attr === null) return
      allocations++
      const a = b.attributes[attr]
      const handle = a?.handleId ?? null
      // Formatting an address costs more than the rest of the tally: only a reported one is formatted.
      const common = (): { address: string; handle: string | null; block: string; sequenceNumber: number } =>
        ({ address: ordinalAddress(cidr, ord), handle, block: b.cidr, sequenceNumber: b.sequenceNumberForAllocation[String(ord)] ?? 0 })
      if (live !== undefined && (handle === null || !live.has(handle))) {
        problems.push({ kind: 'leaked-allocation', ...common(), ...(a?.secondary.node ? { node: a.secondary.node } : {}) })
      } else if (handle === null || !handles.has(handle)) {
        problems.push({ kind: 'address-without-handle', ...common() })
      }
      if (handle !== null) {
        const t = actual.get(handle) ?? {}
        t[b.cidr] = (t[b.cidr] ?? 0) + 1
        actual.set(handle, t)
      }
    })
  }
  for (const [handle, h] of handles) {
    const t = actual.get(handle)
    if (t === undefined) problems.push({ kind: 'handle-without-addresses', handle, revision: h.revision })
    else if (!sameCounts(t, h.blocks)) problems.push({ kind: 'handle-count-mismatch', handle, recorded: h.blocks, actual: t })
  }
  if (input.liveAddresses !== undefined) problems.push(...(await liveAddressProblems(ipam, blocks, input.liveAddresses)))
  return { blocks: blocks.size, affinities: affList?.items.length ?? 0, handles: handles.size, allocations, problems }
}

/**
 * The leak check of one node's own blocks, reading only the handle records their allocations name (none of the
 * other nodes' records): addresses whose handle record is gone, and handles whose counts for these blocks
 * disagree with the blocks. `verified` holds, per handle, its allocations in these blocks as last found in
 * agreement with its record; a handle whose allocations are unchanged since is not read again, so a quiet node
 * reads nothing. It cannot see a handle record that names these blocks but holds none of their addresses: that
 * takes checkIpam, which reads every handle in the cluster.
 */
export async function checkOwnBlocks(ipam: Ipam, blocks: Iterable<AllocationBlock>, verified: Map<string, string>): Promise<Problem[]> {
  const problems: Problem[] = []
  const own = new Set<string>()
  /** Per handle: its allocations in these blocks, its count per block, and the problem each is if the record is gone. */
  const byHandle = new Map<string, { readonly allocations: string[]; readonly counts: Record<string, number>; readonly orphans: (() => Problem)[] }>()
  for (const b of blocks) {
    own.add(b.cidr)
    const cidr = blockCidr(b)
    b.allocations.forEach((attr, ord) => {
      if (attr === null) return
      const handle = b.attributes[attr]?.handleId ?? null
      const seq = b.sequenceNumberForAllocation[String(ord)] ?? 0
      // Formatting an address costs more than the rest: only a reported one is formatted.
      const orphan = (): Problem => ({ kind: 'address-without-handle', address: ordinalAddress(cidr, ord), handle, block: b.cidr, sequenceNumber: seq })
      if (handle === null) return void problems.push(orphan())
      let h = byHandle.get(handle)
      if (h === undefined) byHandle.set(handle, (h = { allocations: [], counts: {}, orphans: [] }))
      h.allocations.push(`${b.cidr}#${ord}@${seq}`)
      h.counts[b.cidr] = (h.counts[b.cidr] ?? 0) + 1
      h.orphans.push(orphan)
    })
  }
  for (const handle of verified.keys()) if (!byHandle.has(handle)) verified.delete(handle)
  for (const [handle, h] of byHandle) {
    const fingerprint = h.allocations.join(',')
    if (verified.get(handle) === fingerprint) continue
    verified.delete(handle)
    const kv = await ipam.store.get(handleKey(handle))
    if (kv === undefined) {
      problems.push(...h.orphans.map((f) => f()))
      continue
    }
    const recorded = decodeHandle(kv.key, kv.value).blocks
    // What the handle should record: these blocks' counts as they hold them, the other blocks' as recorded.
    const actual: Record<string, number> = {}
    for (const [cidr, n] of Object.entries(recorded)) if (!own.has(cidr)) actual[cidr] = n
    Object.assign(actual, h.counts)
    if (sameCounts(actual, recorded)) verified.set(handle, fingerprint)
    else problems.push({ kind: 'handle-count-mismatch', handle, recorded, actual })
  }
  return problems
}

/**
 * The live addresses IPAM does not hold for their interfaces: in a block but free, or in a pool with no
 * block (unallocated); allocated to another handle than the interface records (elsewhere). An address in no
 * pool is none of IPAM's.
 */
async function liveAddressProblems(ipam: Ipam, blocks: ReadonlyMap<string, AllocationBlock>, live: Iterable<LiveAddress>): Promise<Problem[]> {
  const pools = await ipam.pools()
  const out: Problem[] = []
  for (const l of live) {
    const { family, value } = parseAddr(l.address, 'live address')
    const b = [...blocks.values()].find((x) => cidrContains(blockCidr(x), family, value))
    if (b === undefined) {
      const block = pools.map((p) => poolBlockOf(p, family, value)).find((c) => c !== undefined)
      if (block !== undefined) out.push({ kind: 'live-address-unallocated', ...l })
      continue
    }
    const attr = b.allocations[addressOrdinal(blockCidr(b), family, value) as number]
    const node = affinityNode(b)
    if (attr === null || attr === undefined) out.push({ kind: 'live-address-unallocated', ...l, ...(node !== undefined ? { node } : {}) })
    else {
      const holder = b.attributes[attr]?.handleId ?? null
      if (l.handle !== null && holder !== l.handle) out.push({ kind: 'live-address-elsewhere', address: l.address, link: l.link, handle: l.handle, holder })
    }
  }
  return out
}

function formatCidrText(text: string): string {
  try {
    return formatCidr(readCidr(text, 'cidr'))
  } catch {
    return text
  }
}

export interface RepairResult {
  readonly fixed: number
  readonly failed: readonly { readonly problem: Problem; readonly error: string }[]
}

/** Fixes what a report found: leaked addresses released by sequence number, handles rebuilt or deleted, dead nodes' affinities released. */
export async function repairIpam(ipam: Ipam, report: CheckReport): Promise<RepairResult> {
  let fixed = 0
  const failed: { problem: Problem; error: string }[] = []
  // Addresses first, then handles, then affinities: releasing a dead node's affinities last lets its emptied blocks go.
  const order: Problem['kind'][] = ['live-address-unallocated', 'live-address-elsewhere', 'leaked-allocation', 'address-without-handle', 'handle-without-addresses', 'handle-count-mismatch', 'affinity-without-block', 'block-without-affinity', 'affinity-of-deleted-node', 'block-of-deleted-node']
  const deadNodes = new Set<string>()
  for (const kind of order) {
    for (const p of report.problems.filter((x) => x.kind === kind)) {
      try {
        switch (p.kind) {
          case 'leaked-allocation': {
            const r = await ipam.releaseIPs([{ address: p.address, ...(p.handle === null ? {} : { handle: p.handle }), sequenceNumber: p.sequenceNumber }])
            if (r.released.length === 0) throw new Error(`not released: ${r.skipped[0]?.reason ?? 'unknown'}`)
            break
          }
          case 'address-without-handle':
            // The allocation is live as far as we know: restore the handle's count rather than free the address.
            if (p.handle === null) throw new Error('no handle id to rebuild; release it by address if it is unused')
            await ipam.adjustHandle(p.handle, (blocks) => void (blocks[p.block] = (blocks[p.block] ?? 0) + 1))
            break
          case 'handle-without-addresses':
            await ipam.store.delete(handleKey(p.handle), p.revision)
            break
          case 'handle-count-mismatch':
            await ipam.adjustHandle(p.handle, (blocks) => {
              for (const k of Object.keys(blocks)) delete blocks[k]
              Object.assign(blocks, p.actual)
            })
            break
          case 'affinity-without-block':
            await ipam.releaseAffinity(p.node, readCidr(p.block, 'block'), true)
            break
          case 'block-without-affinity':
            // The block names its owner, the owner lost the record: claiming again recreates the affinity idempotently.
            if (!(await ipam.claimBlock(p.node, readCidr(p.block, 'block')))) throw new Error('block is affine to another node now')
            break
          case 'affinity-of-deleted-node':
          case 'block-of-deleted-node':
            if (!deadNodes.has(p.node)) {
              deadNodes.add(p.node)
              await ipam.releaseHostAffinities(p.node)
              await releaseOrphanBlock(ipam, p)
            }
            break
          case 'invalid-record':
            throw new Error('needs an operator: the record cannot be decoded or is inconsistent')
          case 'live-address-unallocated':
            // A live pod uses it: allocated again to its attachment, so no other pod is given it and its DEL frees it.
            if (p.handle === null) throw new Error('its interface records no handle to give it to')
            if (p.node === undefined) throw new Error('its block has no node to claim it for')
            await ipam.assignIP({ address: p.address, handle: p.handle, node: p.node, attrs: { node: p.node } })
            break
          case 'live-address-elsewhere':
            throw new Error(`needs an operator: two attachments use it; DEL the one that should not (${p.holder ?? 'no handle'} holds it)`)
        }
        fixed++
      } catch (err) {
        failed.push({ problem: p, error: (err as Error).message })
      }
    }
  }
  return { fixed, failed }
}

/** A block still naming a dead node (its affinity record already gone) is made unaffine, or deleted when empty. */
async function releaseOrphanBlock(ipam: Ipam, p: { block: string; node: string }): Promise<void> {
  await ipam.disownBlock(p.node, readCidr(p.block, 'block'), false)
}
