// The session shell's timers over real loopback sockets, on a fake clock: KEEPALIVE every hold/3 and
// connect retry, both jittered into 0.75–1.0 of their time (RFC 4271 §10); the Idle hold after an error,
// doubling while errors repeat; and BFD Down holding the session Idle. Each state change's reason is checked.
import { createServer } from 'node:net'
import t, { type Test } from 'tap'
import { CeaseSubcode, ErrorCode, OpenSubcode, notification } from '../../../bgp/index.js'
import type { Transition } from '../../../bgp/session/transition-log.js'
import { FakeClock } from '../../harness/fake-clock.js'
import { waitFor } from '../../harness/wait.js'
import { BARE_ADDRESS, bareOpen, establish, speakerWithBarePeer, type Harness } from './bare-peer.js'

const newest = (h: Harness): Transition => h.speaker.transitions.recent({ peer: 'bare', limit: 1 })[0]!
const inState = (h: Harness, state: string): Promise<true> =>
  waitFor(() => h.status().state === state || undefined, { timeoutMs: 5000, intervalMs: 2, what: `state ${state}` })

/** Advances to 1 ms before `ms` and checks `probe` is unchanged, then 1 ms more and checks it moved. */
function firesAt(t: Test, h: Harness, ms: number, probe: () => unknown, what: string): void {
  const before = probe()
  h.clock.advance(Math.ceil(ms) - 1)
  t.same(probe(), before, `${what}: not yet at ${Math.ceil(ms) - 1} ms`)
  h.clock.advance(1)
  t.not(probe(), before, `${what}: at ${Math.ceil(ms)} ms`)
}

t.test('KEEPALIVE every hold/3, jittered into 0.75–1.0 of it', async (t) => {
  const clock = new FakeClock()
  // The keepalive timer is armed when the peer's OPEN is accepted: 0.75 × 3 s.
  clock.setRandom(0)
  const h = await speakerWithBarePeer(t, { holdTime: 9 }, clock)
  const bare = await establish(h, 9)
  t.equal(h.status().negotiated?.keepaliveTime, 3, 'keepalive time is a third of the hold time')
  const sent = (): number => h.status().counters.keepalivesOut
  clock.setRandom(0.9999)
  firesAt(t, h, 2250, sent, 'random 0: 0.75 × 3 s')
  await bare.received('keepalive', 2)
  clock.setRandom(0.5)
  firesAt(t, h, 3000 * (0.75 + 0.9999 * 0.25), sent, 'random 0.9999: just under 3 s')
  firesAt(t, h, 3000 * 0.875, sent, 'random 0.5: 0.875 × 3 s')
  await bare.received('keepalive', 4)
  t.equal(h.status().state, 'Established')
})

t.test('connect retry: a refused connect is tried again after ConnectRetryTime × 0.75–1.0', async (t) => {
  // A port on the peer's address where nothing listens: every connect is refused at once.
  const probe = createServer()
  await new Promise<void>((resolve) => probe.listen(0, BARE_ADDRESS, resolve))
  const port = (probe.address() as { port: number }).port
  await new Promise<void>((resolve) => probe.close(() => resolve()))

  const clock = new FakeClock()
  clock.setRandom(0)
  const h = await speakerWithBarePeer(t, { passive: false, port, connectRetryTime: 5 }, clock)
  await inState(h, 'Active')
  t.match(newest(h), { from: 'Connect', to: 'Active', event: 'TcpConnectionFails', reason: /^connection failed: connect ECONNREFUSED/ }, 'the refusal is the reason')
  const retries = (): number => h.speaker.transitions.recent({ peer: 'bare' }).filter((x) => x.event === 'ConnectRetryTimer_Expires').length
  firesAt(t, h, 3750, retries, 'random 0: 0.75 × 5 s')
  t.match(newest(h), { from: 'Active', to: 'Connect', reason: 'connect retry' })
  // The next wait is drawn when this connect is refused.
  clock.setRandom(0.9999)
  await inState(h, 'Active')
  firesAt(t, h, 5000 * (0.75 + 0.9999 * 0.25), retries, 'random 0.9999: just under 5 s')
  clock.setRandom(0.5)
  await inState(h, 'Active')
  firesAt(t, h, 5000 * 0.875, retries, 'random 0.5: 0.875 × 5 s')
})

t.test('after an error the session waits out an Idle hold that doubles while errors repeat', async (t) => {
  const clock = new FakeClock()
  clock.setRandom(0)
  const h = await speakerWithBarePeer(t, {}, clock)
  const refusedOpen = async (n: number): Promise<void> => {
    const bare = await h.connect()
    bare.send(bareOpen(90, [], 65099))
    const msg = await bare.received('notification')
    t.match(msg, { code: ErrorCode.OPEN_MESSAGE, subcode: OpenSubcode.BAD_PEER_AS }, `error ${n}: OPEN Message Error / Bad Peer AS sent`)
    await inState(h, 'Idle')
    t.match(newest(h), { to: 'Idle', event: 'BGPOpen', reason: /^OPEN refused: .*Bad Peer AS/ }, `error ${n}: logged with its reason`)
  }
  const active = (): boolean => h.status().state === 'Active'

  await refusedOpen(1)
  const whileIdle = await h.connect()
  await waitFor(() => whileIdle.closed || undefined, { timeoutMs: 5000, intervalMs: 2, what: 'a connection while Idle refused' })
  firesAt(t, h, 5000 * 0.75, active, 'first Idle hold: 0.75 × 5 s')
  t.match(newest(h), { from: 'Idle', to: 'Active', event: 'IdleHoldTimer_Expires', reason: 'idle hold over; restarting' })

  await refusedOpen(2)
  firesAt(t, h, 10_000 * 0.75, active, 'second error in a row: the Idle hold doubles to 0.75 × 10 s')

  // A session that reaches Established resets it: the next error waits the first Idle hold again.
  const bare = await establish(h, 90)
  bare.send(notification(ErrorCode.CEASE, CeaseSubcode.ADMINISTRATIVE_RESET))
  await inState(h, 'Idle')
  t.match(newest(h), { from: 'Established', event: 'NotifMsg', reason: 'NOTIFICATION received: Cease / Administrative Reset (code 6, subcode 4)' }, 'the NOTIFICATION with its code and subcode')
  firesAt(t, h, 5000 * 0.75, active, 'after an Established session: 0.75 × 5 s again')
})

t.test('BFD Down stops the session with Cease / BFD Down and holds it Idle until BFD is Up', async (t) => {
  const h = await speakerWithBarePeer(t)
  const bare = await establish(h, 90)
  h.speaker.peer('bare')!.bfdDown('control detection time expired')
  t.match(await bare.received('notification'), { code: ErrorCode.CEASE, subcode: CeaseSubcode.BFD_DOWN })
  t.match(newest(h), { from: 'Established', to: 'Idle', event: 'ManualStop', reason: /^BFD down: control detection time expired: sent Cease \/ BFD Down/ })
  t.equal(h.status().lastError, 'BFD down: control detection time expired')
  h.clock.advance(3_600_000)
  t.equal(h.status().state, 'Idle', 'an hour later: no Idle hold restarted it')
  h.speaker.peer('bare')!.bfdUp()
  t.match(newest(h), { from: 'Idle', to: 'Active', event: 'ManualStart', reason: 'BFD is up again' })
})
