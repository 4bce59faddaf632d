// The kube-apiserver frozen (SIGSTOP past the agents' request deadline but within an ADD's own, which waits it
// out, then SIGCONT) or killed (SIGKILL, started again at once or after the deadline) at several points of a burst
// of 20 parallel CNI ADDs through a real agent on the kubernetes datastore, a second agent its BGP peer. Every ADD
// that fails answers CNI code 11 (try again later); no two successful ADDs hold one address; the agents recover by
// themselves (the next round's ADDs and the DELs succeed, retried as kubelet retries them); the BGP session never
// resets and each node's kernel keeps the other's routes; and after every round's DELs `pintoctl ipam check` is
// clean with only the two anchor pods allocated.

import t from 'tap'
import { execa } from 'execa'
import { HANDLES_PREFIX } from '../../ipam/index.js'
import { waitFor } from '../harness/wait.js'
import type { NetNode } from '../harness/netns.js'
import type { AgentProcess } from './agent-process.js'
import { FAULT_ROUNDS, injectFault } from './fault-rounds.js'
import { kubeLab, type KubeLab } from './kube-lab.js'
import { runPintoctl } from './pintoctl/run.js'

const PODS = 20

async function hostVeths(node: NetNode): Promise<string[]> {
  const links = JSON.parse(String((await execa('ip', ['-n', node.ns, '-j', 'link', 'show'])).stdout)) as { ifname: string }[]
  return links.map((l) => l.ifname).filter((n) => n.startsWith('pinto'))
}

async function sinceOf(lab: KubeLab, agent: AgentProcess, address: string): Promise<string | undefined> {
  const p = (await lab.peers(agent)).find((x) => x.address === address)
  return p?.state === 'Established' ? (p.since ?? '') : undefined
}

const lab = await kubeLab(t)
if ('skip' in lab) t.comment(`skipped: ${lab.skip}`)
else {
  // Four apiserver restarts on a shared 2-core machine.
  t.setTimeout(900_000)
  t.test('kube-apiserver frozen or killed mid-burst: code 11, recovery, sessions and routes kept, nothing leaked', async (t) => {
    const n1 = await lab.addNode('f1', '192.0.2.51')
    const n2 = await lab.addNode('f2', '192.0.2.52')
    await lab.registerNode(n1)
    await lab.registerNode(n2)
    const env = { PINTO_IPAM_REPAIR_SECONDS: '0' }
    const a1 = lab.startAgent(t, n1, env)
    const a2 = lab.startAgent(t, n2, env)
    await Promise.all([a1.ready(120_000), a2.ready(120_000)])
    const anchorNs = new Map<string, string>()
    const anchor = async (node: NetNode, agent: AgentProcess): Promise<string> => {
      const name = `anchor-${node.name}`
      anchorNs.set(name, await lab.pod(name))
      const r = await lab.cni(node, agent, 'ADD', { containerId: name, netns: anchorNs.get(name)!, args: `K8S_POD_NAMESPACE=faults;K8S_POD_NAME=${name}` })
      if (r.code !== 0) throw new Error(`anchor ADD on ${node.name}: ${r.stdout}`)
      return name
    }
    const anchors = [await anchor(n1, a1), await anchor(n2, a2)]
    const routed = async (): Promise<boolean> => {
      const on2 = (await lab.routes(n2)).some((r) => r.type === 'unicast' && r.via.includes('via 192.0.2.51 '))
      const on1 = (await lab.routes(n1)).some((r) => r.type === 'unicast' && r.via.includes('via 192.0.2.52 '))
      return on1 && on2
    }
    await waitFor(routed, { timeoutMs: 30_000, what: 'each node routing the other\'s block' })
    const since = [await sinceOf(lab, a1, '192.0.2.52'), await sinceOf(lab, a2, '192.0.2.51')]
    t.ok(since.every((s) => s !== undefined), 'the session is up')
    const anchorVeths = (await hostVeths(n1)).length

    const netns = await Promise.all(Array.from({ length: PODS }, (_, i) => lab.pod(`f${i}`)))
    let failedTotal = 0
    for (const [r, round] of FAULT_ROUNDS.entries()) {
      const att = (i: number) => ({ containerId: `kf${r}x${i}`, netns: netns[i] as string, args: `K8S_POD_NAMESPACE=faults;K8S_POD_NAME=pod-${r}-${i}` })
      const t0 = Date.now()
      const burst = Promise.all(Array.from({ length: PODS }, (_, i) => lab.cni(n1, a1, 'ADD', att(i))))
      await waitFor(async () => (await hostVeths(n1)).length - anchorVeths >= round.atVeths, { timeoutMs: 60_000, intervalMs: 5, what: `${round.atVeths} host veths` })
      await injectFault(lab.api, round.fault)
      const adds = await burst
      const ok = adds.flatMap((a) => (a.code === 0 ? [(a.json as { ips: { address: string }[] }).ips[0]!.address] : []))
      const failed = adds.filter((a) => a.code !== 0)
      failedTotal += failed.length
      t.comment(`round ${r} (${round.fault} at ${round.atVeths} veths): ${ok.length} ADDs succeeded, ${failed.length} failed in ${Date.now() - t0} ms`)
      t.equal(new Set(ok).size, ok.length, `round ${r}: the successful ADDs hold distinct addresses`)
      t.same([...new Set(failed.map((a) => (a.json as { code?: number } | undefined)?.code))].filter((c) => c !== 11), [], `round ${r}: every failed ADD answered code 11: ${[...new Set(failed.map((a) => a.stdout.slice(0, 200)))].join(' | ')}`)

      const t1 = Date.now()
      await Promise.all(Array.from({ length: PODS }, (_, i) => waitFor(async () => (await lab.cni(n1, a1, 'DEL', att(i))).code === 0, { timeoutMs: 90_000, intervalMs: 250, what: `round ${r}: DEL of pod ${i}` })))
      t.comment(`round ${r}: DELs ${Date.now() - t1} ms`)
      const check = await runPintoctl(['ipam', 'check'], { env: { PINTO_DATASTORE: 'kubernetes', KUBECONFIG: lab.kubeconfig } })
      t.equal(check.status, 0, `round ${r}: pintoctl ipam check clean: ${check.stdout.trim().slice(0, 600)} ${check.stderr.trim().slice(0, 300)}`)
      const handles = (await lab.store.list(HANDLES_PREFIX)).items.map((kv) => kv.key.slice(HANDLES_PREFIX.length)).sort()
      t.same(handles, anchors.map((a) => `k8s-pod-network.${a}`).sort(), `round ${r}: only the anchors' handles left`)
      t.equal((await hostVeths(n1)).length, anchorVeths, `round ${r}: every burst veth gone`)
      t.same([await sinceOf(lab, a1, '192.0.2.52'), await sinceOf(lab, a2, '192.0.2.51')], since, `round ${r}: the BGP session never reset`)
      t.ok(await routed(), `round ${r}: each kernel still routes the other node's block`)
    }
    t.ok(failedTotal > 0, `the faults made ADDs fail (${failedTotal} in all)`)
    for (const [node, agent] of [[n1, a1], [n2, a2]] as const) {
      const name = `anchor-${node.name}`
      t.equal((await lab.cni(node, agent, 'DEL', { containerId: name, netns: anchorNs.get(name)! })).code, 0, `DEL ${name}`)
    }
    await Promise.all([a1.stop(), a2.stop()])
  })
}
