// The embedded datastore: a directory on local disk shared by several processes on one machine, safe across kill -9.
// It owns log generations, snapshots, catch-up, group commit and watch; the record format lives in
// datastore-embedded-log.ts and the inter-process lock in datastore-embedded-lock.ts. Not for NFS or several hosts.
//
// Layout: log.<g> (append-only records), snap.<g> (state at the start of log.<g>, g >= 1), lock, lock.<pid>.<nonce>.
// Invariants:
// 1. Only the lock holder appends, truncates, seals or compacts. An append is one pwrite at the end of the last
//    valid record; the writer then fdatasyncs (after releasing the lock, see commit()) and only then resolves:
//    an acknowledged write is durable, and so is everything before it in the log.
// 2. Every put/del record carries r = previous r + 1 (one store-wide revision, like etcd); a seal keeps r.
// 3. Readers (any instance, no lock) consume only whole CRC-valid frames and stop at anything else, which is either
//    a write in flight or a tail torn by a dead writer. The next lock holder truncates such a tail (nobody else can
//    be writing) before it appends, so invalid bytes are never followed by valid ones and readers never skip data.
//    A reader may see a complete record before its fdatasync finished; after kill -9 the page cache still holds it,
//    so only a power loss could take back a write a watcher saw, and that write was never acknowledged.
// 4. Compaction (lock held, caught up): write snap.<g+1> (temp file, fsync, rename, fsync dir), create log.<g+1>,
//    fsync dir, then append seal{next: g+1} to log.<g>. A reader reaching the seal continues at log.<g+1> offset 0.
//    If the compactor died before sealing, the next lock holder finds snap.<g+1> at the end of log.<g> and writes
//    the seal itself (the snapshot covers exactly log.<g>'s valid bytes, since nobody appended after it).
//    Files of generations below g are removed when g+1 is made, so a newcomer that listed the directory just
//    before a compaction still finds its snapshot and log.
// 5. A new instance starts from the highest snap.<g> (or empty at g = 0) and log.<g>; log.0 is created under the lock.

import fs from 'node:fs'
import path from 'node:path'
import { DatastoreError, type Datastore, type KeyValue, type ListResult, type TxnApplied, type TxnOp, type Watch, type WatchEvent, checkFailure, checkTxnOps } from './datastore.js'
import { DirLock } from './datastore-embedded-lock.js'
import { decodeFrames, encodeRecord, encodeSnapshot, parseRecord, parseSnapshot, recordChanges, type LogRecord, type Snapshot } from './datastore-embedded-log.js'

export interface EmbeddedOptions {
  /** Compact when the current log passes this size (bytes). Default 32 MiB. */
  readonly compactBytes?: number
  /** Give up waiting for the inter-process lock after this long. Default 10 s. */
  readonly lockTimeoutMs?: number
  /** Watch poll interval, the fallback when fs.watch misses a change. Default 1 s: fs.watch carries the
   * prompt path, and an idle agent should not wake five times a second for nothing. */
  readonly pollMs?: number
  /** Told when this instance cut a torn tail off the log (for the agent's log). */
  readonly onTornTail?: (info: { file: string; offset: number; bytes: number; why: string }) => void
  /** Make the directory when it is missing (default true). False, for readers: a missing one is 'not-found'. */
  readonly create?: boolean
}

interface Entry {
  readonly value: string
  readonly revision: number
}

/** A queued write: one op (a put or del record) or a transaction of several (one txn record). */
interface PendingOp {
  readonly ops: readonly TxnOp[]
  readonly resolve: (kvs: KeyValue[]) => void
  readonly reject: (err: Error) => void
  /** Told once the op is appended and applied, before its fdatasync. */
  readonly applied?: TxnApplied | undefined
}

interface WatchState {
  readonly prefix: string
  /** Lowest revision not yet delivered (or, once delivering, the revision of the last event delivered). */
  next: number
  readonly onEvent: (event: WatchEvent) => void
  readonly onError: ((err: Error) => void) | undefined
  active: boolean
}

const MAX_BATCH = 512

export const logName = (gen: number): string => `log.${gen}`
export const snapName = (gen: number): string => `snap.${gen}`

