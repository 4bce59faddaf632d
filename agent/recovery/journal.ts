// The journal file, `PINTO_STATE_DIR/recovery.journal`: records (record.ts) appended with one write each, in
// the order the work happens, by one process (the agent that owns the state dir). At start it is read,
// what no `done` closed is handed back for replay, and the file is rewritten with the open records alone;
// it is rewritten the same way whenever it grows past a bound. Without a file, the records live in memory.
// It owns the bytes only: what a record means when replayed is the caller's.

import { closeSync, copyFileSync, mkdirSync, openSync, readFileSync, renameSync, writeFileSync, writeSync } from 'node:fs'
import { dirname } from 'node:path'
import { type JournalError, type JournalRecord, type PendingRecord, JOURNAL_VERSION, encodeRecord, openRecords, parseJournal } from '../../cni/index.js'

/** A pending record as its writer gives it: the journal stamps the version and the time. */
export type Draft<T = PendingRecord> = T extends PendingRecord ? Omit<T, 'v' | 'at'> : never

/** Past this size the file is rewritten with its open records (a few hundred bytes each). */
const COMPACT_BYTES = 1 << 20

export interface LoadResult {
  /** The records no `done` closed, in the order they were written. */
  readonly open: readonly PendingRecord[]
  /** Lines not understood; the file as it was is kept beside it (`unreadable`). */
  readonly errors: readonly JournalError[]
  readonly unreadable: string | undefined
  /** Where a last line cut short began, and its length. */
  readonly torn: { readonly offset: number; readonly length: number } | undefined
}

export class Journal {
  private fd: number | undefined
  private readonly pending = new Map<string, PendingRecord>()
  private bytes = 0

  /** `file` undefined: memory only (no state dir), nothing survives the process. */
  constructor(private readonly file: string | undefined, private readonly compactBytes = COMPACT_BYTES) {}

  /**
   * Reads what the last run left, keeps it (with anything recorded in this run so far) as the open records,
   * and rewrites the file with those alone. Call once, before the records are replayed.
   */
  load(): LoadResult {
    if (this.file === undefined) return { open: [...this.pending.values()], errors: [], unreadable: undefined, torn: undefined }
    mkdirSync(dirname(this.file), { recursive: true, mode: 0o700 })
    let bytes: Buffer
    try {
      bytes = readFileSync(this.file)
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err
      bytes = Buffer.alloc(0)
    }
    const parsed = parseJournal(bytes)
    let unreadable: string | undefined
    if (parsed.errors.length > 0) {
      // Nothing is lost: the bytes as they were stay beside the journal for the operator.
      unreadable = `${this.file}.unreadable-${Date.now()}`
      copyFileSync(this.file, unreadable)
    }
    const open = openRecords(parsed.records.map((r) => r.record))
    for (const [id, r] of this.pending) open.set(id, r)
    this.pending.clear()
    for (const [id, r] of open) this.pending.set(id, r)
    this.rewrite()
    return { open: [...open.values()], errors: parsed.errors, unreadable, torn: parsed.torn }
  }

  /** Records `draft` as pending (replacing an open record of the same id). */
  append(draft: Draft): PendingRecord {
    const r = { v: JOURNAL_VERSION, at: Date.now(), ...draft } as PendingRecord
    this.write(r)
    this.pending.set(r.id, r)
    return r
  }

  /** Closes `id` if it is open. */
  close(id: string): void {
    if (!this.pending.delete(id)) return
    this.write({ v: JOURNAL_VERSION, op: 'done', id, at: Date.now() })
  }

  /** Whether the records outlive the process (there is a file). */
  get durable(): boolean {
    return this.file !== undefined
  }

  get(id: string): PendingRecord | undefined {
    return this.pending.get(id)
  }

  /** The open records, oldest first. */
  open(): IterableIterator<PendingRecord> {
    return this.pending.values()
  }

  /** Stops writing (the agent stops); the open records stay in the file for the next start. */
  shut(): void {
    if (this.fd !== undefined) closeSync(this.fd)
    this.fd = undefined
  }

  private write(r: JournalRecord): void {
    if (this.fd === undefined) return
    const line = Buffer.from(encodeRecord(r))
    writeSync(this.fd, line)
    this.bytes += line.length
    if (this.bytes > this.compactBytes) this.rewrite()
  }

  /** The file replaced (written aside, then renamed) by one holding the open records alone. */
  private rewrite(): void {
    const file = this.file as string
    const text = [...this.pending.values()].map(encodeRecord).join('')
    const tmp = `${file}.tmp`
    writeFileSync(tmp, text, { mode: 0o600 })
    renameSync(tmp, file)
    this.shut()
    this.fd = openSync(file, 'a', 0o600)
    this.bytes = Buffer.byteLength(text)
  }
}
