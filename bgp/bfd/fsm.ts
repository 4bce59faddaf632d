// The BFD session of RFC 5880 as a pure function, asynchronous mode without Echo or authentication:
// step(state, event) returns the next state and the actions the shell carries out (send a packet now,
// re-arm the periodic transmit, move the detection deadline, report a state change). It reads no clock
// and draws no random numbers: timers are actions, their expiry is an event, jitter is applied by the shell.

import { BFD_VERSION, BfdDiag, describeDiag, type BfdControlPacket, type BfdStateName } from './codec.js'

/** RFC 5880 §6.8.3: while the session is not Up, Desired Min TX Interval is at least one second. */
export const SLOW_TX_US = 1_000_000

export interface BfdParameters {
  /** Microseconds. */
  readonly desiredMinTxUs: number
  readonly requiredMinRxUs: number
  readonly detectMult: number
}

export interface BfdState {
  readonly session: BfdStateName
  readonly remoteSession: BfdStateName
  readonly localDiscr: number
  readonly remoteDiscr: number
  readonly localDiag: number
  /** What the operator asked for; what is advertised follows from it and the state. */
  readonly params: BfdParameters
  /** The values in the packets we send (bfd.DesiredMinTxInterval, bfd.RequiredMinRxInterval). */
  readonly desiredMinTxUs: number
  readonly requiredMinRxUs: number
  /** The values timing is computed from; they lag the advertised ones during a Poll Sequence (§6.8.3). */
  readonly txInUseUs: number
  readonly rxInUseUs: number
  readonly remoteMinRxUs: number
  readonly remoteDesiredMinTxUs: number
  readonly remoteDetectMult: number
  readonly remoteDemand: boolean
  readonly polling: boolean
  /** The diagnostic the peer last sent. */
  readonly remoteDiag: number
  readonly reason: string
}

export type BfdEvent =
  | { readonly type: 'Received'; readonly packet: BfdControlPacket }
  | { readonly type: 'DetectTimerExpired' }
  | { readonly type: 'TxTimerExpired' }
  | { readonly type: 'AdminDown' }
  | { readonly type: 'AdminUp' }
  | { readonly type: 'SetParameters'; readonly params: BfdParameters }

export type BfdAction =
  /** Send this packet now, outside the periodic schedule (a Final, or a state change). */
  | { readonly type: 'send'; readonly packet: BfdControlPacket }
  /** The periodic transmit interval, before jitter; 0 stops periodic transmission. */
  | { readonly type: 'txInterval'; readonly us: number; readonly detectMult: number }
  /** Detection time from the last accepted packet; 0 stops the timer. */
  | { readonly type: 'detectTime'; readonly us: number }
  | { readonly type: 'state'; readonly from: BfdStateName; readonly to: BfdStateName; readonly diag: number; readonly remoteState: BfdStateName; readonly reason: string }

export interface BfdStep {
  readonly next: BfdState
  readonly actions: readonly BfdAction[]
}

export function checkParameters(p: BfdParameters, where: string): void {
  for (const [field, v] of [['desiredMinTxUs', p.desiredMinTxUs], ['requiredMinRxUs', p.requiredMinRxUs]] as const) {
    if (!Number.isInteger(v) || v < 1 || v > 0xffffffff) throw new Error(`${where}.${field}: ${v} is not an interval of 1 µs to 2^32-1 µs`)
  }
  if (!Number.isInteger(p.detectMult) || p.detectMult < 1 || p.detectMult > 255) throw new Error(`${where}.detectMult: ${p.detectMult} is not 1–255`)
}

/** A new session in Down (bfd.SessionState Down, bfd.RemoteDiscr 0, §6.8.1 initial values). */
export function initialBfdState(localDiscr: number, params: BfdParameters): BfdState {
  if (!Number.isInteger(localDiscr) || localDiscr < 1 || localDiscr > 0xffffffff) throw new Error(`localDiscr: ${localDiscr} is not a nonzero 32-bit value`)
  const tx = Math.max(params.desiredMinTxUs, SLOW_TX_US)
  return {
    session: 'Down',
    remoteSession: 'Down',
    localDiscr,
    remoteDiscr: 0,
    localDiag: BfdDiag.NONE,
    params,
    desiredMinTxUs: tx,
    requiredMinRxUs: params.requiredMinRxUs,
    txInUseUs: tx,
    rxInUseUs: params.requiredMinRxUs,
    remoteMinRxUs: 1,
    remoteDesiredMinTxUs: 0,
    remoteDetectMult: 0,
    remoteDemand: false,
    polling: false,
    remoteDiag: BfdDiag.NONE,
    reason: 'created',
  }
}