/** Highest generation with a snapshot in `dir` (0 when none). */
export function highestSnapshotGen(dir: string): number {
  let best = 0
  for (const name of fs.readdirSync(dir)) {
    const m = /^snap\.(\d+)$/.exec(name)
    if (m) best = Math.max(best, Number(m[1]))
  }
  return best
}

/** Reads and validates snap.<gen>; ENOENT passes through so callers can rescan. */
export function readSnapshotFile(dir: string, gen: number): Snapshot {
  const file = path.join(dir, snapName(gen))
  const bytes = fs.readFileSync(file)
  const frames = decodeFrames(bytes)
  const payload = frames.payloads[0]
  if (frames.payloads.length !== 1 || frames.consumed !== bytes.length || payload === undefined) {
    throw new DatastoreError('invalid', `${file}: snapshot is damaged at byte ${frames.consumed}: ${frames.stop?.detail ?? 'extra bytes'}`)
  }
  try {
    return parseSnapshot(payload)
  } catch (err) {
    throw new DatastoreError('invalid', `${file}: ${(err as Error).message}`)
  }
}

function fsyncDir(dir: string): void {
  const fd = fs.openSync(dir, 'r')
  try {
    fs.fsyncSync(fd)
  } finally {
    fs.closeSync(fd)
  }
}

function writeAll(fd: number, buf: Buffer, position: number): void {
  for (let done = 0; done < buf.length; ) {
    done += fs.writeSync(fd, buf, done, buf.length - done, position + done)
  }
}

function readAt(fd: number, position: number, length: number): Buffer {
  const buf = Buffer.allocUnsafe(length)
  let got = 0
  while (got < length) {
    const n = fs.readSync(fd, buf, got, length - got, position + got)
    if (n === 0) break
    got += n
  }
  return buf.subarray(0, got)
}

const changeEvent = (c: { key: string; value: string | undefined }, revision: number): WatchEvent =>
  c.value !== undefined ? { type: 'put', key: c.key, value: c.value, revision } : { type: 'delete', key: c.key, revision }

function isErrno(err: unknown, code: string): boolean {
  return (err as NodeJS.ErrnoException).code === code
}

function checkKey(key: unknown): asserts key is string {
  if (typeof key !== 'string' || key.length === 0) throw new DatastoreError('invalid', `key must be a non-empty string, got ${JSON.stringify(key)}`)
}

function checkValue(key: string, value: unknown): asserts value is string {
  if (typeof value !== 'string') throw new DatastoreError('invalid', `value for key ${key} must be a string`, key)
}

export class EmbeddedDatastore implements Datastore {
  readonly transactions = true
  private fd = -1
  private gen = 0
  /** Byte offset in log.<gen> just past the last record applied. */
  private offset = 0
  private rev = 0
  /** Revision at the start of log.<gen>: events at or below it are compacted away. */
  private base = 0
  private state = new Map<string, Entry>()
  private pending: PendingOp[] = []
  private draining: Promise<void> | undefined
  /** Batches appended and awaiting their fdatasync. */
  private readonly settling = new Set<Promise<void>>()
  private syncing = 0
  private retired: number[] = []
  private lastYield = 0
  private readonly watches = new Set<WatchState>()
  private outbox: WatchEvent[] = []
  private delivering = false
  private deliveryScheduled = false
  private notifier: { fsWatcher: fs.FSWatcher | undefined; timer: NodeJS.Timeout } | undefined
  private poked = false
  private closed = false
  private readonly compactBytes: number
  private readonly lockTimeoutMs: number
  private readonly pollMs: number
  private readonly onTornTail: EmbeddedOptions['onTornTail']

  private constructor(
    readonly dir: string,
    private readonly lock: DirLock,
    options: EmbeddedOptions,
  ) {
    this.compactBytes = options.compactBytes ?? 32 * 1024 * 1024
    this.lockTimeoutMs = options.lockTimeoutMs ?? 10_000
    this.pollMs = options.pollMs ?? 1000
    this.onTornTail = options.onTornTail
  }

