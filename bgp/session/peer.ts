// The peer shell: one peer's session, wiring the pure FSM to its transport, timers, UPDATE receiver and
// sender, and graceful-restart state. Every state change is an FSM step, logged once with its event and
// reason; the shell turns messages into events and actions into I/O, and makes no protocol decision itself.

import type { Socket } from 'node:net'
import type { Logger } from 'pino'
import {
  BgpError,
  CeaseSubcode,
  ErrorCode,
  RouteRefreshSubtype,
  codecOptions,
  describeNotification,
  encodeMessage,
  notification,
  type BgpMessage,
  type NotificationMessage,
  type OpenMessage,
} from '../codec/index.js'
import type { AdvertisedRoute, RibPeer } from '../rib/types.js'
import type { Clock } from './clock.js'
import { initialState, step, type FsmAction, type FsmConfig, type FsmEvent, type FsmState } from './fsm.js'
import { GracefulRestart } from './graceful-restart.js'
import type { Negotiated } from './negotiate.js'
import { fsmConfigFor, ribPeerFor, type ResolvedPeerConfig } from './peer-config.js'
import { familyName, newCounters, peerStatus, type PeerCounters, type PeerStatus } from './peer-status.js'
import { PeerTimers } from './peer-timers.js'
import { PeerTransport, collisionVerdict } from './peer-transport.js'
import type { Refusals } from './refusals.js'
import type { RibPort } from './rib-port.js'
import { UpdateReceiver } from './update-receiver.js'
import { UpdateSender } from './update-sender.js'

export type { PeerCounters, PeerStatus } from './peer-status.js'

/** One FSM state change, with the RFC 4271 §8 event that caused it and the FSM's reason. */
export interface PeerTransition {
  readonly from: FsmState['name']
  readonly to: FsmState['name']
  readonly event: string
  readonly reason: string
  readonly at: number
}

export interface PeerDeps {
  readonly rib: RibPort
  readonly clock: Clock
  readonly log: Logger
  readonly routerId: string
  readonly peerId: number
  /** We restarted within the graceful-restart window: say so in our OPEN (R bit). */
  readonly restarting: () => boolean
  /** While true, End-of-RIB waits: the owner has not originated everything yet (RFC 4724 §4.1). */
  readonly holdEndOfRib?: () => boolean
  readonly onStateChange?: (peer: BgpPeer) => void
  /** Every FSM state change (the speaker keeps a ring of them). */
  readonly onTransition?: (t: PeerTransition) => void
}

export class BgpPeer {
  private state: FsmState
  private fsmConfig: FsmConfig
  private since: number
  private lastError: string | undefined
  /** The RIB's view of this peer while Established. */
  private ribPeer: RibPeer | undefined
  /** The terms of the last Established session: the FSM forgets them on the way down. */
  private lastSession: Negotiated | undefined
  /** BFD saw the path to the peer fail: stopped with a Cease (BFD Down, RFC 9384), Idle until bfdUp. */
  private heldByBfd = false
  readonly counters: PeerCounters = newCounters()
  private readonly timers: PeerTimers
  private readonly transport: PeerTransport
  private readonly receiver: UpdateReceiver
  private readonly sender: UpdateSender
  private readonly restart: GracefulRestart

