// Process and namespace housekeeping shared by the demo and the test harness: is a PID alive, kill it
// without caring whether it is gone, list a namespace's processes, and sweep the namespaces and temp
// dirs of runs whose creating process died. Names carry the creator's pid; live runs are never touched.

import { readFileSync } from 'node:fs'
import { readdir, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { execa } from 'execa'

/** True while the process exists and is not a zombie (exited, waiting for its parent to reap it). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false
  }
  try {
    // /proc/PID/stat: "pid (comm) S ..."; comm may hold spaces or parentheses, so read after the last ')'.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z'
  } catch {
    return false
  }
}

export function killQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal)
  } catch {
    // already gone
  }
}

export async function namespacePids(ns: string): Promise<number[]> {
  const r = await execa('ip', ['netns', 'pids', ns], { reject: false })
  return String(r.stdout ?? '')
    .split('\n')
    .filter((l) => /^\d+$/.test(l))
    .map(Number)
}

/**
 * Removes the namespaces named `nameRe` (group 1: creator pid, group 2: run id) whose creator is gone,
 * with their processes, and the temp dirs `tempIdOf` maps to one of those run ids.
 */
export async function sweepDeadRuns(nameRe: RegExp, tempIdOf: (entry: string) => string | undefined): Promise<string[]> {
  const r = await execa('ip', ['netns', 'list'], { reject: false })
  const removed: string[] = []
  const ids = new Set<string>()
  for (const line of String(r.stdout ?? '').split('\n')) {
    const name = line.split(' ')[0] ?? ''
    const m = nameRe.exec(name)
    if (m === null || isAlive(Number(m[1]))) continue
    for (const pid of await namespacePids(name)) killQuietly(pid, 'SIGKILL')
    await execa('ip', ['netns', 'del', name], { reject: false })
    removed.push(name)
    ids.add(m[2] ?? '')
  }
  for (const entry of await readdir(tmpdir())) {
    const id = tempIdOf(entry)
    if (id !== undefined && ids.has(id)) await rm(join(tmpdir(), entry), { recursive: true, force: true })
  }
  return removed
}
