// One peer's timers on the injected Clock: the FSM's (ConnectRetry, Hold, Keepalive, DelayOpen, IdleHold),
// jittered as RFC 4271 §10 asks, and the shell's own (SendHold, Restart). Decides nothing: an FSM timer's
// expiry goes back as its event, a shell timer runs its callback. Never reads Date.now or Math.random.

import type { Clock } from './clock.js'
import type { FsmEvent, TimerName } from './fsm.js'

/** Timers the shell runs beside the FSM's: RFC 9687 send hold, and RFC 4724's wait for a restarting peer. */
export type ShellTimerName = 'SendHold' | 'Restart'

const EXPIRES: Record<TimerName, FsmEvent> = {
  ConnectRetry: { type: 'ConnectRetryTimer_Expires' },
  Hold: { type: 'HoldTimer_Expires' },
  Keepalive: { type: 'KeepaliveTimer_Expires' },
  DelayOpen: { type: 'DelayOpenTimer_Expires' },
  IdleHold: { type: 'IdleHoldTimer_Expires' },
}

/**
 * RFC 4271 §10: ConnectRetry and Keepalive (and our IdleHold, for the same reason) run for 0.75–1.0 of their
 * time so peers restarted together do not stay in step. DelayOpen is exact, and so is Hold: it is a deadline.
 */
export function jitterFactor(timer: TimerName, random: number): number {
  return timer === 'DelayOpen' || timer === 'Hold' ? 1 : 0.75 + random * 0.25
}

export class PeerTimers {
  private readonly handles = new Map<TimerName | ShellTimerName, unknown>()
  /** When the hold timer is due, moved on by every message received (see set). */
  private holdDeadline = 0
  /** When the armed hold timer's callback runs. */
  private holdFiresAt = 0

  constructor(
    private readonly clock: Clock,
    private readonly expired: (event: FsmEvent) => void,
  ) {}

  /** Carries out an FSM timer action: (re)start for `seconds`, 0 stops it. */
  set(name: TimerName, seconds: number): void {
    if (name === 'Hold' && seconds > 0) {
      // Restarted by every UPDATE and KEEPALIVE, tens of thousands of times in a table dump: the timer stays
      // armed and a restart only moves the deadline; a callback that finds the deadline moved arms again.
      const deadline = this.clock.now() + seconds * 1000
      this.holdDeadline = deadline
      if (this.handles.has('Hold') && this.holdFiresAt <= deadline) return
      this.clear('Hold')
      this.armHold(deadline)
      return
    }
    this.clear(name)
    if (seconds <= 0) return
    const ms = seconds * 1000 * jitterFactor(name, this.clock.random())
    this.handles.set(
      name,
      this.clock.setTimeout(() => {
        this.handles.delete(name)
        this.expired(EXPIRES[name])
      }, ms),
    )
  }

  /** Starts (or restarts) a shell timer: `fn` runs after `ms`, exactly. */
  start(name: ShellTimerName, ms: number, fn: () => void): void {
    this.clear(name)
    this.handles.set(
      name,
      this.clock.setTimeout(() => {
        this.handles.delete(name)
        fn()
      }, ms),
    )
  }

  running(name: TimerName | ShellTimerName): boolean {
    return this.handles.has(name)
  }

  clear(name: TimerName | ShellTimerName): void {
    const h = this.handles.get(name)
    if (h === undefined) return
    this.clock.clearTimeout(h)
    this.handles.delete(name)
  }

  clearAll(): void {
    for (const name of [...this.handles.keys()]) this.clear(name)
  }

  private armHold(at: number): void {
    this.holdFiresAt = at
    this.handles.set(
      'Hold',
      this.clock.setTimeout(
        () => {
          if (this.holdDeadline > this.clock.now()) {
            this.armHold(this.holdDeadline)
            return
          }
          this.handles.delete('Hold')
          this.expired(EXPIRES.Hold)
        },
        Math.max(0, at - this.clock.now()),
      ),
    )
  }
}
