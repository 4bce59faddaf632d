// The peer shell: owns one peer's TCP connection, timers and write queue, and drives the pure FSM.
// It turns socket bytes into FSM events and RIB calls, and FSM actions into writes, connects,
// timers and session up/down. Keepalives and other control messages never wait behind UPDATEs:
// UPDATEs are pulled from the Adj-RIB-Out only while the socket has room.

import { connect, type Socket } from 'node:net'
import type { Logger } from 'pino'
import {
  Afi,
  BgpError,
  CeaseSubcode,
  ErrorAction,
  ErrorCode,
  Framer,
  RouteRefreshSubtype,
  Safi,
  decodeMessage,
  describeNotification,
  encodeMessage,
  endOfRibUpdate,
  familyKey,
  notification,
  packUpdates,
  reconcileAs4,
  codecOptions,
  type BgpMessage,
  type NotificationMessage,
  type OpenMessage,
  type UpdateMessage,
} from '../codec/index.js'
import { parseIpv4 } from '../codec/ip.js'
import type { AdjRibOut, FamilyKey, PeerSessionInfo, RibPeer } from '../rib/types.js'
import { initialState, step, type FsmAction, type FsmConfig, type FsmEvent, type FsmState, type TimerName } from './fsm.js'
import type { Negotiated } from './negotiate.js'
import { localOpen, type ResolvedPeerConfig } from './peer-config.js'
import type { RibPort } from './rib-port.js'
import type { Clock } from './clock.js'
import { Refusals } from './refusals.js'
import type { Refusal } from '../rib/validate.js'
import { familyName, newCounters, peerStatus, type PeerCounters, type PeerStatus } from './peer-status.js'
import { connectSecured, fdOf, setTtlSecurity } from './socket-options.js'

export type { PeerCounters, PeerStatus } from './peer-status.js'

/** Bytes the socket may hold before we stop pulling UPDATEs (backpressure). */
const HIGH_WATER = 256 * 1024
/** Prefixes taken from the Adj-RIB-Out per pull. */
const PULL = 4000

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
  /** Every FSM state change, with the event and the FSM's reason (the speaker keeps a ring of them). */
  readonly onTransition?: (t: { readonly from: FsmState['name']; readonly to: FsmState['name']; readonly event: string; readonly reason: string; readonly at: number }) => void
}

export class BgpPeer {
  private state: FsmState
  private fsmConfig: FsmConfig
  private socket: Socket | undefined
  private outgoing = false
  private pendingConnect: Socket | undefined
  private framer = new Framer()
  private readonly timers = new Map<TimerName | 'SendHold' | 'Restart', unknown>()
  private since: number
  private lastError: string | undefined
  private ribPeer: RibPeer | undefined
  private adjOut: AdjRibOut | undefined
  /** Families whose initial table has gone out, so End-of-RIB has been sent. */
  private eorSent = new Set<number>()
  /** Families whose End-of-RIB the peer has sent this session. */
  private eorReceived = new Set<number>()
  /** Families disabled by an RFC 7606 AFI/SAFI-disable error for this session. */
  private disabled = new Set<number>()
  /** The peer's graceful-restart terms from the last session, while its stale routes are kept. */
  private staleFrom: RibPeer | undefined
  private maxPrefixWarned = false
  readonly counters: PeerCounters = newCounters()
  /** UPDATE sections refused, by kind (validation, RFC 8212, RFC 7606). */
  readonly refusals = new Refusals()

