// The hold timer over a real socket, on a fake clock: every UPDATE and KEEPALIVE received pushes it on (the
// timer stays armed and re-arms itself when it fires before the deadline), and once the peer falls silent
// pinto sends Hold Timer Expired exactly the hold time after the last message, goes Idle, and says why.
import t from 'tap'
import { Afi, ErrorCode, KEEPALIVE, Safi, ipv4Prefix, packUpdates } from '../../../bgp/index.js'
import { waitFor } from '../../harness/wait.js'
import { BARE_OPTS, establish, speakerWithBarePeer, taken } from './bare-peer.js'

t.test('messages keep the session up past the hold time; silence ends it after the hold time', async (t) => {
  const h = await speakerWithBarePeer(t, { holdTime: 3 })
  const bare = await establish(h, 3)
  t.equal(h.status().negotiated?.holdTime, 3)

  // 4.8 s of UPDATEs and KEEPALIVEs, one every 0.6 s: well past the 3 s hold time.
  const update = packUpdates({ afi: Afi.IPV4, safi: Safi.UNICAST, attributes: { origin: 0, asPath: [], nextHop: '127.0.0.2', localPref: 100 }, announce: [ipv4Prefix(0xc6120000, 24)] }, BARE_OPTS)[0]!
  let n = h.status().counters.messagesIn
  for (let i = 0; i < 8; i++) {
    h.clock.advance(600)
    if (i % 2 === 0) bare.write(update)
    else bare.send(KEEPALIVE)
    await taken(h, ++n)
  }
  t.equal(bare.count('notification'), 0, 'no NOTIFICATION while messages keep coming')
  t.equal(h.status().state, 'Established', 'still Established 4.8 s in')

  // Then silence: Hold Timer Expired 3 s after the last message, not a millisecond before.
  h.clock.advance(2999)
  t.equal(h.status().state, 'Established', '2.999 s after the last message: still up')
  t.equal(bare.count('notification'), 0)
  h.clock.advance(1)
  const n4 = await bare.received('notification')
  t.match(n4, { type: 'notification', code: ErrorCode.HOLD_TIMER_EXPIRED, subcode: 0 }, 'the NOTIFICATION is Hold Timer Expired (4/0)')
  t.equal(h.status().state, 'Idle')
  const last = h.speaker.transitions.recent({ peer: 'bare', limit: 1 })[0]!
  t.match(last, { from: 'Established', to: 'Idle', event: 'HoldTimer_Expires', reason: 'hold timer expired' }, 'logged with its event and reason')
  t.match(h.status().lastError, /hold timer expired/)
  await waitFor(() => bare.closed || undefined, { timeoutMs: 5000, what: 'pinto closing the connection' })
})

t.test('a hold time of 0 runs no hold timer and sends no KEEPALIVEs', async (t) => {
  const h = await speakerWithBarePeer(t)
  const bare = await establish(h, 0)
  t.equal(bare.count('open'), 1)
  const keepalives = h.status().counters.keepalivesOut
  h.clock.advance(3_600_000)
  t.equal(h.status().state, 'Established', 'an hour of silence: still up')
  t.equal(h.status().counters.keepalivesOut, keepalives, 'and no KEEPALIVE sent')
})
