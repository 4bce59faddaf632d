// BGPConfiguration read by a real pinto-node at start: ignoredInterfaces keeps first-found off the
// interface it would otherwise pick, bindMode NodeIP makes the BGP listener bind the node's address
// only (not 0.0.0.0), listenPort is the port it listens on, and logSeverityScreen sets the BGP logs' level.
import t from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Topology } from '../harness/netns.js'
import { waitFor } from '../harness/wait.js'
import { startAgent } from './agent-process.js'
import { runPintoctl } from './pintoctl/run.js'

interface AddrJson { ifname: string; flags: string[]; addr_info: { local: string; scope: string }[] }

const topo = await Topology.create(t)
const node = await topo.addNode({ name: 'bindig', v4: '192.0.2.41/24' })
// A second interface with a global address: veth pair ig-a (addressed) / ig-b, both up.
await topo.exec(node.ns, 'ip', ['link', 'add', 'ig-a', 'type', 'veth', 'peer', 'name', 'ig-b'])
await topo.exec(node.ns, 'ip', ['addr', 'add', '198.51.100.41/24', 'dev', 'ig-a'])
await topo.exec(node.ns, 'ip', ['link', 'set', 'ig-b', 'up'])
await topo.exec(node.ns, 'ip', ['link', 'set', 'ig-a', 'up'])

// Which of the two first-found takes without ignoredInterfaces: the first up one, in the kernel's order.
const links = JSON.parse(String((await topo.exec(node.ns, 'ip', ['-4', '-json', 'addr', 'show'])).stdout)) as AddrJson[]
const candidates = links.filter((l) => l.flags.includes('UP') && (l.ifname === 'eth0' || l.ifname === 'ig-a') && l.addr_info.some((a) => a.scope === 'global'))
const [first, second] = candidates
if (first === undefined || second === undefined) throw new Error(`expected eth0 and ig-a up with addresses, got ${JSON.stringify(links)}`)
const want = second.addr_info.find((a) => a.scope === 'global')?.local

const dir = mkdtempSync(join(tmpdir(), 'pinto-bind-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))
const store = join(dir, 'store')
const config = {
  apiVersion: 'projectcalico.org/v3',
  kind: 'BGPConfiguration',
  metadata: { name: 'default' },
  // A glob, as Calico's docs allow: ig-* or eth*, whichever first-found would take.
  // logSeverityScreen Warning: the BGP logs drop to warnings while the agent logs at info.
  spec: { logSeverityScreen: 'Warning', bindMode: 'NodeIP', listenPort: 1178, ignoredInterfaces: [first.ifname === 'eth0' ? 'eth*' : 'ig-*'] },
}
const applied = await runPintoctl(['apply', '-f', '-'], { env: { PINTO_DATASTORE: store }, input: JSON.stringify(config) })
if (applied.status !== 0) throw new Error(`pintoctl apply: ${applied.stderr}`)

const agent = startAgent(t, node.ns, { PINTO_DATASTORE: store, PINTO_BGP_PORT: '1179', PINTO_LOG_LEVEL: 'info' })
await agent.ready()

t.test('ignoredInterfaces: first-found skips the ignored interface', async (t) => {
  const line = agent.stdout().split('\n').find((l) => l.includes('node IPv4 address'))
  t.ok(line, 'the address choice is logged')
  const logged = JSON.parse(line ?? '{}') as { address?: string; interface?: string }
  t.equal(logged.interface, second.ifname, `${first.ifname} is ignored, so ${second.ifname}`)
  t.equal(logged.address?.split('/')[0], want)
})

t.test('bindMode NodeIP and listenPort: the BGP listener is on the node address and port 1178 only', async (t) => {
  const listeners = await waitFor(async () => {
    const out = String((await topo.exec(node.ns, 'ss', ['-H', '-ltn'])).stdout)
    const mine = out.split('\n').map((l) => l.trim().split(/\s+/)[3]).filter((a): a is string => a !== undefined && /:117[89]$/.test(a))
    return mine.length > 0 ? mine : undefined
  }, { timeoutMs: 10_000, what: 'a BGP listener in the node namespace' })
  t.same(listeners, [`${want}:1178`], 'bound to the node IP and listenPort, not 0.0.0.0 and not PINTO_BGP_PORT')
})

t.test('logSeverityScreen Warning: no BGP info lines, the agent\'s own still at info', async (t) => {
  const lines = agent.stdout().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { level: number; component?: string; msg?: string })
  t.ok(lines.some((l) => l.level === 30 && l.component === undefined), 'the agent logs at info')
  t.same(lines.filter((l) => l.component === 'bgp' && l.level < 40).map((l) => l.msg), [], 'the speaker logs nothing below warn (not even "listening for BGP connections")')
})
