// kill -9 one agent of a 4-node route-reflector cluster: the reflectors keep its block (stale, RFC 4724)
// and keep reflecting it, every kernel keeps the route and pings go on; restarted, it converges with no
// withdrawal of its block seen by `ip monitor route` on any other node.

import t from 'tap'
import { peers, ping, waitConverged } from '../../agent/demo/observe.js'
import { waitFor } from '../harness/wait.js'
import { hasRoute, locRib, makeCluster, monitorRoutes, ownBlocks } from './cluster.js'

t.test('kill -9 and restart of a client node', async (t) => {
  const c = await makeCluster(t, { nodes: 4, topology: 'rr' })
  for (const n of c.nodes) await c.addPod(n)
  await waitConverged(c, 30_000)
  const victim = c.node('node4')
  const [block] = await ownBlocks(victim)
  if (block === undefined) throw new Error('node4 owns no block after its pod was added')
  const others = c.nodes.filter((n) => n !== victim)
  const rr = c.node('node1')
  const podOf = (name: string) => c.pods.find((p) => p.node === name)!
  const monitors = await Promise.all(others.map((n) => monitorRoutes(t, n)))
  const sessionWithVictim = async (): Promise<string | undefined> => (await peers(rr)).rows.find((r) => r.address === victim.address)?.state

  await c.stopAgent(victim, 'SIGKILL')
  await waitFor(async () => (await sessionWithVictim()) !== 'Established', { timeoutMs: 15_000, what: 'node1 to see the session with node4 go down' })
  const stale = await locRib(rr, block)
  t.equal(stale?.length, 1, `the reflector's Loc-RIB still holds ${block}`)
  t.equal(stale?.[0]?.stale, true, 'marked stale while node4 restarts')
  for (const n of others) t.ok(await hasRoute(n, block), `${n.name}'s kernel keeps ${block}`)
  t.ok(await ping(podOf('node3'), podOf('node4').address), 'a pod on node3 still reaches the pod on node4')
  t.ok(await ping(podOf('node4'), podOf('node1').address), 'and the pod on node4 reaches node1')

  await c.startAgent(victim)
  await waitFor(async () => (await sessionWithVictim()) === 'Established', { timeoutMs: 20_000, what: 'the session with node4 back up' })
  await waitFor(async () => (await locRib(rr, block))?.[0]?.stale === false, { timeoutMs: 20_000, what: `node1's ${block} refreshed (not stale)` })
  for (const n of others) t.ok(await hasRoute(n, block), `${n.name}'s kernel has ${block} after the restart`)
  t.ok(await ping(podOf('node3'), podOf('node4').address), 'pods reach each other after the restart')
  for (const [i, m] of monitors.entries()) {
    await m.stop()
    const deleted = m.lines.filter((l) => l.startsWith('Deleted') && l.includes(block))
    t.same(deleted, [], `${others[i]!.name} saw no withdrawal of ${block} (${m.lines.length} route events watched)`)
  }
})
