// The IPAM records as stored under /pinto/ipam/ (blocks, affinities, handles): key layout, the affinity
// state machine, and decoding that names the key and field of anything malformed. Pure: no datastore calls.

import { type Cidr, cidrName, formatCidr, readCidr } from '../net/index.js'
import type { AllocationBlock } from './block.js'

export const IPAM_PREFIX = '/pinto/ipam/'
export const BLOCKS_PREFIX = `${IPAM_PREFIX}blocks/`
export const AFFINITIES_PREFIX = `${IPAM_PREFIX}affinities/`
export const HANDLES_PREFIX = `${IPAM_PREFIX}handles/`

export class IpamRecordError extends Error {
  constructor(readonly key: string, readonly field: string, message: string) {
    super(`${key}: ${field}: ${message}`)
    this.name = 'IpamRecordError'
  }
}

/** Node names and handle ids become key segments, so they may not hold '/' or whitespace. */
export function checkSegment(field: string, value: string): void {
  if (typeof value !== 'string' || value === '' || value.length > 253 || /[/\s]/.test(value)) {
    throw new IpamRecordError('(request)', field, `${JSON.stringify(value)} must be 1..253 characters without '/' or whitespace`)
  }
}

export function blockKey(cidr: Cidr): string {
  return `${BLOCKS_PREFIX}${cidrName(cidr)}`
}

export function affinityPrefix(node: string): string {
  return `${AFFINITIES_PREFIX}${node}/`
}

export function affinityKey(node: string, cidr: Cidr): string {
  return `${affinityPrefix(node)}${cidrName(cidr)}`
}

export function handleKey(handleId: string): string {
  return `${HANDLES_PREFIX}${handleId}`
}

/** ∅ → pending → confirmed → pendingDeletion → ∅. Only a confirmed affinity may be allocated from or advertised. */
export type AffinityState = 'pending' | 'confirmed' | 'pendingDeletion'

export interface AffinityRecord {
  readonly state: AffinityState
  readonly node: string
  readonly cidr: string
  readonly type: 'host'
}

export function affinityRecord(node: string, cidr: Cidr, state: AffinityState): AffinityRecord {
  return { state, node, cidr: formatCidr(cidr), type: 'host' }
}

export interface HandleRecord {
  readonly handleId: string
  /** Block CIDR -> how many of the handle's addresses it holds. */
  readonly blocks: Readonly<Record<string, number>>
}

function parseJson(key: string, text: string): Record<string, unknown> {
  let v: unknown
  try {
    v = JSON.parse(text)
  } catch (err) {
    throw new IpamRecordError(key, '(value)', `not JSON: ${(err as Error).message}`)
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new IpamRecordError(key, '(value)', 'not a JSON object')
  return v as Record<string, unknown>
}

function need<T>(key: string, obj: Record<string, unknown>, field: string, ok: (v: unknown) => boolean, what: string): T {
  const v = obj[field]
  if (!ok(v)) throw new IpamRecordError(key, field, `expected ${what}, found ${JSON.stringify(v)}`)
  return v as T
}

const isInt = (v: unknown): boolean => Number.isSafeInteger(v)
const isStr = (v: unknown): boolean => typeof v === 'string'
const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

export function decodeBlock(key: string, text: string): AllocationBlock {
  const o = parseJson(key, text)
  const cidr = need<string>(key, o, 'cidr', isStr, 'a CIDR string')
  try {
    readCidr(cidr, 'cidr')
  } catch (err) {
    throw new IpamRecordError(key, 'cidr', (err as Error).message)
  }
  const allocations = need<(number | null)[]>(key, o, 'allocations', (v) => Array.isArray(v) && v.every((x) => x === null || isInt(x)), 'an array of attribute indexes or null')
  const unallocated = need<number[]>(key, o, 'unallocated', (v) => Array.isArray(v) && v.every(isInt), 'an array of ordinals')
  const attributes = need<AllocationBlock['attributes']>(
    key, o, 'attributes',
    (v) => Array.isArray(v) && v.every((a) => isObj(a) && (a.handleId === null || isStr(a.handleId)) && isObj(a.secondary)),
    'an array of {handleId, secondary}',
  )
  return {
    cidr,
    affinity: need<string | null>(key, o, 'affinity', (v) => v === null || isStr(v), 'a string or null'),
    affinityClaimTime: need<string | null>(key, o, 'affinityClaimTime', (v) => v === null || isStr(v), 'a string or null'),
    allocations,
    unallocated,
    attributes,
    sequenceNumber: need<number>(key, o, 'sequenceNumber', isInt, 'an integer'),
    sequenceNumberForAllocation: need<Record<string, number>>(key, o, 'sequenceNumberForAllocation', (v) => isObj(v) && Object.values(v as object).every(isInt), 'an object of integers'),
  }
}

export function decodeAffinity(key: string, text: string): AffinityRecord {
  const o = parseJson(key, text)
  return {
    state: need<AffinityState>(key, o, 'state', (v) => v === 'pending' || v === 'confirmed' || v === 'pendingDeletion', 'pending, confirmed or pendingDeletion'),
    node: need<string>(key, o, 'node', isStr, 'a node name'),
    cidr: need<string>(key, o, 'cidr', isStr, 'a CIDR string'),
    type: need<'host'>(key, o, 'type', (v) => v === 'host', '"host"'),
  }
}

export function decodeHandle(key: string, text: string): HandleRecord {
  const o = parseJson(key, text)
  return {
    handleId: need<string>(key, o, 'handleId', isStr, 'a handle id'),
    blocks: need<Record<string, number>>(key, o, 'blocks', (v) => isObj(v) && Object.values(v as object).every(isInt), 'an object of block CIDR to count'),
  }
}
