// The journal of CNI ADDs in flight in pinto-node: one small file per request in the state dir, written
// before the work starts and removed once the answer is in place, so a restarted agent rolls back each ADD
// whose answer the plugin never saw. The commit point is the answer's rename into the replies directory: a
// placeholder under the answer's temporary name is made first, so "placeholder still there" means "never
// answered". It owns the files only; what rolling back means is the caller's.

import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

export interface AddEntry {
  readonly id: string
  readonly containerId: string
  readonly netns: string
  readonly ifname: string
  /** The host end's name as the ADD computed it. */
  readonly hostVeth: string
  /** The IPAM handle, when the ADD allocates through pinto-ipam. */
  readonly handle: string
  /** The attachment's id, which its host veth records as its ifalias (absent in an earlier agent's entries: the container ID). */
  readonly owner?: string
  /**
   * Set when the attachment was wired before this ADD began (a repeated ADD): rolling it back then undoes
   * nothing, since the veth and the addresses are that wiring's.
   */
  readonly prior?: true
}

export class AddJournal {
  constructor(private readonly dir: string, private readonly replies: string) {
    mkdirSync(dir, { recursive: true, mode: 0o700 })
  }

  /** The answer's temporary name, which the answer is written under and renamed from. */
  static tempName(replies: string, id: string): string {
    return join(replies, `.${id}`)
  }

  /** Before an ADD's work: the placeholder, then the entry (so an entry always has its placeholder until the answer is renamed). */
  begin(entry: AddEntry): void {
    writeFileSync(AddJournal.tempName(this.replies, entry.id), '', { mode: 0o600 })
    const tmp = join(this.dir, `.${entry.id}`)
    writeFileSync(tmp, JSON.stringify(entry), { mode: 0o600 })
    renameSync(tmp, join(this.dir, entry.id))
  }

  /** After the answer is renamed into place (or the ADD rolled back). */
  end(id: string): void {
    rmSync(join(this.dir, id), { force: true })
  }

  /**
   * At start, before requests are served: the entries whose answer was never renamed into place, each
   * handed to `rollBack` and then removed; entries whose answer went out are just removed.
   */
  async replay(rollBack: (entry: AddEntry) => Promise<void>): Promise<{ rolledBack: number; answered: number }> {
    let rolledBack = 0
    let answered = 0
    for (const name of readdirSync(this.dir)) {
      const file = join(this.dir, name)
      if (name.startsWith('.')) {
        rmSync(file, { force: true })
        continue
      }
      let entry: AddEntry
      try {
        entry = JSON.parse(readFileSync(file, 'utf8')) as AddEntry
      } catch {
        rmSync(file, { force: true })
        continue
      }
      const placeholder = AddJournal.tempName(this.replies, entry.id)
      if (existsSync(placeholder)) {
        await rollBack(entry)
        rmSync(placeholder, { force: true })
        rolledBack++
      } else answered++
      rmSync(file, { force: true })
    }
    return { rolledBack, answered }
  }
}
