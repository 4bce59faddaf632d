// pinto-fanout between a real kube-apiserver and real agents (PINTO_FANOUT_ADDRESSES): a label put on a core Node
// reaches the agents through it and a BGPPeer's session comes up; a kubelet's Node status reports reach no agent
// (the datastore's Node watch and the fan-out drop a change pinto does not read); the fan-out killed, the agents'
// sessions stay up, and once it is back they follow the cluster again.
import t from 'tap'
import { spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { cpus, loadavg, tmpdir } from 'node:os'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { type Datastore, encodeResource, resourceKey, type Resource } from '../../config/index.js'
import { bridgeLoopback } from '../harness/ns-bridge.js'
import { waitFor } from '../harness/wait.js'
import type { AgentProcess } from './agent-process.js'
import { kubeLab, logged, type KubeLab } from './kube-lab.js'

const FANOUT_BIN = fileURLToPath(new URL('../../../bin/pinto-fanout.js', import.meta.url))
const TARGET_MS = 2000
const deadline = (): number => ((loadavg()[0] ?? 0) > cpus().length ? 10_000 : TARGET_MS)

const mesh: Resource = { apiVersion: 'projectcalico.org/v3', kind: 'BGPConfiguration', metadata: { name: 'default' }, spec: { nodeToNodeMeshEnabled: false } }
const rackPeer: Resource = { apiVersion: 'projectcalico.org/v3', kind: 'BGPPeer', metadata: { name: 'rack-a' }, spec: { nodeSelector: "rack == 'a'", peerSelector: "rack == 'a'" } }

async function apply(store: Datastore, r: Resource): Promise<void> {
  await store.create(resourceKey(r.kind, r.metadata.name), encodeResource(r))
}

interface Fanout {
  readonly child: ChildProcess
  readonly port: number
  output(): string
  metric(name: string): Promise<number>
  kill(): Promise<void>
}

/** pinto-fanout on the host's loopback at `port` (0: any), over the lab's apiserver; killed at teardown. */
async function startFanout(lab: KubeLab, port: number): Promise<Fanout> {
  const child = spawn(process.execPath, [FANOUT_BIN], {
    env: { PATH: process.env.PATH ?? '', PINTO_DATASTORE: 'kubernetes', KUBECONFIG: lab.kubeconfig, PINTO_FANOUT_LISTEN: `127.0.0.1:${port}` },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let out = ''
  child.stdout.on('data', (c: Buffer) => (out += c.toString()))
  child.stderr.on('data', (c: Buffer) => (out += c.toString()))
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
    await exited
  })
  const serving = await waitFor(() => out.split('\n').map((l) => (l.includes('pinto-fanout serving') ? (JSON.parse(l) as { listen: { port: number } }) : undefined)).find((l) => l !== undefined), {
    timeoutMs: 60_000,
    what: `pinto-fanout serving (output so far: ${out.slice(-500)})`,
  })
  const at = serving.listen.port
  return {
    child,
    port: at,
    output: () => out,
    async metric(name) {
      const text = await (await fetch(`http://127.0.0.1:${at}/metrics`)).text()
      const line = text.split('\n').find((l) => l.startsWith(`${name} `))
      if (line === undefined) throw new Error(`no metric ${name} in:\n${text.slice(0, 2000)}`)
      return Number(line.split(' ')[1])
    },
    async kill() {
      child.kill('SIGKILL')
      await exited
    },
  }
}

async function established(lab: KubeLab, agent: AgentProcess, address: string): Promise<boolean> {
  return (await lab.peers(agent)).some((p) => p.address === address && p.state === 'Established')
}

/** A kubelet's status report: the Ready condition's heartbeat moves on, nothing pinto reads changes. */
async function report(lab: KubeLab, node: string, n: number): Promise<void> {
  const at = new Date(Date.now() + n * 1000).toISOString()
  const patch = { status: { conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', lastHeartbeatTime: at, lastTransitionTime: at }] } }
  await lab.api.kubectl('patch', 'node', node, '--subresource=status', '--type=merge', '-p', JSON.stringify(patch))
}

const lab = await kubeLab(t)
if ('skip' in lab) t.comment(`skipped: ${lab.skip}`)
else {
  t.test('agents follow the cluster through pinto-fanout', async (t) => {
    const fanout = await startFanout(lab, 0)
    await apply(lab.store, mesh)
    await apply(lab.store, rackPeer)
    const n1 = await lab.addNode('f1', '192.0.2.41')
    const n2 = await lab.addNode('f2', '192.0.2.42')
    for (const n of [n1, n2]) await bridgeLoopback(t, lab.topo, n.ns, fanout.port)
    await lab.registerNode(n1, { rack: 'a' })
    await lab.registerNode(n2, { rack: 'b' })
    const env = { PINTO_FANOUT_ADDRESSES: `127.0.0.1:${fanout.port}` }
    const a1 = lab.startAgent(t, n1, env)
    const a2 = lab.startAgent(t, n2, env)
    await Promise.all([a1.ready(120_000), a2.ready(120_000)])
    t.equal(logged(a1, /following the cluster through the fan-out/).length, 1, 'the agent says it follows the fan-out')
    await waitFor(async () => (await fanout.metric('pinto_fanout_followers')) === 4, { timeoutMs: 10_000, what: 'two watches per agent at the fan-out (resources, affinities)' })
    t.pass('each agent has its two streams open at the fan-out')

    const t0 = performance.now()
    await lab.api.kubectl('label', 'node', 'f2', 'rack=a', '--overwrite')
    await waitFor(() => established(lab, a2, '192.0.2.41'), { timeoutMs: 30_000, intervalMs: 10, what: 'the session f2 -> f1' })
    const ms = Math.round(performance.now() - t0)
    t.comment(`kubectl label node f2 rack=a -> session Established on f2 through the fan-out: ${ms} ms`)
    t.ok(ms < deadline(), `label to session ${ms} ms, within ${deadline()} ms`)

    // Kubelets' status reports reach no agent. A label put on f2 after them is the marker: f2's events come in
    // order, so once the label's event is sent, the reports before it were dropped.
    await waitFor(() => established(lab, a1, '192.0.2.42'), { timeoutMs: 10_000, what: 'f1 with f2 Established' })
    const sent = await fanout.metric('pinto_fanout_events_sent_total')
    for (let i = 1; i <= 10; i++) await report(lab, 'f2', i)
    await lab.api.kubectl('label', 'node', 'f2', 'zone=z1', '--overwrite')
    await waitFor(async () => (await fanout.metric('pinto_fanout_events_sent_total')) > sent, { timeoutMs: 10_000, what: 'the label\'s event sent' })
    await waitFor(async () => (await fanout.metric('pinto_fanout_events_sent_total')) >= sent + 2, { timeoutMs: 10_000, what: 'the label\'s event sent to both agents' })
    t.equal(await fanout.metric('pinto_fanout_events_sent_total'), sent + 2, 'ten Node status reports and a label: the label\'s event sent to each agent, no report')

    // The fan-out killed: the sessions stay up; the agents' views are behind until it is back.
    await fanout.kill()
    // Sampled for 3 s: a check that something stays true has no condition to wait for.
    const samples: boolean[] = []
    for (const end = Date.now() + 3000; Date.now() < end; await new Promise((r) => setTimeout(r, 250))) samples.push(await established(lab, a2, '192.0.2.41'))
    t.ok(samples.length > 0 && samples.every(Boolean), `the session stays up while the fan-out is gone (${samples.length} samples)`)
    const again = await startFanout(lab, fanout.port)
    await waitFor(async () => (await again.metric('pinto_fanout_followers')) === 4, { timeoutMs: 30_000, what: 'the agents back at the new fan-out' })
    await lab.api.kubectl('label', 'node', 'f2', 'rack=b', '--overwrite')
    await waitFor(async () => (await lab.peers(a2)).length === 0 && (await lab.peers(a1)).length === 0, { timeoutMs: 15_000, what: 'the session removed once f2 is out of rack a' })
    t.pass('after the fan-out restarted, a label change reaches both agents')
    await Promise.all([a1.stop(), a2.stop()])

    // A token file that holds nothing stops pinto-node at start, naming the variable, as it stops pinto-fanout.
    const empty = join(mkdtempSync(join(tmpdir(), 'pinto-fanout-token-')), 'token')
    writeFileSync(empty, '\n')
    const refused = lab.startAgent(t, n1, { ...env, PINTO_FANOUT_TOKEN_FILE: empty })
    t.equal(await refused.exited, 1, 'pinto-node with an empty token file exits 1')
    t.match(refused.stderr(), /PINTO_FANOUT_TOKEN_FILE: .*token is empty/, 'and names the variable')
  })
}
