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

const PODS = 20
/** Longer than the agent's etcd deadline (3.5 s + 0.5 s), so the writes it gave up on are applied after. */
const FREEZE_MS = 4300
/** The fault hits once this many host veths exist (ADDs under way). */
const ROUNDS: { fault: 'freeze' | 'crash' | 'crash-down'; atVeths: number }[] = [
  { fault: 'freeze', atVeths: 1 },
  { fault: 'crash-down', atVeths: 5 },
  { fault: 'freeze', atVeths: 10 },
  { fault: 'crash', atVeths: 15 },
]

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

t.test('etcd frozen or killed mid-burst: after every pod\'s DEL, ipam check is clean and no address was given twice', async (t) => {
  // The agent runs in the lab's host namespace; etcd on this process's loopback is bridged there.
  const { etcd, spec, lab, env } = await etcdLab(t)
  const agent = await startAgent(t, lab, env)
  const conf = pintoConf(lab, '1.0.0')
  const netns = await Promise.all(Array.from({ length: PODS }, (_, i) => lab.pod(`e${i}`)))
  let failedTotal = 0
  for (const [r, round] of ROUNDS.entries()) {
    const att = (i: number) => ({ containerId: `etcd${r}x${i}`, netns: netns[i] as string, args: `K8S_POD_NAMESPACE=faults;K8S_POD_NAME=pod-${r}-${i}` })
    const t0 = Date.now()
    const burst = Promise.all(Array.from({ length: PODS }, (_, i) => lab.exec('pinto', 'ADD', conf, att(i))))
    await waitFor(async () => (await lab.links(lab.hostNs)).length - 2 >= round.atVeths, { timeoutMs: 20_000, intervalMs: 2, what: `${round.atVeths} host veths` })
    if (round.fault === 'freeze') {
      etcd.freeze()
      // The fault's length, not a wait for a condition: the agent's requests must time out while it lasts.
      await pause(FREEZE_MS)
      etcd.thaw()
    } else {
      await etcd.crash()
      // 'crash-down' stays down past the agent's deadline; 'crash' is back at once (unacknowledged writes may or may not survive).
      if (round.fault === 'crash-down') await pause(FREEZE_MS)
      await etcd.restart()
    }
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
