// pinto-node while its etcd is frozen (SIGSTOP) and then resumed: the log says "down" once with the cause and
// "back" once with how long, /metrics and /v1/status follow, and both keep answering while etcd does not.
import t from 'tap'
import { Topology } from '../harness/netns.js'
import { startEtcd } from '../harness/etcd.js'
import { waitFor } from '../harness/wait.js'
import { startAgent, type AgentProcess } from './agent-process.js'

const topo = await Topology.create(t)
const node = await topo.addNode({ name: 'dsdown', v4: '192.0.2.31/24' })
const etcd = await startEtcd(t, { wrap: ['ip', 'netns', 'exec', node.ns], clientPort: 2379, peerPort: 2380 })
const agent = startAgent(t, node.ns, { PINTO_IP: '192.0.2.31/24', PINTO_BGP_PORT: '1179', PINTO_DATASTORE: etcd.datastore, PINTO_LOG_LEVEL: 'info' })
await agent.ready()

interface LogLine { msg: string; cause?: string; downSeconds?: number }
const logLines = (a: AgentProcess): LogLine[] =>
  a.stdout().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as LogLine)
const downs = () => logLines(agent).filter((l) => l.msg.startsWith('datastore down'))
const backs = () => logLines(agent).filter((l) => l.msg.startsWith('datastore back'))

async function metric(name: string): Promise<number | undefined> {
  const { text } = await agent.get('/metrics')
  const m = new RegExp(`^${name.replace(/[{}"]/g, '\\$&')} (\\S+)$`, 'm').exec(text)
  return m ? Number(m[1]) : undefined
}

interface Status { datastore: { state: string; cause?: string; transitions: { up: number; down: number } }; ipam: unknown }
const status = async (): Promise<Status> => (await agent.get('/v1/status')).body as Status

t.test('up at start', async (t) => {
  t.equal(await metric('pinto_datastore_up'), 1)
  t.equal(await metric('pinto_datastore_transitions_total{state="down"}'), 0)
  t.match(await status(), { datastore: { state: 'up', transitions: { up: 0, down: 0 } } })
})

t.test('etcd frozen: one "down" with the cause, metrics and status say so', async (t) => {
  process.kill(etcd.pid, 'SIGSTOP')
  // Resumed even if this test fails, so the harness can stop it.
  t.teardown(() => process.kill(etcd.pid, 'SIGCONT'))
  await waitFor(() => downs().length > 0, { timeoutMs: 30_000, what: 'a "datastore down" log line' })
  const [down] = downs()
  t.match(down?.cause, /etcd at http:\/\/127\.0\.0\.1:2379 (did not answer|failed)/, 'the cause names the endpoint')
  t.equal(await metric('pinto_datastore_up'), 0)
  t.equal(await metric('pinto_datastore_transitions_total{state="down"}'), 1)
  const s = await status()
  t.equal(s.datastore.state, 'down')
  t.match(s.datastore.cause, /127\.0\.0\.1:2379/)
  t.equal(s.ipam, null, 'IPAM counts are unknown while the datastore is away')
})

t.test('etcd resumed: one "back" with how long it was down', async (t) => {
  process.kill(etcd.pid, 'SIGCONT')
  await waitFor(() => backs().length > 0, { timeoutMs: 30_000, what: 'a "datastore back" log line' })
  t.ok((backs()[0]?.downSeconds ?? 0) > 0, `down for ${backs()[0]?.downSeconds} s`)
  await waitFor(async () => (await metric('pinto_datastore_up')) === 1, { timeoutMs: 5000, what: 'pinto_datastore_up 1' })
  t.equal(await metric('pinto_datastore_transitions_total{state="up"}'), 1)
  t.equal(await metric('pinto_datastore_transitions_total{state="down"}'), 1)
  t.match(await status(), { datastore: { state: 'up', transitions: { up: 1, down: 1 } }, ipam: { pools: 1 } })
  t.equal(downs().length, 1, 'logged "down" once')
  t.equal(backs().length, 1, 'logged "back" once')
})
