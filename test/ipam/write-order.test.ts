// IPAM under writes whose outcome is unknown, over a real embedded store: a store wrapper applies a write
// and then reports it as timed out ('unavailable'), as etcd does when it commits a write the client gave
// up on. Whatever write that is, the handle record names every block the handle holds an address in, so
// one releaseByHandle (a DEL) leaves the records clean; and the handle is always written before a block.
// Both with transactions and without (the wrapper then takes one write per txn, as the kubernetes datastore).

import t from 'tap'
import { type Datastore, DatastoreError } from '../../config/datastore.js'
import { checkIpam } from '../../ipam/check.js'
import { Ipam } from '../../ipam/ipam.js'
import { BLOCKS_PREFIX, HANDLES_PREFIX } from '../../ipam/records.js'
import { embeddedStore, withoutTransactions } from './stores.js'

const POOLS = [{ name: 'v4', cidr: '198.18.0.0/24', blockSize: 28 }, { name: 'v6', cidr: '2001:db8::/120', blockSize: 124 }]

/**
 * The store, with every write logged; after arm(n), the n-th write from then is applied, then reported as timed
 * out. Without `transactions`, a txn of more than one write or with a check is refused as the kubernetes datastore
 * refuses it.
 */
function lossy(base: Datastore, transactions = true): { store: Datastore; writes: string[]; arm(n: number): void } {
  const inner = transactions ? base : withoutTransactions(base)
  const writes: string[] = []
  let failAt = Number.MAX_SAFE_INTEGER
  const wrap = <A extends unknown[], R>(op: string, fn: (...a: A) => Promise<R>) => async (...a: A): Promise<R> => {
    const r = await fn(...a)
    writes.push(`${op} ${String(a[0])}`)
    if (writes.length === failAt) throw new DatastoreError('unavailable', `${op} ${String(a[0])} applied, then timed out`)
    return r
  }
  const store: Datastore = {
    transactions,
    get: (k) => inner.get(k),
    list: (p) => inner.list(p),
    watch: (...a) => inner.watch(...a),
    close: () => inner.close(),
    create: wrap('create', (k: string, v: string) => inner.create(k, v)),
    update: wrap('update', (k: string, v: string, r: number) => inner.update(k, v, r)),
    delete: wrap('delete', (k: string, r?: number) => inner.delete(k, r)),
    // One write, logged as its ops in order: 'txn[create /a, update /b]'.
    txn: async (ops) => {
      const r = await inner.txn(ops)
      writes.push(`txn[${ops.map((o) => `${o.op} ${o.key}`).join(', ')}]`)
      if (writes.length === failAt) throw new DatastoreError('unavailable', `${writes[writes.length - 1]} applied, then timed out`)
      return r
    },
  }
  return { store, writes, arm: (n) => void (failAt = writes.length + n) }
}

for (const transactions of [true, false]) {
const how = transactions ? 'with transactions' : 'without transactions'

t.test(`${how}: a write applied but reported failed, at every point of an ADD: one DEL leaves the records clean`, async (t) => {
  for (const warm of [false, true]) {
    for (let failAt = 1; failAt <= (transactions ? 7 : 12); failAt++) {
      const { store: inner } = await embeddedStore(t)
      const l = lossy(inner, transactions)
      const ipam = new Ipam(l.store, { pools: POOLS })
      // Warm: this Ipam has allocated from its block before, so the ADD takes the two-write path; cold:
      // the ADD claims the node's first blocks.
      if (warm) await ipam.releaseByHandle((await ipam.autoAssign({ handle: 'net.warm', node: 'n1', num4: 1, num6: 1 }), 'net.warm'))
      l.arm(failAt)
      const add = await ipam.autoAssign({ handle: 'net.c1', node: 'n1', num4: 1, num6: 1 }).then(() => 'answered', (err: Error) => `failed: ${err.message}`)
      // The runtime's DEL, through a store that works again.
      l.arm(Number.MAX_SAFE_INTEGER)
      await ipam.releaseByHandle('net.c1')
      const report = await checkIpam(new Ipam(inner, { pools: POOLS }))
      t.same(report.problems, [], `${warm ? 'warm' : 'cold'} node, write ${failAt} lost (ADD ${add}): clean after DEL`)
      t.equal(report.allocations, 0, 'nothing left allocated')
    }
  }
})

t.test(`${how}: the handle record is written before any block write of the same ADD, or in the same transaction`, async (t) => {
  const { store: inner } = await embeddedStore(t)
  const { store, writes } = lossy(inner, transactions)
  const ipam = new Ipam(store, { pools: POOLS })
  for (let i = 0; i < 3; i++) {
    writes.length = 0
    await ipam.autoAssign({ handle: `net.o${i}`, node: 'n1', num4: 1, num6: 1 })
    const firstHandle = writes.findIndex((w) => w.includes(HANDLES_PREFIX))
    const firstBlockUpdate = writes.findIndex((w) => w.includes(`update ${BLOCKS_PREFIX}`))
    const together = firstHandle === firstBlockUpdate && (writes[firstHandle] ?? '').startsWith('txn[')
    t.ok(firstHandle >= 0 && (firstHandle < firstBlockUpdate || together), `ADD ${i}: ${writes.join(', ')}`)
  }
  t.same((await checkIpam(ipam)).problems, [])
})
}
