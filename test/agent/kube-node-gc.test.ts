// kubectl delete node on the kubernetes datastore, three agents in a full mesh, a short grace period: within the
// grace a deleted Node keeps its blocks, affinities, handles, sessions and routes; after it they are released,
// its sessions dropped and its routes gone from the other nodes' kernels. A Node deleted at the same moment and
// registered again (bare, as a kubelet registers it) keeps everything, with no session reset.
import t from 'tap'
import { AFFINITIES_PREFIX, BLOCKS_PREFIX, HANDLES_PREFIX, decodeBlock } from '../../ipam/index.js'
import { waitFor } from '../harness/wait.js'
import type { AgentProcess } from './agent-process.js'
import { kubeLab, logged, type KubeLab } from './kube-lab.js'

const GRACE_SECONDS = 12

interface IpamOf {
  blocks: string[]
  affinities: string[]
  handles: string[]
}

/** What the datastore holds for `node`: blocks affine to it, its affinities, the handles of its pods. */
async function ipamOf(lab: KubeLab, node: string, containers: readonly string[]): Promise<IpamOf> {
  const blocks = (await lab.store.list(BLOCKS_PREFIX)).items.map((kv) => decodeBlock(kv.key, kv.value)).filter((b) => b.affinity === `host:${node}`).map((b) => b.cidr)
  const affinities = (await lab.store.list(`${AFFINITIES_PREFIX}${node}/`)).items.map((kv) => kv.key)
  const handles = (await lab.store.list(HANDLES_PREFIX)).items.map((kv) => kv.key).filter((k) => containers.some((c) => k.endsWith(c)))
  return { blocks: blocks.sort(), affinities: affinities.sort(), handles: handles.sort() }
}

async function sessions(lab: KubeLab, agent: AgentProcess): Promise<Map<string, string>> {
  return new Map((await lab.peers(agent)).filter((p) => p.state === 'Established').map((p) => [p.address, p.since ?? '']))
}

/** felix's forwarding routes in a node's kernel through `via`. */
async function routesVia(lab: KubeLab, node: Parameters<KubeLab['routes']>[0], via: string): Promise<string[]> {
  return (await lab.routes(node)).filter((r) => r.type === 'unicast' && r.via.includes(`via ${via} `)).map((r) => r.prefix).sort()
}

