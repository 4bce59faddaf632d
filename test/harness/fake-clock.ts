// A Clock that moves only when a test moves it: timers run in the order they fall due as advance() passes
// them, each with now() at its due time, and random() gives the values the test set. For timer tests of
// the session shells over real sockets; it holds no real timer, so nothing waits and nothing leaks.

import type { Clock } from '../../bgp/session/clock.js'

interface Armed {
  readonly at: number
  readonly ms: number
  readonly seq: number
  readonly fn: () => void
}

export class FakeClock implements Clock {
  private t: number
  private seq = 0
  private readonly armed = new Map<number, Armed>()
  private readonly queued: number[] = []
  private fallback = 0.5

  constructor(start = Date.UTC(2026, 0, 1)) {
    this.t = start
  }

  now(): number {
    return this.t
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const id = ++this.seq
    const delay = Math.max(0, ms)
    this.armed.set(id, { at: this.t + delay, ms: delay, seq: id, fn })
    return id
  }

  clearTimeout(handle: unknown): void {
    this.armed.delete(handle as number)
  }

  random(): number {
    return this.queued.shift() ?? this.fallback
  }

  /** random() returns these next, in order, then `always` (or what it returned before). */
  setRandom(values: readonly number[] | number, always?: number): void {
    const list = typeof values === 'number' ? [] : values
    for (const v of list) if (!(v >= 0 && v < 1)) throw new RangeError(`setRandom: ${v} is not in [0, 1)`)
    this.queued.length = 0
    this.queued.push(...list)
    const f = typeof values === 'number' ? values : always
    if (f !== undefined) {
      if (!(f >= 0 && f < 1)) throw new RangeError(`setRandom: ${f} is not in [0, 1)`)
      this.fallback = f
    }
  }

  /** Moves time on by `ms`, running every timer that falls due on the way (timers set meanwhile included). */
  advance(ms: number): void {
    if (!(ms >= 0)) throw new RangeError(`advance: ${ms} ms`)
    const end = this.t + ms
    for (;;) {
      const due = this.firstDue(end)
      if (due === undefined) break
      this.armed.delete(due[0])
      this.t = due[1].at
      due[1].fn()
    }
    this.t = end
  }

  /** The armed timers as set (delay in ms) and when each falls due, counted from now; soonest first. */
  pending(): { readonly ms: number; readonly dueIn: number }[] {
    return [...this.armed.values()].sort((a, b) => a.at - b.at || a.seq - b.seq).map((a) => ({ ms: a.ms, dueIn: a.at - this.t }))
  }

  private firstDue(end: number): [number, Armed] | undefined {
    let best: [number, Armed] | undefined
    for (const e of this.armed) if (e[1].at <= end && (best === undefined || e[1].at < best[1].at || (e[1].at === best[1].at && e[1].seq < best[1].seq))) best = e
    return best
  }
}