  static async open(dir: string, options: EmbeddedOptions = {}): Promise<EmbeddedDatastore> {
    if (typeof dir !== 'string' || dir.length === 0) throw new DatastoreError('invalid', 'embedded store directory must be a non-empty path')
    if (options.create === false) {
      if (!fs.existsSync(dir)) throw new DatastoreError('not-found', `store directory ${dir} does not exist`)
    } else {
      try {
        fs.mkdirSync(dir, { recursive: true })
      } catch (err) {
        throw new DatastoreError('unavailable', `cannot create store directory ${dir}: ${(err as Error).message}`)
      }
    }
    if (!fs.statSync(dir).isDirectory()) throw new DatastoreError('invalid', `store path ${dir} is not a directory`)
    DirLock.sweep(dir)
    const store = new EmbeddedDatastore(dir, new DirLock(dir), options)
    try {
      await store.load()
    } catch (err) {
      store.lock.close()
      throw err
    }
    return store
  }

  /** Current store revision as this instance has read it. */
  get revision(): number {
    this.catchUp(false)
    return this.rev
  }

  // ---- loading -----------------------------------------------------------------------------------------------

  private async load(): Promise<void> {
    for (let attempt = 0; attempt < 50; attempt++) {
      if (this.tryLoadLatest()) return
      // Something is missing that only the lock holder may create: log.0 of a new store, or the log of a
      // generation whose compactor died right after renaming its snapshot.
      await this.lock.acquire(this.lockTimeoutMs)
      try {
        const gen = highestSnapshotGen(this.dir)
        const log = path.join(this.dir, logName(gen))
        if (!fs.existsSync(log)) {
          fs.closeSync(fs.openSync(log, 'a'))
          fsyncDir(this.dir)
        }
      } finally {
        this.lock.release()
      }
    }
    throw new DatastoreError('unavailable', `store ${this.dir} keeps changing generation; cannot load it`)
  }

  /** Loads the newest generation; false when a file it needs is missing (the caller fixes that and retries). */
  private tryLoadLatest(): boolean {
    const gen = highestSnapshotGen(this.dir)
    let fd: number
    try {
      fd = fs.openSync(path.join(this.dir, logName(gen)), 'r+')
    } catch (err) {
      if (isErrno(err, 'ENOENT')) return false
      throw err
    }
    let snap: Snapshot | undefined
    try {
      snap = gen > 0 ? readSnapshotFile(this.dir, gen) : undefined
    } catch (err) {
      fs.closeSync(fd)
      if (isErrno(err, 'ENOENT')) return false
      throw err
    }
    if (this.fd >= 0) this.retire(this.fd)
    this.fd = fd
    this.gen = gen
    this.offset = 0
    this.rev = this.base = snap?.rev ?? 0
    this.state = new Map((snap?.kvs ?? []).map(([k, v, r]) => [k, { value: v, revision: r }]))
    this.catchUp(false)
    return true
  }

  // ---- reading the log ---------------------------------------------------------------------------------------

  /**
   * Applies every whole valid record past `offset`, following seals into newer generations. With the lock held
   * it also truncates a torn tail and finishes a compaction whose writer died before sealing.
   */
  private catchUp(locked: boolean): void {
    for (;;) {
      const size = fs.fstatSync(this.fd).size
      if (size > this.offset) {
        const start = this.offset
        const frames = decodeFrames(readAt(this.fd, start, size - start))
        let sealedTo: number | undefined
        for (let i = 0; i < frames.payloads.length && sealedTo === undefined; i++) {
          const at = start + (frames.offsets[i] as number)
          const payload = frames.payloads[i] as Buffer
          const record = this.parseAt(payload, at)
          if (record.t === 'seal') sealedTo = record.next
          else this.apply(record, at)
          // Advance per record so an error on a later one leaves a consistent position.
          this.offset = at + 8 + payload.length
        }
        if (sealedTo !== undefined) {
          this.switchGen(sealedTo)
          continue
        }
        // All read: look again (the file may have grown, or, locked, a compaction may await its seal).
        if (!frames.stop) continue
        if (!locked) return // a write in flight, or a torn tail for the next lock holder
        this.truncateTornTail(size, frames.stop.detail)
        continue
      }
      if (locked && fs.existsSync(path.join(this.dir, snapName(this.gen + 1)))) {
        this.finishInterruptedCompaction()
        continue
      }
      return
    }
  }

