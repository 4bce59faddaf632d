// RFC 4724 as the receiving speaker, for one peer: when its session is lost without a NOTIFICATION its
// routes stay, marked stale, for its restart time; when it is back they wait for its End-of-RIB, bounded
// by a timer. Owns that state and the Restart timer; never touches the socket or the FSM.

import type { Logger } from 'pino'
import type { NotificationMessage } from '../codec/index.js'
import type { FamilyKey, RibPeer } from '../rib/types.js'
import type { Negotiated } from './negotiate.js'
import type { PeerTimers } from './peer-timers.js'
import type { RibPort } from './rib-port.js'

/** RFC 4724 §4.2's local bound on the wait for End-of-RIB after the peer is back, at least this many seconds. */
export const STALE_WAIT_MIN_SECONDS = 120

export class GracefulRestart {
  /** The peer as the RIB knew it in the session whose routes are kept as stale; undefined when none are. */
  private staleFrom: RibPeer | undefined

  constructor(
    private readonly rib: RibPort,
    private readonly timers: PeerTimers,
    private readonly log: Logger,
  ) {}

  /** Whether routes of an earlier session are held as stale. */
  get holdingStale(): boolean {
    return this.staleFrom !== undefined
  }

  /**
   * The session ended: hands the peer's routes to the RIB, keeping as stale the families the peer preserves
   * across a restart, when the connection was lost (no NOTIFICATION either way) and we did not stop it.
   * RFC 8538 would extend this to NOTIFICATIONs; it is not negotiated. The caller flushes.
   */
  sessionLost(peer: RibPeer, session: Negotiated | undefined, notif: NotificationMessage | undefined, localStop: boolean): void {
    const gr = session?.peerGracefulRestart
    const keep = new Set<FamilyKey>()
    if (!localStop && gr && notif === undefined) for (const [f] of gr.families) if (peer.families.has(f)) keep.add(f)
    this.rib.peerDown(peer, keep)
    if (keep.size === 0) return
    this.staleFrom = peer
    this.log.info({ restartTime: gr!.restartTime, families: keep.size }, 'peer may be restarting: keeping its routes as stale')
    this.expireAfter(peer, gr!.restartTime, 'peer did not come back within its restart time: dropping its stale routes')
  }

  /**
   * The peer is back (Established): families it no longer preserves lose their stale routes now; the rest
   * wait for its End-of-RIB, or for max(120 s, its restart time), whichever comes first.
   */
  established(session: Negotiated): void {
    this.timers.clear('Restart')
    const stale = this.staleFrom
    if (stale === undefined) return
    const gr = session.peerGracefulRestart
    for (const f of stale.families) {
      if (!gr || gr.families.get(f) !== true || !session.families.has(f)) this.rib.endOfRib(stale, f)
    }
    this.expireAfter(stale, Math.max(STALE_WAIT_MIN_SECONDS, gr?.restartTime ?? 0), 'no End-of-RIB in time after the restart: dropping stale routes')
  }

  /** The peer's End-of-RIB for a family: that family's stale routes go. */
  endOfRib(family: FamilyKey): void {
    if (this.staleFrom !== undefined) this.rib.endOfRib(this.staleFrom, family)
  }

  /** The peer is stopped or removed: stale routes go now. Returns whether any were held (the caller flushes). */
  drop(): boolean {
    this.timers.clear('Restart')
    const stale = this.staleFrom
    if (stale === undefined) return false
    this.staleFrom = undefined
    this.rib.sweepStale(stale)
    return true
  }

  private expireAfter(peer: RibPeer, seconds: number, why: string): void {
    this.timers.start('Restart', seconds * 1000, () => {
      this.log.warn(why)
      this.rib.sweepStale(peer)
      this.rib.flush()
      if (this.staleFrom === peer) this.staleFrom = undefined
    })
  }
}