  constructor(
    private config: ResolvedPeerConfig,
    private readonly deps: PeerDeps,
  ) {
    this.fsmConfig = this.makeFsmConfig()
    this.state = initialState(this.fsmConfig)
    this.since = deps.clock.now()
    this.lastError = config.transportError
    this.timers = new PeerTimers(deps.clock, (event) => this.dispatch(event))
    this.transport = new PeerTransport(() => this.config, () => this.state.session?.rx ?? codecOptions(), deps.clock, deps.log, {
      connected: () => this.dispatch({ type: 'TcpConnectionConfirmed' }),
      failed: (reason) => this.dispatch({ type: 'TcpConnectionFails', reason }),
      message: (msg) => this.onMessage(msg),
      malformed: (error, what) => this.malformed(error, what),
      read: () => this.onRead(),
      drained: () => {
        this.timers.clear('SendHold')
        this.sender.pump()
      },
      collision: (open) => this.resolveCollision(open),
      problem: (text) => {
        this.lastError = text
      },
    })
    this.restart = new GracefulRestart(deps.rib, this.timers, deps.log)
    this.receiver = new UpdateReceiver({
      rib: deps.rib,
      clock: deps.clock,
      log: deps.log,
      counters: this.counters,
      config: () => this.config,
      endOfRib: (f) => this.restart.endOfRib(f),
      problem: (text) => {
        this.lastError = text
      },
      limitReached: (n, idleHoldTime) => this.dispatch({ type: 'AutomaticStop', notification: n, idleHoldTime }),
    })
    this.sender = new UpdateSender({
      log: deps.log,
      counters: this.counters,
      wire: { queued: () => this.transport.queued, write: (bytes, messages) => this.write(bytes, messages), send: (m) => this.sendControl(m) },
      ...(deps.holdEndOfRib ? { holdEndOfRib: deps.holdEndOfRib } : {}),
    })
  }

  get name(): string {
    return this.config.name
  }

  get address(): string {
    return this.config.address
  }

  get stateName(): FsmState['name'] {
    return this.state.name
  }

  get session(): Negotiated | undefined {
    return this.state.session
  }

  get resolvedConfig(): ResolvedPeerConfig {
    return this.config
  }

  /** The RIB's view of this peer while Established. */
  get currentRibPeer(): RibPeer | undefined {
    return this.ribPeer
  }

  /** The routes in this peer's Adj-RIB-Out (advertised or queued to be), as sent; undefined unless Established. */
  advertised(): Iterable<AdvertisedRoute> | undefined {
    return this.ribPeer === undefined ? undefined : this.sender.entries()
  }

  /** UPDATE sections refused, by kind (validation, RFC 8212, RFC 7606). */
  get refusals(): Refusals {
    return this.receiver.refusals
  }

  private makeFsmConfig(): FsmConfig {
    return fsmConfigFor(this.config, this.deps.routerId, this.deps.restarting())
  }

  /** Applies a configuration that needs no session reset (policies, limits, names). */
  reconfigure(config: ResolvedPeerConfig): void {
    this.config = config
    this.fsmConfig = this.makeFsmConfig()
  }

  start(reason?: string): void {
    this.dispatch({ type: 'ManualStart', ...(reason !== undefined ? { reason } : {}) })
  }

  /**
   * Stops the session: with a NOTIFICATION (Cease), or `graceful`, silently, so the peer keeps our routes
   * as stale until we are back (RFC 4724 §4.2). `reason` is what the transition log shows.
   */
  stop(opts: { graceful?: boolean; notification?: NotificationMessage; reason?: string } = {}): void {
    this.dispatch({
      type: 'ManualStop',
      ...(opts.graceful ? { graceful: true } : {}),
      ...(opts.notification ? { notification: opts.notification } : {}),
      ...(opts.reason !== undefined ? { reason: opts.reason } : {}),
    })
    this.transport.closeAll()
    this.timers.clearAll()
    if (!opts.graceful && this.restart.drop()) this.deps.rib.flush()
  }

  /** RFC 5882 §4.1: BFD Down tears the session down at once; it stays down until BFD is Up again. */
  bfdDown(reason: string): void {
    if (this.heldByBfd) return
    this.heldByBfd = true
    const why = `BFD down: ${reason}`
    if (this.state.name === 'Idle') this.deps.log.warn(`${why}: the session stays Idle until BFD is up`)
    this.stop({ notification: notification(ErrorCode.CEASE, CeaseSubcode.BFD_DOWN), reason: why })
    this.lastError = why
  }

  bfdUp(): void {
    if (!this.heldByBfd) return
    this.heldByBfd = false
    this.start('BFD is up again')
  }

  get bfdHeld(): boolean {
    return this.heldByBfd
  }

  /** Sends ROUTE-REFRESH for every negotiated family (soft reset in). */
  refreshIn(): boolean {
    const s = this.state.session
    if (this.state.name !== 'Established' || !s?.routeRefresh) return false
    for (const f of s.families) this.sendControl({ type: 'route-refresh', afi: f >> 8, safi: f & 255, subtype: RouteRefreshSubtype.NORMAL })
    return true
  }