  /**
   * Lock held, so nobody is mid-write: bytes past the last valid record are a tail torn by a dead writer.
   * They are kept aside in torn.<gen>.<offset> (never silently lost, should a bug ever mistake data for a
   * torn tail) and cut off, so the next append follows the last valid record.
   */
  private truncateTornTail(size: number, why: string): void {
    const tail = readAt(this.fd, this.offset, size - this.offset)
    fs.writeFileSync(path.join(this.dir, `torn.${this.gen}.${this.offset}`), tail)
    fs.ftruncateSync(this.fd, this.offset)
    fs.fdatasyncSync(this.fd)
    this.onTornTail?.({ file: path.join(this.dir, logName(this.gen)), offset: this.offset, bytes: tail.length, why })
  }

  private parseAt(payload: Buffer, at: number): LogRecord {
    try {
      return parseRecord(payload)
    } catch (err) {
      throw new DatastoreError('invalid', `${path.join(this.dir, logName(this.gen))} byte ${at}: ${(err as Error).message}`)
    }
  }

  private apply(record: Exclude<LogRecord, { t: 'seal' }>, at: number): void {
    if (record.r !== this.rev + 1) {
      throw new DatastoreError('invalid', `${path.join(this.dir, logName(this.gen))} byte ${at}: revision ${record.r} follows ${this.rev}`)
    }
    this.rev = record.r
    for (const c of recordChanges(record)) {
      if (c.value !== undefined) this.state.set(c.key, { value: c.value, revision: record.r })
      else this.state.delete(c.key)
      if (this.watches.size > 0) this.outbox.push(changeEvent(c, record.r))
    }
    if (this.watches.size > 0) this.scheduleDelivery()
  }

  private switchGen(next: number): void {
    let fd: number
    try {
      fd = fs.openSync(path.join(this.dir, logName(next)), 'r+')
    } catch (err) {
      if (!isErrno(err, 'ENOENT')) throw err
      // We fell more than one compaction behind and the log we need is gone: reload, and tell watchers
      // that events were skipped (like etcd's compacted revision).
      if (!this.tryLoadLatest()) throw new DatastoreError('unavailable', `store ${this.dir}: ${logName(next)} is missing`)
      this.failWatches(new DatastoreError('compacted', `store ${this.dir} was compacted past revision ${this.rev}; relist and watch again`))
      return
    }
    this.retire(this.fd)
    this.fd = fd
    this.gen = next
    this.base = this.rev
    this.offset = 0
  }

  // ---- writing -----------------------------------------------------------------------------------------------

  async get(key: string): Promise<KeyValue | undefined> {
    checkKey(key)
    this.checkOpen()
    this.catchUp(false)
    const entry = this.state.get(key)
    return entry && { key, value: entry.value, revision: entry.revision }
  }

  async list(prefix: string): Promise<ListResult> {
    if (typeof prefix !== 'string') throw new DatastoreError('invalid', 'list prefix must be a string')
    this.checkOpen()
    this.catchUp(false)
    const items: KeyValue[] = []
    for (const [key, e] of this.state) if (key.startsWith(prefix)) items.push({ key, value: e.value, revision: e.revision })
    items.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    return { items, revision: this.rev }
  }

  async create(key: string, value: string): Promise<KeyValue> {
    checkKey(key)
    checkValue(key, value)
    return (await this.enqueue([{ op: 'create', key, value }]))[0] as KeyValue
  }

  async update(key: string, value: string, revision: number): Promise<KeyValue> {
    checkKey(key)
    checkValue(key, value)
    return (await this.enqueue([{ op: 'update', key, value, revision }]))[0] as KeyValue
  }

  async delete(key: string, revision?: number): Promise<void> {
    checkKey(key)
    await this.enqueue([revision === undefined ? { op: 'delete', key } : { op: 'delete', key, revision }])
  }

  async txn(ops: readonly TxnOp[], applied?: TxnApplied): Promise<KeyValue[]> {
    checkTxnOps(ops)
    return this.enqueue(ops.map((o) => ({ ...o })), applied)
  }

