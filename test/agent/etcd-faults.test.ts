// etcd frozen (SIGSTOP past the agent's request deadline, then SIGCONT) or killed (SIGKILL, restarted on the
// same data dir at once or after the deadline) at several points of a burst of 20 parallel ADDs through a real agent. Each round the
// runtime then DELs every pod, retrying until DEL succeeds as kubelet does; after that `ipam check` (no
// repair, and the agent's own repair is off) must be clean with nothing allocated, and no two pods that
// answered success may hold one address.

import t from 'tap'
import { basename } from 'node:path'
import { openDatastore } from '../../config/datastore-open.js'
import { checkIpam, describeProblem } from '../../ipam/check.js'
import { Ipam } from '../../ipam/ipam.js'
import { pintoConf } from '../cni/lab.js'
import { waitFor } from '../harness/wait.js'
import { etcdLab, startAgent } from './agent-proc.js'
import { FAULT_ROUNDS, injectFault } from './fault-rounds.js'

const PODS = 20

t.test('etcd frozen or killed mid-burst: after every pod\'s DEL, ipam check is clean and no address was given twice', async (t) => {
  // The agent runs in the lab's host namespace; etcd on this process's loopback is bridged there.
  const { etcd, spec, lab, env } = await etcdLab(t)
  const agent = await startAgent(t, lab, env)
  const conf = pintoConf(lab, '1.0.0')
  const netns = await Promise.all(Array.from({ length: PODS }, (_, i) => lab.pod(`e${i}`)))
  let failedTotal = 0
  for (const [r, round] of FAULT_ROUNDS.entries()) {
    const att = (i: number) => ({ containerId: `etcd${r}x${i}`, netns: netns[i] as string, args: `K8S_POD_NAMESPACE=faults;K8S_POD_NAME=pod-${r}-${i}` })
    const t0 = Date.now()
    const burst = Promise.all(Array.from({ length: PODS }, (_, i) => lab.exec('pinto', 'ADD', conf, att(i))))
    await waitFor(async () => (await lab.links(lab.hostNs)).length - 2 >= round.atVeths, { timeoutMs: 20_000, intervalMs: 2, what: `${round.atVeths} host veths` })
    await injectFault(etcd, round.fault)
    const adds = await burst
    const ok = adds.flatMap((a) => (a.code === 0 ? [(a.json as { ips: { address: string }[] }).ips[0]!.address] : []))
    failedTotal += PODS - ok.length
    t.comment(`round ${r} (${round.fault} at ${round.atVeths} veths): ${ok.length} ADDs succeeded, ${PODS - ok.length} failed`)
    t.equal(new Set(ok).size, ok.length, `round ${r}: the successful ADDs hold distinct addresses`)
    const t1 = Date.now()
    // The runtime's DEL of every pod, retried until it succeeds.
    await Promise.all(Array.from({ length: PODS }, (_, i) => waitFor(async () => (await lab.exec('pinto', 'DEL', conf, att(i))).code === 0, { timeoutMs: 30_000, intervalMs: 200, what: `round ${r}: DEL of pod ${i}` })))
    t.comment(`round ${r}: ADDs ${t1 - t0} ms, DELs ${Date.now() - t1} ms`)
    const store = await openDatastore(spec)
    try {
      const report = await checkIpam(new Ipam(store, { pools: [] }))
      t.same(report.problems.map(describeProblem), [], `round ${r}: ipam check clean after every DEL`)
      t.equal(report.allocations, 0, `round ${r}: nothing left allocated`)
    } finally {
      await store.close()
    }
    t.same((await lab.links(lab.hostNs)).sort(), ['eth0', 'lo'], `round ${r}: every veth gone`)
    for (const ns of netns) t.same(await lab.links(basename(ns)), ['lo'], `round ${r}: ${basename(ns)} empty`)
  }
  t.ok(failedTotal > 0, `the faults made ADDs fail (${failedTotal} in all)`)
  await agent.kill('SIGTERM')
})
