// What counts as losing a race to another writer of the same IPAM records, and how long to wait before the
// next try. Shared by the general allocation loops (ipam-assign.ts) and the one-transaction paths (one-txn.ts).

import { DatastoreError } from '../config/index.js'

/** A write that lost to another writer: its compare failed (the record changed, was made or went). */
export const isConflict = (err: unknown): err is DatastoreError =>
  err instanceof DatastoreError && (err.code === 'conflict' || err.code === 'exists' || err.code === 'not-found')

/** A transaction's compare on a record it read that failed: the record changed or went. */
export const isLostRace = (err: unknown): err is DatastoreError =>
  err instanceof DatastoreError && (err.code === 'conflict' || err.code === 'not-found')

/** The longest a writer waits between two tries, whatever it has lost. */
const MAX_BACKOFF_MS = 100

/**
 * A random wait before try `n` + 1 (n from 1): anywhere in a window of 2^n ms (at most MAX_BACKOFF_MS), so
 * racing writers spread out, and one that keeps losing waits longer each time instead of coming back in
 * step with the writers that beat it.
 */
export function conflictBackoff(n: number): Promise<void> {
  const window = Math.min(MAX_BACKOFF_MS, 2 ** n)
  return new Promise((resolve) => setTimeout(resolve, Math.random() * window))
}
