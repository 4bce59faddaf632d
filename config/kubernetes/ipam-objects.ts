// pinto's IPAM records (ipam/records.ts) as Calico stores them in the Kubernetes API: IPAMBlock, BlockAffinity and
// IPAMHandle of crd.projectcalico.org/v1, with Calico's object names and field names, both ways. Reading keeps
// what a Calico writer put there (a field of the wrong type reaches the record decoder, which names it); an object
// Calico marked `deleted` reads as absent. Pure: no I/O.

import { createHash } from 'node:crypto'
import { AFFINITIES_PREFIX, type AllocationBlock, BLOCKS_PREFIX, HANDLES_PREFIX, IpamRecordError, decodeAffinity, decodeBlock, decodeHandle } from '../../ipam/index.js'
import { type KubeObject, invalid, isObject, isObjectName } from './objects.js'

export const CALICO_CRD_VERSION = 'crd.projectcalico.org/v1'

/** Calico's object name of a CIDR (libcalico-go names.CIDRToName), which is also the last segment of pinto's keys. */
export function cidrObjectName(cidr: string): string {
  return cidr.replace(/[.:/]/g, '-')
}

/** `<node>-<cidrname>`; past 252 characters the node part is cut and a hash added, as Calico names BlockAffinities. */
export function affinityObjectName(node: string, cidrName: string): string {
  const name = `${node}-${cidrName}`
  if (name.length < 253) return name
  const hash = createHash('sha256').update(`${node}+${cidrName}`).digest('hex').slice(0, 11)
  return `${node.slice(0, 252 - cidrName.length - 13)}-${cidrName}-${hash}`
}

/** Calico names an IPAMHandle by its handle id lowercased. */
export function handleObjectName(key: string, handleId: string): string {
  const name = handleId.toLowerCase()
  if (!isObjectName(name)) throw invalid(key, `handle id ${JSON.stringify(handleId)} lowercased is not a Kubernetes object name (lowercase letters, digits, '-' and '.', at most 253)`)
  return name
}

function decoded<T>(key: string, decode: () => T): T {
  try {
    return decode()
  } catch (err) {
    if (err instanceof IpamRecordError) throw invalid(key, `${err.field}: ${err.message.slice(err.message.indexOf(': ') + 2)}`)
    throw err
  }
}

const crd = (kind: string, name: string, spec: Record<string, unknown>, labels?: Record<string, string>): KubeObject => ({ apiVersion: CALICO_CRD_VERSION, kind, metadata: { name, ...(labels !== undefined ? { labels } : {}) }, spec })

/** The label Calico puts on a BlockAffinity so that one node's affinities are listed by a label selector, not the whole kind. */
export const HOSTNAME_HASH_LABEL = 'projectcalico.org/hostname-hash'

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'

/** HOSTNAME_HASH_LABEL's value for `node`, as Calico computes it: SHA3-256 of the name, base32 (RFC 4648) without padding. */
export function hostnameHash(node: string): string {
  const digest = createHash('sha3-256').update(node, 'utf8').digest()
  let out = ''
  let bits = 0
  let value = 0
  for (const byte of digest) {
    value = (value << 8) | byte
    bits += 8
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31]
      bits -= 5
    }
    value &= (1 << bits) - 1
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31]
  return out
}

/** Marks an IPAMBlock that pinto labelled (BLOCK_BORROWER_PREFIX and HOSTNAME_HASH_LABEL set from its content). */
export const BLOCK_LABELLED_LABEL = 'ipam.pinto.dev/labelled'
/** `<prefix><hostname hash>`: a label on an IPAMBlock that holds an address of that node, which is not its affine node. */
export const BLOCK_BORROWER_PREFIX = 'borrowers.ipam.pinto.dev/'

/**
 * The labels pinto puts on an IPAMBlock, so that an agent selects the blocks that concern its node and no other:
 * its affine node's hostname hash (the label Calico puts on a BlockAffinity), one borrower label per other node
 * holding one of its addresses, and the mark that says the labels were set.
 */
export function blockLabels(b: Pick<AllocationBlock, 'affinity' | 'allocations' | 'attributes'>): Record<string, string> {
  const owner = b.affinity?.startsWith('host:') === true ? b.affinity.slice(5) : undefined
  const labels: Record<string, string> = { [BLOCK_LABELLED_LABEL]: 'true' }
  if (owner !== undefined) labels[HOSTNAME_HASH_LABEL] = hostnameHash(owner)
  for (const node of blockNodes(b)) if (node !== owner) labels[`${BLOCK_BORROWER_PREFIX}${hostnameHash(node)}`] = ''
  return labels
}

/** The nodes holding an address of the block (its allocations' `node` attribute). */
function blockNodes(b: Pick<AllocationBlock, 'allocations' | 'attributes'>): Set<string> {
  const nodes = new Set<string>()
  for (const i of b.allocations) {
    const node = i === null ? undefined : b.attributes[i]?.secondary['node']
    if (typeof node === 'string' && node !== '') nodes.add(node)
  }
  return nodes
}

/** Whether the block is affine to `node` or holds one of its addresses: what that node's agent follows. */
export function blockConcerns(b: Pick<AllocationBlock, 'affinity' | 'allocations' | 'attributes'>, node: string): boolean {
  return b.affinity === `host:${node}` || blockNodes(b).has(node)
}

/** The node a list prefix names inside the affinities (`<AFFINITIES_PREFIX><node>/...`), if it names one whole. */
export function affinityPrefixNode(prefix: string): string | undefined {
  if (!prefix.startsWith(AFFINITIES_PREFIX)) return undefined
  const rest = prefix.slice(AFFINITIES_PREFIX.length)
  const slash = rest.indexOf('/')
  return slash > 0 ? rest.slice(0, slash) : undefined
}

