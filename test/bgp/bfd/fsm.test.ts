// The BFD session of RFC 5880 driven event by event: every §6.8.6 transition with its diagnostic, the
// §6.8.3 interval rules with the Poll Sequence, the §6.8.4 detection time and §6.8.7 transmit interval
// and jitter, then two sessions on a fake clock coming Up and detecting a cut link.
import t from 'tap'
import { BfdDiag, type BfdControlPacket, type BfdStateName } from '../../../bgp/bfd/codec.js'
import { SLOW_TX_US, controlPacket, detectTimeUs, initialBfdState, jitteredUs, stepBfd, txIntervalUs, type BfdAction, type BfdEvent, type BfdState } from '../../../bgp/bfd/fsm.js'

const P = { desiredMinTxUs: 100_000, requiredMinRxUs: 100_000, detectMult: 3 }
const fresh = (): BfdState => initialBfdState(0x1111, P)

function from(state: BfdStateName, over: Partial<BfdState> = {}): BfdState {
  const s = fresh()
  const up = state === 'Up'
  return {
    ...s,
    session: state,
    remoteSession: state === 'AdminDown' ? 'Down' : state,
    remoteDiscr: state === 'Down' ? 0 : 0x2222,
    desiredMinTxUs: up ? P.desiredMinTxUs : SLOW_TX_US,
    txInUseUs: up ? P.desiredMinTxUs : SLOW_TX_US,
    remoteMinRxUs: 100_000,
    remoteDesiredMinTxUs: up ? 100_000 : SLOW_TX_US,
    remoteDetectMult: 3,
    ...over,
  }
}

function packet(state: BfdStateName, over: Partial<BfdControlPacket> = {}): BfdControlPacket {
  return {
    version: 1, diag: 0, state, poll: false, final: false, controlPlaneIndependent: false, authPresent: false, demand: false, multipoint: false,
    detectMult: 3, myDiscriminator: 0x2222, yourDiscriminator: state === 'Down' || state === 'AdminDown' ? 0 : 0x1111,
    desiredMinTxInterval: 100_000, requiredMinRxInterval: 100_000, requiredMinEchoRxInterval: 0, ...over,
  }
}

const stateActions = (a: readonly BfdAction[]) => a.filter((x) => x.type === 'state')
const sent = (a: readonly BfdAction[]) => a.flatMap((x) => (x.type === 'send' ? [x.packet] : []))

t.test('§6.8.6: every transition on a received packet', async (t) => {
  const table: [BfdStateName, BfdStateName, BfdStateName, number | undefined][] = [
    // local, received, next, diag when it changes
    ['Down', 'Down', 'Init', BfdDiag.NONE],
    ['Down', 'Init', 'Up', BfdDiag.NONE],
    ['Down', 'Up', 'Down', undefined],
    ['Down', 'AdminDown', 'Down', undefined],
    ['Init', 'Init', 'Up', BfdDiag.NONE],
    ['Init', 'Up', 'Up', BfdDiag.NONE],
    ['Init', 'Down', 'Init', undefined],
    ['Init', 'AdminDown', 'Down', BfdDiag.NEIGHBOR_SIGNALED_SESSION_DOWN],
    ['Up', 'Up', 'Up', undefined],
    ['Up', 'Init', 'Up', undefined],
    ['Up', 'Down', 'Down', BfdDiag.NEIGHBOR_SIGNALED_SESSION_DOWN],
    ['Up', 'AdminDown', 'Down', BfdDiag.NEIGHBOR_SIGNALED_SESSION_DOWN],
  ]
  for (const [local, rx, next, diag] of table) {
    const { next: s, actions } = stepBfd(from(local), { type: 'Received', packet: packet(rx) })
    t.equal(s.session, next, `${local} + received ${rx} -> ${next}`)
    const changes = stateActions(actions)
    if (diag === undefined) {
      t.same(changes, [], `${local} + ${rx}: no state change reported`)
    } else {
      t.match(changes, [{ from: local, to: next, diag, remoteState: rx }], `${local} + ${rx}: reported with diag ${diag}`)
      t.equal(s.localDiag, diag)
      t.equal(sent(actions)[0]?.state, next, 'the new state is sent at once')
    }
    t.equal(s.remoteDiscr, 0x2222, 'bfd.RemoteDiscr learnt from My Discriminator')
    t.match(actions.at(-1), { type: 'detectTime', us: 300_000 }, 'the detection timer restarts')
  }
})

t.test('§6.8.6: AdminDown discards what it receives; §6.8.16 local AdminDown and back', async (t) => {
  const down = stepBfd(from('Up'), { type: 'AdminDown' })
  t.equal(down.next.session, 'AdminDown')
  t.match(stateActions(down.actions), [{ from: 'Up', to: 'AdminDown', diag: BfdDiag.ADMINISTRATIVELY_DOWN }])
  t.match(sent(down.actions), [{ state: 'AdminDown', diag: BfdDiag.ADMINISTRATIVELY_DOWN }], 'the peer is told')
  const rx = stepBfd(down.next, { type: 'Received', packet: packet('Init') })
  t.equal(rx.next.session, 'AdminDown', 'a packet does not move AdminDown')
  t.same(stateActions(rx.actions), [])
  t.same(sent(rx.actions), [])
  const again = stepBfd(rx.next, { type: 'AdminUp' })
  t.equal(again.next.session, 'Down')
  t.same(stepBfd(again.next, { type: 'AdminUp' }).actions, [], 'AdminUp outside AdminDown does nothing')
})

