// The recent FSM transitions of each peer, with the event and the reason, for the API's event list and
// the status page. A bounded ring per peer (old entries fall off); pure bookkeeping, no timers or I/O.

import type { FsmState } from './fsm.js'

export interface Transition {
  /** Grows by one per transition across all peers, so a reader can ask for what came after one it saw. */
  readonly seq: number
  /** ms since the epoch. */
  readonly at: number
  readonly peer: string
  readonly from: FsmState['name']
  readonly to: FsmState['name']
  /** The RFC 4271 §8 event that caused it (ManualStart, HoldTimer_Expires, ...). */
  readonly event: string
  readonly reason: string
}

export interface TransitionQuery {
  readonly peer?: string
  /** Only transitions with a larger seq. */
  readonly after?: number
  /** At most this many, the newest. */
  readonly limit?: number
}

export class TransitionLog {
  private seq = 0
  private readonly rings = new Map<string, Transition[]>()

  constructor(readonly perPeer = 32) {
    if (!Number.isInteger(perPeer) || perPeer < 1) throw new RangeError(`perPeer: expected a positive integer, got ${perPeer}`)
  }

  record(t: Omit<Transition, 'seq'>): Transition {
    const entry: Transition = { seq: ++this.seq, ...t }
    let ring = this.rings.get(t.peer)
    if (ring === undefined) this.rings.set(t.peer, (ring = []))
    ring.push(entry)
    if (ring.length > this.perPeer) ring.splice(0, ring.length - this.perPeer)
    return entry
  }

  /** Drops a peer's history (the peer left the configuration), so the log stays bounded by the peers configured. */
  forget(peer: string): void {
    this.rings.delete(peer)
  }

  /** Matching transitions, newest first. */
  recent(q: TransitionQuery = {}): Transition[] {
    const rings = q.peer !== undefined ? [this.rings.get(q.peer) ?? []] : [...this.rings.values()]
    const after = q.after ?? 0
    const out = rings.flat().filter((t) => t.seq > after)
    out.sort((a, b) => b.seq - a.seq)
    return q.limit !== undefined ? out.slice(0, q.limit) : out
  }
}