/** §6.8.7: the interval between periodic packets before jitter; 0 while none may be sent. */
export function txIntervalUs(s: BfdState): number {
  if (s.remoteMinRxUs === 0) return 0
  // §6.6: Demand mode active on the remote system ends our periodic transmission (Poll aside).
  if (s.remoteDemand && s.session === 'Up' && s.remoteSession === 'Up' && !s.polling) return 0
  return Math.max(s.txInUseUs, s.remoteMinRxUs)
}

/** §6.8.4: remote Detect Mult × max(our Required Min RX, their last Desired Min TX); 0 before any packet. */
export function detectTimeUs(s: BfdState): number {
  if (s.remoteDetectMult === 0) return 0
  return s.remoteDetectMult * Math.max(s.rxInUseUs, s.remoteDesiredMinTxUs)
}

/**
 * §6.8.7 jitter: the interval reduced by a random 0–25 %, or to 75–90 % when Detect Mult is 1.
 * `random` is in [0, 1).
 */
export function jitteredUs(intervalUs: number, detectMult: number, random: number): number {
  const r = Math.min(Math.max(random, 0), 0.999999)
  return Math.floor(detectMult === 1 ? intervalUs * (0.75 + 0.15 * r) : intervalUs * (1 - 0.25 * r))
}

/** The packet this state sends (§6.8.7); `final` answers a Poll. */
export function controlPacket(s: BfdState, final = false): BfdControlPacket {
  return {
    version: BFD_VERSION,
    diag: s.localDiag,
    state: s.session,
    poll: s.polling && !final,
    final,
    controlPlaneIndependent: false,
    authPresent: false,
    demand: false,
    multipoint: false,
    detectMult: s.params.detectMult,
    myDiscriminator: s.localDiscr,
    yourDiscriminator: s.remoteDiscr,
    desiredMinTxInterval: s.desiredMinTxUs,
    requiredMinRxInterval: s.requiredMinRxUs,
    requiredMinEchoRxInterval: 0,
  }
}

function timing(s: BfdState): BfdAction[] {
  return [{ type: 'txInterval', us: txIntervalUs(s), detectMult: s.params.detectMult }]
}

/**
 * §6.8.3: the advertised intervals for a state and the operator's parameters, and how the intervals in
 * use follow: a faster TX or a longer RX applies at once; a slower TX or a shorter RX waits for the
 * Poll Sequence while Up. Starts a Poll when an advertised value changes while Up.
 */
function withIntervals(s: BfdState, session: BfdStateName, params: BfdParameters): BfdState {
  const desiredMinTxUs = session === 'Up' ? params.desiredMinTxUs : Math.max(params.desiredMinTxUs, SLOW_TX_US)
  const requiredMinRxUs = params.requiredMinRxUs
  const changed = desiredMinTxUs !== s.desiredMinTxUs || requiredMinRxUs !== s.requiredMinRxUs
  const up = session === 'Up'
  const txInUseUs = up && s.session === 'Up' && desiredMinTxUs > s.txInUseUs ? s.txInUseUs : desiredMinTxUs
  const rxInUseUs = up && s.session === 'Up' && requiredMinRxUs < s.rxInUseUs ? s.rxInUseUs : requiredMinRxUs
  return { ...s, session, params, desiredMinTxUs, requiredMinRxUs, txInUseUs, rxInUseUs, polling: up ? s.polling || changed : false }
}

function transition(s: BfdState, to: BfdStateName, diag: number, reason: string, extra: Partial<BfdState> = {}): BfdStep {
  const from = s.session
  const next = { ...withIntervals({ ...s, ...extra }, to, s.params), localDiag: diag, reason }
  const actions: BfdAction[] = [
    { type: 'state', from, to, diag, remoteState: next.remoteSession, reason },
    // A state change is sent at once rather than waiting up to a (slow) interval.
    ...(to !== 'AdminDown' || from !== 'AdminDown' ? [{ type: 'send' as const, packet: controlPacket(next) }] : []),
    ...timing(next),
  ]
  return { next, actions }
}