const lab = await kubeLab(t)
if ('skip' in lab) t.comment(`skipped: ${lab.skip}`)
else {
  t.test(`a deleted Node is released after ${GRACE_SECONDS} s; one back within the grace keeps everything`, async (t) => {
    const nodes = await Promise.all([lab.addNode('g1', '192.0.2.41'), lab.addNode('g2', '192.0.2.42'), lab.addNode('g3', '192.0.2.43')])
    const [n1, n2, n3] = nodes
    for (const n of nodes) await lab.registerNode(n)
    const env = { PINTO_NODE_GC_GRACE_SECONDS: String(GRACE_SECONDS), PINTO_IPAM_REPAIR_SECONDS: '0' }
    const agents = nodes.map((n) => lab.startAgent(t, n, env))
    const [a1, a2, a3] = agents as [AgentProcess, AgentProcess, AgentProcess]
    await Promise.all(agents.map((a) => a.ready(120_000)))
    await waitFor(async () => (await Promise.all(agents.map((a) => sessions(lab, a)))).every((s) => s.size === 2), { timeoutMs: 30_000, what: 'the full mesh Established' })

    // Two pods on g2 and two on g3.
    const pods: Record<string, string[]> = { g2: ['gc-g2-a', 'gc-g2-b'], g3: ['gc-g3-a', 'gc-g3-b'] }
    const netns = new Map<string, string>()
    for (const [node, agent, names] of [[n2, a2, pods['g2']!], [n3, a3, pods['g3']!]] as const) {
      for (const name of names) {
        netns.set(name, await lab.pod(name))
        const r = await lab.cni(node, agent, 'ADD', { containerId: name, netns: netns.get(name)!, args: `K8S_POD_NAMESPACE=gc;K8S_POD_NAME=${name}` })
        t.equal(r.code, 0, `ADD ${name}: ${r.stdout.slice(0, 200)}`)
      }
    }
    const before2 = await ipamOf(lab, 'g2', pods['g2']!)
    const before3 = await ipamOf(lab, 'g3', pods['g3']!)
    t.ok(before2.blocks.length === 1 && before2.affinities.length === 1 && before2.handles.length === 2, `g2 holds a block, its affinity and 2 handles: ${JSON.stringify(before2)}`)
    t.ok(before3.blocks.length === 1 && before3.handles.length === 2, `g3 too: ${JSON.stringify(before3)}`)
    const routes2 = await waitFor(async () => {
      const r = await routesVia(lab, n1, '192.0.2.42')
      return r.length > 0 && (await routesVia(lab, n3, '192.0.2.42')).length === r.length && r
    }, { timeoutMs: 20_000, what: 'g2\'s block routed on g1 and g3' })
    t.same(routes2, before2.blocks, 'g1 routes g2\'s block through g2')
    await waitFor(async () => (await routesVia(lab, n1, '192.0.2.43')).length > 0, { timeoutMs: 20_000, what: 'g3\'s block routed on g1' })
    const since3 = (await sessions(lab, a1)).get('192.0.2.43')

    const deleted = Date.now()
    await lab.api.kubectl('delete', 'node', 'g2', 'g3', '--wait=false')
    await lab.registerNode(n3)
    // g1 has seen the deletion (or, without a grace period, released g2 at once).
    await waitFor(async () => logged(a1, /^Node "g2" left the cluster/).length > 0 || JSON.stringify(await ipamOf(lab, 'g2', pods['g2']!)) !== JSON.stringify(before2), { timeoutMs: 10_000, intervalMs: 20, what: 'g1 noticing g2 left' })

    await t.test('within the grace period, g2 keeps its IPAM, sessions and routes', async (t) => {
      t.same(await ipamOf(lab, 'g2', pods['g2']!), before2, 'blocks, affinities and handles kept')
      t.ok((await sessions(lab, a1)).has('192.0.2.42'), 'g1 keeps its session with g2')
      t.same(await routesVia(lab, n1, '192.0.2.42'), routes2, 'g1 keeps g2\'s routes')
      t.ok(Date.now() - deleted < GRACE_SECONDS * 1000, 'checked within the grace period')
    })

    await t.test('after it, g2 is released, its sessions dropped and its routes gone from g1 and g3', async (t) => {
      await waitFor(async () => {
        const now = await ipamOf(lab, 'g2', pods['g2']!)
        return now.blocks.length + now.affinities.length + now.handles.length === 0
      }, { timeoutMs: (GRACE_SECONDS + 30) * 1000, intervalMs: 200, what: 'g2\'s IPAM released' })
      const after = Date.now() - deleted
      t.comment(`g2's IPAM released ${after} ms after kubectl delete node (grace ${GRACE_SECONDS} s)`)
      t.ok(after >= GRACE_SECONDS * 1000 - 1000, 'not before the grace period')
      await waitFor(async () => !(await sessions(lab, a1)).has('192.0.2.42') && !(await sessions(lab, a3)).has('192.0.2.42'), { timeoutMs: 15_000, what: 'the sessions with g2 dropped' })
      await waitFor(async () => (await routesVia(lab, n1, '192.0.2.42')).length === 0 && (await routesVia(lab, n3, '192.0.2.42')).length === 0, { timeoutMs: 15_000, what: 'g2\'s routes gone from g1 and g3' })
      t.pass('sessions with g2 dropped and its routes gone from the kernels of g1 and g3')
      t.ok(logged(a1, /^released the IPAM of a deleted node/).some((l) => l['node'] === 'g2') || logged(a3, /^released the IPAM of a deleted node/).some((l) => l['node'] === 'g2'), 'an agent says it released g2')
    })

    await t.test('g3, back within the grace period, keeps everything and its session never reset', async (t) => {
      t.same(await ipamOf(lab, 'g3', pods['g3']!), before3, 'blocks, affinities and handles kept')
      await waitFor(async () => {
        const n = JSON.parse(await lab.api.kubectl('get', 'node', 'g3', '-o', 'json')) as { metadata: { annotations?: Record<string, string> } }
        return n.metadata.annotations?.['projectcalico.org/IPv4Address'] === '192.0.2.43/24'
      }, { timeoutMs: 15_000, what: 'g3 registered again by its agent' })
      t.equal((await sessions(lab, a1)).get('192.0.2.43'), since3, 'g1\'s session with g3 is the one from before the deletion')
      t.ok((await routesVia(lab, n1, '192.0.2.43')).length > 0, 'g1 still routes g3\'s block')
      t.ok(logged(a1, /^Node "g3" came back within the grace period/).length > 0, 'g1 says g3 came back')
      t.ok(logged(a3, /^this node's Node "g3" is back: registering it again/).length > 0, 'g3\'s agent registers it again')
    })

    for (const [node, agent, names] of [[n3, a3, pods['g3']!]] as const) {
      for (const name of names) t.equal((await lab.cni(node, agent, 'DEL', { containerId: name, netns: netns.get(name)!, args: `K8S_POD_NAMESPACE=gc;K8S_POD_NAME=${name}` })).code, 0, `DEL ${name}`)
    }
    await Promise.all(agents.map((a) => a.stop()))
  })
}
