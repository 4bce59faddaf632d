// What a pod's ADD and DEL cost the datastore once a node has a block with room: the ADD is one transaction
// (the handle's create and the block's CAS), the DEL one transaction (the block's CAS and the handle's
// delete) from this process's copies, with nothing read or listed.
// The counts are the contract at scale: neither may grow with the number of blocks, handles or nodes.
import t from 'tap'
import { CountingDatastore, diffCounts, roundTrips } from '../../config/datastore-counting.js'
import { formatCidr } from '../../net/index.js'
import { Ipam } from '../../ipam/ipam.js'
import { checkIpam } from '../../ipam/check.js'
import { blockCandidates, toPool } from '../../ipam/pools.js'
import { embeddedStore } from './stores.js'

t.test('ADD from the last block is one transaction of 2 writes and no read; so is the DEL of a pod it made', async (t) => {
  const { store: inner } = await embeddedStore(t)
  const store = new CountingDatastore(inner)
  const ipam = new Ipam(store, { pools: [{ name: 'v4', cidr: '198.18.0.0/24', blockSize: 26 }] })
  // Other nodes' blocks and pods, which neither call may read.
  for (let n = 0; n < 3; n++) for (let i = 0; i < 5; i++) await ipam.autoAssign({ handle: `other-${n}-${i}`, node: `other${n}`, num4: 1 })
  await ipam.autoAssign({ handle: 'warm', node: 'n1', num4: 1 })

  let before = store.counts()
  const r = await ipam.autoAssign({ handle: 'pod', node: 'n1', num4: 1 })
  const add = diffCounts(store.counts(), before)
  t.equal(r.ipv4.length, 1)
  t.same({ roundTrips: roundTrips(add), txn: add.txn, writes: add.create + add.update, reads: add.get + add.list }, { roundTrips: 1, txn: 1, writes: 2, reads: 0 }, `ADD: ${JSON.stringify(add)}`)

  before = store.counts()
  const rel = await ipam.releaseByHandle('pod')
  const del = diffCounts(store.counts(), before)
  t.same(rel.released.map((a) => a.address), [r.ipv4[0]!.address])
  t.same({ roundTrips: roundTrips(del), txn: del.txn, reads: del.get, lists: del.list, writes: del.update + del.delete }, { roundTrips: 1, txn: 1, reads: 0, lists: 0, writes: 2 }, `DEL: ${JSON.stringify(del)}`)

  // The next ADD on the node still goes straight to its block: the DEL kept the cached copy current.
  before = store.counts()
  await ipam.autoAssign({ handle: 'pod2', node: 'n1', num4: 1 })
  const again = diffCounts(store.counts(), before)
  t.equal(roundTrips(again), 1, `ADD after DEL: ${JSON.stringify(again)}`)
  t.equal(again.casFailures, 0)
})

t.test('a DEL through a stale cached block conflicts once and then releases from a fresh read', async (t) => {
  const { store: inner } = await embeddedStore(t)
  const store = new CountingDatastore(inner)
  const pools = [{ name: 'v4', cidr: '198.18.0.0/24', blockSize: 26 }]
  const a = new Ipam(store, { pools })
  const b = new Ipam(store, { pools })
  const mine = await a.autoAssign({ handle: 'pod-a', node: 'n1', num4: 1 })
  // Another process of the same node writes the block: a's cached copy is stale now.
  const theirs = await b.autoAssign({ handle: 'pod-b', node: 'n1', num4: 1 })
  const before = store.counts()
  const rel = await a.releaseByHandle('pod-a')
  const d = diffCounts(store.counts(), before)
  t.same(rel.released.map((x) => x.address), [mine.ipv4[0]!.address])
  t.equal(d.casFailures, 1, 'the stale copy was refused by the CAS write')
  t.same((await b.handleAddresses('pod-b')).map((x) => x.address), [theirs.ipv4[0]!.address], "the other process's address is untouched")
})

t.test('a block claim probes its candidates by key and lists no blocks while the pool has room', async (t) => {
  const { store: inner } = await embeddedStore(t)
  const store = new CountingDatastore(inner)
  const ipam = new Ipam(store, { pools: [{ name: 'v4', cidr: '198.18.0.0/20', blockSize: 26 }] })
  for (let n = 0; n < 30; n++) await ipam.autoAssign({ handle: `other-${n}`, node: `other${n}`, num4: 1 })
  const before = store.counts()
  const r = await ipam.autoAssign({ handle: 'first-pod', node: 'fresh', num4: 1 })
  const d = diffCounts(store.counts(), before)
  t.equal(r.ipv4.length, 1)
  t.ok(d.listed < 30, `the claim listed ${d.listed} records (${d.list} lists) with 30 blocks in the store`)
})

