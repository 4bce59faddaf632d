// A real pinto-node (kernel dataplane) against a hand-written BGP speaker in the next namespace, one session
// over IPv4 (IPv4 unicast only) and one over IPv6 (IPv6 unicast only): a malformed MP_UNREACH_NLRI or
// MP_REACH_NLRI for the family the session did not negotiate deletes nothing, from the RIB or the kernel,
// and leaves the session up; /v1/peers and /metrics count it by kind and the peer's lastError names it.
import t from 'tap'
import { execa } from 'execa'
import type { Socket } from 'node:net'
import { Afi, KEEPALIVE, Safi, SegmentType, makeOpen, packUpdates, parsePrefix, type Prefix } from '../../bgp/index.js'
import { ROUTE_PROTOCOL, kernelRoutes } from '../../agent/demo/observe.js'
import { BARE_OPTS, BarePeer } from '../bgp/session/bare-peer.js'
import { BAD_IPV4_MP, BAD_IPV6_MP } from '../bgp/bad-mp.js'
import { createTopology } from '../harness/netns.js'
import { dialFrom } from '../harness/ns-bridge.js'
import { waitFor } from '../harness/wait.js'
import { startAgent, type AgentProcess } from './agent-process.js'
import { runPintoctl } from './pintoctl/run.js'

const PINTO_AS = 64512
const RAW_AS = 65000
const BGP_PORT = 179

interface PeerJson {
  address: string
  state: string
  lastError: string | null
  prefixes: { received: number; accepted: number }
  counters: { updatesIn: number }
  updatesRefused: Record<string, number>
  disabledFamilies: string[]
  capabilities: { families: string[] } | null
}

const topo = await createTopology(t)
const np = await topo.addNode({ name: 'pinto', v4: '192.0.2.1/24', v6: '2001:db8::1/64' })
const nr = await topo.addNode({ name: 'raw', v4: '192.0.2.2/24', v6: '2001:db8::2/64' })
const store = `${await topo.tempDir('store')}/store`
const resources = [
  { apiVersion: 'projectcalico.org/v3', kind: 'BGPConfiguration', metadata: { name: 'default' }, spec: { asNumber: PINTO_AS, nodeToNodeMeshEnabled: false } },
  { apiVersion: 'projectcalico.org/v3', kind: 'BGPPeer', metadata: { name: 'raw4' }, spec: { peerIP: nr.v4!, asNumber: RAW_AS } },
  { apiVersion: 'projectcalico.org/v3', kind: 'BGPPeer', metadata: { name: 'raw6' }, spec: { peerIP: nr.v6!, asNumber: RAW_AS } },
]
const applied = await runPintoctl(['apply', '-f', '-'], { env: { PINTO_DATASTORE: store }, input: JSON.stringify({ apiVersion: 'v1', kind: 'List', items: resources }) })
if (applied.status !== 0) throw new Error(`pintoctl apply: ${applied.stderr}`)
const agent: AgentProcess = startAgent(t, np.ns, {
  PINTO_DATASTORE: store, PINTO_DATAPLANE: 'kernel', PINTO_IP: `${np.v4!}/24`, PINTO_IP6: `${np.v6!}/64`, PINTO_LOG_LEVEL: 'info',
})
await agent.ready()

async function peer(address: string): Promise<PeerJson | undefined> {
  return ((await agent.get('/v1/peers')).body as { peers: PeerJson[] }).peers.find((p) => p.address === address)
}

/** felix's routes in pinto's kernel, IPv4 or IPv6, as prefixes. */
async function kernel(family: 'ipv4' | 'ipv6'): Promise<string[]> {
  if (family === 'ipv4') return (await kernelRoutes(np.ns)).filter((r) => r.type === 'unicast').map((r) => r.prefix)
  const r = await execa('ip', ['-n', np.ns, '-6', '-j', 'route', 'show', 'proto', String(ROUTE_PROTOCOL)])
  return (JSON.parse(String(r.stdout) || '[]') as { dst: string; type?: string }[]).filter((x) => (x.type ?? 'unicast') === 'unicast').map((x) => x.dst)
}

interface Side {
  readonly family: 'ipv4' | 'ipv6'
  readonly address: string
  readonly agentAddress: string
  /** The family it never negotiates, whose malformed MP attributes it is sent. */
  readonly other: string
  readonly bad: Readonly<Record<string, Buffer>>
  readonly routes: readonly string[]
  readonly later: string
}

const sides: Side[] = [
  {
    family: 'ipv4', address: nr.v4!, agentAddress: np.v4!, other: 'ipv6-unicast', bad: BAD_IPV6_MP,
    routes: ['198.19.1.0/24', '198.19.2.0/24', '198.19.3.0/24'], later: '198.19.4.0/24',
  },
  {
    family: 'ipv6', address: nr.v6!, agentAddress: np.v6!, other: 'ipv4-unicast', bad: BAD_IPV4_MP,
    routes: ['2001:db8:f1::/48', '2001:db8:f2::/48', '2001:db8:f3::/48'], later: '2001:db8:f4::/48',
  },
]

