// The RFC 4271 §8 finite state machine as a pure function: step(state, event, config) returns the
// next state and the actions the peer shell must carry out (send, connect, drop, timers, session
// up/down). Event names are the RFC's; every transition carries a reason for the log. Time is not
// read here: timers are actions, their expiry is an event.

import {
  CeaseSubcode,
  ErrorCode,
  FsmSubcode,
  KEEPALIVE,
  describeNotification,
  notification,
  type BgpMessage,
  type NotificationMessage,
  type OpenMessage,
} from '../codec/index.js'
import { BgpError } from '../codec/errors.js'
import { negotiate, type Negotiated, type PeerExpectation } from './negotiate.js'

export type FsmStateName = 'Idle' | 'Connect' | 'Active' | 'OpenSent' | 'OpenConfirm' | 'Established'

export type TimerName = 'ConnectRetry' | 'Hold' | 'Keepalive' | 'DelayOpen' | 'IdleHold'

export type FsmEvent =
  /** `reason` names who started it (the operator, BFD up again) for the log; default "started". */
  | { readonly type: 'ManualStart'; readonly reason?: string }
  /**
   * We stop the session: with this NOTIFICATION (default Cease / Administrative Shutdown), or `graceful`
   * with none, so the peer keeps our routes while we restart (RFC 4724 §4.2). `reason` names the cause
   * (operator, de-configured, BFD down) for the log.
   */
  | { readonly type: 'ManualStop'; readonly notification?: NotificationMessage; readonly graceful?: boolean; readonly reason?: string }
  | { readonly type: 'AutomaticStart' }
  /** e.g. the maximum prefix limit: stop with this NOTIFICATION, then restart after IdleHold. */
  | { readonly type: 'AutomaticStop'; readonly notification: NotificationMessage; readonly idleHoldTime?: number }
  | { readonly type: 'ConnectRetryTimer_Expires' }
  | { readonly type: 'HoldTimer_Expires' }
  | { readonly type: 'KeepaliveTimer_Expires' }
  | { readonly type: 'DelayOpenTimer_Expires' }
  | { readonly type: 'IdleHoldTimer_Expires' }
  /** RFC 9687: our UPDATEs could not be written for the send hold time. */
  | { readonly type: 'SendHoldTimer_Expires' }
  /** The TCP connection is up (ours completed, or theirs accepted): events 16/17. */
  | { readonly type: 'TcpConnectionConfirmed' }
  | { readonly type: 'TcpConnectionFails'; readonly reason: string }
  | { readonly type: 'BGPOpen'; readonly open: OpenMessage }
  | { readonly type: 'BGPHeaderErr'; readonly error: BgpError }
  | { readonly type: 'BGPOpenMsgErr'; readonly error: BgpError }
  /** §6.8: this connection lost a collision. */
  | { readonly type: 'OpenCollisionDump' }
  | { readonly type: 'NotifMsg'; readonly notification: NotificationMessage }
  | { readonly type: 'KeepAliveMsg' }
  /** UPDATE or ROUTE-REFRESH: both restart the hold timer in Established. */
  | { readonly type: 'UpdateMsg' }
  | { readonly type: 'UpdateMsgErr'; readonly error: BgpError }
  /**
   * A second, accepted connection replaces the session's (§6.8 collision won by the peer's connection, or
   * a graceful-restart peer reconnecting while Established): the old one is given up, the new one's OPEN
   * (already read) is answered as if it had just arrived.
   */
  | { readonly type: 'TakeOverConnection'; readonly open: OpenMessage; readonly reason: string }

export type FsmAction =
  | { readonly type: 'connect' }
  | { readonly type: 'send'; readonly message: BgpMessage }
  | { readonly type: 'drop' }
  /** Start or restart a timer; seconds 0 stops it. */
  | { readonly type: 'timer'; readonly timer: TimerName; readonly seconds: number }
  | { readonly type: 'established'; readonly session: Negotiated }
  /** The accepted connection the shell holds (TakeOverConnection) becomes the session's connection. */
  | { readonly type: 'adopt' }
  /**
   * The session left Established (or never got there). `localStop`: we stopped it (ManualStop), so the peer
   * is not restarting; without it and without a NOTIFICATION either way, a graceful-restart peer may be.
   */
  | {
      readonly type: 'down'
      readonly reason: string
      readonly sentNotification?: NotificationMessage
      readonly receivedNotification?: NotificationMessage
      readonly localStop?: true
    }

