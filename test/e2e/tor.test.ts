// eBGP to a BIRD top-of-rack router (AS 65000, cluster AS 64512, a global BGPPeer): BIRD learns exactly the
// nodes' blocks (no pod /32s, no VXLAN tunnel addresses), and every node installs the route BIRD originates.

import t from 'tap'
import { birdInstalled } from '../../agent/demo/cluster.js'
import { covered, kernelRoutes, waitConverged } from '../../agent/demo/observe.js'
import { TOR_ADDRESS, TOR_PREFIX } from '../../agent/demo/tor.js'
import { waitFor } from '../harness/wait.js'
import { makeCluster, ownBlocks } from './cluster.js'

const bird = await birdInstalled()

t.test('BIRD top-of-rack over eBGP', { skip: bird ? false : 'bird2 is not installed' }, async (t) => {
  // VXLAN, so each node also holds a tunnel address that must not leak as a /32.
  const c = await makeCluster(t, { nodes: 3, tor: true, encap: 'vxlan' })
  for (const n of c.nodes) await c.addPod(n)
  await c.addPod(c.node('node1'))
  await waitConverged(c, 30_000, ['203.0.113.1'])
  const tor = c.tor!
  const blocks = (await Promise.all(c.nodes.map(ownBlocks))).flat().sort()
  t.equal(blocks.length, 3, `one block per node: ${blocks.join(', ')}`)
  const learned = await waitFor(async () => {
    const l = await tor.learned()
    return JSON.stringify(l) === JSON.stringify(blocks) ? l : undefined
  }, { timeoutMs: 15_000, what: 'BIRD to learn every block' }).catch(() => tor.learned())
  t.same(learned, blocks, 'BIRD learned every node block and nothing else')
  t.notOk(learned.some((p) => p.endsWith('/32')), 'no /32 (pods, tunnel addresses) reached BIRD')
  const sessions = await tor.sessions()
  t.same([...sessions.values()], ['Established', 'Established', 'Established'], 'BIRD has a session with every node')
  for (const n of c.nodes) {
    const route = (await kernelRoutes(n.ns)).find((r) => r.prefix === TOR_PREFIX)
    t.equal(route?.via, `via ${TOR_ADDRESS} dev eth0`, `${n.name} installed ${TOR_PREFIX} via the router`)
    t.ok(covered(await kernelRoutes(n.ns), '203.0.113.1'), `${n.name} forwards 203.0.113.1`)
  }
})
