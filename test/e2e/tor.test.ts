// eBGP to a BIRD top-of-rack router (AS 65000, cluster AS 64512, a global BGPPeer): BIRD learns exactly the
// nodes' blocks (no pod /32s, no VXLAN tunnel addresses), and every node installs the route BIRD originates;
// when BIRD withdraws it, it leaves every node's kernel, and it comes back when BIRD announces it again.

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

  // The router withdraws its route (its static protocol off): one Loc-RIB delta per node, and the kernel follows.
  const torRoute = async (ns: string): Promise<string | undefined> => (await kernelRoutes(ns)).find((r) => r.prefix === TOR_PREFIX)?.via
  await tor.birdc('disable', 'torstatic')
  for (const n of c.nodes) {
    await waitFor(async () => ((await torRoute(n.ns)) === undefined ? true : undefined), { timeoutMs: 15_000, what: `${TOR_PREFIX} to leave ${n.name}'s kernel` })
    t.pass(`${n.name}: ${TOR_PREFIX} left the kernel when BIRD withdrew it`)
  }
  await tor.birdc('enable', 'torstatic')
  for (const n of c.nodes) {
    const via = await waitFor(() => torRoute(n.ns), { timeoutMs: 15_000, what: `${TOR_PREFIX} back in ${n.name}'s kernel` })
    t.equal(via, `via ${TOR_ADDRESS} dev eth0`, `${n.name}: ${TOR_PREFIX} is back when BIRD announces it again`)
  }
})
