// The datastore contract every backend keeps (embedded directory store, etcd v3).
// Keys are '/'-separated strings, values are JSON text; revisions are store-wide and increase
// with every write, so `update(key, value, revision)` is a compare-and-swap on the key's last write.

export interface KeyValue {
  readonly key: string
  readonly value: string
  /** The store revision of this key's last write (etcd's mod_revision). */
  readonly revision: number
}

export interface ListResult {
  readonly items: readonly KeyValue[]
  /** The store revision the listing is consistent with; watch from revision + 1 to follow on. */
  readonly revision: number
}

export type WatchEvent =
  | { readonly type: 'put'; readonly key: string; readonly value: string; readonly revision: number }
  | { readonly type: 'delete'; readonly key: string; readonly revision: number }

export interface Watch {
  close(): void
  /**
   * Whether the watch is reconnecting after a failure it will recover from by itself (events may be waiting to
   * arrive); absent where the backend cannot tell.
   */
  behind?(): boolean
}

/** 'compacted': a watch asked for revisions the store no longer keeps; relist and watch from the new revision. */
export type DatastoreErrorCode = 'exists' | 'not-found' | 'conflict' | 'unavailable' | 'invalid' | 'compacted'

/** The one error type every backend throws; `code` is what callers branch on. */
export class DatastoreError extends Error {
  constructor(
    readonly code: DatastoreErrorCode,
    message: string,
    readonly key?: string,
  ) {
    super(message)
    this.name = 'DatastoreError'
  }
}

/**
 * One op of a transaction: a write with the same precondition as the single call of that name, or a check,
 * which writes nothing and holds the transaction to a key read elsewhere: it fails ('conflict', or 'not-found'
 * when the key is gone) unless the key's revision is `revision`, 0 meaning the key is absent.
 */
export type TxnOp =
  | { readonly op: 'create'; readonly key: string; readonly value: string }
  | { readonly op: 'update'; readonly key: string; readonly value: string; readonly revision: number }
  | { readonly op: 'delete'; readonly key: string; readonly revision?: number }
  | { readonly op: 'check'; readonly key: string; readonly revision: number }

/** The precondition failure of a check op on a key now at `current` (undefined: absent), if it fails. */
export function checkFailure(key: string, wanted: number, current: number | undefined): DatastoreError | undefined {
  if (wanted === 0) return current === undefined ? undefined : new DatastoreError('conflict', `key ${key} exists (revision ${current}), expected absent`, key)
  if (current === undefined) return new DatastoreError('not-found', `key ${key} does not exist`, key)
  return current === wanted ? undefined : new DatastoreError('conflict', `key ${key} is at revision ${current}, not ${wanted}`, key)
}

/**
 * Keys unique, at most 128 ops (etcd's default --max-txn-ops), at least one of them a write: what every
 * backend accepts; 'invalid' otherwise.
 */
export function checkTxnOps(ops: readonly TxnOp[]): void {
  if (!Array.isArray(ops) || ops.length === 0 || ops.length > 128) throw new DatastoreError('invalid', `txn: expected 1..128 ops, got ${Array.isArray(ops) ? ops.length : typeof ops}`)
  const seen = new Set<string>()
  ops.forEach((o: TxnOp, i) => {
    if (typeof o?.key !== 'string' || o.key.length === 0) throw new DatastoreError('invalid', `txn ops[${i}].key must be a non-empty string`)
    if (!['create', 'update', 'delete', 'check'].includes(o.op)) throw new DatastoreError('invalid', `txn ops[${i}].op: ${JSON.stringify(o.op)} is not create, update, delete or check`, o.key)
    if (o.op === 'check' && (!Number.isInteger(o.revision) || o.revision < 0)) throw new DatastoreError('invalid', `txn ops[${i}].revision for check of ${o.key} must be an integer >= 0`, o.key)
    if ((o.op === 'create' || o.op === 'update') && typeof o.value !== 'string') throw new DatastoreError('invalid', `txn ops[${i}].value for key ${o.key} must be a string`, o.key)
    if (seen.has(o.key)) throw new DatastoreError('invalid', `txn ops[${i}]: key ${o.key} appears twice`, o.key)
    seen.add(o.key)
  })
  if (ops.every((o: TxnOp) => o.op === 'check')) throw new DatastoreError('invalid', 'txn: only checks, no write')
}

/**
 * The IPAM blocks that concern one node (affine to it, or holding one of its addresses), for a store that selects
 * them itself, so that one node's watch does not carry every block write of the cluster.
 */
export interface NodeBlocks {
  /** Those blocks now, at one revision. */
  list(node: string): Promise<ListResult>
  /** Their changes from `fromRevision`, in revision order per block; a block that stops concerning the node is a 'delete'. */
  watch(node: string, fromRevision: number, onEvent: (event: WatchEvent) => void, onError?: (err: Error) => void): Watch
}

/**
 * Told what a transaction wrote once it is applied: this store's own later reads and transactions see it.
 * A store may tell it before the transaction is durable (the embedded one: before its fdatasync), so a caller
 * can go on to its next write meanwhile; the transaction's answer still comes only once it is durable, and
 * may then be a failure. A store may also tell it just before that answer, or never.
 */
export type TxnApplied = (written: KeyValue[]) => void

export interface Datastore {
  /**
   * Whether txn takes several ops and checks (embedded, etcd). The kubernetes datastore has no multi-object
   * transaction: its txn takes one write and no check, and callers take a path that needs none.
   */
  readonly transactions: boolean
  /** Present where one node's blocks are selected by the store (kubernetes); elsewhere a watch of the prefix serves. */
  readonly nodeBlocks?: NodeBlocks | undefined
  get(key: string): Promise<KeyValue | undefined>
  list(prefix: string): Promise<ListResult>
  /** Fails with 'exists' when the key is present. */
  create(key: string, value: string): Promise<KeyValue>
  /** Compare-and-swap: fails with 'conflict' unless the key's revision is `revision`, 'not-found' when absent. */
  update(key: string, value: string, revision: number): Promise<KeyValue>
  /** With a revision, a compare-and-delete ('conflict' on mismatch); 'not-found' when absent. */
  delete(key: string, revision?: number): Promise<void>
  /**
   * All of `ops` or none, as one write at one new revision: when any op's precondition fails nothing is
   * written and that op's error is thrown (its code as the single call would give, its key set). Answers
   * per op what it wrote (a delete: value ''; a check: value '' and the revision it held to). `applied`,
   * when given, may hear of the write before that answer (TxnApplied).
   */
  txn(ops: readonly TxnOp[], applied?: TxnApplied): Promise<KeyValue[]>
  /** Events for keys under `prefix` with revision >= fromRevision, in revision order. */
  watch(prefix: string, fromRevision: number, onEvent: (event: WatchEvent) => void, onError?: (err: Error) => void): Watch
  close(): Promise<void>
}
