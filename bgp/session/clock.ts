// Time and chance for the session shells, injected so tests drive timers and jitter without waiting:
// the wall clock, one-shot timers and the uniform random numbers RFC 4271 §10 jitter draws from.
// Session code reads neither Date.now, setTimeout nor Math.random itself; only systemClock does.

export interface Clock {
  now(): number
  setTimeout(fn: () => void, ms: number): unknown
  clearTimeout(handle: unknown): void
  /** A uniform random number in [0, 1). */
  random(): number
}

export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => {
    const t = setTimeout(fn, ms)
    t.unref?.()
    return t
  },
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
  random: () => Math.random(),
}
