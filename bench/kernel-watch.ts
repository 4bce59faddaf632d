// What bench/node-path reads from a receiver's namespace: how many routes its kernel holds, when one route
// came or went, and how much CPU a process has used. Reads only; it never writes a route of a receiver's.
//
// Counting: /proc/PID/net is the namespace of PID. IPv4 reads fib_triestat's "Prefixes" of the main table
// (one per route; the kernel walks its whole trie for it, so it is read at intervals of 6x what the last
// read cost, keeping the watch's own CPU small beside the receiver's); IPv6 reads rt6_stats'
// fib_rt_entries, a counter (O(1)).
// Single changes are seen by `ip monitor route` in the namespace, started only once the table is in.

import { readFileSync, readdirSync } from 'node:fs'
import { execa, type ResultPromise } from 'execa'
import { waitFor } from '../test/harness/wait.js'

export const now = (): number => performance.timeOrigin + performance.now()

/** Routes in the main table of PID's namespace (IPv4), or all IPv6 routes of every table there. */
export function kernelRouteCount(pid: number, family: 'ipv4' | 'ipv6'): number {
  if (family === 'ipv6') {
    const f = readFileSync(`/proc/${pid}/net/rt6_stats`, 'utf8').trim().split(/\s+/)
    return parseInt(f[3] ?? 'x', 16)
  }
  const text = readFileSync(`/proc/${pid}/net/fib_triestat`, 'utf8')
  const m = /^Main:\n(?:\t.*\n)*?\tPrefixes:\s+(\d+)/m.exec(text)
  if (m === null) throw new Error(`/proc/${pid}/net/fib_triestat: no Prefixes line for the main table`)
  return Number(m[1])
}

export interface CountReached {
  /** When a read first saw the count (ms, the `now()` clock). */
  readonly at: number
  /** Time since the read before, which still saw fewer: the figure's resolution. */
  readonly resolutionMs: number
  readonly reads: number
}

/** Reads the kernel's count until it reaches `target`; fails on `abort()` returning a reason, or at the deadline. */
export async function waitKernelCount(pid: number, family: 'ipv4' | 'ipv6', target: number, timeoutMs: number, abort: () => string | undefined): Promise<CountReached> {
  const deadline = Date.now() + timeoutMs
  let reads = 0
  let last = now()
  for (;;) {
    const t0 = now()
    const n = kernelRouteCount(pid, family)
    const t1 = now()
    reads++
    if (n >= target) return { at: t1, resolutionMs: t1 - last, reads }
    last = t1
    const why = abort()
    if (why !== undefined) throw new Error(why)
    if (Date.now() > deadline) throw new Error(`kernel holds ${n} of ${target} routes after ${timeoutMs} ms`)
    await new Promise((r) => setTimeout(r, Math.max(family === 'ipv6' ? 5 : 10, 6 * (t1 - t0))))
  }
}

/** On-CPU time of every thread of PID, in ms (schedstat: nanoseconds, unlike utime+stime's ticks). */
export function cpuMs(pid: number): number {
  let ns = 0
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0])
    } catch {
      // a thread that ended between the listing and the read
    }
  }
  return ns / 1e6
}

/** VmHWM / VmRSS of PID in kB. */
export function memoryKb(pid: number, key: 'VmHWM' | 'VmRSS'): number {
  const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  if (m === null) throw new Error(`/proc/${pid}/status: no ${key}`)
  return Number(m[1])
}

/** `ip monitor route` in a namespace: when each prefix was last added or deleted there. */
export class RouteMonitor {
  private readonly seen = new Map<string, number>()
  private readonly waiters = new Map<string, (at: number) => void>()
  private partial = ''

  private constructor(private readonly child: ResultPromise) {
    child.stdout?.setEncoding('utf8')
    child.stdout?.on('data', (chunk: string) => {
      const at = now()
      const lines = (this.partial + chunk).split('\n')
      this.partial = lines.pop() ?? ''
      for (const l of lines) {
        const deleted = l.startsWith('Deleted ')
        const dst = (deleted ? l.slice(8) : l).split(' ')[0] ?? ''
        const key = `${deleted ? 'del' : 'add'} ${dst}`
        this.seen.set(key, at)
        this.waiters.get(key)?.(at)
      }
    })
  }

  /** Started and subscribed: a marker route in table 250 (no receiver's table) is seen coming and going. */
  static async start(ns: string, family: 'ipv4' | 'ipv6'): Promise<RouteMonitor> {
    const f = family === 'ipv4' ? '-4' : '-6'
    const m = new RouteMonitor(execa('ip', ['-n', ns, f, 'monitor', 'route'], { reject: false, buffer: false, cleanup: false }))
    const marker = family === 'ipv4' ? '192.0.2.250' : '2001:db8:ffff::250'
    await waitFor(async () => {
      await execa('ip', ['-n', ns, f, 'route', 'replace', marker, 'dev', 'lo', 'table', '250'])
      await execa('ip', ['-n', ns, f, 'route', 'del', marker, 'dev', 'lo', 'table', '250'])
      return m.seen.has(`del ${marker}`)
    }, { timeoutMs: 10_000, intervalMs: 50, what: `ip monitor route in ${ns} seeing a marker route` })
    return m
  }

  /** Forgets what was seen of `dst` ("198.19.0.1" for a /32, "2001:db8:fffe::/64"), before a change to it. */
  forget(op: 'add' | 'del', dst: string): void {
    this.seen.delete(`${op} ${dst}`)
  }

  /** When `dst` was seen added/deleted, waiting for it up to `timeoutMs`; undefined at the deadline. */
  when(op: 'add' | 'del', dst: string, timeoutMs: number): Promise<number | undefined> {
    const key = `${op} ${dst}`
    const at = this.seen.get(key)
    if (at !== undefined) return Promise.resolve(at)
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waiters.delete(key)
        resolve(undefined)
      }, timeoutMs)
      this.waiters.set(key, (t) => {
        clearTimeout(timer)
        this.waiters.delete(key)
        resolve(t)
      })
    })
  }

  stop(): void {
    this.child.kill('SIGTERM')
  }
}
