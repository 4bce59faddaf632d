// The UPDATEs one Established session sends: pulled from the peer's Adj-RIB-Out only while the socket has
// room, so KEEPALIVEs and other control messages never wait behind them; End-of-RIB once the table is out
// (RFC 4724 §2) and route-refresh framing (RFC 7313). Owns no socket, timer or FSM: it writes through a port.

import type { Logger } from 'pino'
import { RouteRefreshSubtype, encodeMessage, endOfRibUpdate, familyKey, packUpdates, type BgpMessage } from '../codec/index.js'
import type { AdjRibOut, AdvertisedRoute, FamilyKey } from '../rib/types.js'
import type { Negotiated } from './negotiate.js'
import { familyName, type PeerCounters } from './peer-status.js'

/** Bytes the socket may hold before we stop pulling UPDATEs (backpressure). */
const HIGH_WATER = 256 * 1024
/** Prefixes taken from the Adj-RIB-Out per pull. */
const PULL = 4000

/**
 * Senders with something to send on the next turn of the event loop, woken by one setImmediate: a
 * reflector's round makes every member's sender due at once, and an Immediate each cost more than the pump.
 */
let due: UpdateSender[] = []
let wakeUp: NodeJS.Immediate | undefined

function pumpDue(): void {
  wakeUp = undefined
  const now = due
  due = []
  for (const s of now) s.wake()
}

/**
 * The buffer a pump copies its UPDATEs into, shared by every sender and used again for as long as the
 * kernel takes each write whole (nothing holds it then). A fresh buffer per write would wait for the next
 * collection: on a reflector writing to thousands of clients, tens of megabytes in malloc. A write left
 * partly queued keeps its buffer, and the next pump makes another.
 */
class WriteScratch {
  private buf: Buffer | undefined

  /** Writes `parts` joined (`size` bytes) to `wire`, in the shared buffer while it is free. */
  write(wire: SenderWire, parts: readonly Uint8Array[], size: number): void {
    let buf = this.buf
    if (buf === undefined || buf.length < size) buf = this.buf = Buffer.allocUnsafeSlow(Math.max(size, SCRATCH_BYTES))
    let at = 0
    for (const p of parts) {
      buf.set(p, at)
      at += p.length
    }
    wire.write(buf.subarray(0, size), parts.length)
    // Anything left queued (or a socket gone) may still hold the buffer: the next write makes another.
    if (wire.queued() !== 0) this.buf = undefined
  }
}

/** A pump stops pulling once past HIGH_WATER, by at most what one pull packs. */
const SCRATCH_BYTES = HIGH_WATER + 64 * 1024
const scratch = new WriteScratch()

/** Where the sender writes: the peer shell's socket, with its counters and send hold timer. */
export interface SenderWire {
  /** Bytes queued and not yet taken by the kernel; undefined without a connection. */
  queued(): number | undefined
  /**
   * `bytes` holds `messages` whole messages (default one). The sender writes into `bytes` again once
   * queued() reads 0 after the write: a wire must hold nothing it does not count as queued.
   */
  write(bytes: Uint8Array, messages?: number): void
  send(message: BgpMessage): void
}

export interface SenderDeps {
  readonly log: Logger
  readonly counters: PeerCounters
  readonly wire: SenderWire
  /** While true, End-of-RIB waits: the owner has not originated everything yet (RFC 4724 §4.1). */
  readonly holdEndOfRib?: () => boolean
}

export class UpdateSender {
  private adjOut: AdjRibOut | undefined
  private session: Negotiated | undefined
  /** Families whose initial table has gone out, so End-of-RIB has been sent. */
  private readonly eorSent = new Set<FamilyKey>()
  /** Families re-advertised for a route refresh whose EoRR is still to go (RFC 7313). */
  private readonly pendingEorr = new Set<FamilyKey>()
  private scheduled = false

  constructor(private readonly deps: SenderDeps) {}

  /** Prefixes in the Adj-RIB-Out (advertised or about to be). */
  get advertised(): number {
    return this.adjOut?.size ?? 0
  }

  /** What the Adj-RIB-Out holds and has queued, as it is sent; nothing without a session. */
  entries(): Iterable<AdvertisedRoute> {
    return this.adjOut?.entries() ?? []
  }

