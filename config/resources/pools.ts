// Checks that need more than one IPPool: a new or changed pool against the pools that already exist.
// Pure: callers (pintoctl apply, the IPAM) pass the current pools in; nothing is read from a store here.

import { ResourceError, Problems, formatPath } from './errors.js'
import { AddrError, cidrsOverlap, parseIfAddr, tryAddr, type Cidr } from '../../net/index.js'
import { parsedOrUndefined } from './scalars.js'
import type { IPPool } from './types.js'

/**
 * Errors for every existing pool whose CIDR overlaps `pool`'s (a pool of the same name is the one
 * being replaced and is skipped). Paths are relative to the pool: `spec.cidr`.
 */
export function checkPoolOverlap(pool: IPPool, existing: readonly IPPool[]): ResourceError[] {
  // Host bits are the pool's own validation's to report; the network they name is what overlaps.
  const loose = (text: string): Cidr => parseIfAddr(text, 'spec.cidr', { bare: true }).cidr
  const mine = tryAddr(() => loose(pool.spec.cidr))
  if (mine instanceof AddrError) return [new ResourceError('spec.cidr', mine.reason)]
  const problems = new Problems()
  for (const other of existing) {
    if (other.metadata.name === pool.metadata.name) continue
    const theirs = parsedOrUndefined(() => loose(other.spec.cidr))
    if (theirs !== undefined && cidrsOverlap(mine, theirs)) {
      problems.add(['spec', 'cidr'], `${pool.spec.cidr} overlaps IPPool ${JSON.stringify(other.metadata.name)} (${other.spec.cidr})`)
    }
  }
  return problems.list.map((p) => new ResourceError(formatPath(p.path), p.reason))
}
