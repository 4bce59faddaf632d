// A cluster's bad hour, compressed: pods added and deleted continuously on three nodes over a real etcd,
// while an agent is killed (-9) and restarted and etcd is frozen at random moments. The runtime behaves as
// kubelet does: a failed ADD is followed by DEL, and a DEL is retried until it succeeds. At the end the
// allocations equal the live pods exactly, and every live pod is reachable from every node.

import t from 'tap'
import { decodeBlock } from '../../ipam/records.js'
import { waitConverged } from '../../agent/demo/observe.js'
import { AddFailed, type DemoNode, type DemoPod } from '../../agent/demo/cluster.js'
import { Rng } from '../harness/random.js'
import { waitFor } from '../harness/wait.js'
import { makeCluster } from './cluster.js'

const SECONDS = Number(process.env['PINTO_SOAK_SECONDS'] ?? 60)
const SEED = Number(process.env['PINTO_SOAK_SEED'] ?? Date.now() % 100_000)
const MAX_PODS_PER_NODE = 6

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

t.test(`soak: ${SECONDS} s of pod churn with agent kills and etcd freezes (seed ${SEED})`, async (t) => {
  const c = await makeCluster(t, { nodes: 3, datastore: 'etcd', env: { PINTO_LOG_LEVEL: 'warn' } })
  const etcd = c.etcd
  if (etcd === undefined) throw new Error('the cluster has no etcd')
  t.teardown(() => etcd.thaw())
  const rng = new Rng(SEED)
  const counts = { adds: 0, addsFailed: 0, dels: 0, delRetries: 0, agentKills: 0, etcdFreezes: 0 }
  const end = Date.now() + SECONDS * 1000
  const restarting = new Set<string>()

  /** DEL until it succeeds, as kubelet retries a pod's teardown. */
  const delUntilDone = async (pod: DemoPod): Promise<void> => {
    for (let i = 0; ; i++) {
      try {
        await c.delPod(pod)
        counts.dels++
        return
      } catch (err) {
        counts.delRetries++
        if (i > 300) throw err
        await sleep(200)
      }
    }
  }

  const churn = async (n: DemoNode): Promise<void> => {
    while (Date.now() < end) {
      const mine = c.pods.filter((p) => p.node === n.name)
      if (mine.length < MAX_PODS_PER_NODE && (mine.length === 0 || rng.float() < 0.6)) {
        try {
          await c.addPod(n)
          counts.adds++
        } catch (err) {
          if (!(err instanceof AddFailed)) throw err
          counts.addsFailed++
          // The runtime tears a sandbox down after a failed ADD.
          await delUntilDone(err.pod)
        }
      } else {
        await delUntilDone(rng.pick(mine))
      }
      await sleep(rng.int(150))
    }
  }

  const chaos = async (): Promise<void> => {
    while (Date.now() < end - 5000) {
      await sleep(2000 + rng.int(3000))
      if (rng.float() < 0.4) {
        const n = rng.pick(c.nodes)
        if (restarting.has(n.name)) continue
        restarting.add(n.name)
        counts.agentKills++
        await c.stopAgent(n, 'SIGKILL')
        await sleep(500 + rng.int(1500))
        await c.startAgent(n)
        restarting.delete(n.name)
      } else {
        counts.etcdFreezes++
        etcd.freeze()
        await sleep(1000 + rng.int(3000))
        etcd.thaw()
      }
    }
  }

  await Promise.all([...c.nodes.map(churn), chaos()])
  etcd.thaw()
  for (const n of c.nodes) if (c.agentPid(n) === undefined) await c.startAgent(n)

  // Every allocation is a live pod's, and every live pod has one: counted in the blocks, not the handles.
  const live = new Set(c.pods.map((p) => p.address))
  const allocated = async (): Promise<string[]> => {
    const out: string[] = []
    for (const kv of await c.listKeys('/pinto/ipam/blocks/')) {
      const b = decodeBlock(kv.key, kv.value)
      b.allocations.forEach((a, ord) => {
        if (a !== null && a !== undefined) out.push(`${b.cidr}#${ord}`)
      })
    }
    return out
  }
  const handles = async (): Promise<number> => (await c.listKeys('/pinto/ipam/handles/')).length
  // An agent finishes or rolls back the ADDs it was killed in at its restart; give that a moment.
  await waitFor(async () => (await allocated()).length === live.size && (await handles()) === live.size, { timeoutMs: 30_000, what: `allocations equal to the ${live.size} live pods` })
    .catch(() => undefined)
  const alloc = await allocated()
  const h = await handles()
  t.comment(`soak seed ${SEED}: ${JSON.stringify(counts)}; live pods ${live.size}, allocated addresses ${alloc.length}, handles ${h}`)
  t.equal(alloc.length, live.size, 'allocated addresses equal live pods')
  t.equal(h, live.size, 'handles equal live pods')
  t.equal(new Set(c.pods.map((p) => p.address)).size, c.pods.length, 'no address is held by two live pods')

  await waitConverged(c, 30_000)
  for (const n of c.nodes) {
    for (const p of c.pods) {
      const ok = await c.exec(n.ns, 'ping', ['-n', '-q', '-c', '1', '-W', '1', p.address]).then(() => true, () => false)
      if (!ok) {
        const again = await c.exec(n.ns, 'ping', ['-n', '-q', '-c', '3', '-i', '0.2', '-W', '1', p.address]).then(() => true, () => false)
        t.ok(again, `${n.name} reaches ${p.name} (${p.address})`)
      }
    }
  }
  t.pass(`every live pod (${c.pods.length}) reachable from every node`)
})