  /** Established, and the peer has sent End-of-RIB for every family: its initial table is in. */
  get synced(): boolean {
    const s = this.state.session
    return this.state.name === 'Established' && s !== undefined && this.receiver.synced(s.families)
  }

  /** Sends what is pending now (used when End-of-RIB is released). */
  flushOut(): void {
    this.sender.pump()
  }

  /** Re-advertises everything to the peer (soft reset out). */
  refreshOut(): void {
    this.sender.refreshOut()
  }

  /** An incoming connection for this peer, handed over by the speaker's listener. */
  acceptConnection(socket: Socket): void {
    const name = this.state.name
    if (name === 'Idle') {
      this.deps.log.info({ remote: socket.remoteAddress }, 'refusing a connection while Idle')
      socket.destroy()
      return
    }
    if (!this.transport.admit(socket)) return
    if (name === 'Connect' || name === 'Active') this.transport.accept(socket)
    // OpenSent, OpenConfirm or Established: a second connection; §6.8 decides once its OPEN names the peer.
    else this.transport.hold(socket)
  }

  setListenerProblem(problem: string | undefined): void {
    this.transport.setListenerProblem(problem)
  }

  status(): PeerStatus {
    return peerStatus({
      config: this.config,
      state: this.state,
      since: this.since,
      lastError: this.lastError,
      counters: this.counters,
      refused: this.receiver.refusals.snapshot(),
      disabledFamilies: this.state.name === 'Established' ? this.receiver.disabledFamilies : [],
      counts: this.ribPeer ? this.deps.rib.counts(this.ribPeer) : { received: 0, accepted: 0 },
      advertised: this.sender.advertised,
    })
  }

  // ---- the FSM ----------------------------------------------------------------------------------

  private dispatch(event: FsmEvent): void {
    const before = this.state.name
    const result = step(this.state, event, this.fsmConfig)
    this.state = result.state
    if (result.state.name !== before) {
      this.since = this.deps.clock.now()
      this.deps.log.info({ from: before, to: result.state.name, event: event.type }, result.state.reason)
      this.deps.onTransition?.({ from: before, to: result.state.name, event: event.type, reason: result.state.reason, at: this.since })
      this.deps.onStateChange?.(this)
    }
    for (const action of result.actions) this.perform(action)
  }

  private perform(action: FsmAction): void {
    switch (action.type) {
      case 'connect':
        this.transport.connect()
        return
      case 'send':
        this.sendControl(action.message)
        return
      case 'drop':
        // In Connect the retry timer fired on a connect still waiting: the transport says it timed out.
        this.transport.drop(this.state.name === 'Connect')
        this.timers.clear('SendHold')
        return
      case 'adopt':
        this.transport.adoptIncoming()
        return
      case 'timer':
        this.timers.set(action.timer, action.seconds)
        return
      case 'established':
        this.onEstablished(action.session)
        return
      case 'down':
        this.onDown(action.reason, action.sentNotification ?? action.receivedNotification, action.localStop === true)
        return
      default: {
        const never: never = action
        return never
      }
    }
  }

  /** A second connection's OPEN arrived: §6.8 (or RFC 4724 §4.2 while Established) says which connection stays. */
  private resolveCollision(open: OpenMessage): void {
    const verdict = collisionVerdict(this.state.name, this.state.session?.peerGracefulRestart !== undefined, this.deps.routerId, open, this.transport.outgoing)
    if (verdict.take) this.dispatch({ type: 'TakeOverConnection', open, reason: verdict.reason })
    else this.transport.refuseIncoming(verdict.reason)
  }

  // ---- messages ---------------------------------------------------------------------------------

  private write(bytes: Uint8Array, messages = 1): void {
    const r = this.transport.write(bytes)
    if (r === 'closed') return
    this.counters.messagesOut += messages
    if (r === 'full' && !this.timers.running('SendHold')) {
      // RFC 9687: the peer must read within max(8 minutes, 2 × hold time).
      const hold = this.state.session?.holdTime ?? 90
      if (hold > 0) this.timers.start('SendHold', Math.max(480, 2 * hold) * 1000, () => this.dispatch({ type: 'SendHoldTimer_Expires' }))
    }
  }

