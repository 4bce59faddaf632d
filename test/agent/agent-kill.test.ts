// kill -9 of the agent at several points of a burst of 20 parallel ADDs (through its CNI channel, and in
// one round through the plugins' own ADD over the IPAM socket), then a restart and no DEL at all: every ADD
// that answered failure has left no veth, no address in its pod, no allocation and no handle; every ADD
// that succeeded still works (its pod pings the host) and keeps its address.

import t from 'tap'
import { rmSync } from 'node:fs'
import { basename, join } from 'node:path'
import { openDatastore } from '../../config/datastore-open.js'
import { handleOf } from '../../cni/config.js'
import { checkIpam } from '../../ipam/check.js'
import { Ipam } from '../../ipam/ipam.js'
import { HANDLES_PREFIX } from '../../ipam/records.js'
import { createLab, pintoConf } from '../cni/lab.js'
import { waitFor } from '../harness/wait.js'
import { type AgentProcess, startAgent } from './agent-proc.js'

const PODS = 20
/** The agent is killed once this many host veths exist (ADDs under way); 'socket' rounds take the plugins' own path. */
const ROUNDS: { killAtVeths: number; path: 'channel' | 'socket' }[] = [
  { killAtVeths: 1, path: 'channel' },
  { killAtVeths: 6, path: 'channel' },
  { killAtVeths: 14, path: 'channel' },
  { killAtVeths: 3, path: 'socket' },
  { killAtVeths: 12, path: 'socket' },
]

interface AddResult { ips: { address: string }[]; interfaces: { name: string }[] }

t.test('kill -9 of the agent mid-burst: after restart, failed ADDs left nothing and successful ones work', async (t) => {
  const lab = await createLab(t, { service: false })
  const env = { PINTO_DATASTORE: join(lab.dir, 'store'), PINTO_IPAM_REPAIR_SECONDS: '0' }
  const store = await openDatastore(join(lab.dir, 'store'))
  t.teardown(() => store.close())
  const ipam = new Ipam(store, { pools: [] })
  const conf = pintoConf(lab, '1.0.0')
  const netns = await Promise.all(Array.from({ length: PODS }, (_, i) => lab.pod(`k${i}`)))
  let agent: AgentProcess = await startAgent(t, lab, env)
  let failedTotal = 0
  for (const [r, round] of ROUNDS.entries()) {
    const att = (i: number) => ({ containerId: `kill${r}x${i}`, netns: netns[i] as string, args: `K8S_POD_NAMESPACE=kill;K8S_POD_NAME=pod-${r}-${i}` })
    // Without the FIFO the plugins do the ADD themselves, assigning over the socket.
    if (round.path === 'socket') rmSync(`${lab.socket}.requests`)
    const burst = Promise.all(Array.from({ length: PODS }, (_, i) => lab.exec('pinto', 'ADD', conf, att(i))))
    await waitFor(async () => (await lab.links(lab.hostNs)).length - 2 >= round.killAtVeths, { timeoutMs: 20_000, intervalMs: 2, what: `${round.killAtVeths} host veths` })
    await agent.kill('SIGKILL')
    const adds = await burst
    agent = await startAgent(t, lab, env)
    const ok = adds.flatMap((a, i) => (a.code === 0 ? [{ i, res: a.json as unknown as AddResult }] : []))
    const failed = adds.flatMap((a, i) => (a.code !== 0 ? [i] : []))
    failedTotal += failed.length
    t.comment(`round ${r} (${round.path}, killed at ${round.killAtVeths} veths): ${ok.length} ADDs succeeded, ${failed.length} failed (${[...new Set(failed.map((i) => `code ${adds[i]!.code}: ${adds[i]!.stdout.slice(0, 160)}`))].join(' | ')})`)
    const okHandles = ok.map(({ i }) => handleOf('k8s-pod-network', att(i).containerId, 'eth0')).sort()
    // Rolled-back handles are released through the agent's retried queue: wait for it to drain.
    const handles = await waitFor(async () => {
      const h = (await store.list(HANDLES_PREFIX)).items.map((kv) => kv.key.slice(HANDLES_PREFIX.length)).sort()
      return JSON.stringify(h) === JSON.stringify(okHandles) ? h : undefined
    }, { timeoutMs: 15_000, what: `round ${r}: only the successful ADDs' handles left` }).catch((err: Error) => err.message)
    t.same(handles, okHandles, `round ${r}: handles are exactly the successful ADDs'`)
    const allocated = (await ipam.store.list('/pinto/ipam/blocks/')).items.flatMap((kv) => {
      const b = JSON.parse(kv.value) as { allocations: (number | null)[]; attributes: { handleId: string | null }[] }
      return b.allocations.flatMap((a) => (a === null ? [] : [b.attributes[a]?.handleId ?? '']))
    }).sort()
    t.same(allocated, okHandles, `round ${r}: one address per successful ADD, none for a failed one`)
    t.same((await checkIpam(ipam)).problems, [], `round ${r}: ipam check clean`)
    const hostVeths = (await lab.links(lab.hostNs)).filter((l) => l !== 'lo' && l !== 'eth0').sort()
    t.same(hostVeths, ok.map(({ res }) => res.interfaces[0]!.name).sort(), `round ${r}: host veths are exactly the successful ADDs'`)
    for (const i of failed) t.same(await lab.links(basename(netns[i] as string)), ['lo'], `round ${r}: pod ${i} (failed) has no interface left`)
    for (const { i, res } of ok) {
      await lab.topo.exec(basename(netns[i] as string), 'ping', ['-c', '1', '-W', '2', '192.0.2.1'])
      t.ok(allocated.includes(handleOf('k8s-pod-network', att(i).containerId, 'eth0')), `round ${r}: pod ${i} (${res.ips[0]?.address}) pings the host and keeps its address`)
    }
    // Clean up for the next round, as the runtime would when the pods go.
    for (const { i } of ok) {
      const del = await lab.exec('pinto', 'DEL', conf, att(i))
      t.equal(del.code, 0, `round ${r}: DEL of pod ${i}`)
    }
  }
  t.ok(failedTotal > 0, `the kills interrupted ADDs (${failedTotal} answered failure in all)`)
  await agent.kill('SIGTERM')
})
