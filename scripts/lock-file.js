// A lock file holding its holder's pid, shared by the builds that may run twice at once on a checkout (the
// Kubernetes components, pinto's image): one attempt to take it, and what stands in the way when it is held.

import { readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'

/** A lock still empty after this long was made by a process that died before writing its pid. */
export const EMPTY_LOCK_MS = 10_000

function isAlive(pid) {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return err.code === 'EPERM'
  }
}

/**
 * Tries once to take `lock`: 'taken', or the live holder's pid to wait for. A lock whose holder is dead is removed
 * ('retry'), as is one that vanished meanwhile; an empty one is being written by its holder ('wait'), unless it has
 * been empty for EMPTY_LOCK_MS (its holder died in between: removed, 'retry').
 */
export function tryLock(lock) {
  try {
    writeFileSync(lock, String(process.pid), { flag: 'wx' })
    return 'taken'
  } catch (err) {
    if (err.code !== 'EEXIST') throw err
  }
  let text
  try {
    text = readFileSync(lock, 'utf8')
  } catch {
    return 'retry'
  }
  const holder = Number.parseInt(text, 10)
  if (!Number.isInteger(holder)) {
    // Written right after it is made; one still empty after that long lost its holder in between.
    const age = Date.now() - (statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now())
    if (age < EMPTY_LOCK_MS) return 'wait'
    rmSync(lock, { force: true })
    return 'retry'
  }
  if (!isAlive(holder)) {
    rmSync(lock, { force: true })
    return 'retry'
  }
  return holder
}
