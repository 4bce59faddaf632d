// The monitor lines felix still expects for its own writes, per route key, oldest first. A route replaced
// and deleted within a few milliseconds (churn) has its replace echoed after felix's view already says
// "deleted": matched against the pending writes it is known for felix's own, not a change to resync for.
// Pure bookkeeping; what a line must look like to match a route is the caller's.

import type { KernelRoute } from './kernel-route.js'
import type { RouteOp } from './route-diff.js'

interface Pending {
  readonly key: string
  /** What the write left under the key; undefined for a delete. */
  readonly route: KernelRoute | undefined
  readonly at: number
}

export class PendingEchoes {
  private readonly byKey = new Map<string, Pending[]>()
  // Every pending write in time order, for expiry: an echo the monitor never delivered must not stay.
  private readonly fifo: Pending[] = []
  private head = 0

  constructor(
    private readonly windowMs = 5_000,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Notes the echoes a write of `ops` will cause, while the monitor is reading. */
  note(ops: readonly RouteOp[]): void {
    const at = this.now()
    this.expire(at)
    for (const o of ops) {
      const p: Pending = { key: o.key, route: o.op === 'delete' ? undefined : o.route, at }
      const list = this.byKey.get(o.key)
      if (list === undefined) this.byKey.set(o.key, [p])
      else list.push(p)
      this.fifo.push(p)
    }
  }

  /**
   * Whether a line for `key` is the echo of its oldest pending write (`matches` says whether the line shows
   * that write's result); if so that write is no longer pending.
   */
  take(key: string, matches: (route: KernelRoute | undefined) => boolean): boolean {
    this.expire(this.now())
    const list = this.byKey.get(key)
    if (list === undefined || !matches(list[0]!.route)) return false
    list.shift()
    if (list.length === 0) this.byKey.delete(key)
    return true
  }

  clear(): void {
    this.byKey.clear()
    this.fifo.length = 0
    this.head = 0
  }

  private expire(now: number): void {
    while (this.head < this.fifo.length && now - this.fifo[this.head]!.at > this.windowMs) {
      const p = this.fifo[this.head++]!
      const list = this.byKey.get(p.key)
      // The key's list is in time order too; its front is this entry unless a line took it already.
      if (list !== undefined && list[0] === p) {
        list.shift()
        if (list.length === 0) this.byKey.delete(p.key)
      }
    }
    if (this.head > 1024 && this.head * 2 > this.fifo.length) {
      this.fifo.splice(0, this.head)
      this.head = 0
    }
  }
}
