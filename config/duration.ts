// Go duration strings ("120s", "1m30s", "500ms", "1.5h") as Calico's metav1.Duration fields take them.
// Pure parsing only: turns text into milliseconds and says at which character it went wrong;
// it does not decide which durations a field allows (that is the resource validators' job).

export class DurationError extends Error {
  constructor(
    readonly text: string,
    readonly offset: number,
    reason: string,
  ) {
    super(`invalid duration ${JSON.stringify(text)} at offset ${offset}: ${reason}`)
    this.name = 'DurationError'
  }
}

/** Milliseconds per unit, as Go's time.ParseDuration spells the units (both micro signs included). */
const UNIT_MS: Readonly<Record<string, number>> = {
  ns: 1e-6,
  us: 1e-3,
  'µs': 1e-3, // U+00B5 micro sign
  'μs': 1e-3, // U+03BC Greek mu
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
}

const UNITS_LONGEST_FIRST = Object.keys(UNIT_MS).sort((a, b) => b.length - a.length)

/**
 * Parses a Go duration (`[-+]?([0-9]*(\.[0-9]*)?unit)+`, or a bare "0") into milliseconds,
 * possibly fractional (`"1500ns"` is 0.0015). Throws DurationError naming the offset of the fault.
 */
export function parseDuration(text: string): number {
  let i = 0
  let sign = 1
  if (text[i] === '-' || text[i] === '+') {
    if (text[i] === '-') sign = -1
    i++
  }
  // Go accepts a bare zero without a unit, and nothing else without one.
  if (text.slice(i) === '0') return 0
  if (i === text.length) throw new DurationError(text, i, 'empty duration')
  let total = 0
  while (i < text.length) {
    const start = i
    while (i < text.length && isDigit(text[i])) i++
    let number = text.slice(start, i)
    if (text[i] === '.') {
      i++
      const fracStart = i
      while (i < text.length && isDigit(text[i])) i++
      number += '.' + text.slice(fracStart, i)
    }
    // "." alone or a unit with no number before it: Go rejects both.
    if (!/[0-9]/.test(number)) throw new DurationError(text, start, 'expected a number')
    const unit = UNITS_LONGEST_FIRST.find((u) => text.startsWith(u, i))
    if (unit === undefined) {
      throw new DurationError(text, i, i === text.length ? 'missing unit' : 'unknown unit (use ns, us, ms, s, m or h)')
    }
    i += unit.length
    total += Number(number) * (UNIT_MS[unit] ?? 0)
  }
  // Go's limit: an int64 count of nanoseconds (about 292 years).
  if (total > 9_223_372_036_854.775) throw new DurationError(text, 0, 'duration out of range')
  return sign * total
}

function isDigit(c: string | undefined): boolean {
  return c !== undefined && c >= '0' && c <= '9'
}

/** Formats milliseconds the way Go's Duration.String() does for whole units ("1m30s", "500ms", "0s"). */
export function formatDuration(ms: number): string {
  if (ms === 0) return '0s'
  const sign = ms < 0 ? '-' : ''
  let rest = Math.abs(ms)
  if (rest < 1000) return `${sign}${rest}ms`
  const h = Math.floor(rest / 3_600_000)
  rest -= h * 3_600_000
  const m = Math.floor(rest / 60_000)
  rest -= m * 60_000
  const s = rest / 1000
  return `${sign}${h > 0 ? `${h}h` : ''}${h > 0 || m > 0 ? `${m}m` : ''}${s}s`
}
