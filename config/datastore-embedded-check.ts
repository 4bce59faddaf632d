// Read-only consistency check of an embedded store directory (for tests, and pintoctl later): every frame CRC-valid,
// revisions consecutive, snapshot and logs agreeing. It only reads; it must not truncate, lock or repair anything.

import fs from 'node:fs'
import path from 'node:path'
import { decodeFrames, parseRecord, recordChanges } from './datastore-embedded-log.js'
import { highestSnapshotGen, logName, readSnapshotFile, snapName } from './datastore-embedded.js'

export interface StoreCheck {
  readonly gen: number
  /** Revision after the last valid record. */
  readonly revision: number
  readonly keys: ReadonlyMap<string, { readonly value: string; readonly revision: number }>
  /** Valid records read from the current log. */
  readonly records: number
  /** Bytes after the last valid frame of the current log (a torn tail the next writer will cut off). */
  readonly tornTailBytes: number
  /** Everything inconsistent, each naming the file and byte offset; empty when the store is sound. */
  readonly problems: readonly string[]
}

export function checkEmbeddedStore(dir: string): StoreCheck {
  const problems: string[] = []
  const gen = highestSnapshotGen(dir)
  const keys = new Map<string, { value: string; revision: number }>()
  let revision = 0
  if (gen > 0) {
    const snap = readSnapshotFile(dir, gen)
    revision = snap.rev
    let last = ''
    for (const [k, v, r] of snap.kvs) {
      if (k <= last && last !== '') problems.push(`${snapName(gen)}: keys out of order at ${k}`)
      if (r > snap.rev) problems.push(`${snapName(gen)}: key ${k} has revision ${r} above the snapshot's ${snap.rev}`)
      keys.set(k, { value: v, revision: r })
      last = k
    }
    problems.push(...checkPreviousLog(dir, gen - 1, snap.rev, snap.logOffset))
  }
  const file = path.join(dir, logName(gen))
  const bytes = fs.existsSync(file) ? fs.readFileSync(file) : Buffer.alloc(0)
  const frames = decodeFrames(bytes)
  frames.payloads.forEach((payload, i) => {
    const at = frames.offsets[i] as number
    try {
      const rec = parseRecord(payload)
      if (rec.t === 'seal') {
        if (!fs.existsSync(path.join(dir, snapName(rec.next)))) problems.push(`${logName(gen)} byte ${at}: sealed towards ${rec.next} without its snapshot`)
        return
      }
      if (rec.r !== revision + 1) problems.push(`${logName(gen)} byte ${at}: revision ${rec.r} follows ${revision}`)
      revision = rec.r
      for (const c of recordChanges(rec)) {
        if (c.value !== undefined) keys.set(c.key, { value: c.value, revision: rec.r })
        else keys.delete(c.key)
      }
    } catch (err) {
      problems.push(`${logName(gen)} byte ${at}: ${(err as Error).message}`)
    }
  })
  return { gen, revision, keys, records: frames.payloads.length, tornTailBytes: bytes.length - frames.consumed, problems }
}

/** The log a snapshot was cut from, if still present, must end exactly where the snapshot says. */
function checkPreviousLog(dir: string, gen: number, rev: number, logOffset: number): string[] {
  const file = path.join(dir, logName(gen))
  if (!fs.existsSync(file)) return []
  const frames = decodeFrames(fs.readFileSync(file))
  let last = -1
  let sealAt = -1
  frames.payloads.forEach((payload, i) => {
    const rec = parseRecord(payload)
    if (rec.t === 'seal') sealAt = frames.offsets[i] as number
    else last = rec.r
  })
  const problems: string[] = []
  if (sealAt >= 0 && sealAt !== logOffset) problems.push(`${logName(gen)}: sealed at byte ${sealAt}, but ${snapName(gen + 1)} covers it to byte ${logOffset}`)
  if (last >= 0 && last !== rev) problems.push(`${logName(gen)}: ends at revision ${last}, but ${snapName(gen + 1)} is at ${rev}`)
  return problems
}
