// The speaker's ring of FSM transitions: bounded per peer, newest first, filtered by peer and seq.

import t from 'tap'
import { TransitionLog } from '../../../bgp/session/transition-log.js'

const rec = (log: TransitionLog, peer: string, to: 'Idle' | 'Connect' | 'Established', at: number) =>
  log.record({ peer, from: 'Idle', to, event: 'ManualStart', reason: `to ${to}`, at })

t.test('keeps the last perPeer transitions of each peer, newest first', async (t) => {
  const log = new TransitionLog(3)
  for (let i = 1; i <= 5; i++) rec(log, 'a', 'Connect', i)
  rec(log, 'b', 'Established', 6)
  const all = log.recent()
  t.same(all.map((x) => [x.peer, x.seq]), [['b', 6], ['a', 5], ['a', 4], ['a', 3]], 'a keeps 3 of its 5, b its 1')
  t.same(log.recent({ peer: 'a', limit: 2 }).map((x) => x.seq), [5, 4])
  t.same(log.recent({ after: 4 }).map((x) => x.seq), [6, 5])
  t.same(log.recent({ peer: 'nobody' }), [])
})

t.test('forget drops a peer; seq keeps growing', async (t) => {
  const log = new TransitionLog()
  rec(log, 'a', 'Connect', 1)
  log.forget('a')
  t.same(log.recent(), [])
  t.equal(rec(log, 'a', 'Connect', 2).seq, 2)
})

t.test('a bad size is refused, naming it', async (t) => {
  t.throws(() => new TransitionLog(0), /perPeer: expected a positive integer, got 0/)
})
