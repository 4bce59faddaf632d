// The agent's repair of its own node's IPAM records, over a real embedded store with the clock as an
// argument: an orphaned allocation and an orphaned handle (made by hand) in this node's block are repaired
// once seen unchanged a grace period apart; a fresh one, one whose handle is in a request, a live pod's
// address and another node's orphan are left alone. With transactions and without (as on Kubernetes).

import t from 'tap'
import { NodeIpamRepair } from '../../../agent/recovery/node-repair.js'
import { checkIpam } from '../../../ipam/check.js'
import { Ipam } from '../../../ipam/ipam.js'
import { handleKey } from '../../../ipam/records.js'
import { embeddedStore, withoutTransactions } from '../../ipam/stores.js'

const POOLS = [{ name: 'v4', cidr: '198.18.0.0/24', blockSize: 28 }]
const GRACE = 60_000

for (const transactions of [true, false])
t.test(`${transactions ? 'with' : 'without'} transactions: own-node repair: orphans after the grace period, nothing fresh, busy, live or foreign`, async (t) => {
  const { store: embedded } = await embeddedStore(t)
  const store = transactions ? embedded : withoutTransactions(embedded)
  const ipam = new Ipam(store, { pools: POOLS })
  const alloc = async (handle: string, node = 'n1'): Promise<string> => (await ipam.autoAssign({ handle, node, num4: 1, attrs: { node } })).ipv4[0]!.address
  await alloc('net.live')
  const orphanAddr = await alloc('net.gone')
  await store.delete(handleKey('net.gone')) // an address no handle record names
  const block = (await ipam.handleAddresses('net.live'))[0]!.block
  await store.create(handleKey('net.empty'), JSON.stringify({ handleId: 'net.empty', blocks: { [block]: 1 } })) // a handle with no address
  const busyAddr = await alloc('net.busy')
  await store.delete(handleKey('net.busy'))
  const podAddr = await alloc('net.pod')
  await store.delete(handleKey('net.pod')) // its pod is wired here: rebuilt, not freed
  const otherAddr = await alloc('net.other', 'n2')
  await store.delete(handleKey('net.other')) // n2's block: not ours to repair

  let now = 1_000_000
  const busy = new Set(['net.busy'])
  const repair = new NodeIpamRepair({ ipam, node: 'n1', busy: (h) => busy.has(h), graceMs: GRACE, now: () => now, liveAliases: async () => ['pod'] })
  t.same(await repair.run(), [], 'first sighting: nothing repaired')
  now += GRACE / 2
  // A fresh orphan appears half-way: first seen now.
  const freshAddr = await alloc('net.fresh')
  await store.delete(handleKey('net.fresh'))
  t.same(await repair.run(), [], 'within the grace period: nothing repaired')
  now += GRACE / 2
  const done = (await repair.run()).map((d) => d.key).sort()
  t.same(done, [`addr ${orphanAddr}`, `addr ${podAddr}`, 'handle net.empty'].sort(), 'the orphans seen a grace period apart, and the live pod\'s address rebuilt')
  t.same(repair.repaired, { 'address-without-handle': 2, 'handle-without-addresses': 1, 'handle-count-mismatch': 0 })
  t.same((await ipam.handleAddresses('net.pod')).map((a) => a.address), [podAddr], 'the live pod keeps its address, now with a handle')
  const left = (await checkIpam(ipam)).problems.map((p) => `${p.kind} ${'address' in p ? p.address : ''}`).sort()
  t.same(left, [busyAddr, freshAddr, otherAddr].map((a) => `address-without-handle ${a}`).sort(), 'the busy, the fresh and n2\'s orphans stay')
  busy.clear()
  now += GRACE
  t.same((await repair.run()).map((d) => d.key).sort(), [`addr ${busyAddr}`, `addr ${freshAddr}`].sort(), 'the fresh one and the one busy before, a grace period after each was first seen idle')
  t.same((await checkIpam(ipam)).problems.map((p) => p.kind), ['address-without-handle'], 'only n2\'s orphan is left, for its own agent')
})