export interface FsmConfig {
  readonly passive: boolean
  readonly connectRetryTime: number
  /** RFC 4271 §8: the large hold time used while waiting for the peer's OPEN (4 minutes). */
  readonly openHoldTime: number
  readonly delayOpenTime: number
  /** BIRD's `error wait time`: the first and largest Idle hold after an error. */
  readonly idleHoldMin: number
  readonly idleHoldMax: number
  readonly expect: PeerExpectation
  readonly localOpen: OpenMessage
}

export interface FsmState {
  readonly name: FsmStateName
  readonly connectRetryCounter: number
  /** The next Idle hold after an error, doubling up to idleHoldMax. */
  readonly idleHoldTime: number
  readonly delayOpenRunning: boolean
  readonly session: Negotiated | undefined
  /** Why the last transition happened. */
  readonly reason: string
}

export interface FsmStep {
  readonly state: FsmState
  readonly actions: readonly FsmAction[]
}

export function initialState(config: FsmConfig): FsmState {
  return { name: 'Idle', connectRetryCounter: 0, idleHoldTime: config.idleHoldMin, delayOpenRunning: false, session: undefined, reason: 'configured' }
}

const timer = (name: TimerName, seconds: number): FsmAction => ({ type: 'timer', timer: name, seconds })
const stopAll: FsmAction[] = [timer('ConnectRetry', 0), timer('Hold', 0), timer('Keepalive', 0), timer('DelayOpen', 0)]
const send = (message: BgpMessage): FsmAction => ({ type: 'send', message })

/** A NOTIFICATION for a reason: its text and its numbers, as operators search logs for both. */
function describe(n: NotificationMessage): string {
  return `${describeNotification(n)} (code ${n.code}, subcode ${n.subcode})`
}

/** Leaves for Idle. After anything but a manual stop, an automatic restart follows the Idle hold. */
function toIdle(
  s: FsmState,
  config: FsmConfig,
  reason: string,
  opts: { sent?: NotificationMessage; received?: NotificationMessage; manual?: boolean; localStop?: boolean; idleHold?: number } = {},
): FsmStep {
  const actions: FsmAction[] = []
  if (opts.sent) actions.push(send(opts.sent))
  actions.push({ type: 'drop' }, ...stopAll)
  actions.push({
    type: 'down',
    reason,
    ...(opts.sent ? { sentNotification: opts.sent } : {}),
    ...(opts.received ? { receivedNotification: opts.received } : {}),
    ...(opts.localStop ? { localStop: true as const } : {}),
  })
  let idleHoldTime = s.idleHoldTime
  if (!opts.manual) {
    const wait = opts.idleHold ?? s.idleHoldTime
    actions.push(timer('IdleHold', wait))
    idleHoldTime = Math.min(config.idleHoldMax, Math.max(config.idleHoldMin, s.idleHoldTime * 2))
  } else actions.push(timer('IdleHold', 0))
  return {
    state: { ...s, name: 'Idle', connectRetryCounter: s.connectRetryCounter + (opts.manual ? 0 : 1), idleHoldTime, delayOpenRunning: false, session: undefined, reason },
    actions,
  }
}

/** Whether the peer restarts gracefully for a family of the session: a lost connection keeps its routes (RFC 4724). */
function restartsGracefully(session: Negotiated | undefined): boolean {
  const gr = session?.peerGracefulRestart
  return gr !== undefined && [...gr.families.keys()].some((f) => session!.families.has(f))
}

/**
 * A lost connection to a peer that restarts gracefully: the session goes down as any other (its routes are
 * kept as stale), but the speaker waits for the peer in Connect or Active instead of an Idle hold, which
 * would refuse its new connection and keep the restart waiting (RFC 4724 §4.2: the receiving speaker is
 * ready for the restarting peer's new session).
 */
