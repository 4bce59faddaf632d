// How the status page words and colours what the REST API says: durations, ages, session states, usage.
// Pure functions of their arguments (time passed in), shared by the browser bundle and its unit tests.

export type StateTone = 'up' | 'connecting' | 'down'

/** Established is up; OpenSent/OpenConfirm/Connect are on the way; Idle and Active (retrying) are down. */
export function stateTone(state: string): StateTone {
  if (state === 'Established') return 'up'
  if (state === 'OpenSent' || state === 'OpenConfirm' || state === 'Connect') return 'connecting'
  return 'down'
}

/** Whole seconds as the two largest units: `42s`, `5m 03s`, `2h 05m`, `3d 04h`. Negative counts as 0. */
export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds))
  const d = Math.floor(s / 86400)
  const h = Math.floor((s % 86400) / 3600)
  const m = Math.floor((s % 3600) / 60)
  const pad = (n: number): string => String(n).padStart(2, '0')
  if (d > 0) return `${d}d ${pad(h)}h`
  if (h > 0) return `${h}h ${pad(m)}m`
  if (m > 0) return `${m}m ${pad(s % 60)}s`
  return `${s}s`
}

/** Time since an ISO timestamp, as formatDuration; `—` when it does not parse. */
export function since(iso: string, nowMs: number): string {
  const t = Date.parse(iso)
  return Number.isNaN(t) ? '—' : formatDuration((nowMs - t) / 1000)
}

/** `HH:MM:SS` in UTC, the clock an operator compares with logs. */
export function clockTime(iso: string): string {
  const t = Date.parse(iso)
  return Number.isNaN(t) ? iso : new Date(t).toISOString().slice(11, 19)
}

/** Share of a block in use, 0-100, rounded down so a full block is the only 100. */
export function usePercent(inUse: number, size: number): number {
  if (size <= 0) return 0
  return Math.min(100, Math.floor((inUse * 100) / size))
}

export interface RouteNextHop {
  readonly gateway?: string
  readonly dev?: string
  readonly onlink?: boolean
}

/** A kernel route's next hops as `ip route` prints them: `via G dev D`, joined by `, `; `—` for none. */
export function formatNextHops(hops: readonly RouteNextHop[]): string {
  if (hops.length === 0) return '—'
  return hops.map((h) => [h.gateway !== undefined ? `via ${h.gateway}` : '', h.dev !== undefined ? `dev ${h.dev}` : '', h.onlink === true ? 'onlink' : ''].filter((x) => x !== '').join(' ') || '—').join(', ')
}
