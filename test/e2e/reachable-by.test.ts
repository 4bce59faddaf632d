// BGPPeer reachableBy on a running cluster: felix programs Calico's static route to the peer through the
// gateway (peerIP/32 via reachableBy, with pinto's route protocol), the session keeps working through it,
// and the route leaves the kernel when the field goes.

import t from 'tap'
import { execa } from 'execa'
import { birdInstalled } from '../../agent/demo/cluster.js'
import { TOR_ADDRESS, TOR_AS, TOR_PREFIX } from '../../agent/demo/tor.js'
import { ROUTE_PROTOCOL } from '../../agent/demo/observe.js'
import type { Resource } from '../../config/resources/index.js'
import { waitFor } from '../harness/wait.js'
import { makeCluster } from './cluster.js'

const bird = await birdInstalled()

async function owned(ns: string, dst: string): Promise<{ dst: string; gateway?: string }[]> {
  const r = await execa('ip', ['-n', ns, '-j', 'route', 'show', 'proto', String(ROUTE_PROTOCOL), dst])
  return (JSON.parse(String(r.stdout) || '[]') as { dst: string; gateway?: string }[]).filter((x) => x.dst === dst.replace(/\/32$/, ''))
}

t.test('reachableBy is a static route to the peer through the gateway', { skip: bird ? false : 'bird2 is not installed' }, async (t) => {
  const c = await makeCluster(t, { nodes: 1, tor: true })
  const n = c.node('node1')
  await waitFor(async () => ((await owned(n.ns, TOR_PREFIX)).length > 0 ? true : undefined), { timeoutMs: 30_000, what: `${TOR_PREFIX} in node1's kernel` })
  t.same(await owned(n.ns, `${TOR_ADDRESS}/32`), [], 'no route to the peer before')

  const peer = (spec: Record<string, unknown>): Resource => ({ apiVersion: 'projectcalico.org/v3', kind: 'BGPPeer', metadata: { name: 'tor' }, spec: { peerIP: TOR_ADDRESS, asNumber: TOR_AS, ...spec } })
  // The router's own address is the gateway here: on-link, so the session keeps going through the route.
  await c.writeResources([peer({ reachableBy: TOR_ADDRESS })])
  const route = await waitFor(async () => (await owned(n.ns, `${TOR_ADDRESS}/32`))[0], { timeoutMs: 20_000, what: `${TOR_ADDRESS}/32 via the gateway` })
  t.equal(route.gateway, TOR_ADDRESS, 'peerIP/32 via reachableBy, owned by pinto')
  t.ok((await owned(n.ns, TOR_PREFIX)).length > 0, "the router's route is still learned")

  await c.writeResources([peer({})])
  await waitFor(async () => ((await owned(n.ns, `${TOR_ADDRESS}/32`)).length === 0 ? true : undefined), { timeoutMs: 20_000, what: `${TOR_ADDRESS}/32 removed` })
  t.pass('reachableBy taken away: the static route is gone')
})
