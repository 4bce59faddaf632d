// pinto-node on the kubernetes datastore before the kubelet registered its Node: it says it waits and for which
// name, creates no Node, a CNI ADD meanwhile answers code 11, and once the kubelet's Node appears it goes on, writing its BGP fields onto that same Node
// as Calico's annotations (through nodes/status); the Node's own labels and addresses are left as they were.
import t from 'tap'
import { waitFor } from '../harness/wait.js'
import { kubeLab, logged } from './kube-lab.js'

interface KubeNode {
  metadata: { uid: string; labels?: Record<string, string>; annotations?: Record<string, string> }
  status?: { addresses?: { type: string; address: string }[] }
}

const lab = await kubeLab(t)
if ('skip' in lab) t.comment(`skipped: ${lab.skip}`)
else {
  t.test('waits for the kubelet-registered Node, never creates one, and goes on when it appears', async (t) => {
    const node = await lab.addNode('wait1', '192.0.2.11')
    const agent = lab.startAgent(t, node)
    const line = await waitFor(() => logged(agent, /^waiting for the Kubernetes Node/)[0], { timeoutMs: 60_000, what: 'the agent saying it waits for its Node' })
    t.match(line['msg'], /"wait1": the kubelet registers it, pinto-node does not create one/, `it says so, naming the Node: ${String(line['msg'])}`)
    t.equal(line['node'], 'wait1')
    t.equal(agent.child.exitCode, null, 'the agent is still running')
    const nodes = (await lab.api.kubectl('get', 'nodes', '-o', 'name')).trim()
    t.notMatch(nodes, /wait1/, 'no Node was created')
    t.equal((await agent.get('/v1/status').catch(() => ({ status: 0 }))).status, 0, 'the API is not up while it waits')
    const early = await lab.cni(node, agent, 'ADD', { containerId: 'early', netns: await lab.pod('early'), args: 'K8S_POD_NAMESPACE=w;K8S_POD_NAME=early' })
    t.equal((early.json as { code?: number } | undefined)?.code, 11, `an ADD meanwhile answers code 11, try again later: ${early.stdout.slice(0, 200)}`)

    await lab.registerNode(node, { rack: 'r1' })
    const uid = (JSON.parse(await lab.api.kubectl('get', 'node', 'wait1', '-o', 'json')) as KubeNode).metadata.uid
    await agent.ready(120_000)
    t.ok(logged(agent, /^the Kubernetes Node "wait1" is registered/).length === 1, 'it says the Node is there')
    const after = await waitFor(async () => {
      const n = JSON.parse(await lab.api.kubectl('get', 'node', 'wait1', '-o', 'json')) as KubeNode
      return n.metadata.annotations?.['projectcalico.org/IPv4Address'] !== undefined && n
    }, { timeoutMs: 30_000, what: 'the IPv4Address annotation' })
    t.equal(after.metadata.uid, uid, 'the same Node, annotated')
    t.equal(after.metadata.annotations?.['projectcalico.org/IPv4Address'], '192.0.2.11/24')
    t.equal(after.metadata.labels?.['rack'], 'r1', 'its labels are the kubelet\'s')
    t.same(after.status?.addresses?.find((a) => a.type === 'InternalIP')?.address, '192.0.2.11', 'its addresses are the kubelet\'s')
    const status = (await agent.get('/v1/status')).body as { node?: string }
    t.equal(status.node, 'wait1')
    await agent.stop()
  })
}