function awaitRestart(s: FsmState, config: FsmConfig, why: string): FsmStep {
  const down = toIdle(s, config, `connection closed: ${why}`)
  const up = start(down.state, config, `connection closed: ${why}; waiting for the peer's new connection (it restarts gracefully)`)
  return { state: up.state, actions: [...down.actions.filter((a) => !(a.type === 'timer' && a.timer === 'IdleHold')), timer('IdleHold', 0), ...up.actions] }
}

function start(s: FsmState, config: FsmConfig, reason: string): FsmStep {
  if (config.passive) {
    return { state: { ...s, name: 'Active', reason }, actions: [timer('ConnectRetry', config.connectRetryTime)] }
  }
  return { state: { ...s, name: 'Connect', reason }, actions: [timer('ConnectRetry', config.connectRetryTime), { type: 'connect' }] }
}

/** The TCP connection is up: send our OPEN now, or after DelayOpen. */
function connected(s: FsmState, config: FsmConfig): FsmStep {
  if (config.delayOpenTime > 0) {
    return { state: { ...s, delayOpenRunning: true, reason: 'TCP connection up; delaying OPEN' }, actions: [timer('ConnectRetry', 0), timer('DelayOpen', config.delayOpenTime)] }
  }
  return sendOpen(s, config, 'TCP connection up')
}

function sendOpen(s: FsmState, config: FsmConfig, reason: string): FsmStep {
  return {
    state: { ...s, name: 'OpenSent', delayOpenRunning: false, reason: `${reason}; OPEN sent` },
    actions: [timer('ConnectRetry', 0), timer('DelayOpen', 0), send(config.localOpen), timer('Hold', config.openHoldTime)],
  }
}

/** A valid OPEN: answer with KEEPALIVE and wait for theirs in OpenConfirm (§8.2.2 event 19). */
function openReceived(s: FsmState, config: FsmConfig, open: OpenMessage, alsoSendOpen: boolean): FsmStep {
  const result = negotiate(config.localOpen, open, config.expect)
  if (result instanceof BgpError) {
    const n = notification(result.code, result.subcode, { data: result.data })
    const prefix: FsmAction[] = alsoSendOpen ? [send(config.localOpen)] : []
    const idle = toIdle(s, config, `OPEN refused: ${result.message}`, { sent: n })
    return { state: idle.state, actions: [...prefix, ...idle.actions] }
  }
  const actions: FsmAction[] = [timer('ConnectRetry', 0), timer('DelayOpen', 0)]
  if (alsoSendOpen) actions.push(send(config.localOpen))
  actions.push(send(KEEPALIVE))
  actions.push(timer('Hold', result.holdTime), timer('Keepalive', result.keepaliveTime))
  return {
    state: { ...s, name: 'OpenConfirm', delayOpenRunning: false, session: result, reason: `OPEN from ${open.bgpId} AS ${result.peerAsn} accepted; hold time ${result.holdTime} s` },
    actions,
  }
}

function fsmError(s: FsmState, config: FsmConfig, subcode: number, event: string): FsmStep {
  return toIdle(s, config, `unexpected ${event} in ${s.name}`, { sent: notification(ErrorCode.FSM, subcode) })
}

function errorNotification(error: BgpError): NotificationMessage {
  return notification(error.code, error.subcode, { data: error.data })
}

/** TakeOverConnection: the old connection goes (Cease / Connection Collision Resolution while OPENs are out), the new one is up with its OPEN in. */
function takeOver(s: FsmState, config: FsmConfig, open: OpenMessage, reason: string): FsmStep {
  let base = s
  const actions: FsmAction[] = []
  if (s.name === 'Idle') actions.push(timer('IdleHold', 0))
  else {
    const colliding = s.name === 'OpenSent' || s.name === 'OpenConfirm'
    const old = toIdle(s, config, reason, { ...(colliding ? { sent: notification(ErrorCode.CEASE, CeaseSubcode.CONNECTION_COLLISION_RESOLUTION) } : {}), manual: true })
    base = old.state
    actions.push(...old.actions)
  }
  actions.push({ type: 'adopt' })
  const up = connected({ ...base, name: 'Active' }, config)
  const answered = step(up.state, { type: 'BGPOpen', open }, config)
  return { state: { ...answered.state, reason: `${reason}; ${answered.state.reason}` }, actions: [...actions, ...up.actions, ...answered.actions] }
}