function announce(bare: BarePeer, side: Side, texts: readonly string[]): void {
  const prefixes: Prefix[] = texts.map(parsePrefix)
  const attributes = { origin: 0 as const, asPath: [{ type: SegmentType.AS_SEQUENCE, asns: [RAW_AS] }], ...(side.family === 'ipv4' ? { nextHop: side.address } : {}) }
  const batch = side.family === 'ipv4'
    ? { afi: Afi.IPV4, safi: Safi.UNICAST, attributes, announce: prefixes }
    : { afi: Afi.IPV6, safi: Safi.UNICAST, attributes, nextHop: [side.address], announce: prefixes }
  for (const u of packUpdates(batch, BARE_OPTS)) bare.write(u)
}

/** Connects from the raw speaker's namespace until pinto takes the session (its own connects find no listener). */
async function establish(side: Side): Promise<BarePeer> {
  const dial = await dialFrom(t, topo, nr.ns, { host: side.agentAddress, port: BGP_PORT, localAddress: side.address })
  await waitFor(() => peer(side.address), { timeoutMs: 30_000, what: `pinto configured with peer ${side.address}` })
  const open = makeOpen({
    asn: RAW_AS, holdTime: 0, bgpId: '192.0.2.2',
    capabilities: [{ kind: 'multiprotocol', afi: side.family === 'ipv4' ? Afi.IPV4 : Afi.IPV6, safi: Safi.UNICAST }, { kind: 'four-octet-as', asn: RAW_AS }],
  })
  return waitFor(async () => {
    const socket: Socket = await dial()
    const bare = new BarePeer(socket)
    bare.send(open)
    try {
      await bare.received('keepalive')
      bare.send(KEEPALIVE)
      await waitFor(async () => (await peer(side.address))?.state === 'Established', { timeoutMs: 5000, what: `session with ${side.address} Established` })
      return bare
    } catch (err) {
      socket.destroy()
      throw err
    }
  }, { timeoutMs: 45_000, intervalMs: 500, what: `a session from ${side.address}` })
}

for (const side of sides) {
  t.test(`${side.family} session: a malformed ${side.other} MP attribute (never negotiated) deletes nothing`, async (t) => {
    const bare = await establish(side)
    announce(bare, side, side.routes)
    await waitFor(async () => { const k = await kernel(side.family); return side.routes.every((p) => k.includes(p)) }, { timeoutMs: 20_000, what: `${side.routes.join(', ')} in pinto's kernel` })
    const up = (await peer(side.address))!
    t.same(up.capabilities?.families, [side.family === 'ipv4' ? 'ipv4-unicast' : 'ipv6-unicast'], 'one family negotiated')
    t.equal(up.prefixes.received, 3)

    let sent = 0
    for (const [name, bytes] of Object.entries(side.bad)) {
      const before = (await peer(side.address))!.counters.updatesIn
      bare.write(bytes)
      sent++
      const p = await waitFor(async () => {
        const now = await peer(side.address)
        return now !== undefined && now.counters.updatesIn > before ? now : undefined
      }, { timeoutMs: 10_000, what: `pinto to take in ${name}` })
      t.equal(p.state, 'Established', `${name}: the session stays up`)
      t.equal(p.prefixes.received, 3, `${name}: prefixes.received stays 3`)
      t.equal(p.prefixes.accepted, 3, `${name}: every route stays in the RIB`)
      t.equal(p.updatesRefused['afi-safi-disable'], sent, `${name}: counted in updatesRefused by kind`)
      t.same(p.disabledFamilies, [], `${name}: no negotiated family is disabled`)
      t.match(p.lastError, new RegExp(`malformed UPDATE for ${side.other} \\(not negotiated, nothing to delete\\)`), `${name}: lastError names it`)
    }

    // A valid announcement after them reaches the kernel: what was there before is there still beside it.
    announce(bare, side, [side.later])
    await waitFor(async () => (await kernel(side.family)).includes(side.later), { timeoutMs: 20_000, what: `${side.later} in pinto's kernel` })
    const routes = await kernel(side.family)
    for (const p of side.routes) t.ok(routes.includes(p), `${p} is still in the kernel`)
    t.equal((await peer(side.address))!.prefixes.accepted, 4)

    const metrics = (await agent.get('/metrics')).text
    const refused = metrics.split('\n').find((l) => l.startsWith('pinto_bgp_updates_refused_total{') && l.includes(`address="${side.address}"`) && l.includes('kind="afi-safi-disable"'))
    t.match(refused, / 2$/, `/metrics counts both by kind: ${refused}`)
    const disabled = metrics.split('\n').find((l) => l.startsWith('pinto_bgp_families_disabled{') && l.includes(`address="${side.address}"`))
    t.match(disabled, / 0$/, `/metrics: no family disabled: ${disabled}`)
  })
}