t.test('§6.8.4: the detection time expires', async (t) => {
  for (const state of ['Init', 'Up'] as const) {
    const { next, actions } = stepBfd(from(state), { type: 'DetectTimerExpired' })
    t.equal(next.session, 'Down', `${state} -> Down`)
    t.equal(next.localDiag, BfdDiag.CONTROL_DETECTION_TIME_EXPIRED, 'diag 1')
    t.equal(next.remoteDiscr, 0, 'bfd.RemoteDiscr is zeroed (§6.8.1)')
    t.match(stateActions(actions), [{ from: state, to: 'Down', diag: 1, remoteState: 'Down' }])
    t.match(sent(actions), [{ state: 'Down', diag: 1, yourDiscriminator: 0 }])
    t.equal(next.desiredMinTxUs, SLOW_TX_US, 'back to the slow rate while not Up (§6.8.3)')
  }
  const { next, actions } = stepBfd(from('Down', { remoteDiscr: 0x2222 }), { type: 'DetectTimerExpired' })
  t.equal(next.session, 'Down')
  t.equal(next.remoteDiscr, 0)
  t.same(stateActions(actions), [], 'Down stays Down, unreported')
})

t.test('§6.8.4 detection time, §6.8.7 transmit interval and jitter', async (t) => {
  t.equal(detectTimeUs(fresh()), 0, 'no packet yet: no detection')
  t.equal(detectTimeUs(from('Up', { remoteDetectMult: 5, remoteDesiredMinTxUs: 300_000 })), 1_500_000, 'their multiplier × their slower TX')
  t.equal(detectTimeUs(from('Up', { remoteDetectMult: 3, remoteDesiredMinTxUs: 50_000, rxInUseUs: 200_000 })), 600_000, 'their multiplier × our slower RX')
  t.equal(txIntervalUs(fresh()), SLOW_TX_US, 'not Up: at most one packet a second')
  t.equal(txIntervalUs(from('Up', { remoteMinRxUs: 250_000 })), 250_000, 'no faster than the peer will receive')
  t.equal(txIntervalUs(from('Up', { remoteMinRxUs: 0 })), 0, 'Required Min RX 0: no periodic packets')
  t.equal(txIntervalUs(from('Up', { remoteDemand: true })), 0, 'remote Demand mode with both Up: periodic packets cease (§6.6)')
  t.same(stepBfd(from('Up', { remoteMinRxUs: 0 }), { type: 'TxTimerExpired' }).actions, [], 'and the timer sends nothing')
  t.equal(jitteredUs(100_000, 3, 0), 100_000)
  t.equal(jitteredUs(100_000, 3, 0.999999), 75_000, 'at most 25 % shorter')
  t.equal(jitteredUs(100_000, 1, 0), 75_000, 'Detect Mult 1: 75 %…')
  t.equal(jitteredUs(100_000, 1, 0.999999), 89_999, '…to 90 %')
})

t.test('§6.8.3 and §6.5: the Poll Sequence', async (t) => {
  // Coming Up drops the advertised TX from 1 s to 100 ms: a faster TX applies at once, and is polled.
  const up = stepBfd(from('Init'), { type: 'Received', packet: packet('Up') })
  t.equal(up.next.desiredMinTxUs, 100_000)
  t.equal(up.next.txInUseUs, 100_000, 'a shorter TX is used at once')
  t.equal(up.next.polling, true)
  t.match(sent(up.actions), [{ state: 'Up', poll: true, final: false, desiredMinTxInterval: 100_000 }])
  const done = stepBfd(up.next, { type: 'Received', packet: packet('Up', { final: true }) })
  t.equal(done.next.polling, false, 'a Final ends it')
  t.equal(controlPacket(done.next).poll, false)

  // Up at 100 ms, asked for a slower TX and a shorter RX: both wait for the Final.
  const slower = stepBfd(from('Up'), { type: 'SetParameters', params: { desiredMinTxUs: 500_000, requiredMinRxUs: 50_000, detectMult: 3 } })
  t.equal(slower.next.desiredMinTxUs, 500_000, 'advertised at once')
  t.equal(slower.next.txInUseUs, 100_000, 'a longer TX waits for the Final')
  t.equal(slower.next.rxInUseUs, 100_000, 'a shorter RX waits for the Final')
  t.match(sent(slower.actions), [{ poll: true, desiredMinTxInterval: 500_000, requiredMinRxInterval: 50_000 }])
  const mid = stepBfd(slower.next, { type: 'TxTimerExpired' })
  t.match(sent(mid.actions), [{ poll: true }], 'periodic packets carry P until the Final')
  const fin = stepBfd(mid.next, { type: 'Received', packet: packet('Up', { final: true, desiredMinTxInterval: 50_000 }) })
  t.equal(fin.next.txInUseUs, 500_000)
  t.equal(fin.next.rxInUseUs, 50_000)
  t.equal(detectTimeUs(fin.next), 150_000, 'the new RX now counts')
  t.match(fin.actions.find((a) => a.type === 'txInterval'), { us: 500_000 })

  // Asked for a faster TX and a longer RX while Up: both at once.
  const faster = stepBfd(from('Up'), { type: 'SetParameters', params: { desiredMinTxUs: 50_000, requiredMinRxUs: 300_000, detectMult: 3 } })
  t.equal(faster.next.txInUseUs, 50_000)
  t.equal(faster.next.rxInUseUs, 300_000)

  // Their Poll is answered at once with a Final, never with P and F together.
  const answer = stepBfd({ ...from('Up'), polling: true }, { type: 'Received', packet: packet('Up', { poll: true }) })
  t.match(sent(answer.actions), [{ final: true, poll: false }])
  const nothing = stepBfd(from('Up'), { type: 'Received', packet: packet('Up', { final: true }) })
  t.equal(nothing.next.polling, false, 'a Final with no Poll outstanding changes nothing')
})