  private sendControl(message: BgpMessage): void {
    this.write(encodeMessage(message, this.state.session?.tx ?? codecOptions()))
    if (message.type === 'keepalive') this.counters.keepalivesOut++
    else if (message.type === 'notification') {
      this.counters.notificationsOut++
      this.lastError = `sent ${describeNotification(message)}`
    } else if (message.type === 'route-refresh') this.counters.routeRefreshOut++
    else if (message.type === 'update') this.counters.updatesOut++
  }

  /** A malformed message: the FSM's error event, with what went wrong as the last error. */
  private malformed(error: BgpError, what: 'header' | 'open' | 'message'): void {
    this.lastError = `received ${what === 'header' ? 'a bad message header' : 'a malformed message'}: ${error.message}`
    this.dispatch({ type: what === 'header' ? 'BGPHeaderErr' : what === 'open' ? 'BGPOpenMsgErr' : 'UpdateMsgErr', error })
  }

  /** Whether an UPDATE of this read changed the RIB: it is flushed once the read is handled. */
  private ribChanged = false

  private onRead(): void {
    if (!this.ribChanged) return
    this.ribChanged = false
    this.deps.rib.flush()
  }

  /** One message received: counted, an FSM event, and UPDATEs on to the RIB. */
  private onMessage(msg: BgpMessage): void {
    this.counters.messagesIn++
    switch (msg.type) {
      case 'open':
        this.dispatch({ type: 'BGPOpen', open: msg })
        // RFC 8654: larger UPDATEs may follow once both sides advertised extended message.
        this.transport.setExtendedMessage(this.state.session?.extendedMessage === true)
        return
      case 'keepalive':
        this.counters.keepalivesIn++
        this.dispatch({ type: 'KeepAliveMsg' })
        return
      case 'notification':
        this.counters.notificationsIn++
        this.lastError = `received ${describeNotification(msg)}`
        this.dispatch({ type: 'NotifMsg', notification: msg })
        return
      case 'route-refresh': {
        this.counters.routeRefreshIn++
        const established = this.state.name === 'Established'
        this.dispatch({ type: 'UpdateMsg' })
        if (established) this.sender.refreshRequested(msg.afi, msg.safi, msg.subtype)
        return
      }
      case 'update': {
        this.counters.updatesIn++
        const established = this.state.name === 'Established'
        this.dispatch({ type: 'UpdateMsg' })
        const peer = this.ribPeer
        const s = this.state.session
        if (established && peer !== undefined && s !== undefined && this.receiver.receive(peer, s, msg)) this.ribChanged = true
        return
      }
      default: {
        const never: never = msg
        return never
      }
    }
  }

  // ---- session up and down ----------------------------------------------------------------------

  private onEstablished(session: Negotiated): void {
    this.lastSession = session
    this.receiver.reset()
    // Stale routes of the last session are settled before this one's reach the RIB.
    this.restart.established(session)
    const peer = ribPeerFor(() => this.config, session, this.deps.peerId, this.transport.localAddress)
    this.ribPeer = peer
    this.deps.log.info(
      { holdTime: session.holdTime, families: [...session.families].map(familyName), as4: session.as4, addPathSend: [...session.addPathSend].map(familyName) },
      `session established with ${session.peerRouterId}`,
    )
    this.sender.attach(this.deps.rib.attachPeer(peer), session)
  }

  private onDown(reason: string, notif: NotificationMessage | undefined, localStop: boolean): void {
    const peer = this.ribPeer
    if (peer === undefined) {
      if (notif !== undefined) this.lastError = reason
      return
    }
    this.counters.flaps++
    this.lastError = reason
    this.ribPeer = undefined
    this.deps.rib.detachPeer(peer)
    this.sender.detach()
    this.restart.sessionLost(peer, this.lastSession, notif, localStop)
    this.deps.rib.flush()
  }
}
