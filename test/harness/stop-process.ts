// SIGSTOP that returns once the process is stopped: the signal reaches each thread of a Go program (etcd, the
// kube-apiserver) at its next check, and a thread running meanwhile may still answer a request sent after the
// kill. Waits, with a deadline, until every thread shows state T in /proc.
import { readFileSync, readdirSync } from 'node:fs'

const sleeper = new Int32Array(new SharedArrayBuffer(4))

/** Whether every thread of `pid` is stopped (a thread gone meanwhile counts as stopped). */
function stopped(pid: number): boolean {
  let tasks: string[]
  try {
    tasks = readdirSync(`/proc/${pid}/task`)
  } catch {
    return true
  }
  return tasks.every((tid) => {
    try {
      // The state follows the command name, which is in parentheses and may hold spaces.
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8')
      return /^[tT]$/.test(stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3))
    } catch {
      return true
    }
  })
}

/** SIGSTOP to `pid`, then waits (up to 2 s) until all its threads are stopped. */
export function stopProcess(pid: number): void {
  process.kill(pid, 'SIGSTOP')
  const deadline = Date.now() + 2000
  while (!stopped(pid)) {
    if (Date.now() > deadline) throw new Error(`process ${pid} not stopped within 2 s of SIGSTOP`)
    Atomics.wait(sleeper, 0, 0, 1)
  }
}