t.test('two sessions on a fake clock: Up, then a cut link detected in Detect Mult × interval', async (t) => {
  interface End { s: BfdState; nextTx: number; detectAt: number; log: string[] }
  const ends: [End, End] = [
    { s: initialBfdState(1, P), nextTx: 0, detectAt: Infinity, log: [] },
    { s: initialBfdState(2, P), nextTx: 0, detectAt: Infinity, log: [] },
  ]
  let now = 0
  let linkUp = true
  const deliver: { at: number; to: number; p: BfdControlPacket }[] = []
  const apply = (i: number, e: BfdEvent): void => {
    const end = ends[i]!
    const r = stepBfd(end.s, e)
    end.s = r.next
    for (const a of r.actions) {
      if (a.type === 'send' && linkUp) deliver.push({ at: now + 1, to: 1 - i, p: a.packet })
      if (a.type === 'txInterval' && e.type === 'TxTimerExpired') end.nextTx = a.us === 0 ? Infinity : now + jitteredUs(a.us, a.detectMult, 0.5) / 1000
      if (a.type === 'detectTime') end.detectAt = a.us === 0 ? Infinity : now + a.us / 1000
      if (a.type === 'state') end.log.push(`${now}:${a.to}`)
    }
  }
  const runUntil = (end: number): void => {
    for (; now <= end; now++) {
      for (const d of deliver.filter((x) => x.at === now)) apply(d.to, { type: 'Received', packet: d.p })
      for (let i = 0; i < 2; i++) {
        if (ends[i]!.nextTx <= now) apply(i, { type: 'TxTimerExpired' })
        if (ends[i]!.detectAt <= now) {
          ends[i]!.detectAt = Infinity
          apply(i, { type: 'DetectTimerExpired' })
        }
      }
    }
  }
  runUntil(3000)
  t.equal(ends[0].s.session, 'Up')
  t.equal(ends[1].s.session, 'Up')
  t.equal(ends[0].s.polling, false, 'the Poll for the fast rate completed')
  t.equal(txIntervalUs(ends[0].s), 100_000, 'sending every 100 ms (before jitter)')
  linkUp = false
  const cut = now
  runUntil(cut + 1000)
  const downAt = Number(ends[0].log.at(-1)!.split(':')[0])
  t.match(ends[0].log.at(-1), /:Down$/)
  t.ok(downAt - cut <= 300 && downAt - cut > 200, `down ${downAt - cut} ms after the cut: within 3 × 100 ms of the last packet`)
  t.equal(ends[0].s.localDiag, BfdDiag.CONTROL_DETECTION_TIME_EXPIRED)
  linkUp = true
  runUntil(now + 5000)
  t.equal(ends[0].s.session, 'Up', 'the link back: Up again')
})

t.test('RFC 5882: what a BFD state change means for BGP', async (t) => {
  const { bgpVerdict } = await import('../../../bgp/bfd/couple.js')
  const c = (from: BfdStateName, to: BfdStateName, remoteState: BfdStateName = 'Down') => bgpVerdict({ from, to, remoteState, diag: 0, reason: '' })
  t.equal(c('Up', 'Down'), 'down', 'Up -> Down (detection time, or the peer Down): BGP stops')
  t.equal(c('Up', 'Down', 'AdminDown'), 'none', 'the peer AdminDown: BGP left alone')
  t.equal(c('Init', 'Down'), 'none', 'never Up: BGP left alone')
  t.equal(c('Down', 'Up'), 'up')
  t.equal(c('Up', 'AdminDown'), 'up', 'our AdminDown (BFD off) releases the hold')
  t.equal(c('Down', 'Init'), 'none')
})
