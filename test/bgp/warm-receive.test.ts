// The start-up warm-up of the receive path: its made-up table goes through decode, the Adj-RIB-In and the
// flush of a scratch RIB behind the policy it is given, every prefix a new destination, and nothing else.
import t from 'tap'
import { ACCEPT_ALL } from '../../bgp/policy/index.js'
import { compilePoolGuard, guardPoolPrefixes } from '../../bgp/policy/pool-guard.js'
import { warmReceivePath } from '../../bgp/session/warm-receive.js'

t.test('every made-up prefix is decoded, taken and handed out as a delta once', async (t) => {
  t.same(warmReceivePath(ACCEPT_ALL), { prefixes: 5000, deltas: 5000 })
  t.same(warmReceivePath(ACCEPT_ALL, 333), { prefixes: 333, deltas: 333 }, 'any size')
  const guarded = guardPoolPrefixes(ACCEPT_ALL, compilePoolGuard(['198.18.0.0/16'], []), () => undefined)
  t.same(warmReceivePath(guarded, 2000), { prefixes: 2000, deltas: 2000 }, 'a pool guard passes a table outside its pools')
})

t.test('the policy given is the one the made-up table meets', async (t) => {
  const refused: string[] = []
  const guarded = guardPoolPrefixes(ACCEPT_ALL, compilePoolGuard(['10.0.0.0/8'], []), (p) => refused.push(String(p.len)))
  t.same(warmReceivePath(guarded, 400), { prefixes: 400, deltas: 0 }, 'a pool over the made-up table refuses all of it')
  t.equal(refused.length, 400)
})
