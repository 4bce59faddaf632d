// What one assign of the agent's IPAM service reads: its own node's labels (pool nodeSelectors are honoured)
// and never the whole list of Node resources, so an ADD costs the same in a cluster of 5 or 5,000 nodes.

import t from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { IpamService } from '../../agent/ipam-service.js'
import { CountingDatastore, diffCounts } from '../../config/datastore-counting.js'
import { openDatastore } from '../../config/datastore-open.js'
import { encodeResource, resourceKey } from '../../config/resources/index.js'

const NODES = 40

t.test('an assign reads its own Node resource, not every Node, and honours the pool nodeSelector', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pinto-ipamreads-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const store = new CountingDatastore(await openDatastore(join(dir, 'store')))
  t.teardown(() => store.close())
  for (let i = 0; i < NODES; i++) {
    const node = { apiVersion: 'projectcalico.org/v3', kind: 'Node', metadata: { name: `n${i}`, labels: { rack: i % 2 === 0 ? 'even' : 'odd' } }, spec: {} }
    await store.create(resourceKey('Node', `n${i}`), encodeResource(node as never))
  }
  const pool = { apiVersion: 'projectcalico.org/v3', kind: 'IPPool', metadata: { name: 'even' }, spec: { cidr: '198.18.0.0/24', blockSize: 26, nodeSelector: "rack == 'even'" } }
  await store.create(resourceKey('IPPool', 'even'), encodeResource(pool as never))
  const svc = new IpamService({ store, node: 'n0', socket: join(dir, 'unused.sock') })
  t.teardown(() => svc.close())

  const before = store.counts()
  const r = await svc.assign({ handle: 'h-even', node: 'n2', num4: 1 })
  const d = diffCounts(store.counts(), before)
  t.equal(r.ipv4.length, 1, 'a node the selector picks gets an address')
  t.ok(d.listed < NODES, `the assign listed ${d.listed} records (${d.list} lists), fewer than the ${NODES} Nodes`)

  await t.rejects(svc.assign({ handle: 'h-odd', node: 'n3', num4: 1 }), { name: 'IpamError', code: 'no-pool' }, 'a node the selector leaves out gets none')
  await t.rejects(svc.assign({ handle: 'h-none', node: 'n-missing', num4: 1 }), { name: 'IpamError', code: 'no-pool' }, 'a node with no resource matches no selector')
})

t.test('a changed pool, Node label or IPAMConfig is honoured by the next assign (decoded records are reused only at their revision)', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pinto-ipamreads-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const store = await openDatastore(join(dir, 'store'))
  t.teardown(() => store.close())
  const nodeKey = resourceKey('Node', 'n1')
  const node = (rack: string): string => encodeResource({ apiVersion: 'projectcalico.org/v3', kind: 'Node', metadata: { name: 'n1', labels: { rack } }, spec: {} } as never)
  const poolKey = resourceKey('IPPool', 'p')
  const pool = (disabled: boolean): string => encodeResource({ apiVersion: 'projectcalico.org/v3', kind: 'IPPool', metadata: { name: 'p' }, spec: { cidr: '198.18.0.0/24', blockSize: 26, nodeSelector: "rack == 'a'", disabled } } as never)
  let n = await store.create(nodeKey, node('a'))
  let p = await store.create(poolKey, pool(false))
  const svc = new IpamService({ store, node: 'n1', socket: join(dir, 'unused.sock') })
  t.teardown(() => svc.close())
  t.equal((await svc.assign({ handle: 'h1', num4: 1 })).ipv4.length, 1)
  p = await store.update(poolKey, pool(true), p.revision)
  await t.rejects(svc.assign({ handle: 'h2', num4: 1 }), { code: 'no-pool' }, 'the pool disabled since the last assign serves no more')
  await store.update(poolKey, pool(false), p.revision)
  t.equal((await svc.assign({ handle: 'h3', num4: 1 })).ipv4.length, 1, 'enabled again')
  n = await store.update(nodeKey, node('b'), n.revision)
  await t.rejects(svc.assign({ handle: 'h4', num4: 1 }), { code: 'no-pool' }, 'the node relabelled out of the selector gets none')
  await store.update(nodeKey, node('a'), n.revision)
  await store.create(resourceKey('IPAMConfig', 'default'), encodeResource({ apiVersion: 'projectcalico.org/v3', kind: 'IPAMConfig', metadata: { name: 'default' }, spec: { strictAffinity: true } } as never))
  await svc.assign({ handle: 'h5', num4: 1 })
  t.equal(svc.ipam.config.strictAffinity, true, 'the IPAMConfig read at the assign is applied')
})
