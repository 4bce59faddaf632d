// A lock file holding its holder's pid, shared by the builds that may run twice at once on a checkout (the
// Kubernetes components, pinto's image): one attempt to take it, and what stands in the way when it is held.

import { readFileSync, rmSync, writeFileSync } from 'node:fs'

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
 * ('retry'), as is one that vanished meanwhile; an empty one is being written by its holder ('retry' after a wait).
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
  if (!Number.isInteger(holder)) return 'wait'
  if (!isAlive(holder)) {
    rmSync(lock, { force: true })
    return 'retry'
  }
  return holder
}
