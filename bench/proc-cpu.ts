// CPU time of a machine's processes, read from /proc: each process's own (utime + stime) and what its reaped
// children used (cutime + cstime), so a short-lived program (a CNI plugin containerd execs) is counted in its
// parent once it is gone. Two snapshots give what each class of process spent between them. Bench-only.

import { readFileSync, readdirSync, readlinkSync } from 'node:fs'

/** Clock ticks per second of /proc's times (getconf CLK_TCK; 100 on Linux). */
const TICKS = 100

export interface ProcCpu {
  readonly pid: number
  readonly comm: string
  /** The process's network namespace (`net:[inode]`), or '' when unreadable. */
  readonly netns: string
  /** Its own CPU milliseconds. */
  readonly own: number
  /** Its reaped children's CPU milliseconds. */
  readonly children: number
}

/** The fields of /proc/PID/stat after the command name (which may hold spaces and parentheses). */
export function parseStat(text: string): { comm: string; own: number; children: number } {
  const open = text.indexOf('(')
  const close = text.lastIndexOf(')')
  if (open < 0 || close < open) throw new Error(`/proc stat: no command name in ${JSON.stringify(text.slice(0, 80))}`)
  const f = text.slice(close + 2).split(' ')
  // utime, stime, cutime, cstime: fields 14 to 17, here 11 to 14 (the state is field 3, here 0).
  const ms = (i: number): number => (Number(f[i]) * 1000) / TICKS
  return { comm: text.slice(open + 1, close), own: ms(11) + ms(12), children: ms(13) + ms(14) }
}

/** CPU milliseconds a process has used (utime + stime from /proc). */
export function cpuMsOf(pid: number): number {
  return parseStat(readFileSync(`/proc/${pid}/stat`, 'utf8')).own
}

/** Every process's CPU now; processes that go while being read are left out. */
export function snapshot(): Map<number, ProcCpu> {
  const out = new Map<number, ProcCpu>()
  for (const name of readdirSync('/proc')) {
    const pid = Number(name)
    if (!Number.isInteger(pid)) continue
    try {
      const s = parseStat(readFileSync(`/proc/${pid}/stat`, 'utf8'))
      let netns = ''
      try {
        netns = readlinkSync(`/proc/${pid}/ns/net`)
      } catch {
        // a kernel thread's, or gone
      }
      out.set(pid, { pid, netns, ...s })
    } catch {
      // gone meanwhile
    }
  }
  return out
}

/** A process's classes: one for its own CPU, one for its reaped children's (undefined: not counted). */
export interface Classes {
  readonly own?: string
  readonly children?: string
}

/**
 * What each class spent between two snapshots, in milliseconds. A process new in `after` counts from zero; one
 * gone by then counts only through the parent that reaped it.
 */
export function spent(before: ReadonlyMap<number, ProcCpu>, after: ReadonlyMap<number, ProcCpu>, classOf: (p: ProcCpu) => Classes): Map<string, number> {
  const out = new Map<string, number>()
  const add = (cls: string | undefined, ms: number): void => {
    if (cls !== undefined) out.set(cls, (out.get(cls) ?? 0) + ms)
  }
  for (const p of after.values()) {
    const b = before.get(p.pid)
    const was = b !== undefined && b.comm === p.comm ? b : { own: 0, children: 0 }
    const cls = classOf(p)
    add(cls.own, p.own - was.own)
    add(cls.children, p.children - was.children)
  }
  return out
}

/** The machine's busy CPU milliseconds so far, over all cores (/proc/stat: all but idle and iowait). */
export function machineBusyMs(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? ''
  const f = line.trim().split(/\s+/).slice(1).map(Number)
  const busy = f.reduce((a, b) => a + b, 0) - (f[3] ?? 0) - (f[4] ?? 0) - (f[8] ?? 0) - (f[9] ?? 0) // less idle, iowait, guest, guest_nice (in user)
  return (busy * 1000) / TICKS
}
