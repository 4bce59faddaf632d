// A Node resource deleted (after its agent stopped): once its grace period (PINTO_NODE_GC_GRACE_SECONDS) is
// over, the other agents release its addresses and block affinities (IPAM) and drop its sessions, so its block
// routes leave every kernel and Loc-RIB; within the grace it keeps everything.

import t from 'tap'
import { affinityPrefix } from '../../ipam/records.js'
import { waitConverged } from '../../agent/demo/observe.js'
import { waitFor } from '../harness/wait.js'
import { hasRoute, locRib, makeCluster, ownBlocks } from './cluster.js'

const GRACE_SECONDS = 4

t.test('deleting a Node releases its blocks and withdraws its routes', async (t) => {
  const c = await makeCluster(t, { nodes: 3, env: { PINTO_NODE_GC_GRACE_SECONDS: String(GRACE_SECONDS) } })
  for (const n of c.nodes) await c.addPod(n)
  await waitConverged(c, 30_000)
  const victim = c.node('node3')
  const blocks = await ownBlocks(victim)
  t.ok(blocks.length > 0, `node3 owns ${blocks.join(', ')}`)
  t.ok((await c.listKeys(affinityPrefix('node3'))).length > 0, 'node3 has block affinities')
  const others = c.nodes.filter((n) => n !== victim)

  // A graceful stop: the others keep its routes (stale) for the restart window, until the Node goes.
  await c.stopAgent(victim, 'SIGTERM')
  for (const n of others) for (const b of blocks) t.ok(await hasRoute(n, b), `${n.name} keeps ${b} while node3 is only stopped`)
  t.ok(await c.deleteResource('Node', 'node3'), 'Node node3 deleted')
  const deletedAt = Date.now()
  t.ok((await c.listKeys(affinityPrefix('node3'))).length > 0, 'within the grace period node3 keeps its affinities')

  await waitFor(async () => (await c.listKeys(affinityPrefix('node3'))).length === 0, { timeoutMs: GRACE_SECONDS * 1000 + 15_000, what: "node3's affinities released" })
  t.ok(Date.now() - deletedAt >= GRACE_SECONDS * 1000, `released only after the grace period (${Date.now() - deletedAt} ms after the delete)`)
  t.pass('node3 has no block affinities left')
  const leftover = (await c.listKeys('/pinto/ipam/blocks/')).filter((kv) => kv.value.includes('host:node3'))
  t.same(leftover, [], 'no block is affine to node3')
  for (const n of others) {
    for (const b of blocks) {
      await waitFor(async () => !(await hasRoute(n, b)), { timeoutMs: 15_000, what: `${b} gone from ${n.name}'s kernel` })
      t.pass(`${n.name}'s kernel no longer routes ${b}`)
      t.same(await locRib(n, b), [], `${n.name}'s Loc-RIB has no ${b}`)
    }
  }
})
