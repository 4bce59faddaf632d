// The node's BFD: the port-3784 receive sockets (one per address family, polled-receiver.ts), the
// demultiplexing of packets to sessions (§6.3: by Your Discriminator, else by the peer's address), the
// set of sessions, changed in place, and the one timer that drives them all. Each wakeup of that tick
// reads every queued packet, then runs the detection deadlines and sends every periodic packet whose
// jitter window is open, so N sessions cost one wakeup per interval rather than 3N. It decides nothing
// about BGP: state changes go to the listener.

import { randomInt } from 'node:crypto'
import type { Logger } from 'pino'
import { systemClock, type Clock } from '../session/clock.js'
import { BFD_CONTROL_PORT, BfdPacketError, decodeControl } from './codec.js'
import { PolledReceiver, peerKey, type DatagramHandler } from './polled-receiver.js'
import { BfdSession, type BfdChange, type BfdSessionSpec, type BfdSessionStatus } from './session.js'

export interface BfdServiceOptions {
  readonly logger: Logger
  readonly clock?: Clock
  /** Receive port; 3784 unless a test needs another. */
  readonly port?: number
  /** The peers' receive port; 3784 unless a test runs both ends in one namespace. */
  readonly peerPort?: number
  readonly random?: () => number
}

export type BfdListener = (status: BfdSessionStatus, change: BfdChange) => void

export interface BfdCounters {
  /** Datagrams dropped before any session saw them (bad packet, no session). */
  readonly discarded: number
  /** Wakeups of the tick that drives every session. */
  readonly ticks: number
}

/**
 * How long a received packet may wait in the socket's queue at most: the tick runs at least this
 * often while there are sessions. A packet's arrival time comes from the kernel, so waiting delays
 * only the answer to it (a state change, a Final), never the detection deadline.
 */
export const RECEIVE_POLL_MS = 100

const sameSpec = (a: BfdSessionSpec, b: BfdSessionSpec): boolean =>
  a.peerAddress === b.peerAddress && a.localAddress === b.localAddress && a.family === b.family

export class BfdService {
  private readonly sessions = new Map<string, BfdSession>()
  private readonly byDiscr = new Map<number, BfdSession>()
  private readonly peerKeys = new Map<BfdSession, string>()
  private readonly receivers = new Map<'ipv4' | 'ipv6', PolledReceiver>()
  private readonly listeners = new Set<BfdListener>()
  private readonly log: Logger
  private readonly clock: Clock
  private discarded = 0
  private ticks = 0
  private timer: unknown
  private timerAt = Infinity
  private ticking = false
  private tickDraw = 0
  private readonly random: () => number

  constructor(private readonly opts: BfdServiceOptions) {
    this.log = opts.logger.child({ component: 'bfd' })
    this.clock = opts.clock ?? systemClock
    this.random = opts.random ?? Math.random
  }

  onChange(listener: BfdListener): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /** Makes the sessions those of `specs` (keyed by name): new ones start, changed intervals poll, gone ones stop. */
  async setSessions(specs: readonly BfdSessionSpec[]): Promise<{ added: string[]; removed: string[]; updated: string[] }> {
    const want = new Map(specs.map((s) => [s.name, s]))
    const added: string[] = []
    const removed: string[] = []
    const updated: string[] = []
    for (const [name, session] of [...this.sessions]) {
      const spec = want.get(name)
      if (spec === undefined || !sameSpec(spec, session.sessionSpec)) {
        this.remove(name)
        removed.push(name)
      }
    }
    for (const spec of specs) {
      const current = this.sessions.get(spec.name)
      if (current) {
        if (JSON.stringify(current.sessionSpec.params) !== JSON.stringify(spec.params)) {
          current.update(spec)
          updated.push(spec.name)
        }
        continue
      }
      this.receiver(spec.family)
      let discr = randomInt(1, 0xffffffff)
      while (this.byDiscr.has(discr)) discr = randomInt(1, 0xffffffff)
      const session = new BfdSession(spec, discr, {
        clock: this.clock,
        log: this.log.child({ bfd: spec.name, peer: spec.peerAddress }),
        // Within a tick every session draws the same jitter, so the sessions that send together stay
        // together and the tick runs once per (jittered) interval, not at the earliest of N draws.
        random: () => (this.ticking ? this.tickDraw : this.random()),
        onChange: (s, change) => {
          for (const l of this.listeners) l(s.status(), change)
        },
        reschedule: () => this.plan(),
        peerPort: this.opts.peerPort ?? BFD_CONTROL_PORT,
      })
      this.sessions.set(spec.name, session)
      this.peerKeys.set(session, peerKey(spec.peerAddress))
      this.byDiscr.set(discr, session)
      try {
        await session.start()
      } catch (err) {
        this.remove(spec.name)
        throw err
      }
      added.push(spec.name)
    }
    return { added, removed, updated }
  }

