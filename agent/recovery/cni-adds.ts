// The CNI ADDs the agent takes through its channel, as `add` records: written before the work starts and
// closed once the answer is in place, so a restarted agent undoes each ADD whose answer the plugin never
// saw. The commit point is the answer's rename into the replies directory: a placeholder under the answer's
// temporary name is made before the record, so "placeholder still there" means "never answered".
// Undoing an ADD is its kernel side here (the host veth, only if still the attachment's) and its handle's
// release, which the caller queues.

import { execFile, execFileSync } from 'node:child_process'
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import type { Draft, Journal } from './journal.js'
import type { AddRecord } from '../../cni/index.js'

export type AddEntry = Draft<AddRecord>

export class CniAdds {
  /** ADDs a previous run took and never answered, rolled back at start (for the metrics). */
  rolledBack = 0

  constructor(
    private readonly journal: Journal,
    /** The CNI channel's replies directory, where each answer is renamed into place under its request's id. */
    private readonly replies: string,
    private readonly log: (msg: string, fields: Record<string, unknown>) => void,
  ) {}

  /** The answer's temporary name, which the answer is written under and renamed from. */
  static tempName(replies: string, id: string): string {
    return join(replies, `.${id}`)
  }

  /** Before an ADD's work: the placeholder, then the record (so an open record has its placeholder until the answer is renamed). */
  begin(entry: AddEntry): void {
    if (this.journal.durable) writeFileSync(CniAdds.tempName(this.replies, entry.id), '', { mode: 0o600 })
    this.journal.append(entry)
  }

  /** After the answer is renamed into place (or the ADD rolled back). */
  end(id: string): void {
    this.journal.close(id)
  }

  /**
   * At start, before requests are served: an open `add` whose answer was never renamed into place is undone
   * (`release` queues its handle); one whose answer went out is closed.
   */
  async replay(r: AddRecord, release: (handle: string) => void): Promise<void> {
    const placeholder = CniAdds.tempName(this.replies, r.id)
    if (existsSync(placeholder)) {
      await this.rollBack(r, release)
      rmSync(placeholder, { force: true })
      this.rolledBack++
    }
    this.journal.close(r.id)
  }

  /**
   * Undoes an ADD nobody saw answered: its host veth (only if still that attachment's), then its IPAM handle
   * (queued, which keeps it while a live wiring records it). A repeated ADD of an attachment wired before it
   * began made nothing to undo: the veth and the addresses stay that wiring's.
   */
  async rollBack(e: AddEntry, release: (handle: string) => void): Promise<void> {
    if (e.prior === true) {
      this.log('a CNI ADD the last run never answered found its attachment wired; nothing rolled back', { containerId: e.containerId, hostVeth: e.hostVeth })
      return
    }
    const owned = vethOwnedBy(e)
    if (owned) {
      await promisify(execFile)('ip', ['link', 'del', e.hostVeth]).catch((err: unknown) => {
        if (!/Cannot find device/.test((err as { stderr?: string }).stderr ?? '')) throw err
      })
    }
    // `ip` makes both ends in the pod and moves the host end out last: an ADD cut short before the move
    // left the pair in the pod's netns, where the host end's name is this ADD's alone. (Through rtnetlink
    // the pod end is made straight in the pod and goes with the host end.)
    if (e.netns !== '' && existsSync(e.netns)) {
      await promisify(execFile)('nsenter', [`--net=${e.netns}`, 'ip', 'link', 'del', e.hostVeth]).catch(() => undefined)
    }
    if (e.handle !== '') release(e.handle)
    this.log('rolled back a CNI ADD the last run never answered', { containerId: e.containerId, hostVeth: owned ? e.hostVeth : null, handle: e.handle })
  }
}

/**
 * Whether the host veth an ADD made is still that attachment's: by the id in its ifalias when it has one,
 * else by its peer being the pod's interface in the netns the ADD recorded (a later ADD of the same pod, a
 * new container, uses the same name; an ADD through rtnetlink cut short before the alias left none).
 */
function vethOwnedBy(e: AddEntry): boolean {
  const sys = `/sys/class/net/${e.hostVeth}`
  let alias: string
  let ifindex: number
  try {
    alias = readFileSync(`${sys}/ifalias`, 'utf8').trim()
    ifindex = Number(readFileSync(`${sys}/ifindex`, 'utf8').trim())
  } catch {
    return false
  }
  // The plugin writes the attachment's id (cni/wiring-plan.ts ownedBy); an earlier agent's records name the
  // container ID as the owner (legacy.ts).
  if (alias !== '') return alias === e.owner
  if (e.netns === '' || !existsSync(e.netns)) return false
  try {
    const out = execFileSync('nsenter', [`--net=${e.netns}`, 'ip', '-j', 'link', 'show', 'dev', e.ifname], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
    const links = JSON.parse(out) as { link_index?: number }[]
    return links[0]?.link_index === ifindex
  } catch {
    return false
  }
}