export function step(s: FsmState, event: FsmEvent, config: FsmConfig): FsmStep {
  const none: FsmStep = { state: s, actions: [] }
  // Events that mean the same in every state but Idle.
  if (s.name !== 'Idle') {
    switch (event.type) {
      case 'ManualStop': {
        const open = s.name === 'OpenSent' || s.name === 'OpenConfirm' || s.name === 'Established'
        const sent = open && !event.graceful ? (event.notification ?? notification(ErrorCode.CEASE, CeaseSubcode.ADMINISTRATIVE_SHUTDOWN)) : undefined
        const why = event.reason ?? 'stopped by the operator'
        const reason = event.graceful ? `${why}: closed without NOTIFICATION (graceful restart)` : sent ? `${why}: sent ${describe(sent)}` : why
        return toIdle({ ...s, connectRetryCounter: 0 }, config, reason, { ...(sent ? { sent } : {}), manual: true, localStop: true })
      }
      case 'AutomaticStop':
        return toIdle(s, config, `stopped: ${describe(event.notification)}`, {
          ...(s.name === 'OpenSent' || s.name === 'OpenConfirm' || s.name === 'Established' ? { sent: event.notification } : {}),
          ...(event.idleHoldTime !== undefined ? { idleHold: event.idleHoldTime } : {}),
        })
      case 'NotifMsg':
        return toIdle(s, config, `NOTIFICATION received: ${describe(event.notification)}`, { received: event.notification })
      case 'BGPHeaderErr':
      case 'BGPOpenMsgErr':
      case 'UpdateMsgErr':
        return toIdle(s, config, event.error.message, { sent: errorNotification(event.error) })
      case 'SendHoldTimer_Expires':
        return toIdle(s, config, 'send hold timer expired: the peer stopped reading', { sent: notification(ErrorCode.SEND_HOLD_TIMER_EXPIRED, 0) })
      case 'OpenCollisionDump':
        return toIdle(s, config, 'connection collision: this connection lost', {
          ...(s.name === 'Connect' || s.name === 'Active' ? {} : { sent: notification(ErrorCode.CEASE, CeaseSubcode.CONNECTION_COLLISION_RESOLUTION) }),
        })
      default:
        break
    }
  }
  if (event.type === 'TakeOverConnection') return takeOver(s, config, event.open, event.reason)
  switch (s.name) {
    case 'Idle':
      switch (event.type) {
        case 'ManualStart':
          return start({ ...s, connectRetryCounter: 0, idleHoldTime: config.idleHoldMin }, config, event.reason ?? 'started')
        case 'AutomaticStart':
        case 'IdleHoldTimer_Expires':
          return start(s, config, event.type === 'AutomaticStart' ? 'started automatically' : 'idle hold over; restarting')
        case 'TcpConnectionConfirmed':
          // A connection while Idle is refused (§8.2.2): the shell closes it.
          return { state: s, actions: [{ type: 'drop' }] }
        default:
          return none
      }
    case 'Connect':
    case 'Active':
      switch (event.type) {
        case 'ConnectRetryTimer_Expires':
          if (config.passive) return { state: { ...s, name: 'Active', reason: 'waiting for the peer to connect' }, actions: [timer('ConnectRetry', config.connectRetryTime)] }
          return {
            state: { ...s, name: 'Connect', delayOpenRunning: false, reason: 'connect retry' },
            actions: [{ type: 'drop' }, timer('DelayOpen', 0), timer('ConnectRetry', config.connectRetryTime), { type: 'connect' }],
          }
        case 'DelayOpenTimer_Expires':
          return sendOpen(s, config, 'delay open over')
        case 'TcpConnectionConfirmed':
          return connected(s, config)
        case 'TcpConnectionFails':
          if (s.delayOpenRunning || s.name === 'Connect') {
            return {
              state: { ...s, name: 'Active', delayOpenRunning: false, reason: `connection failed: ${event.reason}` },
              actions: [{ type: 'drop' }, timer('DelayOpen', 0), timer('ConnectRetry', config.connectRetryTime)],
            }
          }
          return toIdle(s, config, `connection failed: ${event.reason}`)
        case 'BGPOpen':
          // Only with DelayOpen running may an OPEN come before ours (§8.2.2 event 20).
          if (s.delayOpenRunning) return openReceived(s, config, event.open, true)
          return toIdle(s, config, `OPEN before our OPEN in ${s.name}`)
        case 'HoldTimer_Expires':
        case 'KeepaliveTimer_Expires':
        case 'KeepAliveMsg':
        case 'UpdateMsg':
          return toIdle(s, config, `unexpected ${event.type} in ${s.name}`)
        default:
          return none
      }
    case 'OpenSent':
      switch (event.type) {
        case 'HoldTimer_Expires':
          return toIdle(s, config, 'no OPEN from the peer in time', { sent: notification(ErrorCode.HOLD_TIMER_EXPIRED, 0) })
        case 'TcpConnectionFails':
          return {
            state: { ...s, name: 'Active', reason: `connection closed in OpenSent: ${event.reason}` },
            actions: [{ type: 'drop' }, timer('Hold', 0), timer('ConnectRetry', config.connectRetryTime)],
          }
        case 'BGPOpen':
          return openReceived(s, config, event.open, false)
        case 'KeepAliveMsg':
        case 'UpdateMsg':
          return fsmError(s, config, FsmSubcode.UNEXPECTED_MESSAGE_IN_OPENSENT, event.type)
        default:
          return none
      }
    case 'OpenConfirm':
      switch (event.type) {
        case 'HoldTimer_Expires':
          return toIdle(s, config, 'hold timer expired in OpenConfirm', { sent: notification(ErrorCode.HOLD_TIMER_EXPIRED, 0) })
        case 'KeepaliveTimer_Expires':
          return { state: s, actions: [send(KEEPALIVE), timer('Keepalive', s.session?.keepaliveTime ?? 0)] }
        case 'TcpConnectionFails':
          return toIdle(s, config, `connection closed in OpenConfirm: ${event.reason}`)
        case 'KeepAliveMsg':
          return {
            state: { ...s, name: 'Established', idleHoldTime: config.idleHoldMin, reason: 'KEEPALIVE received' },
            actions: [timer('Hold', s.session?.holdTime ?? 0), { type: 'established', session: s.session! }],
          }
        case 'BGPOpen':
          return fsmError(s, config, FsmSubcode.UNEXPECTED_MESSAGE_IN_OPENCONFIRM, 'OPEN')
        case 'UpdateMsg':
          return fsmError(s, config, FsmSubcode.UNEXPECTED_MESSAGE_IN_OPENCONFIRM, event.type)
        default:
          return none
      }
    case 'Established':
      switch (event.type) {
        case 'HoldTimer_Expires':
          return toIdle(s, config, 'hold timer expired', { sent: notification(ErrorCode.HOLD_TIMER_EXPIRED, 0) })
        case 'KeepaliveTimer_Expires':
          return { state: s, actions: [send(KEEPALIVE), timer('Keepalive', s.session?.keepaliveTime ?? 0)] }
        case 'TcpConnectionFails':
          return restartsGracefully(s.session) ? awaitRestart(s, config, event.reason) : toIdle(s, config, `connection closed: ${event.reason}`)
        case 'KeepAliveMsg':
        case 'UpdateMsg':
          return { state: s, actions: s.session && s.session.holdTime > 0 ? [timer('Hold', s.session.holdTime)] : [] }
        case 'BGPOpen':
          return fsmError(s, config, FsmSubcode.UNEXPECTED_MESSAGE_IN_ESTABLISHED, 'OPEN')
        default:
          return none
      }
    default: {
      const never: never = s.name
      return never
    }
  }
}
