// Releases a plugin owes the agent: an assign went out over the IPAM socket and its answer never came (the
// agent died in it), so the container's addresses may be held. The plugin notes the release here, next to
// the socket (`<socket>.releases/`, one file per handle) before it tries to make it, and removes the note
// once the release or a later ADD of the same handle got an answer. pinto-node takes what is left into its
// recovery journal when it starts, before it serves a request. Each note is one record of that journal's
// format (recovery-record.ts): the plugin runs without the agent, so it writes here and not into the
// agent's journal. Owns the files only: what a release means is the agent's.

import { mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { JOURNAL_VERSION, JournalError, type ReleaseRecord, decodeRecord, encodeRecord, releaseId } from './recovery-record.js'

export interface OwedRelease {
  /** The IPAM handle to release. */
  readonly handle: string
  readonly containerId: string
  /** The host veth the ADD would have made: if it exists and names the container, a later ADD wired the pod. */
  readonly hostVeth: string
}

export function spoolDir(socket: string): string {
  return `${socket}.releases`
}

const fileOf = (socket: string, handle: string): string => join(spoolDir(socket), encodeURIComponent(handle))

/** Notes the release (whole or not at all: written aside, then renamed). */
export function oweRelease(socket: string, r: OwedRelease): void {
  const dir = spoolDir(socket)
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  const file = fileOf(socket, r.handle)
  const tmp = join(dir, `.${encodeURIComponent(r.handle)}.${process.pid}`)
  const record: ReleaseRecord = { v: JOURNAL_VERSION, op: 'release', id: releaseId(r.handle), at: Date.now(), handle: r.handle, cause: 'plugin-owed', containerId: r.containerId, hostVeth: r.hostVeth }
  writeFileSync(tmp, encodeRecord(record), { mode: 0o600 })
  renameSync(tmp, file)
}

/** The handle's release is made, or its addresses are a live pod's again: nothing is owed. */
export function settleRelease(socket: string, handle: string): void {
  rmSync(fileOf(socket, handle), { force: true })
}

/** A note being written now is left to its writer; one left by a writer that died is removed after this long. */
const TORN_MS = 60_000

/** The owed release a note holds: a journal record, or the bare object an earlier plugin wrote. */
function readNote(text: string): OwedRelease | undefined {
  const line = text.endsWith('\n') ? text.slice(0, -1) : text
  const raw = JSON.parse(line) as Partial<OwedRelease> & { v?: unknown }
  if (raw.v === undefined) {
    return typeof raw.handle === 'string' && typeof raw.containerId === 'string' && typeof raw.hostVeth === 'string' ? { handle: raw.handle, containerId: raw.containerId, hostVeth: raw.hostVeth } : undefined
  }
  const r = decodeRecord(line)
  if (r.op !== 'release') throw new JournalError(0, 'op', `${r.op}: an owed release is a release record`)
  return { handle: r.handle, containerId: r.containerId ?? '', hostVeth: r.hostVeth ?? '' }
}

/**
 * Every release owed, each removed as it is read; a foreign file is removed and skipped, and reported to
 * `bad` with what is wrong with it.
 */
export function takeOwedReleases(socket: string, now = Date.now(), bad?: (file: string, problem: string) => void): OwedRelease[] {
  const dir = spoolDir(socket)
  let names: string[]
  try {
    names = readdirSync(dir)
  } catch {
    return []
  }
  const out: OwedRelease[] = []
  for (const name of names) {
    const file = join(dir, name)
    if (name.startsWith('.')) {
      const age = now - (statSync(file, { throwIfNoEntry: false })?.mtimeMs ?? now)
      if (age > TORN_MS) rmSync(file, { force: true })
      continue
    }
    try {
      const r = readNote(readFileSync(file, 'utf8'))
      if (r !== undefined) out.push(r)
      else bad?.(file, 'not an owed release')
    } catch (err) {
      // not one of ours: nothing to release
      bad?.(file, (err as Error).message)
    }
    rmSync(file, { force: true })
  }
  return out
}
