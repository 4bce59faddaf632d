// The UPDATEs a peer's session refused (AS loop, RFC 8212, bad next hop, RFC 7606 treat-as-withdraw, ...):
// counted per reason for /v1/peers and /metrics, and logged once per burst so a peer that sends the same
// bad route 10,000 times fills no disk. Pure: the caller passes the time and writes the log line.

import type { RefusalKind } from '../rib/validate.js'

/** How long after one logged refusal of a kind the next ones are only counted. */
export const BURST_MS = 10_000

export interface RefusalLine {
  readonly kind: RefusalKind
  readonly reason: string
  /** Refusals of this kind counted and not logged since the last line. */
  readonly unlogged: number
}

export class Refusals {
  /** By kind: how many, and when the last line was logged. Made on the first refusal: most peers have none. */
  private byKind: Map<RefusalKind, { count: number; at: number; unlogged: number }> | undefined

  /** Counts one refused UPDATE section; returns the line to log when this one starts a burst. */
  record(kind: RefusalKind, reason: string, now: number): RefusalLine | undefined {
    this.byKind ??= new Map()
    const byKind = this.byKind
    const last = byKind.get(kind)
    if (last === undefined) {
      byKind.set(kind, { count: 1, at: now, unlogged: 0 })
      return { kind, reason, unlogged: 0 }
    }
    last.count++
    if (now - last.at < BURST_MS) {
      last.unlogged++
      return undefined
    }
    const unlogged = last.unlogged
    last.at = now
    last.unlogged = 0
    return { kind, reason, unlogged }
  }

  /** Refused UPDATE sections by kind since the peer was made. */
  snapshot(): Partial<Record<RefusalKind, number>> {
    const out: Partial<Record<RefusalKind, number>> = {}
    for (const [kind, { count }] of this.byKind ?? []) out[kind] = count
    return out
  }
}
