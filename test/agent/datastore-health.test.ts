// The datastore's up/down step: any answer is up, an unanswered call is down, and a call that hung through an
// outage and fails after the datastore answered again does not flap it.
import t from 'tap'
import { step, type DatastoreHealth } from '../../agent/datastore-health.js'

const up: DatastoreHealth = { state: 'up', since: 0, transitions: { up: 0, down: 0 } }

t.test('down once with the cause, since the unanswered call was made', async (t) => {
  const s = step(up, { startedAt: 100, at: 4100, ok: false, cause: 'etcd at http://x:2379 did not answer get /a within 3500 ms' }, 0)
  t.same(s.change, { to: 'down', cause: 'etcd at http://x:2379 did not answer get /a within 3500 ms' })
  t.match(s.next, { state: 'down', since: 100, transitions: { up: 0, down: 1 } })
  const again = step(s.next, { startedAt: 200, at: 4200, ok: false, cause: 'another' }, 0)
  t.equal(again.change, undefined, 'a second failure changes nothing')
  t.equal(again.next, s.next)
})

t.test('back once with how long it was down', async (t) => {
  const down = step(up, { startedAt: 1000, at: 5000, ok: false, cause: 'c' }, 0).next
  const s = step(down, { startedAt: 9000, at: 9500, ok: true }, 9000)
  t.same(s.change, { to: 'up', downMs: 8500 })
  t.same(s.next, { state: 'up', since: 9500, transitions: { up: 1, down: 1 } })
  t.equal(step(s.next, { startedAt: 9600, at: 9700, ok: true }, 9600).change, undefined)
})

t.test('a failure of a call made before the last answer does not flap', async (t) => {
  const s = step(up, { startedAt: 500, at: 4500, ok: false, cause: 'late timeout' }, 900)
  t.equal(s.change, undefined)
  t.equal(s.next.state, 'up')
})