  private enqueue(ops: readonly TxnOp[], applied?: TxnApplied): Promise<KeyValue[]> {
    this.checkOpen()
    return new Promise<KeyValue[]>((resolve, reject) => {
      this.pending.push({ ops, resolve, reject, applied })
      // Group commit: everything queued in this tick shares one lock hold and one fdatasync.
      if (!this.draining) this.draining = this.drain()
    })
  }

  private async drain(): Promise<void> {
    // Ops queued in this tick join the batch. Every few ms we yield to the event loop proper, so a caller
    // awaiting writes in a tight loop cannot starve timers and I/O (the critical section is synchronous).
    if (performance.now() - this.lastYield > 2) {
      await new Promise<void>((resolve) => setImmediate(resolve))
      this.lastYield = performance.now()
    } else {
      await Promise.resolve()
    }
    try {
      while (this.pending.length > 0) await this.commit(this.pending.splice(0, MAX_BATCH))
    } finally {
      this.draining = undefined
    }
  }

  /**
   * Appends one batch under the lock, then makes it durable after releasing the lock and only then settles it.
   * fdatasync outside the lock is safe: the bytes are complete in the page cache before the lock is released,
   * every later append comes after them in the same file, and fdatasync flushes all of the file's data, so
   * whoever is acknowledged has everything before it on disk too. Meanwhile other processes (and our next
   * batch) can append, and the kernel merges the flushes.
   */
  private async commit(batch: PendingOp[]): Promise<void> {
    try {
      await this.lock.acquire(this.lockTimeoutMs)
    } catch (err) {
      for (const p of batch) p.reject(err as Error)
      return
    }
    const outcomes: Array<KeyValue[] | Error> = []
    let written = -1
    this.syncing++ // keeps the fd we write to open until it is synced, even if a compaction retires it
    try {
      // The critical section is synchronous on purpose: the lock is held for as short as possible and no
      // other code of ours can interleave with it.
      this.catchUp(true)
      const staged = new Map<string, Entry | null>()
      const frames: Buffer[] = []
      let rev = this.rev
      for (const { ops } of batch) {
        let failure: DatastoreError | undefined
        for (const op of ops) {
          const s = staged.get(op.key)
          failure = this.precondition(op, s === null ? undefined : (s ?? this.state.get(op.key)))
          if (failure) break
        }
        if (failure) {
          outcomes.push(failure)
          continue
        }
        rev++
        const writes = ops.filter((o): o is Exclude<TxnOp, { op: 'check' }> => o.op !== 'check')
        for (const op of writes) staged.set(op.key, op.op === 'delete' ? null : { value: op.value, revision: rev })
        const [only] = writes
        const record: LogRecord = writes.length > 1 || only === undefined
          ? { t: 'txn', r: rev, ops: writes.map((o) => (o.op === 'delete' ? { k: o.key } : { k: o.key, v: o.value })) }
          : only.op === 'delete' ? { t: 'del', r: rev, k: only.key } : { t: 'put', r: rev, k: only.key, v: only.value }
        frames.push(encodeRecord(record))
        outcomes.push(ops.map((o) => (o.op === 'check' ? { key: o.key, value: '', revision: o.revision } : { key: o.key, value: o.op === 'delete' ? '' : o.value, revision: rev })))
      }
      if (frames.length > 0) {
        written = this.fd
        writeAll(this.fd, Buffer.concat(frames), this.offset)
        this.catchUp(true) // applies our own records through the same path as everyone else's
        this.maybeCompact()
      }
    } catch (err) {
      written = -1
      this.failAll(outcomes, batch.length, err)
    } finally {
      this.lock.release()
    }
    // Applied (this store's reads see it) though not yet durable: a writer waiting to write after it may go on.
    if (written >= 0) {
      batch.forEach((p, i) => {
        const o = outcomes[i]
        if (p.applied === undefined || o === undefined || o instanceof Error) return
        try {
          p.applied(o)
        } catch {
          // The listener's failure is its own; the op's answer still comes from settle().
        }
      })
    }
    const settled = this.settle(batch, outcomes, written)
    this.settling.add(settled)
    void settled.finally(() => this.settling.delete(settled))
  }

