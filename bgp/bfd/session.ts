// One BFD session's shell: runs the pure FSM (fsm.ts) and owns the session's transmit socket (a source
// port in 49152–65535, TTL 255). It keeps no timers of its own: it says when it next needs the clock
// (its periodic transmit window, §6.8.7 jitter applied, and its detection deadline) and the service's one
// tick calls it then, so sessions that are due together share a wakeup. It does not receive either: the
// service reads port 3784 and hands it the packets addressed to it, with the time each arrived.

import { EADDRINUSE, SocketOptionError, closeFd, connectUdp, errnoText, openPolledUdp, sendDatagram } from '../session/socket-options.js'
import type { Logger } from 'pino'
import type { Clock } from '../session/clock.js'
import { BFD_SOURCE_PORT_MAX, BFD_SOURCE_PORT_MIN, describeDiag, encodeControl, type BfdControlPacket, type BfdStateName } from './codec.js'
import { controlPacket, detectTimeUs, initialBfdState, jitteredUs, stepBfd, txIntervalUs, type BfdAction, type BfdEvent, type BfdParameters, type BfdState } from './fsm.js'

export interface BfdSessionSpec {
  /** The BGP peer this session watches. */
  readonly name: string
  readonly peerAddress: string
  readonly localAddress: string
  readonly family: 'ipv4' | 'ipv6'
  readonly params: BfdParameters
}

export interface BfdChange {
  readonly from: BfdStateName
  readonly to: BfdStateName
  readonly diag: number
  readonly remoteState: BfdStateName
  readonly reason: string
}

export interface BfdSessionStatus {
  readonly name: string
  readonly peerAddress: string
  readonly localAddress: string
  readonly sourcePort: number | undefined
  readonly state: BfdStateName
  readonly remoteState: BfdStateName
  readonly localDiscriminator: number
  readonly remoteDiscriminator: number
  readonly localDiag: string
  readonly remoteDiag: string
  readonly lastDownDiag: string | undefined
  readonly desiredMinTxMs: number
  readonly requiredMinRxMs: number
  readonly detectMult: number
  readonly remoteMinRxMs: number
  readonly remoteDesiredMinTxMs: number
  readonly remoteDetectMult: number
  /** The interval packets go out at now and the detection time in force, before jitter. */
  readonly txIntervalMs: number
  readonly detectTimeMs: number
  readonly since: number
  readonly reason: string
  readonly packetsSent: number
  readonly packetsReceived: number
  readonly upTransitions: number
  readonly sendErrors: number
}

export interface BfdSessionDeps {
  readonly clock: Clock
  readonly log: Logger
  readonly random: () => number
  readonly onChange: (session: BfdSession, change: BfdChange) => void
  /** The session's next deadline may have moved earlier: the service re-plans its tick. */
  readonly reschedule: () => void
  /** The peer's control port: 3784 (RFC 5881 §4). */
  readonly peerPort: number
}

/** §6.8.7: a periodic packet goes out no sooner than 75 % of the interval after the one before. */
const EARLIEST_FRACTION = 0.75

export class BfdSession {
  private state: BfdState
  /** The transmit socket's descriptor: outside the event loop, it is only ever written. */
  private socket: number | undefined
  private sourcePort: number | undefined
  private txIntervalUsNow = 0
  /** The periodic packet may go from txEarliest on and must by txDue (its jittered time); Infinity: none. */
  private txEarliest = Infinity
  private txDue = Infinity
  private detectDeadline = Infinity
  /** When the event being dispatched happened: a packet's arrival, else now. */
  private eventAt = 0
  private encoded: { readonly packet: BfdControlPacket; readonly bytes: Buffer } | undefined
  private since: number
  private lastDownDiag: number | undefined
  private counters = { packetsSent: 0, packetsReceived: 0, upTransitions: 0, sendErrors: 0 }
  private closed = false

  constructor(
    private spec: BfdSessionSpec,
    localDiscr: number,
    private readonly deps: BfdSessionDeps,
  ) {
    this.state = initialBfdState(localDiscr, spec.params)
    this.since = deps.clock.now()
  }

  get name(): string {
    return this.spec.name
  }
  get sessionSpec(): BfdSessionSpec {
    return this.spec
  }
  get localDiscr(): number {
    return this.state.localDiscr
  }
  get stateName(): BfdStateName {
    return this.state.session
  }

