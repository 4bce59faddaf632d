// One BFD session's shell: runs the pure FSM (fsm.ts), owns the session's transmit socket (a source port
// in 49152–65535, TTL 255) and its two timers through the injected clock, with §6.8.7 jitter. It does
// not receive: the service's port-3784 sockets hand it the packets addressed to it.

import { createSocket, type Socket } from 'node:dgram'
import type { Logger } from 'pino'
import type { Clock } from '../session/clock.js'
import { BFD_CONTROL_PORT, BFD_SOURCE_PORT_MAX, BFD_SOURCE_PORT_MIN, describeDiag, encodeControl, type BfdControlPacket, type BfdStateName } from './codec.js'
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
}

export class BfdSession {
  private state: BfdState
  private socket: Socket | undefined
  private sourcePort: number | undefined
  private txTimer: unknown
  private txIntervalUsNow = 0
  private txFiresAt = 0
  private detectTimer: unknown
  private detectDeadline = 0
  private detectFiresAt = 0
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
    this.socket = await bindSource(this.spec)
    this.sourcePort = this.socket.address().port
    this.socket.on('error', (err) => this.deps.log.warn({ err: err.message }, 'BFD transmit socket error'))
    // Datagrams sent to the source port are not BFD (§4 of RFC 5881 sends to 3784): read and dropped.
    this.socket.on('message', () => undefined)
    if (this.closed) return this.close()
    this.apply([{ type: 'send', packet: controlPacket(this.state) }, { type: 'txInterval', us: txIntervalUs(this.state), detectMult: this.state.params.detectMult }])
  }

  /** New intervals or multiplier: applied through a Poll Sequence when Up. */
  update(spec: BfdSessionSpec): void {
    this.spec = spec
    this.dispatch({ type: 'SetParameters', params: spec.params })
  }

  receive(packet: BfdControlPacket): void {
    this.counters.packetsReceived++
    this.dispatch({ type: 'Received', packet })
  }

  close(): void {
    this.closed = true
    this.deps.clock.clearTimeout(this.txTimer)
    this.deps.clock.clearTimeout(this.detectTimer)
    this.txTimer = this.detectTimer = undefined
    if (this.socket) {
      // RFC 5880 §6.8.16: tell the peer this end is going administratively down, not failing.
      this.dispatch({ type: 'AdminDown' })
      this.socket.close()
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

  private dispatch(event: BfdEvent): void {
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
    this.socket.send(encodeControl(packet), (err) => {
      if (err) this.counters.sendErrors++
    })
  }

  /** Re-armed when the interval changes (sooner if the new one is shorter), never by each packet received. */
  private armTx(us: number, detectMult: number): void {
    const clock = this.deps.clock
    if (us === 0 || this.closed) {
      clock.clearTimeout(this.txTimer)
      this.txTimer = undefined
      this.txIntervalUsNow = 0
      return
    }
    const at = clock.now() + jitteredUs(us, detectMult, this.deps.random()) / 1000
    if (this.txTimer !== undefined && us === this.txIntervalUsNow) return
    if (this.txTimer !== undefined && this.txFiresAt <= at) {
      this.txIntervalUsNow = us
      return
    }
    clock.clearTimeout(this.txTimer)
    this.txIntervalUsNow = us
    this.txFiresAt = at
    this.txTimer = clock.setTimeout(() => {
      this.txTimer = undefined
      this.dispatch({ type: 'TxTimerExpired' })
    }, Math.max(0, at - clock.now()))
  }

  /** One timer; a packet received only moves the deadline, the timer re-arms itself if it fires early. */
  private armDetect(us: number): void {
    const clock = this.deps.clock
    if (us === 0 || this.closed) {
      clock.clearTimeout(this.detectTimer)
      this.detectTimer = undefined
      return
    }
    this.detectDeadline = clock.now() + us / 1000
    if (this.detectTimer !== undefined && this.detectFiresAt <= this.detectDeadline) return
    this.armDetectAt(this.detectDeadline)
  }

  private armDetectAt(at: number): void {
    const clock = this.deps.clock
    clock.clearTimeout(this.detectTimer)
    this.detectFiresAt = at
    this.detectTimer = clock.setTimeout(() => {
      this.detectTimer = undefined
      if (this.detectDeadline > clock.now()) return this.armDetectAt(this.detectDeadline)
      this.dispatch({ type: 'DetectTimerExpired' })
    }, Math.max(0, at - clock.now()))
  }
}

/** A socket on the local address and a free source port of 49152–65535, sending with TTL 255 (RFC 5881 §4, §5). */
async function bindSource(spec: BfdSessionSpec): Promise<Socket> {
  const span = BFD_SOURCE_PORT_MAX - BFD_SOURCE_PORT_MIN + 1
  const first = BFD_SOURCE_PORT_MIN + Math.floor(Math.random() * span)
  let lastError: Error | undefined
  for (let i = 0; i < 64; i++) {
    const port = BFD_SOURCE_PORT_MIN + ((first - BFD_SOURCE_PORT_MIN + i * 997) % span)
    const socket = createSocket({ type: spec.family === 'ipv6' ? 'udp6' : 'udp4', ipv6Only: spec.family === 'ipv6' })
    try {
      await new Promise<void>((resolve, reject) => {
        socket.once('error', reject)
        socket.bind(port, spec.localAddress, () => {
          socket.off('error', reject)
          resolve()
        })
      })
      socket.setTTL(255)
      // Connected to the peer's control port: each send skips the address lookup.
      await new Promise<void>((resolve, reject) => {
        socket.once('error', reject)
        socket.connect(BFD_CONTROL_PORT, spec.peerAddress, () => {
          socket.off('error', reject)
          resolve()
        })
      })
      return socket
    } catch (err) {
      lastError = err as Error
      socket.close()
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') break
    }
  }
  throw new Error(`BFD ${spec.name}: no source port on ${spec.localAddress} in ${BFD_SOURCE_PORT_MIN}–${BFD_SOURCE_PORT_MAX}: ${lastError?.message}`)
}
