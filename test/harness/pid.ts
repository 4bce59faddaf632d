// Stopping a process by its PID and waiting for it to go: the only way the harness ends a daemon
// (never by name, since other developers run the same daemons on this machine at the same time).

import { readFile } from 'node:fs/promises'
import { readFileSync } from 'node:fs'
import { waitFor } from './wait.js'
import { parsePid } from './daemons.js'

/**
 * True while the process exists and is not a zombie. Daemons that fork are re-parented to PID 1, which
 * may reap them late; an exited daemon waiting to be reaped counts as gone.
 */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch {
    return false
  }
  try {
    // /proc/PID/stat: "pid (comm) S ..."; comm may hold spaces or parentheses, so read after the last ')'.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z'
  } catch {
    return false
  }
}

/** SIGTERM, then SIGKILL if it is still there after `graceMs`. */
export async function stopPid(pid: number, graceMs = 3000): Promise<void> {
  if (!isAlive(pid)) return
  try {
    process.kill(pid, 'SIGTERM')
  } catch {
    return
  }
  try {
    await waitFor(() => !isAlive(pid), { timeoutMs: graceMs, intervalMs: 20, what: `PID ${pid} to exit` })
  } catch {
    try {
      process.kill(pid, 'SIGKILL')
    } catch {
      // exited between the check and the kill
    }
  }
}

/** Waits for a forking daemon's pid file and returns the PID in it. */
export function waitPidFile(file: string, timeoutMs: number): Promise<number> {
  return waitFor(async () => parsePid(await readFile(file, 'utf8'), file), { timeoutMs, intervalMs: 20, what: `pid file ${file}` })
}