t.test('a claim whose probed candidates are all taken lists the blocks and finds the last free one', async (t) => {
  const { store: inner } = await embeddedStore(t)
  const store = new CountingDatastore(inner)
  const spec = { name: 'v4', cidr: '198.18.0.0/26', blockSize: 30 }
  const ipam = new Ipam(store, { pools: [spec], config: { strictAffinity: true } })
  // 16 blocks of 4: other nodes claim all but the one 'late' would try last.
  const order = [...blockCandidates(toPool(spec), 'late')]
  for (const [i, cidr] of order.slice(0, 15).entries()) t.ok(await ipam.claimBlock(`other${i}`, cidr))
  const before = store.counts()
  const r = await ipam.autoAssign({ handle: 'last', node: 'late', num4: 1 })
  const d = diffCounts(store.counts(), before)
  t.equal(r.ipv4[0]?.block, formatCidr(order[15]!), 'the one block left')
  t.ok(d.listed >= 15, `past the probes the claim listed the blocks (${d.listed} records)`)
  await t.rejects(ipam.autoAssign({ handle: 'none-left', node: 'later', num4: 1 }), { code: 'exhausted' }, 'then the pool is full')
})

t.test('a DEL from a stale copy of its handle record (another process added to the handle) releases everything', async (t) => {
  const { store } = await embeddedStore(t)
  const pools = [{ name: 'v4', cidr: '198.18.0.0/24', blockSize: 26 }, { name: 'v6', cidr: '2001:db8::/120', blockSize: 122 }]
  const a = new Ipam(store, { pools })
  const b = new Ipam(store, { pools })
  await a.autoAssign({ handle: 'warm', node: 'n1', num4: 1 })
  const first = await a.autoAssign({ handle: 'pod', node: 'n1', num4: 1 })
  // A retried ADD of the same pod through another process asks for an IPv6 address too: the record grows.
  const again = await b.autoAssign({ handle: 'pod', node: 'n1', num4: 1, num6: 1 })
  t.same(again.ipv4.map((x) => x.address), first.ipv4.map((x) => x.address), 'the retried ADD keeps the IPv4 address')
  const rel = await a.releaseByHandle('pod')
  t.same(rel.released.map((x) => x.address).sort(), [...again.ipv4, ...again.ipv6].map((x) => x.address).sort(), 'both addresses released')
  t.equal(await store.get('/pinto/ipam/handles/pod'), undefined, 'the record is gone')
  const report = await checkIpam(a)
  t.same(report.problems, [])
  t.equal(report.allocations, 1, 'only the warm pod is left')
})

t.test('ADDs and DELs from the decoded copies of the blocks this process wrote leave the store exactly as the pods are held', async (t) => {
  const { store } = await embeddedStore(t)
  const pools = [{ name: 'v4', cidr: '198.18.0.0/24', blockSize: 28 }, { name: 'v6', cidr: '2001:db8::/120', blockSize: 124 }]
  const ipam = new Ipam(store, { pools })
  // Another process of the node writes the blocks now and then: its writes make this one's copies stale.
  const other = new Ipam(store, { pools })
  const held = new Map<string, string[]>()
  let seed = 7
  const rand = (n: number): number => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n
  for (let i = 0; i < 300; i++) {
    const handles = [...held.keys()]
    if (handles.length > 20 || (handles.length > 0 && rand(3) === 0)) {
      const h = handles[rand(handles.length)] as string
      await (rand(8) === 0 ? other : ipam).releaseByHandle(h)
      held.delete(h)
    } else {
      const h = `pod-${i}`
      const r = await (rand(8) === 0 ? other : ipam).autoAssign({ handle: h, node: 'n1', num4: 1 + rand(2), num6: rand(2) })
      held.set(h, [...r.ipv4, ...r.ipv6].map((a) => a.address).sort())
    }
  }
  for (const [h, addrs] of held) t.same((await ipam.handleAddresses(h)).map((a) => a.address).sort(), addrs, `${h} holds what its ADD answered`)
  const report = await checkIpam(ipam)
  t.same(report.problems, [])
  t.equal(report.allocations, [...held.values()].reduce((n, a) => n + a.length, 0), 'and nothing else is allocated')
})
