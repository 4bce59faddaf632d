// Repeated ADDs of live pods under faults, against a real agent over a real etcd, for a bounded time: a
// CNI_NETNS that is no namespace, an ADD without CNI_ARGS, another pod's netns, the agent killed (-9) with
// ADDs in flight (its connection dropped; some rounds through the plugins' own path over the socket) or
// stopped (SIGSTOP) for a moment, etcd frozen past the agent's deadline; and pods replaced now and then.
// At the end every live pod's address is allocated exactly once, to its own handle, its wiring is there and
// the host reaches it; after every pod's DEL nothing is left. Seeded: PINTO_CNI_SOAK_SEED replays a run,
// PINTO_CNI_SOAK_SECONDS sets its length.

import t, { type Test } from 'tap'
import { rmSync, writeFileSync } from 'node:fs'
import { basename, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { openDatastore } from '../../config/datastore-open.js'
import { checkIpam, describeProblem } from '../../ipam/check.js'
import { Ipam } from '../../ipam/ipam.js'
import { blockCidr, ordinalAddress } from '../../ipam/block.js'
import { BLOCKS_PREFIX, decodeBlock } from '../../ipam/records.js'
import { type AgentProcess, etcdLab, startAgent } from '../agent/agent-proc.js'
import { Rng } from '../harness/random.js'
import { waitFor } from '../harness/wait.js'
import { type Attachment, type PluginRun, pintoConf } from './lab.js'

const SECONDS = Number(process.env['PINTO_CNI_SOAK_SECONDS'] ?? 75)
const SEED = Number(process.env['PINTO_CNI_SOAK_SEED'] ?? Date.now() % 100_000)
const PODS = 6
/** Longer than the agent's etcd deadline (3.5 s + 0.5 s): the assigns under way time out. */
const FREEZE_MS = 4300
const PINTOCTL = fileURLToPath(new URL('../../../bin/pintoctl.js', import.meta.url))

type Fault = 'none' | 'bad-netns' | 'no-args' | 'other-netns' | 'agent-kill' | 'agent-stop' | 'etcd-freeze' | 'replace'
const FAULTS: readonly Fault[] = ['none', 'bad-netns', 'no-args', 'other-netns', 'agent-kill', 'agent-stop', 'etcd-freeze', 'replace']

interface Pod {
  readonly att: Attachment
  readonly address: string
  readonly hostVeth: string
  readonly handle: string
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))
const addressOf = (r: PluginRun): string | undefined => (r.json as { ips?: { address: string }[] } | undefined)?.ips?.[0]?.address.split('/')[0]

