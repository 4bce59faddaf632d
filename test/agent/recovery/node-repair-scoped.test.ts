// The agent's periodic IPAM repair reads only its own node's records, so its cost does not grow with the
// cluster: no list of every handle or block, no read of another node's handle, and nothing at all once its
// handles are verified; it still repairs an address whose handle is gone and a handle whose counts disagree in
// its blocks. A handle record with no address is left to the full pass, which reads every handle.
// Over a real embedded store, without transactions (as on Kubernetes), the clock as an argument.

import t from 'tap'
import { NodeIpamRepair } from '../../../agent/recovery/node-repair.js'
import type { Datastore } from '../../../config/datastore.js'
import { Ipam } from '../../../ipam/ipam.js'
import { HANDLES_PREFIX, BLOCKS_PREFIX, blockKey, decodeBlock, handleKey } from '../../../ipam/records.js'
import type { AllocationBlock } from '../../../ipam/block.js'
import { readCidr } from '../../../net/index.js'
import { embeddedStore, withoutTransactions } from '../../ipam/stores.js'

const POOLS = [{ name: 'v4', cidr: '198.18.0.0/24', blockSize: 28 }]
const GRACE = 60_000

/** `store` with every list prefix and get key recorded. */
function recording(store: Datastore): { store: Datastore; lists: string[]; gets: string[] } {
  const lists: string[] = []
  const gets: string[] = []
  return {
    lists, gets,
    store: {
      transactions: store.transactions,
      get: (key) => (gets.push(key), store.get(key)),
      list: (prefix) => (lists.push(prefix), store.list(prefix)),
      create: (key, value) => store.create(key, value),
      update: (key, value, revision) => store.update(key, value, revision),
      delete: (key, revision) => store.delete(key, revision),
      txn: (ops) => store.txn(ops),
      close: () => store.close(),
      watch: (prefix, from, onEvent, onError) => store.watch(prefix, from, onEvent, onError),
    },
  }
}

t.test('the periodic pass: this node\'s records only, repairs what it can see there, nothing read once verified', async (t) => {
  const { store: embedded } = await embeddedStore(t)
  const rec = recording(withoutTransactions(embedded))
  const ipam = new Ipam(rec.store, { pools: POOLS })
  const alloc = async (handle: string, node = 'n1'): Promise<string> => (await ipam.autoAssign({ handle, node, num4: 1, attrs: { node } })).ipv4[0]!.address
  await alloc('net.live')
  await alloc('net.counted')
  const orphan = await alloc('net.gone')
  await rec.store.delete(handleKey('net.gone')) // an address no handle record names
  const block = (await ipam.handleAddresses('net.live'))[0]!.block
  await ipam.adjustHandle('net.counted', (b) => void (b[block] = 3)) // a handle that records more than its block holds
  await rec.store.create(handleKey('net.empty'), JSON.stringify({ handleId: 'net.empty', blocks: { [block]: 1 } })) // a handle with no address
  for (let i = 0; i < 20; i++) await alloc(`net.other-${i}`, 'n2')

  let now = 1_000_000
  const repair = new NodeIpamRepair({ ipam, node: 'n1', busy: () => false, graceMs: GRACE, now: () => now, liveAliases: async () => [] })
  rec.lists.length = 0
  rec.gets.length = 0
  t.same(await repair.run({ full: false }), [], 'first sighting: nothing repaired')
  now += GRACE
  const done = (await repair.run({ full: false })).map((d) => d.key).sort()
  t.same(done, [`addr ${orphan}`, 'counts net.counted'], 'the orphaned address and the miscounted handle of its own block, a grace period apart')
  t.notOk(rec.lists.some((p) => p.startsWith(HANDLES_PREFIX) || p === BLOCKS_PREFIX), `no list of every handle or block (listed: ${rec.lists.join(', ')})`)
  t.notOk(rec.gets.some((k) => k.startsWith(handleKey('net.other'))), 'no read of another node\'s handle')
  t.same(repair.passes, { own: 2, full: 0 })

  rec.lists.length = 0
  rec.gets.length = 0
  now += GRACE
  t.same(await repair.run({ full: false }), [], 'nothing more to repair in its own blocks')
  t.same(rec.gets.filter((k) => k.startsWith(HANDLES_PREFIX)), [handleKey('net.counted')], 'only the handle just repaired is read again')
  rec.gets.length = 0
  await repair.run({ full: false })
  t.same(rec.gets.filter((k) => k.startsWith(HANDLES_PREFIX)), [], 'its handles verified: none read again')

  // With the agent's watched blocks handed in, a quiet pass makes no datastore call at all.
  const blocks: AllocationBlock[] = []
  for (const kv of (await embedded.list(BLOCKS_PREFIX)).items) blocks.push(decodeBlock(kv.key, kv.value))
  const watched = new NodeIpamRepair({ ipam, node: 'n1', busy: () => false, graceMs: GRACE, now: () => now, liveAliases: async () => [], blocks: () => blocks })
  await watched.run({ full: false })
  rec.lists.length = 0
  rec.gets.length = 0
  await watched.run({ full: false })
  t.same([...rec.lists, ...rec.gets], [], 'a quiet pass over watched blocks reads nothing')

  t.ok(await rec.store.get(handleKey('net.empty')), 'the handle with no address is left to the full pass')
  await repair.run({ full: true })
  now += GRACE
  t.same((await repair.run({ full: true })).map((d) => d.key), ['handle net.empty'], 'which finds and repairs it')
  t.same(repair.passes, { own: 4, full: 2 })
  const own = decodeBlock(blockKey(readCidr(block, 'block')), (await embedded.get(blockKey(readCidr(block, 'block'))))!.value)
  t.equal(own.allocations.filter((a) => a !== null).length, 2, 'the two live pods keep their addresses')
})

t.test('a trigger (the datastore back) runs the pass of this node\'s records', async (t) => {
  const { store: embedded } = await embeddedStore(t)
  const rec = recording(embedded)
  const ipam = new Ipam(rec.store, { pools: POOLS })
  await ipam.autoAssign({ handle: 'net.a', node: 'n1', num4: 1, attrs: { node: 'n1' } })
  const repair = new NodeIpamRepair({ ipam, node: 'n1', busy: () => false, graceMs: GRACE, liveAliases: async () => [] })
  rec.lists.length = 0
  t.ok(await repair.trigger())
  t.same(repair.passes, { own: 1, full: 0 })
  t.notOk(rec.lists.some((p) => p.startsWith(HANDLES_PREFIX)), 'no handle listed')
})