  private async settle(batch: PendingOp[], outcomes: Array<KeyValue[] | Error>, written: number): Promise<void> {
    try {
      if (written >= 0) await new Promise<void>((resolve, reject) => fs.fdatasync(written, (err) => (err ? reject(err) : resolve())))
    } catch (err) {
      this.failAll(outcomes, batch.length, err)
    } finally {
      if (--this.syncing === 0) {
        for (const fd of this.retired) fs.closeSync(fd)
        this.retired = []
      }
    }
    batch.forEach((p, i) => {
      const o = outcomes[i] as KeyValue[] | Error
      if (o instanceof Error) p.reject(o)
      else p.resolve(o)
    })
  }

  private failAll(outcomes: Array<KeyValue[] | Error>, n: number, err: unknown): void {
    const e = err instanceof DatastoreError ? err : new DatastoreError('unavailable', `store ${this.dir}: write failed: ${(err as Error).message}`)
    outcomes.length = 0
    for (let i = 0; i < n; i++) outcomes.push(e)
  }

  /** Closes a log fd we no longer read, unless a pending fdatasync still needs it. */
  private retire(fd: number): void {
    if (this.syncing > 0) this.retired.push(fd)
    else fs.closeSync(fd)
  }

  private precondition(op: TxnOp, current: Entry | undefined): DatastoreError | undefined {
    if (op.op === 'check') return checkFailure(op.key, op.revision, current?.revision)
    if (op.op === 'create') {
      return current ? new DatastoreError('exists', `key ${op.key} already exists`, op.key) : undefined
    }
    if (!current) return new DatastoreError('not-found', `key ${op.key} does not exist`, op.key)
    if (op.revision !== undefined && op.revision !== current.revision) {
      return new DatastoreError('conflict', `key ${op.key} is at revision ${current.revision}, not ${op.revision}`, op.key)
    }
    return undefined
  }

  // ---- compaction ----------------------------------------------------------------------------------------------

  /** The batch is durable already: a failed compaction must not fail it (the next lock holder finishes or retries). */
  private maybeCompact(): void {
    if (this.offset < this.compactBytes) return
    try {
      this.compact()
    } catch {
      // Left as is, a half-made generation is completed by finishInterruptedCompaction; a missing one is retried.
    }
  }

