// A BGPFilter setPriority on import from a BIRD top-of-rack router (eBGP), applied at runtime to the
// running cluster: the node installs the router's prefix with the priority as its kernel metric, as
// Calico's BIRD sets krt_metric from it; taking the filter away puts the default metric back.

import t from 'tap'
import { execa } from 'execa'
import { birdInstalled } from '../../agent/demo/cluster.js'
import { TOR_ADDRESS, TOR_AS, TOR_PREFIX } from '../../agent/demo/tor.js'
import { ROUTE_PROTOCOL } from '../../agent/demo/observe.js'
import type { Resource } from '../../config/resources/index.js'
import { waitFor } from '../harness/wait.js'
import { makeCluster } from './cluster.js'

const bird = await birdInstalled()

async function torRouteMetric(ns: string): Promise<number | undefined> {
  const r = await execa('ip', ['-n', ns, '-j', 'route', 'show', 'proto', String(ROUTE_PROTOCOL), TOR_PREFIX])
  const rows = JSON.parse(String(r.stdout) || '[]') as { dst: string; metric?: number }[]
  const row = rows.find((x) => x.dst === TOR_PREFIX)
  return row === undefined ? undefined : (row.metric ?? 0)
}

t.test('setPriority on import is the kernel metric of the learned route', { skip: bird ? false : 'bird2 is not installed' }, async (t) => {
  const c = await makeCluster(t, { nodes: 1, tor: true })
  const n = c.node('node1')
  const plain = await waitFor(() => torRouteMetric(n.ns), { timeoutMs: 30_000, what: `${TOR_PREFIX} in node1's kernel` })
  t.equal(plain, 0, 'without a filter: the kernel default metric')

  const filter: Resource = {
    apiVersion: 'projectcalico.org/v3',
    kind: 'BGPFilter',
    metadata: { name: 'tor-priority' },
    spec: { importV4: [{ cidr: TOR_PREFIX, matchOperator: 'Equal', peerType: 'eBGP', action: 'Accept', operations: [{ setPriority: { value: 512 } }] }] },
  }
  const peer = (filters: string[]): Resource => ({ apiVersion: 'projectcalico.org/v3', kind: 'BGPPeer', metadata: { name: 'tor' }, spec: { peerIP: TOR_ADDRESS, asNumber: TOR_AS, filters } })
  await c.writeResources([filter, peer(['tor-priority'])])
  const metric = await waitFor(async () => ((await torRouteMetric(n.ns)) === 512 ? 512 : undefined), { timeoutMs: 20_000, what: `${TOR_PREFIX} with metric 512` })
  t.equal(metric, 512, 'the priority is the metric')
  const all = JSON.parse(String((await execa('ip', ['-n', n.ns, '-j', 'route', 'show', 'proto', String(ROUTE_PROTOCOL), TOR_PREFIX])).stdout)) as unknown[]
  t.equal(all.length, 1, 'the route with the old metric is gone')

  await c.writeResources([peer([])])
  const back = await waitFor(async () => ((await torRouteMetric(n.ns)) === 0 ? 0 : undefined), { timeoutMs: 20_000, what: `${TOR_PREFIX} back at the default metric` })
  t.equal(back, 0, 'the filter taken away: the default metric again')
})