export function stepBfd(s: BfdState, e: BfdEvent): BfdStep {
  switch (e.type) {
    case 'Received':
      return receive(s, e.packet)
    case 'DetectTimerExpired': {
      // §6.8.4, §6.8.1: the session goes Down and forgets the remote discriminator.
      const lost = { remoteDiscr: 0, remoteSession: 'Down' as const, remoteDetectMult: 0, remoteMinRxUs: 1, remoteDemand: false }
      if (s.session === 'Init' || s.session === 'Up') {
        return transition(s, 'Down', BfdDiag.CONTROL_DETECTION_TIME_EXPIRED, `no Control packet for the detection time (${detectTimeUs(s) / 1000} ms)`, lost)
      }
      const next = { ...s, ...lost }
      return { next, actions: [{ type: 'detectTime', us: 0 }, ...timing(next)] }
    }
    case 'TxTimerExpired':
      if (txIntervalUs(s) === 0) return { next: s, actions: [] }
      return { next: s, actions: [{ type: 'send', packet: controlPacket(s) }, ...timing(s)] }
    case 'AdminDown':
      if (s.session === 'AdminDown') return { next: s, actions: [] }
      return transition(s, 'AdminDown', BfdDiag.ADMINISTRATIVELY_DOWN, 'administratively down', {})
    case 'AdminUp':
      if (s.session !== 'AdminDown') return { next: s, actions: [] }
      return transition(s, 'Down', BfdDiag.NONE, 'administratively up')
    case 'SetParameters': {
      const next = withIntervals(s, s.session, e.params)
      return { next, actions: [...(next.polling && !s.polling ? [{ type: 'send' as const, packet: controlPacket(next) }] : []), ...timing(next), { type: 'detectTime', us: detectTimeUs(next) }] }
    }
    default: {
      const never: never = e
      return never
    }
  }
}

function sameRemote(s: BfdState, p: BfdControlPacket): boolean {
  return s.remoteDiscr === p.myDiscriminator && s.remoteSession === p.state && s.remoteDemand === p.demand &&
    s.remoteMinRxUs === p.requiredMinRxInterval && s.remoteDesiredMinTxUs === p.desiredMinTxInterval &&
    s.remoteDetectMult === p.detectMult && s.remoteDiag === p.diag
}

/** §6.8.6, from "bfd.RemoteDiscr = My Discriminator" on; the codec made the checks before it. */
function receive(s0: BfdState, p: BfdControlPacket): BfdStep {
  // An Up session receives the same packet ten times a second: then the state object stays the same one.
  let s: BfdState = sameRemote(s0, p)
    ? s0
    : {
        ...s0,
        remoteDiscr: p.myDiscriminator,
        remoteSession: p.state,
        remoteDemand: p.demand,
        remoteMinRxUs: p.requiredMinRxInterval,
        remoteDesiredMinTxUs: p.desiredMinTxInterval,
        remoteDetectMult: p.detectMult,
        remoteDiag: p.diag,
      }
  const actions: BfdAction[] = []
  // A Final ends our Poll Sequence: the intervals we advertised are now the ones in use.
  if (p.final && s.polling) s = { ...s, polling: false, txInUseUs: s.desiredMinTxUs, rxInUseUs: s.requiredMinRxUs }
  if (s.session === 'AdminDown') return { next: s, actions: [{ type: 'detectTime', us: 0 }] }
  let step: BfdStep | undefined
  const from = s.session
  if (p.state === 'AdminDown') {
    if (from !== 'Down') step = transition(s, 'Down', BfdDiag.NEIGHBOR_SIGNALED_SESSION_DOWN, 'the peer is administratively down')
  } else if (from === 'Down') {
    if (p.state === 'Down') step = transition(s, 'Init', BfdDiag.NONE, 'the peer is Down: three-way handshake')
    else if (p.state === 'Init') step = transition(s, 'Up', BfdDiag.NONE, 'the peer is in Init')
  } else if (from === 'Init') {
    if (p.state === 'Init' || p.state === 'Up') step = transition(s, 'Up', BfdDiag.NONE, `the peer is ${p.state}`)
  } else if (p.state === 'Down') {
    step = transition(s, 'Down', BfdDiag.NEIGHBOR_SIGNALED_SESSION_DOWN, `the peer went Down (${describeDiag(p.diag)})`)
  }
  if (step) {
    s = step.next
    actions.push(...step.actions)
  } else {
    actions.push(...timing(s))
  }
  // §6.8.6: a Poll is answered at once with a Final, whatever the transmit schedule.
  if (p.poll) actions.push({ type: 'send', packet: controlPacket(s, true) })
  actions.push({ type: 'detectTime', us: detectTimeUs(s) })
  return { next: s, actions }
}
