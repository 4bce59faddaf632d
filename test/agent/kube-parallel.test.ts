// 80 pods on 2 nodes on the kubernetes datastore, the ADDs of both nodes in parallel through their agents: no
// address given twice, `pintoctl ipam check` clean with 80 allocated, a pod on one node pings a pod on the other
// across the routes BGP put in the kernels; then 80 DELs and the check clean with nothing allocated. An ADD that
// answers code 11 (the apiserver too slow for the agent's deadline on a loaded machine) is retried as the kubelet
// retries a sandbox: DEL, then ADD again; the retries are counted and printed, and every other failure fails.

import t from 'tap'
import { basename } from 'node:path'
import type { PluginRun } from '../cni/lab.js'
import { pool } from '../harness/pool.js'
import { waitFor } from '../harness/wait.js'
import type { AgentProcess } from './agent-process.js'
import { kubeLab } from './kube-lab.js'
import { runPintoctl } from './pintoctl/run.js'

const PODS_PER_NODE = 40
/** ADDs under way at once on each node (the machine has 2 cores). */
const PARALLEL = 8
/** How long one pod's ADD is retried after code 11, as the kubelet keeps retrying a sandbox. */
const RETRY_FOR_MS = 240_000

const lab = await kubeLab(t)
if ('skip' in lab) t.comment(`skipped: ${lab.skip}`)
else {
  t.setTimeout(900_000)
  t.test(`${2 * PODS_PER_NODE} pods on 2 nodes in parallel: no duplicate, ipam check clean`, async (t) => {
    const nodes = [await lab.addNode('q1', '192.0.2.61'), await lab.addNode('q2', '192.0.2.62')]
    for (const n of nodes) await lab.registerNode(n)
    const agents = nodes.map((n) => lab.startAgent(t, n, { PINTO_IPAM_REPAIR_SECONDS: '0' }))
    await Promise.all(agents.map((a) => a.ready(120_000)))
    const ipamCheck = async (): Promise<{ status: number | null; out: string }> => {
      const r = await runPintoctl(['ipam', 'check', '--nodes=q1,q2'], { env: { PINTO_DATASTORE: 'kubernetes', KUBECONFIG: lab.kubeconfig } })
      return { status: r.status, out: `${r.stdout.trim()} ${r.stderr.trim()}` }
    }

    const pods = await Promise.all(nodes.map((n) => pool(PODS_PER_NODE, 8, (i) => lab.pod(`${n.name}-${i}`))))
    const att = (node: number, i: number) => ({ containerId: `par-${node}-${i}`, netns: pods[node]![i]!, args: `K8S_POD_NAMESPACE=load;K8S_POD_NAME=pod-${node}-${i}` })
    const run = (command: string, fn: (k: number, i: number) => Promise<PluginRun> = (k, i) => lab.cni(nodes[k]!, agents[k] as AgentProcess, command, att(k, i))): Promise<PluginRun[][]> =>
      Promise.all(nodes.map((_, k) => pool(PODS_PER_NODE, PARALLEL, (i) => fn(k, i))))
    let retried = 0
    const addAsKubelet = async (k: number, i: number): Promise<PluginRun> => {
      const agent = agents[k] as AgentProcess
      const until = Date.now() + RETRY_FOR_MS
      for (;;) {
        const r = await lab.cni(nodes[k]!, agent, 'ADD', att(k, i))
        if (r.code === 0 || (r.json as { code?: number } | undefined)?.code !== 11 || Date.now() > until) return r
        retried++
        await waitFor(async () => (await lab.cni(nodes[k]!, agent, 'DEL', att(k, i))).code === 0, { timeoutMs: 180_000, intervalMs: 500, what: `DEL of pod ${k}-${i} before its ADD is tried again` })
      }
    }
    const t0 = Date.now()
    const adds = await run('ADD', addAsKubelet)
    t.comment(`${2 * PODS_PER_NODE} ADDs in ${Date.now() - t0} ms, ${retried} retried after code 11`)
    t.same(adds.flat().filter((r) => r.code !== 0).map((r) => r.stdout), [], 'every ADD succeeded')
    const addrs = adds.map((rs) => rs.map((r) => (r.json as { ips?: { address: string }[] } | undefined)?.ips?.[0]?.address.split('/')[0] ?? ''))
    t.equal(new Set(addrs.flat()).size, 2 * PODS_PER_NODE, 'no address given twice')
    const check = await ipamCheck()
    t.equal(check.status, 0, `ipam check clean: ${check.out.slice(0, 600)}`)
    t.match(check.out, new RegExp(`Allocated IPs: ${2 * PODS_PER_NODE}\\b`), `${2 * PODS_PER_NODE} allocated`)

    // Across the nodes: the first pod of q1 reaches the first pod of q2 once BGP has routed q2's block on q1.
    const from = basename(pods[0]![0]!)
    const to = addrs[1]![0]!
    await waitFor(async () => (await lab.topo.exec(from, 'ping', ['-c', '1', '-W', '1', to], { reject: false })).exitCode === 0, { timeoutMs: 30_000, what: `a pod on q1 pinging ${to} on q2` })
    t.pass(`a pod on q1 pings ${to} on q2`)

    const t1 = Date.now()
    const dels = await run('DEL')
    t.comment(`${2 * PODS_PER_NODE} DELs in ${Date.now() - t1} ms`)
    t.same(dels.flat().filter((r) => r.code !== 0).map((r) => r.stdout + r.stderr), [], 'every DEL succeeded')
    const after = await ipamCheck()
    t.equal(after.status, 0, `ipam check clean after the DELs: ${after.out.slice(0, 600)}`)
    t.match(after.out, /Allocated IPs: 0\b/, 'nothing allocated')
    await Promise.all(agents.map((a) => a.stop()))
  })
}