  status(): BfdSessionStatus[] {
    return [...this.sessions.values()].map((s) => s.status())
  }

  session(name: string): BfdSessionStatus | undefined {
    return this.sessions.get(name)?.status()
  }

  get counters(): BfdCounters {
    return { discarded: this.discarded, ticks: this.ticks }
  }

  async close(): Promise<void> {
    for (const name of [...this.sessions.keys()]) this.remove(name)
    for (const r of this.receivers.values()) r.close()
    this.receivers.clear()
    this.clock.clearTimeout(this.timer)
    this.timer = undefined
    this.timerAt = Infinity
  }

  private remove(name: string): void {
    const s = this.sessions.get(name)
    if (!s) return
    s.close()
    this.sessions.delete(name)
    this.byDiscr.delete(s.localDiscr)
    this.peerKeys.delete(s)
  }

  private receiver(family: 'ipv4' | 'ipv6'): PolledReceiver {
    let r = this.receivers.get(family)
    if (!r) {
      r = new PolledReceiver(family, this.opts.port ?? BFD_CONTROL_PORT)
      this.receivers.set(family, r)
    }
    return r
  }

  /** Sets the one timer to the earliest deadline of any session, and to RECEIVE_POLL_MS at the latest. */
  private plan(): void {
    if (this.ticking) return
    const now = this.clock.now()
    let at = this.sessions.size > 0 ? now + RECEIVE_POLL_MS : Infinity
    for (const s of this.sessions.values()) at = Math.min(at, s.nextDeadline)
    if (at === this.timerAt && this.timer !== undefined) return
    this.clock.clearTimeout(this.timer)
    this.timer = undefined
    this.timerAt = at
    if (at === Infinity) return
    this.timer = this.clock.setTimeout(() => {
      this.timer = undefined
      this.timerAt = Infinity
      this.tick()
    }, Math.max(0, at - now))
  }

  private tick(): void {
    this.ticks++
    this.ticking = true
    this.tickDraw = this.random()
    try {
      const now = this.clock.now()
      for (const r of this.receivers.values()) {
        try {
          r.drain(now, this.onDatagram)
        } catch (err) {
          this.log.warn({ err: (err as Error).message }, `BFD ${r.family}: reading the receive socket failed`)
        }
      }
      for (const s of this.sessions.values()) s.tick(now)
    } finally {
      this.ticking = false
    }
    this.plan()
  }

  private readonly onDatagram: DatagramHandler = (msg, fromKey, receiver, at) => {
    let packet
    try {
      packet = decodeControl(msg)
    } catch (err) {
      this.discarded++
      if (err instanceof BfdPacketError) this.log.debug({ from: receiver.sender() }, err.message)
      return
    }
    let session: BfdSession | undefined
    if (packet.yourDiscriminator !== 0) session = this.byDiscr.get(packet.yourDiscriminator)
    else for (const [s, key] of this.peerKeys) if (key === fromKey) session = s
    // §6.8.6: a Your Discriminator we did not hand out, or one of another peer's session, is discarded.
    if (!session || this.peerKeys.get(session) !== fromKey) {
      this.discarded++
      return
    }
    session.receive(packet, at)
  }
}