  constructor(
    private config: ResolvedPeerConfig,
    private readonly deps: PeerDeps,
  ) {
    this.fsmConfig = this.makeFsmConfig()
    this.state = initialState(this.fsmConfig)
    this.since = deps.clock.now()
    this.lastError = config.transportError
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

  private makeFsmConfig(): FsmConfig {
    const c = this.config
    return {
      passive: c.passive,
      connectRetryTime: c.connectRetryTime,
      openHoldTime: 240,
      delayOpenTime: c.delayOpenTime,
      idleHoldMin: 5,
      idleHoldMax: 30,
      expect: { peerAsn: c.peerAsn, localAsn: c.localAsn, localRouterId: this.deps.routerId, holdTime: c.holdTime, keepaliveTime: c.keepaliveTime },
      localOpen: localOpen(c, this.deps.routerId, this.deps.restarting()),
    }
  }

  /** Applies a configuration that needs no session reset (policies, limits, names). */
  reconfigure(config: ResolvedPeerConfig): void {
    this.config = config
    this.fsmConfig = this.makeFsmConfig()
  }

  start(): void {
    this.dispatch({ type: 'ManualStart' })
  }

  /** Stops the session: with a NOTIFICATION (Cease), or silently so the peer keeps our routes (graceful). */
  stop(opts: { graceful?: boolean; notification?: NotificationMessage } = {}): void {
    if (opts.graceful) {
      // Closing without a NOTIFICATION is a TCP failure to the peer: with graceful restart it keeps
      // our routes as stale until we are back (RFC 4724 §4.2).
      this.socket?.destroy()
      this.socket = undefined
      this.state = { ...this.state, name: 'Idle', session: undefined, reason: 'stopped for a restart' }
      for (const name of [...this.timers.keys()]) this.clearTimer(name)
      this.detachFromRib(false)
      return
    }
    this.dispatch({ type: 'ManualStop', ...(opts.notification ? { notification: opts.notification } : {}) })
    for (const name of [...this.timers.keys()]) this.clearTimer(name)
    if (this.staleFrom) {
      this.deps.rib.sweepStale(this.staleFrom)
      this.deps.rib.flush()
      this.staleFrom = undefined
    }
  }

  /** BFD saw the path to the peer fail: stopped with a Cease (BFD Down, RFC 9384), Idle until bfdUp. */
  private heldByBfd = false

  /** RFC 5882 §4.1: BFD Down tears the session down at once; it stays down until BFD is Up again. */
  bfdDown(reason: string): void {
    if (this.heldByBfd) return
    this.heldByBfd = true
    this.deps.log.warn({ bfd: reason }, 'BFD says the path to the peer is down: stopping the session')
    this.stop({ notification: notification(ErrorCode.CEASE, CeaseSubcode.BFD_DOWN) })
    this.lastError = `BFD down: ${reason}`
  }

  bfdUp(): void {
    if (!this.heldByBfd) return
    this.heldByBfd = false
    this.deps.log.info('BFD is up again: starting the session')
    this.start()
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
    if (this.state.name !== 'Established' || !s) return false
    for (const f of s.families) if (!this.eorReceived.has(f)) return false
    return true
  }

  /** Sends what is pending now (used when End-of-RIB is released). */
  flushOut(): void {
    this.pump()
  }

  /** Re-advertises everything to the peer (soft reset out). */
  refreshOut(): void {
    this.adjOut?.refresh()
  }

  /** An incoming connection for this peer, handed over by the speaker's listener. */
  acceptConnection(socket: Socket): void {
    const name = this.state.name
    if (name === 'Idle') {
      this.deps.log.info({ remote: socket.remoteAddress }, 'refusing a connection while Idle')
      socket.destroy()
      return
    }
    if (!this.admit(socket)) return
    if (name === 'Connect' || name === 'Active') {
      this.abandonOutgoing()
      this.attachSocket(socket, false)
      this.dispatch({ type: 'TcpConnectionConfirmed' })
      return
    }
    // OpenSent, OpenConfirm or Established: a second connection. §6.8 decides once its OPEN
    // tells us the peer's identifier; until then it only waits.
    this.pendingIncoming?.destroy()
    this.pendingIncoming = socket
    const framer = new Framer()
    const onData = (chunk: Buffer): void => {
      let frames: Uint8Array[]
      try {
        frames = framer.push(chunk)
      } catch {
        socket.destroy()
        return
      }
      const first = frames[0]
      if (first === undefined) return
      socket.off('data', onData)
      let open: BgpMessage
      try {
        open = decodeMessage(first, codecOptions())
      } catch {
        socket.destroy()
        return
      }
      if (open.type !== 'open') {
        socket.destroy()
        return
      }
      this.resolveCollision(socket, open)
    }
    socket.on('data', onData)
    socket.on('error', () => socket.destroy())
    socket.on('close', () => {
      if (this.pendingIncoming === socket) this.pendingIncoming = undefined
    })
  }

  private pendingIncoming: Socket | undefined

  private resolveCollision(incoming: Socket, open: OpenMessage): void {
    this.pendingIncoming = undefined
    const refuse = (why: string): void => {
      this.deps.log.info(why)
      incoming.end(encodeMessage(notification(ErrorCode.CEASE, CeaseSubcode.CONNECTION_COLLISION_RESOLUTION), codecOptions()))
    }
    if (this.state.name === 'Established') {
      if (this.state.session?.peerGracefulRestart) {
        // RFC 4724 §4.2: a restarting peer reconnects before we noticed its old connection die.
        this.deps.log.info('the peer reconnected while Established (graceful restart): the old session is treated as failed')
        this.dispatch({ type: 'TcpConnectionFails', reason: 'the peer reconnected (graceful restart)' })
      } else {
        refuse('connection collision with an Established session: refusing the new connection')
        return
      }
    } else if (this.state.name === 'OpenSent' || this.state.name === 'OpenConfirm') {
      // §6.8: the connection opened by the speaker with the higher BGP identifier survives.
      const ours = parseIpv4(this.deps.routerId) ?? 0
      const theirs = parseIpv4(open.bgpId) ?? 0
      const keepExisting = ours > theirs ? this.outgoing : !this.outgoing
      if (keepExisting) {
        refuse(`connection collision: keeping the ${this.outgoing ? 'outgoing' : 'incoming'} connection`)
        return
      }
      this.deps.log.info('connection collision: switching to the new incoming connection')
      this.dispatch({ type: 'OpenCollisionDump' })
    } else if (this.state.name !== 'Idle') {
      this.abandonOutgoing()
    }
    // Take the new connection as if it had just arrived: send our OPEN, then handle theirs.
    this.clearTimer('IdleHold')
    this.state = { ...this.state, name: 'Active', session: undefined, reason: 'taking over the incoming connection' }
    this.attachSocket(incoming, false)
    this.dispatch({ type: 'TcpConnectionConfirmed' })
    this.dispatch({ type: 'BGPOpen', open })
  }

  status(): PeerStatus {
    return peerStatus({
      config: this.config,
      state: this.state,
      since: this.since,
      lastError: this.lastError,
      counters: this.counters,
      refused: this.refusals.snapshot(),
      counts: this.ribPeer ? this.deps.rib.counts(this.ribPeer) : { received: 0, accepted: 0 },
      advertised: this.adjOut?.size ?? 0,
    })
  }

  // ---- FSM plumbing -------------------------------------------------------------------------

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
        this.openConnection()
        return
      case 'send':
        this.sendControl(action.message)
        return
      case 'drop':
        this.dropConnection()
        return
      case 'timer':
        this.setTimer(action.timer, action.seconds)
        return
      case 'established':
        this.onEstablished(action.session)
        return
      case 'down':
        this.onDown(action.reason, action.sentNotification, action.receivedNotification)
        return
      default: {
        const never: never = action
        return never
      }
    }
  }

  /** When the hold timer expires, moved on by every message received (see setTimer). */
  private holdDeadline = 0
  /** When the armed hold timer fires. */
  private holdFiresAt = 0

  private setTimer(name: TimerName, seconds: number): void {
    if (name === 'Hold' && seconds > 0) {
      // Restarted by every UPDATE and KEEPALIVE: a table dump restarted it tens of thousands of times. The
      // timer stays armed; a restart moves the deadline, and the timer, when it fires early, arms itself
      // again for the rest.
      const deadline = this.deps.clock.now() + seconds * 1000
      this.holdDeadline = deadline
      if (this.timers.has('Hold') && this.holdFiresAt <= deadline) return
      this.clearTimer('Hold')
      this.armHold(deadline)
      return
    }
    this.clearTimer(name)
    if (seconds <= 0) return
    // RFC 4271 §10: jitter connect retry and keepalive by up to 25% so peers do not synchronise.
    const jitter = name === 'DelayOpen' ? 1 : 0.75 + Math.random() * 0.25
    const event = `${name}Timer_Expires` as FsmEvent['type']
    this.timers.set(name, this.deps.clock.setTimeout(() => {
      this.timers.delete(name)
      this.dispatch({ type: event } as FsmEvent)
    }, seconds * 1000 * jitter))
  }

  private armHold(at: number): void {
    this.holdFiresAt = at
    this.timers.set('Hold', this.deps.clock.setTimeout(() => {
      if (this.holdDeadline > this.deps.clock.now()) {
        this.armHold(this.holdDeadline)
        return
      }
      this.timers.delete('Hold')
      this.dispatch({ type: 'HoldTimer_Expires' })
    }, Math.max(0, at - this.deps.clock.now())))
  }

  private clearTimer(name: TimerName | 'SendHold' | 'Restart'): void {
    const t = this.timers.get(name)
    if (t !== undefined) this.deps.clock.clearTimeout(t)
    this.timers.delete(name)
  }

  // ---- connections -------------------------------------------------------------------------

  private openConnection(): void {
    const c = this.config
    this.abandonOutgoing()
    let socket: Socket
    try {
      if (c.transportError !== undefined) throw new Error(c.transportError)
      socket = c.password !== undefined || c.ttlSecurity > 0
        ? connectSecured({
            host: c.address,
            port: c.port,
            ...(c.localAddress ? { localAddress: c.localAddress } : {}),
            ...(c.password !== undefined ? { md5Key: Buffer.from(c.password) } : {}),
            ...(c.ttlSecurity > 0 ? { ttlSecurity: c.ttlSecurity } : {}),
          })
        : connect({ host: c.address, port: c.port, ...(c.localAddress ? { localAddress: c.localAddress } : {}) })
    } catch (err) {
      // Never an unkeyed connection in place of a keyed one: the attempt fails, and says why.
      const reason = `cannot open the connection: ${(err as Error).message}`
      this.lastError = reason
      this.deps.log.error(reason)
      const t = setImmediate(() => {
        if (this.state.name === 'Connect') this.dispatch({ type: 'TcpConnectionFails', reason })
      })
      this.failedConnect = t
      return
    }
    this.pendingConnect = socket
    socket.once('connect', () => {
      if (this.pendingConnect !== socket) return
      this.pendingConnect = undefined
      this.attachSocket(socket, true)
      this.dispatch({ type: 'TcpConnectionConfirmed' })
    })
    socket.once('error', (err) => {
      if (this.pendingConnect !== socket) return
      this.pendingConnect = undefined
      socket.destroy()
      this.dispatch({ type: 'TcpConnectionFails', reason: err.message })
    })
  }

  private failedConnect: NodeJS.Immediate | undefined

  /**
   * Whether an accepted connection may be this peer's: its transport could be set up (the listener
   * keyed for a password, GTSM on the socket). The refusal is the peer's last error.
   */
  private admit(socket: Socket): boolean {
    const c = this.config
    const problem = c.transportError ?? this.listenerProblem
    try {
      if (problem !== undefined) throw new Error(problem)
      if (c.ttlSecurity > 0) setTtlSecurity(fdOf(socket), c.address, c.ttlSecurity)
      return true
    } catch (err) {
      this.lastError = `refused a connection from the peer: ${(err as Error).message}`
      this.deps.log.error(this.lastError)
      socket.destroy()
      return false
    }
  }

  /** Why the speaker's listener could not be keyed for this peer's password; undefined when it was. */
  private listenerProblem: string | undefined

  setListenerProblem(problem: string | undefined): void {
    this.listenerProblem = problem
    if (problem !== undefined) this.lastError = `the listener cannot take this peer's connections: ${problem}`
  }

  private abandonOutgoing(): void {
    if (this.failedConnect) clearImmediate(this.failedConnect)
    this.failedConnect = undefined
    this.pendingConnect?.destroy()
    this.pendingConnect = undefined
  }

  private attachSocket(socket: Socket, outgoing: boolean): void {
    this.socket?.destroy()
    this.socket = socket
    this.outgoing = outgoing
    this.framer = new Framer()
    socket.setNoDelay(true)
    socket.on('data', (chunk: Buffer) => {
      if (this.socket === socket) this.onData(chunk)
    })
    socket.on('drain', () => {
      if (this.socket !== socket) return
      this.clearTimer('SendHold')
      this.pump()
    })
    const closed = (reason: string): void => {
      if (this.socket !== socket) return
      this.socket = undefined
      this.dispatch({ type: 'TcpConnectionFails', reason })
    }
    socket.on('error', (err) => closed(err.message))
    socket.on('close', () => closed('connection closed by the peer'))
  }

  private dropConnection(): void {
    const c = this.config
    if (this.pendingConnect && this.state.name === 'Connect') {
      // The retry timer fired on a connect still waiting. A TCP-MD5 mismatch looks like this: the
      // kernel drops segments whose digest is wrong or missing, so nothing ever answers.
      this.lastError = `connect to ${c.address} port ${c.port} timed out${c.password !== undefined ? '; TCP-MD5 keyed (a key the peer does not share gets no answer)' : ''}`
    }
    const s = this.socket
    this.socket = undefined
    this.abandonOutgoing()
    // end() lets a NOTIFICATION queued just before reach the peer.
    if (s) {
      s.end()
      const t = setTimeout(() => s.destroy(), 1000)
      t.unref()
    }
    this.clearTimer('SendHold')
  }

  private write(bytes: Buffer): void {
    const s = this.socket
    if (!s || s.destroyed) return
    this.counters.messagesOut++
    if (!s.write(bytes) && !this.timers.has('SendHold')) {
      // RFC 9687: the peer must read within max(8 minutes, 2 × hold time).
      const hold = this.state.session?.holdTime ?? 90
      const seconds = hold === 0 ? 0 : Math.max(480, 2 * hold)
      if (seconds > 0) this.timers.set('SendHold', this.deps.clock.setTimeout(() => {
        this.timers.delete('SendHold')
        this.dispatch({ type: 'SendHoldTimer_Expires' })
      }, seconds * 1000))
    }
  }

  private sendControl(message: BgpMessage): void {
    const opts = this.state.session?.tx ?? codecOptions()
    this.write(encodeMessage(message, opts))
    if (message.type === 'keepalive') this.counters.keepalivesOut++
    else if (message.type === 'notification') {
      this.counters.notificationsOut++
      this.lastError = `sent ${describeNotification(message)}`
    } else if (message.type === 'route-refresh') this.counters.routeRefreshOut++
    else if (message.type === 'update') this.counters.updatesOut++
  }

  // ---- receiving ---------------------------------------------------------------------------

  private onData(chunk: Buffer): void {
    this.framer.feed(chunk)
    let changed = false
    while (this.socket) {
      let frame: Uint8Array | undefined
      try {
        frame = this.framer.next()
      } catch (err) {
        if (!(err instanceof BgpError)) throw err
        this.lastError = `received a bad message header: ${err.message}`
        this.dispatch({ type: 'BGPHeaderErr', error: err })
        break
      }
      if (frame === undefined) break
      this.counters.messagesIn++
      const opts = this.state.session?.rx ?? codecOptions()
      let msg: BgpMessage
      try {
        msg = decodeMessage(frame, opts, true)
      } catch (err) {
        if (!(err instanceof BgpError)) throw err
        this.lastError = `received a malformed message: ${err.message}`
        this.dispatch({ type: frame[18] === 1 ? 'BGPOpenMsgErr' : 'UpdateMsgErr', error: err })
        break
      }
      changed = this.onMessage(msg) || changed
      // RFC 8654: larger UPDATEs may follow once both sides advertised extended message.
      if (msg.type === 'open') this.framer.setExtendedMessage(this.state.session?.extendedMessage === true)
    }
    if (changed) this.deps.rib.flush()
  }

  /** Returns whether the RIB changed. */
  private onMessage(msg: BgpMessage): boolean {
    switch (msg.type) {
      case 'open':
        this.dispatch({ type: 'BGPOpen', open: msg })
        return false
      case 'keepalive':
        this.counters.keepalivesIn++
        this.dispatch({ type: 'KeepAliveMsg' })
        return false
      case 'notification':
        this.counters.notificationsIn++
        this.lastError = `received ${describeNotification(msg)}`
        this.dispatch({ type: 'NotifMsg', notification: msg })
        return false
      case 'route-refresh':
        this.counters.routeRefreshIn++
        if (this.state.name !== 'Established') {
          this.dispatch({ type: 'UpdateMsg' })
          return false
        }
        this.dispatch({ type: 'UpdateMsg' })
        this.onRouteRefresh(msg.afi, msg.safi, msg.subtype)
        return false
      case 'update':
        this.counters.updatesIn++
        if (this.state.name !== 'Established') {
          this.dispatch({ type: 'UpdateMsg' })
          return false
        }
        this.dispatch({ type: 'UpdateMsg' })
        return this.onUpdate(msg)
      default: {
        const never: never = msg
        return never
      }
    }
  }

  private onRouteRefresh(afi: number, safi: number, subtype: number): void {
    const s = this.state.session
    const family = familyKey(afi, safi)
    // RFC 7313 §5: BoRR/EoRR from the peer frame its re-advertisement; other subtypes are ignored.
    if (subtype !== RouteRefreshSubtype.NORMAL || !s?.families.has(family)) return
    this.deps.log.info({ family: familyName(family) }, 'route refresh requested by the peer')
    if (s.enhancedRouteRefresh) this.sendControl({ type: 'route-refresh', afi, safi, subtype: RouteRefreshSubtype.BORR })
    this.adjOut?.refresh(family)
    this.pendingEorr.add(family)
    this.pump()
  }

  private pendingEorr = new Set<number>()

  private info: { readonly session: Negotiated; readonly info: PeerSessionInfo } | undefined

  /** What the RIB keeps of the session with each path: one object per session, not one per UPDATE. */
  private sessionInfo(s: Negotiated): PeerSessionInfo {
    if (this.info?.session !== s) this.info = { session: s, info: { routerId: s.peerRouterId } }
    return this.info.info
  }

  private onUpdate(u: UpdateMessage): boolean {
    const peer = this.ribPeer
    const s = this.state.session
    if (!peer || !s) return false
    const info = this.sessionInfo(s)
    if (u.endOfRib) {
      const f = familyKey(u.endOfRib.afi, u.endOfRib.safi)
      this.deps.log.info({ family: familyName(f) }, 'End-of-RIB received')
      this.eorReceived.add(f)
      if (this.staleFrom) this.deps.rib.endOfRib(this.staleFrom, f)
      this.deps.rib.endOfRib(peer, f)
      return true
    }
    let error = u.error
    const attrs = s.as4 ? u.attributes : reconcileAs4(u.attributes)
    const withdrawAll = error !== undefined && error.action === ErrorAction.TREAT_AS_WITHDRAW
    if (error) {
      this.deps.log.warn({ code: error.code, subcode: error.subcode, action: error.actionName }, `malformed UPDATE: ${error.message}`)
      if (error.action === ErrorAction.AFI_SAFI_DISABLE && error.family !== undefined) {
        this.disabled.add(error.family)
        this.deps.rib.peerDown({ ...peer, families: new Set([error.family]) }, new Set())
        this.deps.log.warn({ family: familyName(error.family) }, 'family disabled for the rest of this session (RFC 7606)')
        error = undefined
      }
    }
    const v4 = familyKey(Afi.IPV4, Safi.UNICAST)
    if (u.withdrawn.length > 0 && !this.disabled.has(v4)) {
      this.counters.prefixesWithdrawnIn += u.withdrawn.length
      this.deps.rib.receive(peer, info, u.withdrawn, undefined)
    }
    if (withdrawAll) this.refused({ kind: 'treat-as-withdraw', reason: `malformed UPDATE treated as withdraw (RFC 7606): ${error!.message}` })
    const announced = withdrawAll ? undefined : attrs
    if (u.nlri.length > 0 && !this.disabled.has(v4)) this.refused(this.deps.rib.receive(peer, info, u.nlri, announced))
    if (u.nlriColumns && !this.disabled.has(v4)) this.refused(this.deps.rib.receiveIpv4(peer, info, u.nlriColumns, announced))
    if (u.mpUnreach && u.mpUnreach.raw === undefined) {
      const f = familyKey(u.mpUnreach.afi, u.mpUnreach.safi)
      if (s.families.has(f) && !this.disabled.has(f)) this.deps.rib.receive(peer, info, u.mpUnreach.withdrawn, undefined)
    }
    if (u.mpReach && u.mpReach.raw === undefined) {
      const f = familyKey(u.mpReach.afi, u.mpReach.safi)
      if (s.families.has(f) && !this.disabled.has(f)) this.refused(this.deps.rib.receive(peer, info, u.mpReach.nlri, announced, u.mpReach.nextHop))
    }
    this.checkMaxPrefixes(peer)
    return true
  }

  /** Counts a refused UPDATE section by kind, and logs the first of each burst. */
  private refused(r: Refusal | undefined): void {
    if (r === undefined) return
    const line = this.refusals.record(r.kind, r.reason, this.deps.clock.now())
    if (line !== undefined) this.deps.log.warn({ kind: line.kind, ...(line.unlogged > 0 ? { alsoRefusedSinceLastLog: line.unlogged } : {}) }, `UPDATE refused: ${line.reason}`)
  }

  private checkMaxPrefixes(peer: RibPeer): void {
    const max = this.config.maxPrefixes
    if (!max) return
    const { accepted } = this.deps.rib.counts(peer)
    if (accepted <= max.limit) {
      this.maxPrefixWarned = false
      return
    }
    if (max.action === 'warn') {
      if (!this.maxPrefixWarned) this.deps.log.warn({ accepted, limit: max.limit }, 'maximum prefix limit exceeded')
      this.maxPrefixWarned = true
      return
    }
    // RFC 4486 §4: the data names the family and the limit.
    const data = Buffer.alloc(7)
    data.writeUInt16BE(Afi.IPV4, 0)
    data[2] = Safi.UNICAST
    data.writeUInt32BE(max.limit, 3)
    this.dispatch({
      type: 'AutomaticStop',
      notification: notification(ErrorCode.CEASE, CeaseSubcode.MAXIMUM_NUMBER_OF_PREFIXES_REACHED, { data }),
      idleHoldTime: max.restartAfter ?? 60,
    })
  }

  // ---- session up and down -------------------------------------------------------------------

  private onEstablished(session: Negotiated): void {
    const c = this.config
    this.lastSession = session
    this.disabled.clear()
    this.eorSent.clear()
    this.eorReceived.clear()
    this.pendingEorr.clear()
    this.clearTimer('Restart')
    const live = (): ResolvedPeerConfig => this.config
    const peer: RibPeer = {
      id: this.deps.peerId,
      name: c.name,
      address: c.address,
      localAddress: c.localAddress ?? this.socket?.localAddress?.replace(/^::ffff:/, '') ?? '0.0.0.0',
      ...(c.localAddress6 ? { localAddress6: c.localAddress6 } : {}),
      asn: session.peerAsn,
      localAsn: c.localAsn,
      type: session.peerAsn === c.localAsn ? 'ibgp' : 'ebgp',
      rrClient: c.rrClient,
      nextHopMode: c.nextHopMode,
      allowLocalAs: c.allowLocalAs,
      // Read through to the live configuration: reconfigure() (a policy change from setPeers) must reach
      // this session's imports and its Adj-RIB-Out, which the refresh in/out that follows re-runs.
      get importPolicy() {
        return live().importPolicy
      },
      get exportPolicy() {
        return live().exportPolicy
      },
      families: session.families,
      addPathSend: session.addPathSend,
      importTable: !session.routeRefresh,
    }
    // RFC 4724 §4.2: families the peer no longer preserves lose their stale routes now; the rest
    // wait for the peer's End-of-RIB.
    if (this.staleFrom) {
      const gr = session.peerGracefulRestart
      for (const f of this.staleFrom.families) {
        if (!gr || gr.families.get(f) !== true || !session.families.has(f)) this.deps.rib.endOfRib(this.staleFrom, f)
      }
      const stale = this.staleFrom
      this.timers.set('Restart', this.deps.clock.setTimeout(() => {
        this.timers.delete('Restart')
        this.deps.log.warn('no End-of-RIB in time after the restart: dropping stale routes')
        this.deps.rib.sweepStale(stale)
        this.deps.rib.flush()
        if (this.staleFrom === stale) this.staleFrom = undefined
      }, Math.max(120, gr?.restartTime ?? 0) * 1000))
    }
    this.ribPeer = peer
    this.adjOut = this.deps.rib.attachPeer(peer)
    this.adjOut.onPending(() => this.schedulePump())
    this.deps.log.info(
      { holdTime: session.holdTime, families: [...session.families].map(familyName), as4: session.as4, addPathSend: [...session.addPathSend].map(familyName) },
      `session established with ${session.peerRouterId}`,
    )
    this.pump()
  }

  private onDown(reason: string, sent?: NotificationMessage, received?: NotificationMessage): void {
    const wasEstablished = this.ribPeer !== undefined
    if (!wasEstablished) {
      if (sent || received) this.lastError = reason
      return
    }
    this.counters.flaps++
    this.lastError = reason
    this.detachFromRib(true, this.lastSession, sent ?? received)
  }

  /** The terms of the last Established session: the FSM forgets them on the way down. */
  private lastSession: Negotiated | undefined

  private detachFromRib(allowGraceful: boolean, session?: Negotiated, notif?: NotificationMessage): void {
    const peer = this.ribPeer
    if (!peer) return
    this.ribPeer = undefined
    this.deps.rib.detachPeer(peer)
    this.adjOut = undefined
    if (this.pumpScheduled) clearImmediate(this.pumpScheduled)
    this.pumpScheduled = undefined
    const gr = session?.peerGracefulRestart
    // RFC 4724: a lost connection (no NOTIFICATION) with graceful restart keeps the peer's routes
    // as stale for its restart time. RFC 8538 would extend this to NOTIFICATIONs; not negotiated here.
    const keep = new Set<FamilyKey>()
    if (allowGraceful && gr && notif === undefined) for (const [f] of gr.families) if (peer.families.has(f)) keep.add(f)
    this.deps.rib.peerDown(peer, keep)
    if (keep.size > 0) {
      this.staleFrom = peer
      this.deps.log.info({ restartTime: gr!.restartTime }, 'peer may be restarting: keeping its routes as stale')
      this.clearTimer('Restart')
      this.timers.set('Restart', this.deps.clock.setTimeout(() => {
        this.timers.delete('Restart')
        this.deps.log.warn('peer did not come back within its restart time: dropping its stale routes')
        this.deps.rib.sweepStale(peer)
        this.deps.rib.flush()
        if (this.staleFrom === peer) this.staleFrom = undefined
      }, gr!.restartTime * 1000))
    }
    this.deps.rib.flush()
  }

  // ---- sending UPDATEs -----------------------------------------------------------------------

  private pumpScheduled: NodeJS.Immediate | undefined

  private schedulePump(): void {
    if (this.pumpScheduled) return
    this.pumpScheduled = setImmediate(() => {
      this.pumpScheduled = undefined
      this.pump()
    })
  }

  private pump(): void {
    const s = this.socket
    const out = this.adjOut
    const session = this.state.session
    if (!s || !out || !session || this.state.name !== 'Established') return
    // Corked: one writev per pull, not a syscall per UPDATE (a reflector's client gets one small UPDATE per originator).
    s.cork()
    while (s.writableLength < HIGH_WATER && out.pending > 0) {
      for (const batch of out.take(PULL)) {
        for (const bytes of packUpdates(batch, session.tx)) {
          this.write(bytes)
          this.counters.updatesOut++
        }
      }
    }
    s.uncork()
    if (out.pending === 0 && this.deps.holdEndOfRib?.() !== true) {
      // The initial table (or a refresh) is out: say so, once per family (RFC 4724 §2, RFC 7313).
      for (const f of session.families) {
        if (!this.eorSent.has(f)) {
          this.eorSent.add(f)
          this.write(encodeMessage(endOfRibUpdate(f >> 8, f & 255), session.tx))
        }
      }
      for (const f of this.pendingEorr) {
        if (session.enhancedRouteRefresh) this.sendControl({ type: 'route-refresh', afi: f >> 8, safi: f & 255, subtype: RouteRefreshSubtype.EORR })
      }
      this.pendingEorr.clear()
    }
  }
}