t.test(`repeated ADDs of live pods under faults, ${SECONDS} s (seed ${SEED})`, async (t) => {
  const { etcd, spec, lab, env } = await etcdLab(t)
  t.teardown(() => etcd.thaw())
  let agent: AgentProcess = await startAgent(t, lab, env)
  // A failure while the agent is stopped must not leave it stopped.
  let stopped: number | undefined
  t.teardown(() => {
    if (stopped !== undefined) process.kill(stopped, 'SIGCONT')
  })
  const conf = pintoConf(lab, '1.0.0')
  const rng = new Rng(SEED)
  const notNs = join(lab.dir, 'not-a-netns')
  writeFileSync(notNs, '')
  const otherNs = await lab.pod('other')
  await lab.ip(basename(otherNs), ['link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'eth0p'])

  const counts = { tried: 0, succeeded: 0, failed: {} as Record<string, number>, replaced: 0 }
  const run = async (kind: Fault, att: Attachment): Promise<PluginRun> => {
    counts.tried++
    const r = await lab.exec('pinto', 'ADD', conf, att)
    if (r.code === 0) counts.succeeded++
    else counts.failed[kind] = (counts.failed[kind] ?? 0) + 1
    return r
  }
  let serial = 0
  const newPod = async (): Promise<Pod | undefined> => {
    const n = serial++
    const netns = await lab.pod(`s${n}`)
    const att = { containerId: `soak${n}`, netns, args: `K8S_POD_NAMESPACE=soak;K8S_POD_NAME=pod-${n}` }
    const r = await run('replace', att)
    if (r.code === 0) {
      const res = r.json as { interfaces: { name: string }[] }
      return { att, address: addressOf(r) as string, hostVeth: res.interfaces[0]!.name, handle: `k8s-pod-network.${att.containerId}` }
    }
    // A failed ADD is followed by DEL, as kubelet does.
    await delUntilDone(att)
    return undefined
  }
  const delUntilDone = (att: Attachment): Promise<unknown> =>
    waitFor(async () => (await lab.exec('pinto', 'DEL', conf, att)).code === 0, { timeoutMs: 60_000, intervalMs: 200, what: `DEL of ${att.containerId}` })
  /** A repeated ADD that came through: it answers the pod's own address. */
  const same = (t: Test, r: PluginRun, pod: Pod, kind: Fault): void => {
    if (r.code === 0) t.equal(addressOf(r), pod.address, `${kind}: a repeated ADD of ${pod.att.containerId} that succeeds answers its address`)
  }

  const pods: Pod[] = []
  while (pods.length < PODS) {
    const p = await newPod()
    t.ok(p, 'a first pod\'s ADD with no fault succeeds')
    if (p !== undefined) pods.push(p)
  }

  const end = Date.now() + SECONDS * 1000
  while (Date.now() < end) {
    const fault = rng.pick(FAULTS)
    const pod = rng.pick(pods)
    switch (fault) {
      case 'none': {
        const r = await run(fault, pod.att)
        t.equal(r.code, 0, `a repeated ADD of ${pod.att.containerId}: ${r.stdout.trim()}`)
        same(t, r, pod, fault)
        break
      }
      case 'bad-netns':
      case 'no-args':
      case 'other-netns': {
        const att = fault === 'bad-netns' ? { ...pod.att, netns: notNs } : fault === 'no-args' ? { containerId: pod.att.containerId, netns: pod.att.netns } : { ...pod.att, netns: otherNs }
        const r = await run(fault, att)
        t.not(r.code, 0, `${fault}: the repeated ADD of ${pod.att.containerId} fails`)
        break
      }
      case 'agent-kill': {
        // Some rounds without the channel: the plugins assign over the socket, whose connection the kill cuts.
        if (rng.int(2) === 0) rmSync(`${lab.socket}.requests`, { force: true })
        const victims = [pod, rng.pick(pods)]
        const adds = Promise.all(victims.map((p) => run(fault, p.att)))
        await pause(rng.int(400))
        await agent.kill('SIGKILL')
        const rs = await adds
        agent = await startAgent(t, lab, env)
        rs.forEach((r, i) => same(t, r, victims[i]!, fault))
        break
      }
      case 'agent-stop': {
        stopped = agent.pid
        process.kill(stopped, 'SIGSTOP')
        const add = run(fault, pod.att)
        await pause(500 + rng.int(1500))
        process.kill(stopped, 'SIGCONT')
        stopped = undefined
        const r = await add
        t.equal(r.code, 0, `a repeated ADD the stopped agent answers once it runs again: ${r.stdout.trim()}`)
        same(t, r, pod, fault)
        break
      }
      case 'etcd-freeze': {
        const victims = [pod, rng.pick(pods)]
        const adds = Promise.all(victims.map((p) => run(fault, p.att)))
        await pause(rng.int(200))
        etcd.freeze()
        // The fault's length, not a wait for a condition: the agent's requests must time out while it lasts.
        await pause(FREEZE_MS)
        etcd.thaw()
        const rs = await adds
        rs.forEach((r, i) => same(t, r, victims[i]!, fault))
        break
      }
      case 'replace': {
        await delUntilDone(pod.att)
        pods.splice(pods.indexOf(pod), 1)
        while (pods.length < PODS) {
          const p = await newPod()
          if (p !== undefined) pods.push(p)
        }
        counts.replaced++
        break
      }
    }
  }

  // Every live pod: its address allocated exactly once, to its handle; its veth, host route and address
  // there; reachable from the host.
  const store = await openDatastore(spec)
  t.teardown(() => store.close())
  const ipam = new Ipam(store, { pools: [] })
  const held = new Map<string, string[]>()
  for (const a of await allocations(ipam)) held.set(a.address, [...(held.get(a.address) ?? []), a.handle])
  let checked = 0
  for (const p of pods) {
    t.same(held.get(p.address), [p.handle], `${p.address} is allocated once, to ${p.handle}`)
    t.match(await lab.ip(lab.hostNs, ['route', 'show', 'dev', p.hostVeth]), `${p.address} scope link`, `${p.hostVeth} routes ${p.address}`)
    t.match(await lab.ip(basename(p.att.netns), ['addr', 'show', 'dev', 'eth0']), `inet ${p.address}/32`, `${p.att.containerId}'s eth0 has it`)
    const ping = await lab.topo.exec(lab.hostNs, 'ping', ['-c', '1', '-W', '2', p.address], { reject: false })
    t.equal(ping.exitCode, 0, `the host reaches ${p.att.containerId} at ${p.address}`)
    checked++
  }
  t.equal(new Set(pods.map((p) => p.address)).size, pods.length, 'no two live pods share an address')
  // Not spawnSync: the bridge to etcd runs in this process.
  const check = await lab.topo.exec(lab.hostNs, process.execPath, [PINTOCTL, 'ipam', 'check'], { env: { PINTO_DATASTORE: spec }, reject: false })
  t.match(check.stdout, /Check complete; found 0 problems\./, `pintoctl ipam check on the node is clean: ${String(check.stdout)}${String(check.stderr)}`)
  t.match(check.stdout, `Addresses of pod interfaces on this host: ${pods.length}`)

  const failed = Object.entries(counts.failed).map(([k, n]) => `${k} ${n}`).join(', ') || 'none'
  t.comment(`seed ${SEED}: ADDs tried ${counts.tried}, succeeded ${counts.succeeded}, failed by kind: ${failed}; pods replaced ${counts.replaced}, pods live ${pods.length}, addresses checked ${checked}`)
  process.stdout.write(`# seed ${SEED}: ADDs tried ${counts.tried}, failed by kind: ${failed}; pods live ${pods.length}, addresses checked ${checked}\n`)

  // And every pod's DEL leaves nothing.
  for (const p of pods) await delUntilDone(p.att)
  const report = await checkIpam(ipam)
  t.same(report.problems.map(describeProblem), [], 'ipam check clean after every DEL')
  t.equal(report.allocations, 0, 'nothing left allocated')
  t.same((await lab.links(lab.hostNs)).filter((l) => l.startsWith('pinto')), [], 'no host veth left')
  await agent.kill('SIGTERM')
})

/** Every allocation in the store: address and handle. */
async function allocations(ipam: Ipam): Promise<{ address: string; handle: string }[]> {
  const out: { address: string; handle: string }[] = []
  for (const kv of (await ipam.store.list(BLOCKS_PREFIX)).items) {
    const b = decodeBlock(kv.key, kv.value)
    b.allocations.forEach((idx, ord) => {
      if (idx !== null) out.push({ address: ordinalAddress(blockCidr(b), ord), handle: b.attributes[idx]?.handleId ?? '' })
    })
  }
  return out
}
