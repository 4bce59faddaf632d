// A 4-node cluster with two route reflectors (mesh off, BGPPeer nodeSelector all() peerSelector
// route-reflector == 'true'): sessions follow the resources, and pods ping across nodes in each
// encapsulation mode this kernel has (ipip skipped with the kernel's reason when it cannot make ipip links).

import t from 'tap'
import { kernelHasIpip } from '../../agent/demo/cluster.js'
import { matrixFailures, peers, pingMatrix, waitConverged } from '../../agent/demo/observe.js'
import { waitFor } from '../harness/wait.js'
import { makeCluster } from './cluster.js'

const ipip = await kernelHasIpip()

for (const encap of ['none', 'vxlan', 'ipip'] as const) {
  t.test(`route reflectors, encapsulation ${encap}`, { skip: encap === 'ipip' && !ipip.ok ? `this kernel cannot make ipip links: ${ipip.reason}` : false }, async (t) => {
    const c = await makeCluster(t, { nodes: 4, encap, topology: 'rr' })
    for (const n of c.nodes) await c.addPod(n)
    await waitConverged(c, 30_000)
    // Reflectors peer with everyone; clients only with the two reflectors (no mesh).
    for (const n of c.nodes) {
      const want = c.nodes.filter((o) => o !== n && (n.reflector || o.reflector)).map((o) => o.address).sort()
      const established = async (): Promise<{ source: string; addresses: string[] }> => {
        const p = await peers(n)
        return { source: p.source, addresses: p.rows.filter((r) => r.state === 'Established').map((r) => r.address).sort() }
      }
      // A session may still be opening when routes already flow through the other reflector.
      const seen = await waitFor(async () => {
        const s = await established()
        return JSON.stringify(s.addresses) === JSON.stringify(want) ? s : undefined
      }, { timeoutMs: 15_000, what: `${n.name}'s sessions` }).catch(() => established())
      t.equal(seen.source, 'api', `${n.name} answers on its REST API`)
      t.same(seen.addresses, want, `${n.name} (${n.reflector ? 'reflector' : 'client'}) has sessions with exactly ${want.join(', ')}`)
    }
    const m = await pingMatrix(c.pods)
    t.same(matrixFailures(m), [], 'every pod reaches every other pod')
    if (encap !== 'none') {
      const dev = encap === 'vxlan' ? 'vxlan.pinto' : 'tunl0'
      const routes = await c.ip(c.nodes[2]!.ns, ['route', 'show', 'proto', '87'])
      t.match(routes, dev, `remote blocks go through ${dev}`)
    }
  })
}