const specOf = (obj: KubeObject): Record<string, unknown> => (isObject(obj.spec) ? obj.spec : {})

/** A Calico boolean that older writers stored as a string (BlockAffinity's `deleted`). */
const truthy = (v: unknown): boolean => v === true || v === 'true'

export function blockObject(key: string, value: string): KubeObject {
  const b = decoded(key, () => decodeBlock(key, value))
  const name = key.slice(BLOCKS_PREFIX.length)
  if (name !== cidrObjectName(b.cidr)) throw invalid(key, `the record's cidr ${b.cidr} does not belong at this key (expected ${BLOCKS_PREFIX}${cidrObjectName(b.cidr)})`)
  return crd('IPAMBlock', name, {
    cidr: b.cidr,
    ...(b.affinity !== null ? { affinity: b.affinity } : {}),
    ...(b.affinityClaimTime !== null ? { affinityClaimTime: b.affinityClaimTime } : {}),
    allocations: b.allocations,
    unallocated: b.unallocated,
    // Calico's AllocationAttribute: handle_id and secondary, both omitted when empty.
    attributes: b.attributes.map((a) => ({ ...(a.handleId !== null ? { handle_id: a.handleId } : {}), ...(Object.keys(a.secondary).length > 0 ? { secondary: a.secondary } : {}) })),
    sequenceNumber: b.sequenceNumber,
    sequenceNumberForAllocation: b.sequenceNumberForAllocation,
    deleted: false,
    strictAffinity: false,
  }, blockLabels(b))
}

/** A record read from an object: its key, and its value unless Calico marked the object deleted (it reads as absent). */
export interface ObjectRecord {
  readonly key: string
  readonly value: string | undefined
}

/** The block record of an IPAMBlock, keyed by its object name. */
export function blockRecord(obj: KubeObject): ObjectRecord {
  const s = specOf(obj)
  const key = `${BLOCKS_PREFIX}${obj.metadata.name}`
  if (truthy(s.deleted)) return { key, value: undefined }
  const attrs = s.attributes ?? []
  return {
    key,
    value: JSON.stringify({
      cidr: s.cidr,
      affinity: s.affinity ?? null,
      affinityClaimTime: s.affinityClaimTime ?? null,
      allocations: s.allocations ?? [],
      unallocated: s.unallocated ?? [],
      attributes: Array.isArray(attrs) ? attrs.map((a: unknown) => (isObject(a) ? { handleId: a.handle_id ?? null, secondary: a.secondary ?? {} } : a)) : attrs,
      sequenceNumber: s.sequenceNumber ?? 0,
      sequenceNumberForAllocation: s.sequenceNumberForAllocation ?? {},
    }),
  }
}

/** The key's node and CIDR name: /pinto/ipam/affinities/<node>/<cidrname>. */
export function affinityKeyParts(key: string): { node: string; cidrName: string } | undefined {
  const [node, cidrName, ...rest] = key.slice(AFFINITIES_PREFIX.length).split('/')
  return node && cidrName && rest.length === 0 ? { node, cidrName } : undefined
}

export function affinityObject(key: string, value: string): KubeObject {
  const parts = affinityKeyParts(key)
  if (parts === undefined) throw invalid(key, `an affinity key is ${AFFINITIES_PREFIX}<node>/<cidr name>`)
  const a = decoded(key, () => decodeAffinity(key, value))
  if (a.node !== parts.node || cidrObjectName(a.cidr) !== parts.cidrName) throw invalid(key, `the record names node ${a.node} and cidr ${a.cidr}, not the key's`)
  const name = affinityObjectName(a.node, parts.cidrName)
  if (!isObjectName(name)) throw invalid(key, `node name ${JSON.stringify(a.node)} makes no Kubernetes object name`)
  return crd('BlockAffinity', name, { state: a.state, node: a.node, type: a.type, cidr: a.cidr, deleted: 'false' }, { [HOSTNAME_HASH_LABEL]: hostnameHash(a.node) })
}

export function affinityRecord(obj: KubeObject): ObjectRecord {
  const s = specOf(obj)
  const node = typeof s.node === 'string' ? s.node : ''
  const cidr = typeof s.cidr === 'string' ? s.cidr : ''
  const key = `${AFFINITIES_PREFIX}${node}/${cidrObjectName(cidr)}`
  if (truthy(s.deleted)) return { key, value: undefined }
  return {
    key,
    // Calico's older writers left `type` out, meaning host.
    value: JSON.stringify({ state: s.state, node: s.node, cidr: s.cidr, type: s.type === undefined || s.type === '' ? 'host' : s.type }),
  }
}

export function handleObject(key: string, value: string): KubeObject {
  const id = key.slice(HANDLES_PREFIX.length)
  const h = decoded(key, () => decodeHandle(key, value))
  if (h.handleId !== id) throw invalid(key, `the record is of handle ${JSON.stringify(h.handleId)}, not the key's`)
  return crd('IPAMHandle', handleObjectName(key, id), { handleID: h.handleId, block: h.blocks, deleted: false })
}

export function handleRecord(obj: KubeObject): ObjectRecord {
  const s = specOf(obj)
  const id = typeof s.handleID === 'string' ? s.handleID : obj.metadata.name
  const key = `${HANDLES_PREFIX}${id}`
  return { key, value: truthy(s.deleted) ? undefined : JSON.stringify({ handleId: s.handleID, blocks: s.block ?? {} }) }
}