  /** Lock held and caught up: snapshot the state as generation gen+1 and seal the current log. */
  private compact(): void {
    const next = this.gen + 1
    const kvs = [...this.state].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, e]) => [k, e.value, e.revision] as const)
    const bytes = encodeSnapshot({ gen: next, rev: this.rev, logOffset: this.offset, kvs })
    const tmp = path.join(this.dir, `${snapName(next)}.tmp`)
    const fd = fs.openSync(tmp, 'w')
    try {
      writeAll(fd, bytes, 0)
      fs.fsyncSync(fd)
    } finally {
      fs.closeSync(fd)
    }
    fs.renameSync(tmp, path.join(this.dir, snapName(next)))
    fsyncDir(this.dir)
    this.finishInterruptedCompaction()
    this.catchUp(true)
    for (const name of fs.readdirSync(this.dir)) {
      const m = /^(?:log|snap|torn)\.(\d+)(?:\.tmp|\.\d+)?$/.exec(name)
      if (m && Number(m[1]) < next - 1) fs.rmSync(path.join(this.dir, name), { force: true })
    }
  }

  /** Lock held, at the valid end of log.<gen>, and snap.<gen+1> exists: create log.<gen+1> and seal log.<gen>. */
  private finishInterruptedCompaction(): void {
    const next = this.gen + 1
    const snap = readSnapshotFile(this.dir, next)
    if (snap.rev !== this.rev || snap.logOffset !== this.offset) {
      throw new DatastoreError(
        'invalid',
        `${path.join(this.dir, snapName(next))} covers revision ${snap.rev} at byte ${snap.logOffset}, but ${logName(this.gen)} ends at revision ${this.rev} byte ${this.offset}`,
      )
    }
    fs.closeSync(fs.openSync(path.join(this.dir, logName(next)), 'a'))
    fsyncDir(this.dir)
    writeAll(this.fd, encodeRecord({ t: 'seal', r: this.rev, next }), this.offset)
    fs.fdatasyncSync(this.fd)
  }

  // ---- watch -----------------------------------------------------------------------------------------------------

  watch(prefix: string, fromRevision: number, onEvent: (event: WatchEvent) => void, onError?: (err: Error) => void): Watch {
    this.checkOpen()
    const w: WatchState = { prefix, next: Math.max(1, fromRevision), onEvent, onError, active: false }
    this.watches.add(w)
    this.startNotifier()
    setImmediate(() => this.startWatch(w))
    return {
      close: () => {
        this.watches.delete(w)
        if (this.watches.size === 0) this.stopNotifier()
      },
    }
  }

  private startWatch(w: WatchState): void {
    if (!this.watches.has(w) || this.closed) return
    try {
      this.catchUp(false)
      this.deliver() // older events go to the watchers that were already following
      if (w.next <= this.rev) {
        if (w.next <= this.base) {
          throw new DatastoreError('compacted', `revision ${w.next} of store ${this.dir} is compacted (oldest kept: ${this.base + 1}); relist and watch again`)
        }
        const frames = decodeFrames(readAt(this.fd, 0, this.offset))
        frames.payloads.forEach((payload, i) => {
          const r = this.parseAt(payload, frames.offsets[i] as number)
          if (r.t !== 'seal' && r.r >= w.next) for (const c of recordChanges(r)) if (c.key.startsWith(w.prefix)) w.onEvent(changeEvent(c, r.r))
        })
      }
      w.next = Math.max(w.next, this.rev + 1) // a watch may start at a future revision
      w.active = true
    } catch (err) {
      this.watches.delete(w)
      w.onError?.(err as Error)
    }
  }

  private scheduleDelivery(): void {
    if (this.deliveryScheduled) return
    this.deliveryScheduled = true
    // Never inside the critical section or a catch-up: callbacks may call back into the store.
    queueMicrotask(() => {
      this.deliveryScheduled = false
      this.deliver()
    })
  }

  private deliver(): void {
    if (this.delivering) return
    this.delivering = true
    try {
      for (let i = 0; i < this.outbox.length; i++) {
        const ev = this.outbox[i] as WatchEvent
        for (const w of this.watches) {
          if (!w.active || ev.revision < w.next || !ev.key.startsWith(w.prefix)) continue
          w.next = ev.revision // not + 1: the other changes of a transaction share its revision
          try {
            w.onEvent(ev)
          } catch (err) {
            w.onError?.(err as Error)
          }
        }
      }
    } finally {
      this.outbox = []
      this.delivering = false
    }
  }

  private failWatches(err: Error): void {
    for (const w of [...this.watches]) {
      this.watches.delete(w)
      w.onError?.(err)
    }
    this.outbox = []
  }

  private startNotifier(): void {
    if (this.notifier) return
    let fsWatcher: fs.FSWatcher | undefined
    try {
      fsWatcher = fs.watch(this.dir, () => this.poke())
      fsWatcher.on('error', () => undefined) // the poll below still runs
    } catch {
      fsWatcher = undefined
    }
    this.notifier = { fsWatcher, timer: setInterval(() => this.poke(), this.pollMs) }
  }

  private stopNotifier(): void {
    if (!this.notifier) return
    this.notifier.fsWatcher?.close()
    clearInterval(this.notifier.timer)
    this.notifier = undefined
  }

  private poke(): void {
    if (this.poked) return
    this.poked = true
    setImmediate(() => {
      this.poked = false
      if (this.closed) return
      try {
        this.catchUp(false)
      } catch (err) {
        this.failWatches(err as Error)
      }
    })
  }

  // ---- lifecycle ---------------------------------------------------------------------------------------------------

  private checkOpen(): void {
    if (this.closed) throw new DatastoreError('unavailable', `store ${this.dir} is closed`)
  }

  async close(): Promise<void> {
    if (this.closed) return
    while (this.draining) await this.draining
    await Promise.all([...this.settling])
    this.closed = true
    this.watches.clear()
    this.stopNotifier()
    fs.closeSync(this.fd)
    this.lock.close()
  }
}

export function openEmbeddedDatastore(dir: string, options?: EmbeddedOptions): Promise<EmbeddedDatastore> {
  return EmbeddedDatastore.open(dir, options)
}
