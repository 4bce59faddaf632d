// What an earlier pinto-node left in its state dir, one file per entry in three directories (`cni-adds/`,
// `ipam-assigns/`, `ipam-releases/`), read once at start into the journal as the records they stand for and
// then removed; so an agent upgraded in place replays what the one before it was doing. Importing twice
// (a crash in between) records the same ids again, which replaces them.

import { readFileSync, readdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import type { Draft } from './journal.js'
import { releaseId } from '../../cni/index.js'

const isString = (v: unknown): v is string => typeof v === 'string'

/** The records the earlier layouts under `stateDir` hold, and a function that removes those layouts. */
export function legacyRecords(stateDir: string, log: (msg: string, fields: Record<string, unknown>) => void): { records: Draft[]; remove: () => void } {
  const records: Draft[] = []
  const dirs: string[] = []
  const each = (sub: string, read: (name: string, text: string) => Draft | undefined): void => {
    const dir = join(stateDir, sub)
    let names: string[]
    try {
      names = readdirSync(dir)
    } catch {
      return
    }
    dirs.push(dir)
    for (const name of names) {
      // Written aside and renamed: a dot file was never whole, and its work never began.
      if (name.startsWith('.')) continue
      let r: Draft | undefined
      try {
        r = read(name, readFileSync(join(dir, name), 'utf8'))
      } catch {
        r = undefined
      }
      if (r === undefined) log('an earlier agent\'s recovery entry is not one it wrote; skipped', { file: join(dir, name) })
      else records.push(r)
    }
  }
  each('cni-adds', (name, text) => {
    const e = JSON.parse(text) as Record<string, unknown>
    const { id, containerId, netns, ifname, hostVeth, handle, owner, prior } = e
    if (!isString(id) || id !== name || !isString(containerId) || !isString(netns) || !isString(ifname) || !isString(hostVeth) || !isString(handle)) return undefined
    // Its earliest entries name no owner: the host veth recorded the container ID.
    return { op: 'add', id, containerId, netns, ifname, hostVeth, handle, owner: isString(owner) ? owner : containerId, ...(prior === true ? { prior: true as const } : {}) }
  })
  each('ipam-assigns', (name, text) => {
    const { handle } = JSON.parse(text) as { handle?: unknown }
    return isString(handle) && handle !== '' ? { op: 'assign', id: `assign:legacy-${name}`, handle } : undefined
  })
  each('ipam-releases', (name) => {
    const handle = decodeURIComponent(name)
    return { op: 'release', id: releaseId(handle), handle, cause: 'carried-over' }
  })
  return { records, remove: () => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })) }
}