  /** Binds the transmit socket and starts sending (slowly, §6.8.3, until Up). */
  async start(): Promise<void> {
    const { fd, port } = bindSource(this.spec, this.deps.peerPort)
    this.socket = fd
    this.sourcePort = port
    if (this.closed) return this.close()
    this.eventAt = this.deps.clock.now()
    this.apply([{ type: 'send', packet: controlPacket(this.state) }, { type: 'txInterval', us: txIntervalUs(this.state), detectMult: this.state.params.detectMult }])
  }

  /** New intervals or multiplier: applied through a Poll Sequence when Up. */
  update(spec: BfdSessionSpec): void {
    this.spec = spec
    this.dispatch({ type: 'SetParameters', params: spec.params }, this.deps.clock.now())
  }

  /** A packet for this session that arrived at `at` (kernel time; it may have waited in the queue). */
  receive(packet: BfdControlPacket, at: number): void {
    this.counters.packetsReceived++
    this.dispatch({ type: 'Received', packet }, at)
  }

  /** When the session next needs tick(): its transmit time or its detection deadline; Infinity if never. */
  get nextDeadline(): number {
    return Math.min(this.txDue, this.detectDeadline)
  }

  /**
   * The service's tick, after it read every queued packet: the detection deadline if it has passed, and
   * the periodic packet if its window has opened (so it leaves with the others due in this tick).
   */
  tick(now: number): void {
    if (this.closed) return
    if (this.detectDeadline <= now) {
      this.detectDeadline = Infinity
      this.dispatch({ type: 'DetectTimerExpired' }, now)
    }
    if (this.txEarliest <= now) {
      this.txEarliest = this.txDue = Infinity
      this.dispatch({ type: 'TxTimerExpired' }, now)
    }
  }

  close(): void {
    this.closed = true
    this.txEarliest = this.txDue = this.detectDeadline = Infinity
    if (this.socket) {
      // RFC 5880 §6.8.16: tell the peer this end is going administratively down, not failing.
      this.dispatch({ type: 'AdminDown' }, this.deps.clock.now())
      closeFd(this.socket)
      this.socket = undefined
    }
  }

  status(): BfdSessionStatus {
    const s = this.state
    return {
      name: this.spec.name,
      peerAddress: this.spec.peerAddress,
      localAddress: this.spec.localAddress,
      sourcePort: this.sourcePort,
      state: s.session,
      remoteState: s.remoteSession,
      localDiscriminator: s.localDiscr,
      remoteDiscriminator: s.remoteDiscr,
      localDiag: describeDiag(s.localDiag),
      remoteDiag: describeDiag(s.remoteDiag),
      lastDownDiag: this.lastDownDiag === undefined ? undefined : describeDiag(this.lastDownDiag),
      desiredMinTxMs: s.desiredMinTxUs / 1000,
      requiredMinRxMs: s.requiredMinRxUs / 1000,
      detectMult: s.params.detectMult,
      remoteMinRxMs: s.remoteMinRxUs / 1000,
      remoteDesiredMinTxMs: s.remoteDesiredMinTxUs / 1000,
      remoteDetectMult: s.remoteDetectMult,
      txIntervalMs: txIntervalUs(s) / 1000,
      detectTimeMs: detectTimeUs(s) / 1000,
      since: this.since,
      reason: s.reason,
      ...this.counters,
    }
  }

  private dispatch(event: BfdEvent, at: number): void {
    this.eventAt = at
    const { next, actions } = stepBfd(this.state, event)
    this.state = next
    this.apply(actions)
  }

  private apply(actions: readonly BfdAction[]): void {
    for (const a of actions) {
      switch (a.type) {
        case 'send':
          this.send(a.packet)
          break
        case 'txInterval':
          this.armTx(a.us, a.detectMult)
          break
        case 'detectTime':
          this.armDetect(a.us)
          break
        case 'state': {
          this.since = this.deps.clock.now()
          if (a.to === 'Up') this.counters.upTransitions++
          if (a.to === 'Down' && a.from !== 'Down') this.lastDownDiag = a.diag
          this.deps.log.info({ from: a.from, to: a.to, diag: describeDiag(a.diag), remoteState: a.remoteState }, `BFD ${a.from} -> ${a.to}: ${a.reason}`)
          this.deps.onChange(this, a)
          break
        }
        default: {
          const never: never = a
          throw new Error(`unknown BFD action ${JSON.stringify(never)}`)
        }
      }
    }
  }

