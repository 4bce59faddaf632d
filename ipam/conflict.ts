// What counts as losing a race to another writer of the same IPAM records, and how long to wait before the
// next try. Shared by the general allocation loops (ipam.ts) and the one-transaction paths (one-txn.ts).

import { DatastoreError } from '../config/datastore.js'

/** A write that lost to another writer: its compare failed (the record changed, was made or went). */
export const isConflict = (err: unknown): err is DatastoreError =>
  err instanceof DatastoreError && (err.code === 'conflict' || err.code === 'exists' || err.code === 'not-found')

/** A transaction's compare on a record it read that failed: the record changed or went. */
export const isLostRace = (err: unknown): err is DatastoreError =>
  err instanceof DatastoreError && (err.code === 'conflict' || err.code === 'not-found')

/** A small random wait before try `n` + 1 (n from 1), growing with n, so racing writers spread out. */
export function conflictBackoff(n: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.random() * 2 * n))
}