  /** The session is Established: its Adj-RIB-Out is sent from now on, starting with the whole table. */
  attach(adjOut: AdjRibOut, session: Negotiated): void {
    this.eorSent.clear()
    this.pendingEorr.clear()
    this.adjOut = adjOut
    this.session = session
    adjOut.onPending(() => this.schedule())
    this.pump()
  }

  /** The session is gone: nothing more is sent. */
  detach(): void {
    this.adjOut = undefined
    this.session = undefined
    this.scheduled = false
  }

  /** Re-advertises everything (soft reset out). */
  refreshOut(): void {
    this.adjOut?.refresh()
  }

  /** The peer sent ROUTE-REFRESH: re-advertise the family, framed by BoRR/EoRR when enhanced (RFC 7313 §4). */
  refreshRequested(afi: number, safi: number, subtype: number): void {
    const s = this.session
    const family = familyKey(afi, safi)
    // RFC 7313 §5: BoRR/EoRR from the peer frame its re-advertisement; other subtypes are ignored.
    if (subtype !== RouteRefreshSubtype.NORMAL || !s?.families.has(family)) return
    this.deps.log.info({ family: familyName(family) }, 'route refresh requested by the peer')
    if (s.enhancedRouteRefresh) this.deps.wire.send({ type: 'route-refresh', afi, safi, subtype: RouteRefreshSubtype.BORR })
    this.adjOut?.refresh(family)
    this.pendingEorr.add(family)
    this.pump()
  }

  /** Sends what is pending while the socket has room, then End-of-RIB and EoRR once all is out. */
  pump(): void {
    const out = this.adjOut
    const session = this.session
    const wire = this.deps.wire
    if (!out || !session) return
    const queued = wire.queued()
    if (queued === undefined) return
    // What one pump sends leaves in one write of its UPDATEs' concatenation: a reflector's client is sent
    // one small UPDATE per round, a joiner's table is thousands (one per source), and a socket write each,
    // or a corked stream's bookkeeping of them, costs more than copying them together.
    const parts: Uint8Array[] = []
    let size = 0
    let held = false
    while (queued + size < HIGH_WATER && out.pending > 0) {
      const before = out.pending
      const batches = out.take(PULL)
      // A paced update group holding its next round: it signals pending again when the round may be made.
      if (batches.length === 0 && out.pending >= before) {
        held = true
        break
      }
      for (const batch of batches) {
        // A batch an update group's members share is packed by the first of them (they encode alike).
        const packed = batch.packed
        const messages = packed === undefined ? packUpdates(batch, session.tx) : (packed.bytes ??= packUpdates(batch, session.tx, packed.kept === true))
        for (const bytes of messages) {
          parts.push(bytes)
          size += bytes.length
        }
      }
    }
    this.deps.counters.updatesOut += parts.length
    const done = out.pending === 0 && this.deps.holdEndOfRib?.() !== true
    if (done && this.eorSent.size < session.families.size) {
      for (const f of session.families) {
        if (this.eorSent.has(f)) continue
        this.eorSent.add(f)
        const eor = encodeMessage(endOfRibUpdate(f >> 8, f & 255), session.tx)
        parts.push(eor)
        size += eor.length
      }
    }
    if (parts.length === 1) wire.write(parts[0]!)
    else if (parts.length > 1) scratch.write(wire, parts, size)
    // Stopped at this pump's own bound, not the socket's: the kernel may have taken it all (no drain event
    // then), so the rest goes from the next turn of the loop.
    if (size > 0 && !held && out.pending > 0) this.schedule()
    if (!done || this.pendingEorr.size === 0) return
    for (const f of this.pendingEorr) {
      if (session.enhancedRouteRefresh) wire.send({ type: 'route-refresh', afi: f >> 8, safi: f & 255, subtype: RouteRefreshSubtype.EORR })
    }
    this.pendingEorr.clear()
  }

  /** The turn of the loop it was scheduled for has come (pumpDue). */
  wake(): void {
    if (!this.scheduled) return
    this.scheduled = false
    this.pump()
  }

  private schedule(): void {
    if (this.scheduled) return
    // The next turn of the event loop: changes flushed together go out together.
    this.scheduled = true
    due.push(this)
    wakeUp ??= setImmediate(pumpDue)
  }
}
