// The embedded store's inter-process write lock: a directory `lock` holding one file named after its owner.
// It owns only lock acquisition, release and breaking locks of dead owners; it knows nothing of the log.
//
// Invariants (why this is safe without flock):
// - Each instance prepares its own directory `lock.<pid>.<nonce>` holding `owner.<pid>.<start>.<nonce>` once.
//   Acquire is rename(own, 'lock'): rename(2) onto a name succeeds only when the name is absent or an EMPTY
//   directory, atomically, so at most one contender holds a non-empty `lock`, and the owner file is always inside
//   (there is no window where the lock exists without saying who holds it).
// - An empty `lock` directory means free. Only a breaker makes one, and the next acquirer's rename replaces it.
// - Release is rename('lock', own): only the holder does it, and nobody else removes a live holder's lock.
// - Breaking is conditional on identity: the breaker unlinks exactly `lock/owner.<dead owner>`; if the lock
//   changed hands meanwhile that unlink fails with ENOENT and nothing happens. Then rmdir('lock') succeeds only
//   if it is still empty. A holder is dead when its pid is gone or the pid's start time differs (pid reuse).
// - Assumption: all users share one pid namespace (agents on one machine); a holder in another namespace could
//   be judged dead wrongly.

import fs from 'node:fs'
import path from 'node:path'
import { randomBytes } from 'node:crypto'
import { DatastoreError } from './datastore.js'

const LOCK = 'lock'
const OWN_PREFIX = 'lock.'
const OWNER_PREFIX = 'owner.'

function startTimeOf(pid: number): string | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8')
    // Field 22 (starttime) counted after the ')' that ends the command name, which may hold spaces.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return fields[19]
  } catch {
    return undefined
  }
}

/** Whether a process with this pid and start time (from its owner file name) still runs. */
export function ownerAlive(pid: number, start: string): boolean {
  if (pid === process.pid) return true
  try {
    process.kill(pid, 0)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false
    // EPERM: it runs under another user, so it is alive.
  }
  if (start === '?') return true
  const now = startTimeOf(pid)
  // Without /proc we cannot detect pid reuse; kill(0) said alive, so trust it.
  return now === undefined || now === start
}

function parseOwner(name: string): { pid: number; start: string } | undefined {
  const m = /^owner\.(\d+)\.([^.]+)\.[0-9a-f]+$/.exec(name)
  return m ? { pid: Number(m[1]), start: m[2] as string } : undefined
}

function errno(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException).code
}

export class DirLock {
  private readonly lockPath: string
  private readonly ownPath: string
  private readonly ownerName: string
  private held = false

  constructor(dir: string) {
    const nonce = randomBytes(6).toString('hex')
    this.lockPath = path.join(dir, LOCK)
    this.ownPath = path.join(dir, `${OWN_PREFIX}${process.pid}.${nonce}`)
    this.ownerName = `${OWNER_PREFIX}${process.pid}.${startTimeOf(process.pid) ?? '?'}.${nonce}`
    this.prepare()
  }

  get isHeld(): boolean {
    return this.held
  }

  private prepare(): void {
    fs.mkdirSync(this.ownPath, { recursive: true })
    fs.writeFileSync(path.join(this.ownPath, this.ownerName), '')
  }

  /** One attempt; true when we now hold the lock. */
  tryAcquire(): boolean {
    if (this.held) throw new Error('DirLock is not reentrant')
    try {
      fs.renameSync(this.ownPath, this.lockPath)
      this.held = true
      return true
    } catch (err) {
      const code = errno(err)
      if (code === 'ENOTEMPTY' || code === 'EEXIST') return false
      if (code === 'ENOENT') {
        // Our prepared directory vanished (an operator cleaned up); make it again and retry next time.
        this.prepare()
        return false
      }
      throw err
    }
  }

  /** Waits for the lock, breaking it if its owner died; fails with 'unavailable' after `timeoutMs`. */
  async acquire(timeoutMs: number): Promise<void> {
    if (this.tryAcquire()) return
    const started = Date.now()
    let lastBreakCheck = started
    for (let attempt = 1; ; attempt++) {
      // Short holds are the norm (one fdatasync), so spin on the event loop first, then back off a little.
      await new Promise<void>((resolve) => (attempt < 4 ? setImmediate(resolve) : setTimeout(resolve, Math.min(4, attempt >> 3))))
      if (this.tryAcquire()) return
      const now = Date.now()
      if (now - lastBreakCheck >= 20) {
        lastBreakCheck = now
        if (this.breakIfDead() && this.tryAcquire()) return
      }
      if (now - started > timeoutMs) {
        throw new DatastoreError('unavailable', `store lock ${this.lockPath} is held by ${this.describeHolder()} for more than ${timeoutMs} ms`)
      }
    }
  }

  release(): void {
    if (!this.held) return
    this.held = false
    fs.renameSync(this.lockPath, this.ownPath)
  }

  /** Removes the lock if its owner is dead; true if the lock is now free (or was). */
  breakIfDead(): boolean {
    let names: string[]
    try {
      names = fs.readdirSync(this.lockPath)
    } catch (err) {
      if (errno(err) === 'ENOENT') return true
      throw err
    }
    const ownerFile = names.find((n) => n.startsWith(OWNER_PREFIX))
    if (ownerFile !== undefined) {
      const owner = parseOwner(ownerFile)
      if (owner && ownerAlive(owner.pid, owner.start)) return false
      try {
        fs.unlinkSync(path.join(this.lockPath, ownerFile))
      } catch (err) {
        if (errno(err) !== 'ENOENT') throw err
        return false // the lock changed hands while we looked
      }
    }
    try {
      fs.rmdirSync(this.lockPath)
    } catch (err) {
      if (errno(err) !== 'ENOENT' && errno(err) !== 'ENOTEMPTY' && errno(err) !== 'EEXIST') throw err
    }
    return true
  }

  describeHolder(): string {
    try {
      const owner = fs.readdirSync(this.lockPath).map(parseOwner).find((o) => o !== undefined)
      return owner ? `pid ${owner.pid}` : 'nobody'
    } catch {
      return 'nobody'
    }
  }

  /** Removes our prepared directory; the lock must not be held. */
  close(): void {
    this.release()
    fs.rmSync(this.ownPath, { recursive: true, force: true })
  }

  /** Removes prepared directories left behind by dead processes (never the live lock). */
  static sweep(dir: string): void {
    for (const name of fs.readdirSync(dir)) {
      const m = /^lock\.(\d+)\.[0-9a-f]+$/.exec(name)
      if (!m) continue
      const full = path.join(dir, name)
      let inside: string[]
      try {
        inside = fs.readdirSync(full)
      } catch {
        continue
      }
      // A directory without its owner file yet may be one a live process is preparing right now (mkdir, then
      // write): judge it by the pid in its own name, so a sweep never pulls it from under its maker.
      const owner = inside.map(parseOwner).find((o) => o !== undefined) ?? { pid: Number(m[1]), start: '?' }
      if (!ownerAlive(owner.pid, owner.start)) fs.rmSync(full, { recursive: true, force: true })
    }
  }
}