  private send(packet: BfdControlPacket): void {
    if (!this.socket) return
    this.counters.packetsSent++
    // The periodic packet repeats the one before until the state changes: encoded once, sent as is.
    if (this.encoded === undefined || !sameControl(this.encoded.packet, packet)) this.encoded = { packet, bytes: encodeControl(packet) }
    const errno = sendDatagram(this.socket, this.encoded.bytes)
    if (errno !== 0) {
      // The peer's ICMP port unreachable comes back here as ECONNREFUSED, once: counted, not logged each time.
      if (this.counters.sendErrors++ === 0) this.deps.log.warn({ errno }, `BFD send failed: ${errnoText(errno)}`)
    }
  }

  /** The periodic schedule, moved only when the interval changes (sooner if the new one is shorter). */
  private armTx(us: number, detectMult: number): void {
    if (us === 0 || this.closed) {
      this.txEarliest = this.txDue = Infinity
      this.txIntervalUsNow = 0
      return
    }
    if (this.txDue !== Infinity && us === this.txIntervalUsNow) return
    const now = this.deps.clock.now()
    const due = now + jitteredUs(us, detectMult, this.deps.random()) / 1000
    this.txIntervalUsNow = us
    if (this.txDue !== Infinity && this.txDue <= due) return
    this.txEarliest = now + (us * EARLIEST_FRACTION) / 1000
    this.txDue = due
    this.deps.reschedule()
  }

  /** The deadline counts from the packet's arrival, not from when it was read. */
  private armDetect(us: number): void {
    if (us === 0 || this.closed) {
      this.detectDeadline = Infinity
      return
    }
    const before = this.detectDeadline
    this.detectDeadline = this.eventAt + us / 1000
    if (this.detectDeadline < before) this.deps.reschedule()
  }
}

function sameControl(a: BfdControlPacket, b: BfdControlPacket): boolean {
  return a.diag === b.diag && a.state === b.state && a.poll === b.poll && a.final === b.final && a.demand === b.demand &&
    a.controlPlaneIndependent === b.controlPlaneIndependent && a.detectMult === b.detectMult &&
    a.myDiscriminator === b.myDiscriminator && a.yourDiscriminator === b.yourDiscriminator &&
    a.desiredMinTxInterval === b.desiredMinTxInterval && a.requiredMinRxInterval === b.requiredMinRxInterval &&
    a.requiredMinEchoRxInterval === b.requiredMinEchoRxInterval
}

/**
 * A socket on the local address and a free source port of 49152–65535, sending with TTL 255 to the
 * peer's control port (RFC 5881 §4, §5). Datagrams sent to the source port are not BFD and are never
 * read; the kernel drops them when the small queue is full.
 */
function bindSource(spec: BfdSessionSpec, peerPort: number): { fd: number; port: number } {
  const span = BFD_SOURCE_PORT_MAX - BFD_SOURCE_PORT_MIN + 1
  const first = BFD_SOURCE_PORT_MIN + Math.floor(Math.random() * span)
  const family = spec.family === 'ipv6' ? 6 : 4
  const what = `BFD ${spec.name} transmit socket`
  let lastError: Error | undefined
  for (let i = 0; i < 64; i++) {
    const port = BFD_SOURCE_PORT_MIN + ((first - BFD_SOURCE_PORT_MIN + i * 997) % span)
    let fd: number
    try {
      fd = openPolledUdp(family, spec.localAddress, port, what)
    } catch (err) {
      lastError = err as Error
      if (err instanceof SocketOptionError && err.errno === EADDRINUSE) continue
      break
    }
    try {
      connectUdp(fd, family, spec.peerAddress, peerPort, what)
      return { fd, port }
    } catch (err) {
      closeFd(fd)
      throw err
    }
  }
  throw new Error(`BFD ${spec.name}: no source port on ${spec.localAddress} in ${BFD_SOURCE_PORT_MIN}–${BFD_SOURCE_PORT_MAX}: ${lastError?.message}`)
}
