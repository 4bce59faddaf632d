// Stopping a process by its PID and waiting for it to go: the only way the harness ends a daemon
// (never by name, since other developers run the same daemons on this machine at the same time).

import { readFile } from 'node:fs/promises'
import { waitFor } from './wait.js'
import { parsePid } from './daemons.js'

// One liveness check for the whole project: exited-but-unreaped daemons count as gone.
export { isAlive } from '../../agent/demo/processes.js'
import { isAlive } from '../../agent/demo/processes.js'

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
