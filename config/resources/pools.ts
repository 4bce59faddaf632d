// Checks that need more than one IPPool: a new or changed pool against the pools that already exist.
// Pure: callers (pintoctl apply, the IPAM) pass the current pools in; nothing is read from a store here.

import { ResourceError, Problems, formatPath } from './errors.js'
import { cidrsOverlap, parseCIDR } from './ip.js'
import type { IPPool } from './types.js'

/**
 * Errors for every existing pool whose CIDR overlaps `pool`'s (a pool of the same name is the one
 * being replaced and is skipped). Paths are relative to the pool: `spec.cidr`.
 */
export function checkPoolOverlap(pool: IPPool, existing: readonly IPPool[]): ResourceError[] {
  const mine = parseCIDR(pool.spec.cidr, true)
  if (typeof mine === 'string') return [new ResourceError('spec.cidr', mine)]
  const problems = new Problems()
  for (const other of existing) {
    if (other.metadata.name === pool.metadata.name) continue
    const theirs = parseCIDR(other.spec.cidr, true)
    if (typeof theirs === 'object' && cidrsOverlap(mine, theirs)) {
      problems.add(['spec', 'cidr'], `${pool.spec.cidr} overlaps IPPool ${JSON.stringify(other.metadata.name)} (${other.spec.cidr})`)
    }
  }
  return problems.list.map((p) => new ResourceError(formatPath(p.path), p.reason))
}
