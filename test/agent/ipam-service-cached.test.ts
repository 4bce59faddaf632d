// The IPAM service deciding ADDs from the agent's watched cluster view: the common ADD is one round trip (its
// transaction, with checks on the Node, IPAMConfig and pool records the view holds), and a pool disabled or
// deleted, a Node relabelled or an IPAMConfig changed is honoured by the very next ADD while the watch has not
// delivered the change (its events are held back here): the transaction's checks fail and the inputs are read.
import t, { type Test } from 'tap'
import pino from 'pino'
import { ClusterState } from '../../agent/cluster-state.js'
import { IpamService } from '../../agent/ipam-service.js'
import type { Datastore } from '../../config/datastore.js'
import { CountingDatastore, diffCounts, roundTrips } from '../../config/datastore-counting.js'
import { openEtcdDatastore } from '../../config/datastore-etcd.js'
import { cidrContains, parseAddr, parseCidr } from '../../net/index.js'
import { encodeResource, resourceKey } from '../../config/resources/index.js'
import { startEtcd } from '../harness/etcd.js'
import { embeddedStore, relayWatches } from '../ipam/stores.js'
import { waitFor } from '../harness/wait.js'

/** `store` whose watch events are held while `held` is set and handed on, in order, when it is cleared. */
function gated(store: Datastore): { store: Datastore; hold(on: boolean): void; waiting(): number } {
  let held = false
  const queue: (() => void)[] = []
  return {
    store: relayWatches(store, (_, deliver) => (held ? queue.push(deliver) : deliver())),
    hold: (on) => {
      held = on
      if (!on) for (const deliver of queue.splice(0)) deliver()
    },
    waiting: () => queue.length,
  }
}

const nodeText = (rack: string): string => encodeResource({ apiVersion: 'projectcalico.org/v3', kind: 'Node', metadata: { name: 'n1', labels: { rack } }, spec: {} } as never)
const poolText = (name: string, cidr: string, extra: Record<string, unknown> = {}): string =>
  encodeResource({ apiVersion: 'projectcalico.org/v3', kind: 'IPPool', metadata: { name }, spec: { cidr, blockSize: 26, nodeSelector: "rack == 'a'", ...extra } } as never)
const inCidr = (address: string, cidr: string): boolean => {
  const a = parseAddr(address, 'address')
  return cidrContains(parseCidr(cidr, 'cidr'), a.family, a.value)
}

async function run(t: Test, inner: Datastore): Promise<void> {
  const counting = new CountingDatastore(inner)
  const gate = gated(counting)
  const store = gate.store
  const nodeKey = resourceKey('Node', 'n1')
  const poolKey = resourceKey('IPPool', 'p')
  let n = await store.create(nodeKey, nodeText('a'))
  let p = await store.create(poolKey, poolText('p', '198.18.0.0/24'))
  const cluster = new ClusterState(store, pino({ level: 'silent' }), { blocks: false })
  t.teardown(() => cluster.close())
  await cluster.start()
  const svc = new IpamService({ store, cluster, node: 'n1', socket: '/nonexistent/unused.sock' })
  t.teardown(() => svc.close())

  t.equal((await svc.assign({ handle: 'h0', num4: 1 })).ipv4.length, 1, 'the first ADD claims a block')
  let before = counting.counts()
  const warm = await svc.assign({ handle: 'h1', num4: 1 })
  const one = diffCounts(counting.counts(), before)
  t.ok(inCidr(warm.ipv4[0]?.address ?? '', '198.18.0.0/24'))
  t.same({ roundTrips: roundTrips(one), txn: one.txn, checks: one.txnChecks, reads: one.get + one.list }, { roundTrips: 1, txn: 1, checks: 3, reads: 0 },
    `a common ADD is its transaction alone, checking the IPAMConfig, the Node and the pool: ${JSON.stringify(one)}`)

  gate.hold(true)
  p = await store.update(poolKey, poolText('p', '198.18.0.0/24', { disabled: true }), p.revision)
  await t.rejects(svc.assign({ handle: 'h2', num4: 1 }), { code: 'no-pool' }, 'the pool disabled since the last ADD serves no more')
  t.equal(cluster.get('IPPool', 'p')?.spec.disabled, undefined, 'while the view still holds it enabled')
  p = await store.update(poolKey, poolText('p', '198.18.0.0/24'), p.revision)
  t.equal((await svc.assign({ handle: 'h3', num4: 1 })).ipv4.length, 1, 'enabled again, it serves again')

  n = await store.update(nodeKey, nodeText('b'), n.revision)
  await t.rejects(svc.assign({ handle: 'h4', num4: 1 }), { code: 'no-pool' }, 'the node relabelled out of the selector gets none')
  t.same(cluster.get('Node', 'n1')?.metadata.labels, { rack: 'a' }, 'while the view still holds the old label')
  await store.update(nodeKey, nodeText('a'), n.revision)

  await store.delete(poolKey, p.revision)
  await store.create(resourceKey('IPPool', 'q'), poolText('q', '198.18.1.0/24'))
  const moved = await svc.assign({ handle: 'h5', num4: 1 })
  t.ok(inCidr(moved.ipv4[0]?.address ?? '', '198.18.1.0/24'), `the pool deleted serves no more: ${moved.ipv4[0]?.address} is from the pool that replaced it`)
  t.ok(cluster.get('IPPool', 'p') !== undefined, 'while the view still holds the deleted pool')

  await store.create(resourceKey('IPAMConfig', 'default'), encodeResource({ apiVersion: 'projectcalico.org/v3', kind: 'IPAMConfig', metadata: { name: 'default' }, spec: { strictAffinity: true } } as never))
  await svc.assign({ handle: 'h6', num4: 1 })
  t.equal(svc.ipam.config.strictAffinity, true, 'the IPAMConfig created since the last ADD applies to the next')
  t.equal(cluster.get('IPAMConfig', 'default'), undefined, 'while the view has not seen it')
  t.ok(gate.waiting() >= 6, `the watch held every change back (${gate.waiting()} events)`)

  gate.hold(false)
  await waitFor(() => cluster.get('IPAMConfig', 'default') !== undefined && cluster.get('IPPool', 'p') === undefined, { timeoutMs: 5000, what: 'the view to catch up' })
  before = counting.counts()
  await svc.assign({ handle: 'h7', num4: 1 })
  const caught = diffCounts(counting.counts(), before)
  t.equal(roundTrips(caught), 1, `with the view current, one round trip again: ${JSON.stringify(caught)}`)
}

t.test('embedded store', async (t) => {
  const { store } = await embeddedStore(t)
  await run(t, store)
})

t.test('etcd', async (t) => {
  const etcd = await startEtcd(t)
  const store = await openEtcdDatastore([etcd.endpoint])
  t.teardown(() => store.close())
  await run(t, store)
})
