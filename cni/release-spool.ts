// Releases a plugin owes the agent: an assign went out over the IPAM socket and its answer never came (the
// agent died in it), so the container's addresses may be held. The plugin notes the release here, next to
// the socket (`<socket>.releases/`, one file per handle) before it tries to make it, and removes the note
// once the release or a later ADD of the same handle got an answer. pinto-node makes what is left when it
// starts, before it serves a request. Owns the files only: what a release means is the agent's.

import { mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

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
  writeFileSync(tmp, JSON.stringify(r), { mode: 0o600 })
  renameSync(tmp, file)
}

/** The handle's release is made, or its addresses are a live pod's again: nothing is owed. */
export function settleRelease(socket: string, handle: string): void {
  rmSync(fileOf(socket, handle), { force: true })
}

/** A note being written now is left to its writer; one left by a writer that died is removed after this long. */
const TORN_MS = 60_000

/** Every release owed, each removed as it is read; a foreign file is removed and skipped. */
export function takeOwedReleases(socket: string, now = Date.now()): OwedRelease[] {
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
      const r = JSON.parse(readFileSync(file, 'utf8')) as Partial<OwedRelease>
      if (typeof r.handle === 'string' && typeof r.containerId === 'string' && typeof r.hostVeth === 'string') {
        out.push({ handle: r.handle, containerId: r.containerId, hostVeth: r.hostVeth })
      }
    } catch {
      // not one of ours: nothing to release
    }
    rmSync(file, { force: true })
  }
  return out
}
