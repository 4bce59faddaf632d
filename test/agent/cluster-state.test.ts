// The agent's cluster view follows resources and blocks and nothing else: handle and affinity records, which
// change with every pod of the cluster, never reach an agent's watch; and a change made after start is seen.
import t from 'tap'
import pino from 'pino'
import { ClusterState } from '../../agent/cluster-state.js'
import type { Datastore } from '../../config/datastore.js'
import { encodeResource, resourceKey } from '../../config/resources/index.js'
import { parseCidr } from '../../net/index.js'
import { hostAffinity, newBlock } from '../../ipam/block.js'
import { AFFINITIES_PREFIX, HANDLES_PREFIX, blockKey } from '../../ipam/records.js'
import { embeddedStore, relayWatches } from '../ipam/stores.js'
import { waitFor } from '../harness/wait.js'

/** The store, with every watch event it hands out counted by key. */
function counting(store: Datastore): { store: Datastore; delivered: string[] } {
  const delivered: string[] = []
  return {
    store: relayWatches(store, (e, deliver) => {
      delivered.push(e.key)
      deliver()
    }),
    delivered,
  }
}

t.test('handle and affinity writes never reach the cluster view; resource and block writes do', async (t) => {
  const { store: inner } = await embeddedStore(t)
  const { store, delivered } = counting(inner)
  const cluster = new ClusterState(store, pino({ level: 'silent' }))
  t.teardown(() => cluster.close())
  await cluster.start()

  for (let i = 0; i < 10; i++) await inner.create(`${HANDLES_PREFIX}pod-${i}`, JSON.stringify({ handleId: `pod-${i}`, blocks: { '198.18.0.0/26': 1 } }))
  await inner.create(`${AFFINITIES_PREFIX}n1/198.18.0.0-26`, JSON.stringify({ state: 'confirmed', node: 'n1', cidr: '198.18.0.0/26', type: 'host' }))
  const cidr = parseCidr('198.18.0.0/26')
  await inner.create(blockKey(cidr), JSON.stringify(newBlock(cidr, hostAffinity('n1'), new Date(0).toISOString(), 1)))
  const node = { apiVersion: 'projectcalico.org/v3', kind: 'Node', metadata: { name: 'n1' }, spec: {} }
  await inner.create(resourceKey('Node', 'n1'), encodeResource(node as never))

  await waitFor(() => (cluster.get('Node', 'n1') !== undefined && [...cluster.blocks()].length === 1 ? true : undefined), { timeoutMs: 5000, what: 'the node and the block in the cluster view' })
  t.same(delivered.filter((k) => k.startsWith(HANDLES_PREFIX) || k.startsWith(AFFINITIES_PREFIX)), [], 'no handle or affinity event was delivered')
  t.same(delivered.sort(), [blockKey(cidr), resourceKey('Node', 'n1')].sort(), 'the block and the Node were')
})
