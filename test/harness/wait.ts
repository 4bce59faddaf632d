// Waiting for a condition with a deadline, so tests poll real state instead of sleeping a fixed time.
// Owns only the polling loop and its timeout error; it knows nothing about daemons or namespaces.

import { setTimeout as delay } from 'node:timers/promises'

export interface WaitOptions {
  /** Give up after this many milliseconds (counted from the call). */
  readonly timeoutMs: number
  /** Pause between attempts; short because every probe here is cheap. */
  readonly intervalMs?: number
  /** Named in the timeout error, e.g. "BIRD session frr Established". */
  readonly what: string
}

export class WaitTimeoutError extends Error {
  constructor(what: string, timeoutMs: number, last: unknown) {
    const detail = last instanceof Error ? `last error: ${last.message}` : `last value: ${JSON.stringify(last)}`
    super(`timed out after ${timeoutMs} ms waiting for ${what} (${detail})`)
    this.name = 'WaitTimeoutError'
  }
}

/**
 * Calls `probe` until it returns a value other than undefined/false, and returns that value.
 * A probe that throws counts as "not yet" (a daemon's control socket may not exist yet); the last
 * error is reported if the deadline passes.
 */
export async function waitFor<T>(probe: () => Promise<T | undefined | false> | T | undefined | false, opts: WaitOptions): Promise<T> {
  const deadline = Date.now() + opts.timeoutMs
  const interval = opts.intervalMs ?? 50
  let last: unknown
  for (;;) {
    try {
      const v = await probe()
      if (v !== undefined && v !== false) return v
      last = v
    } catch (err) {
      last = err
    }
    if (Date.now() >= deadline) throw new WaitTimeoutError(opts.what, opts.timeoutMs, last)
    await delay(Math.min(interval, Math.max(1, deadline - Date.now())))
  }
}

/** Absolute deadline helper: the time left until `deadline` (ms since epoch), never negative. */
export function remaining(deadline: number): number {
  return Math.max(0, deadline - Date.now())
}
