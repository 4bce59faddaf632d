// The IPAM service on a real embedded store: claims, affine allocation, limits, borrowing, dual-stack
// rollback, idempotent handles, stale releases, node removal and the bounded retry loop.
import t from 'tap'
import { DatastoreError, type Datastore, type TxnOp } from '../../config/datastore.js'
import { parseCidr } from '../../net/index.js'
import { checkIpam } from '../../ipam/check.js'
import { Ipam, type IpamOptions } from '../../ipam/ipam.js'
import type { PoolSpec } from '../../ipam/pools.js'
import { AFFINITIES_PREFIX, BLOCKS_PREFIX, HANDLES_PREFIX, blockKey, decodeAffinity, decodeBlock, decodeHandle } from '../../ipam/records.js'
import { embeddedStore } from './stores.js'

const V4: PoolSpec = { name: 'v4', cidr: '198.18.0.0/28', blockSize: 30 }
const V6: PoolSpec = { name: 'v6', cidr: '2001:db8::/124', blockSize: 126 }

async function setup(t: { teardown(fn: () => unknown): void }, opts: Partial<IpamOptions> = {}): Promise<{ store: Datastore; ipam: Ipam }> {
  const { store } = await embeddedStore(t)
  return { store, ipam: new Ipam(store, { pools: [V4, V6], ...opts }) }
}

async function values<T>(store: Datastore, prefix: string, decode: (k: string, v: string) => T): Promise<T[]> {
  return (await store.list(prefix)).items.map((kv) => decode(kv.key, kv.value))
}

t.test('dual-stack assignment claims one block per family through a confirmed affinity', async (t) => {
  const { store, ipam } = await setup(t)
  const r = await ipam.autoAssign({ handle: 'net.c1', node: 'n1', num4: 1, num6: 1, attrs: { namespace: 'ns', pod: 'p1', node: 'n1' } })
  t.equal(r.ipv4.length, 1)
  t.equal(r.ipv6.length, 1)
  t.match(r.ipv4[0]!.address, /^198\.18\.0\.\d+$/)
  t.match(r.ipv6[0]!.address, /^2001:db8::/)
  const affs = await values(store, AFFINITIES_PREFIX, decodeAffinity)
  t.same(affs.map((a) => [a.node, a.state]).sort(), [['n1', 'confirmed'], ['n1', 'confirmed']])
  const blocks = await values(store, BLOCKS_PREFIX, decodeBlock)
  t.same(blocks.map((b) => b.affinity), ['host:n1', 'host:n1'])
  t.same(blocks.map((b) => b.attributes[0]?.secondary), [{ namespace: 'ns', pod: 'p1', node: 'n1' }, { namespace: 'ns', pod: 'p1', node: 'n1' }])
  const [h] = await values(store, HANDLES_PREFIX, decodeHandle)
  t.same(h, { handleId: 'net.c1', blocks: { [r.ipv4[0]!.block]: 1, [r.ipv6[0]!.block]: 1 } })
})

t.test('the same handle gets the same addresses back; another handle does not', async (t) => {
  const { ipam } = await setup(t)
  const a = await ipam.autoAssign({ handle: 'net.c1', node: 'n1', num4: 1, num6: 1 })
  const again = await ipam.autoAssign({ handle: 'net.c1', node: 'n1', num4: 1, num6: 1 })
  t.same(again, a)
  const b = await ipam.autoAssign({ handle: 'net.c2', node: 'n1', num4: 1 })
  t.not(b.ipv4[0]!.address, a.ipv4[0]!.address)
  const more = await ipam.autoAssign({ handle: 'net.c1', node: 'n1', num4: 2, num6: 1 })
  t.equal(more.ipv4.length, 2, 'asking for more tops up to the count')
  t.equal(more.ipv4[0]!.address, a.ipv4[0]!.address)
})

t.test('affine blocks fill before new claims; released addresses come back FIFO', async (t) => {
  const { store, ipam } = await setup(t)
  const got: string[] = []
  for (let i = 0; i < 4; i++) got.push((await ipam.autoAssign({ handle: `net.a${i}`, node: 'n1', num4: 1 })).ipv4[0]!.address)
  t.equal((await store.list(BLOCKS_PREFIX)).items.length, 1, 'four addresses, one /30 block')
  await ipam.releaseByHandle('net.a2')
  await ipam.releaseByHandle('net.a0')
  const next = [(await ipam.autoAssign({ handle: 'net.b0', node: 'n1', num4: 1 })).ipv4[0]!.address, (await ipam.autoAssign({ handle: 'net.b1', node: 'n1', num4: 1 })).ipv4[0]!.address]
  t.same(next, [got[2], got[0]], 'first released, first reused')
  t.equal((await store.list(BLOCKS_PREFIX)).items.length, 1)
  await ipam.autoAssign({ handle: 'net.b2', node: 'n1', num4: 1 })
  t.equal((await store.list(BLOCKS_PREFIX)).items.length, 2, 'a full block makes the node claim another')
})

t.test('maxBlocksPerHost stops claims; borrowing then uses other nodes\' blocks unless strictAffinity', async (t) => {
  const { store } = await embeddedStore(t)
  const loose = new Ipam(store, { pools: [V4], config: { maxBlocksPerHost: 1 } })
  for (let i = 0; i < 4; i++) await loose.autoAssign({ handle: `net.n1-${i}`, node: 'n1', num4: 1 })
  const n2 = await loose.autoAssign({ handle: 'net.n2-0', node: 'n2', num4: 1 })
  const borrowed = await loose.autoAssign({ handle: 'net.n1-4', node: 'n1', num4: 1 })
  t.equal(borrowed.ipv4[0]!.block, n2.ipv4[0]!.block, 'n1 borrowed from n2\'s block')
  const b = decodeBlock(blockKey(parseCidr(n2.ipv4[0]!.block)), (await store.get(blockKey(parseCidr(n2.ipv4[0]!.block))))!.value)
  t.equal(b.affinity, 'host:n2', 'the block stays n2\'s')
  const strict = new Ipam(store, { pools: [V4], config: { maxBlocksPerHost: 1, strictAffinity: true } })
  await t.rejects(strict.autoAssign({ handle: 'net.n1-5', node: 'n1', num4: 1 }), { code: 'exhausted', message: /strict affinity/ })
})

t.test('dual-stack is all or nothing: a failed IPv6 gives back the IPv4', async (t) => {
  const { store } = await embeddedStore(t)
  const ipam = new Ipam(store, { pools: [V4, { name: 'v6', cidr: '2001:db8::/126', blockSize: 126 }] })
  await ipam.autoAssign({ handle: 'net.fill', node: 'n1', num6: 4 })
  await t.rejects(ipam.autoAssign({ handle: 'net.c1', node: 'n1', num4: 1, num6: 1 }), { code: 'exhausted', message: /IPv6: assigned 0 of 1 for net\.c1/ })
  t.equal(await store.get('/pinto/ipam/handles/net.c1'), undefined, 'no handle left behind')
  const v4 = (await values(store, BLOCKS_PREFIX, decodeBlock)).find((b) => b.cidr.startsWith('198.'))!
  t.same(v4.allocations.filter((a) => a !== null), [], 'the IPv4 address was released')
})

t.test('a failed top-up of an existing handle keeps what it already held', async (t) => {
  const { store } = await embeddedStore(t)
  const ipam = new Ipam(store, { pools: [V4, { name: 'v6', cidr: '2001:db8::/126', blockSize: 126 }] })
  const first = await ipam.autoAssign({ handle: 'net.c1', node: 'n1', num4: 1 })
  await ipam.autoAssign({ handle: 'net.fill', node: 'n1', num6: 4 })
  await t.rejects(ipam.autoAssign({ handle: 'net.c1', node: 'n1', num4: 2, num6: 1 }), { code: 'exhausted' })
  t.same(await ipam.handleAddresses('net.c1'), first.ipv4, 'the held address and its handle count survive the rollback')
  t.same((await checkIpam(ipam, { liveHandles: ['net.c1', 'net.fill'] })).problems, [])
})

t.test('disabled pools, node selectors and pool narrowing', async (t) => {
  const { store } = await embeddedStore(t)
  const ipam = new Ipam(store, {
    pools: [{ ...V4, disabled: true }, { name: 'sel', cidr: '198.18.1.0/28', blockSize: 30, nodeSelector: 'rack == "r1"' }],
    nodeMatches: (p, node) => p.nodeSelector === 'rack == "r1"' && node === 'n1',
  })
  t.match((await ipam.autoAssign({ handle: 'net.c1', node: 'n1', num4: 1 })).ipv4[0]!.address, /^198\.18\.1\./)
  await t.rejects(ipam.autoAssign({ handle: 'net.c2', node: 'n2', num4: 1 }), { code: 'no-pool', message: /no enabled IPv4 pool serves node n2/ })
  await t.rejects(ipam.autoAssign({ handle: 'net.c3', node: 'n1', num4: 1, pools: ['v4'] }), { code: 'no-pool', message: /among v4/ })
  await t.rejects(ipam.autoAssign({ handle: 'bad/handle', node: 'n1', num4: 1 }), /handle: "bad\/handle" must be/)
  await t.rejects(ipam.autoAssign({ handle: 'net.c4', node: 'n1', num4: -1 }), { code: 'invalid', message: /num4: -1/ })
})

t.test('assignIP takes one given address, idempotently, and refuses a taken one', async (t) => {
  const { store, ipam } = await setup(t)
  const a = await ipam.assignIP({ address: '198.18.0.9', handle: 'ipip-tunnel-addr-n1', node: 'n1' })
  t.equal(a.block, '198.18.0.8/30')
  t.same(await ipam.assignIP({ address: '198.18.0.9', handle: 'ipip-tunnel-addr-n1', node: 'n1' }), a)
  await t.rejects(ipam.assignIP({ address: '198.18.0.9', handle: 'net.other', node: 'n1' }), { code: 'in-use', message: /already assigned to handle ipip-tunnel-addr-n1/ })
  await t.rejects(ipam.assignIP({ address: '198.51.100.1', handle: 'net.x', node: 'n1' }), { code: 'no-pool' })
  t.equal(decodeAffinity('a', (await store.get('/pinto/ipam/affinities/n1/198-18-0-8-30'))!.value).state, 'confirmed')
  t.same((await ipam.handleAddresses('ipip-tunnel-addr-n1')).map((x) => x.address), ['198.18.0.9'])
})

t.test('a stale release (old sequence number) leaves a reused address alone', async (t) => {
  const { store } = await embeddedStore(t)
  const ipam = new Ipam(store, { pools: [{ name: 'one', cidr: '198.18.0.0/32', blockSize: 32 }] })
  const first = (await ipam.autoAssign({ handle: 'net.old', node: 'n1', num4: 1 })).ipv4[0]!
  t.equal((await ipam.releaseByHandle('net.old')).released.length, 1)
  const second = (await ipam.autoAssign({ handle: 'net.new', node: 'n1', num4: 1 })).ipv4[0]!
  t.equal(second.address, first.address)
  const stale = await ipam.releaseIPs([{ address: first.address, sequenceNumber: first.sequenceNumber }])
  t.same(stale, { released: [], skipped: [{ address: first.address, reason: 'bad-sequence' }] })
  t.same(await ipam.releaseIPs([{ address: first.address, handle: 'net.old' }]), { released: [], skipped: [{ address: first.address, reason: 'bad-handle' }] })
  t.same((await ipam.handleAddresses('net.new')).map((x) => x.address), [first.address], 'still held by the new handle')
  t.same((await ipam.releaseIPs([{ address: first.address, sequenceNumber: second.sequenceNumber }])).released, [{ address: first.address, handle: 'net.new' }])
  t.equal(await store.get('/pinto/ipam/handles/net.new'), undefined, 'handle gone with its last address')
})

t.test('releasing a node\'s affinities deletes its empty blocks and leaves used ones unaffine', async (t) => {
  const { store, ipam } = await setup(t)
  for (let i = 0; i < 5; i++) await ipam.autoAssign({ handle: `net.c${i}`, node: 'n1', num4: 1 })
  await ipam.releaseByHandle('net.c4') // the second block is now empty
  t.equal(await ipam.releaseHostAffinities('n1'), 2)
  t.same((await store.list(AFFINITIES_PREFIX)).items, [])
  const blocks = await values(store, BLOCKS_PREFIX, decodeBlock)
  t.same(blocks.map((b) => [b.cidr, b.affinity]), [[blocks[0]!.cidr, null]], 'the used block stays, unaffine')
  for (let i = 0; i < 4; i++) await ipam.releaseByHandle(`net.c${i}`)
  t.same((await store.list(BLOCKS_PREFIX)).items, [], 'an unaffine block goes with its last address')
})

t.test('an ADD after a DEL on the same node writes its block once: the cached copy follows our own release', async (t) => {
  const { store } = await embeddedStore(t)
  const conflicts: string[] = []
  const noting = async <T>(write: Promise<T>): Promise<T> => {
    try {
      return await write
    } catch (err) {
      if (err instanceof DatastoreError && err.code === 'conflict') conflicts.push(err.key ?? '')
      throw err
    }
  }
  const counting: Datastore = Object.assign(Object.create(store) as Datastore, {
    update: (key: string, value: string, revision: number) => noting(store.update(key, value, revision)),
    txn: (ops: readonly TxnOp[]) => noting(store.txn(ops)),
  })
  const ipam = new Ipam(counting, { pools: [V4] })
  for (let i = 0; i < 6; i++) {
    await ipam.autoAssign({ handle: `net.c${i}`, node: 'n1', num4: 1 })
    await ipam.releaseByHandle(`net.c${i}`)
  }
  t.same(conflicts, [], 'no write lost to a stale cached block')
  // Another writer's change still only costs a retry: the cache is a hint, not the truth.
  const a = await ipam.autoAssign({ handle: 'net.x', node: 'n1', num4: 1 })
  const cur = (await store.get(blockKey(parseCidr(a.ipv4[0]!.block))))!
  await store.update(cur.key, cur.value, cur.revision)
  const b = await ipam.autoAssign({ handle: 'net.y', node: 'n1', num4: 1 })
  t.not(b.ipv4[0]!.address, a.ipv4[0]!.address)
  t.equal(conflicts.length, 1, 'one conflict, then a fresh read')
  t.same((await checkIpam(ipam)).problems, [])
})

t.test('a block lost to another node mid-claim undoes the pending affinity', async (t) => {
  const { store, ipam } = await setup(t)
  t.ok(await ipam.claimBlock('n2', parseCidr('198.18.0.0/30')))
  t.notOk(await ipam.claimBlock('n1', parseCidr('198.18.0.0/30')))
  t.same((await store.list('/pinto/ipam/affinities/n1/')).items, [])
  t.ok(await ipam.claimBlock('n2', parseCidr('198.18.0.0/30')), 'claiming again is idempotent for the owner')
})

t.test('the retry loop is bounded and says what it gave up on', async (t) => {
  const { store } = await embeddedStore(t)
  // Another writer touches the key just before each of our updates: a real conflict every time.
  const racing: Datastore = Object.assign(Object.create(store) as Datastore, {
    update: async (key: string, value: string, revision: number) => {
      const cur = await store.get(key)
      if (cur !== undefined) await store.update(key, cur.value, cur.revision)
      return store.update(key, value, revision)
    },
  })
  const ipam = new Ipam(racing, { pools: [V4], maxRetries: 3 })
  await t.rejects(ipam.autoAssign({ handle: 'net.c1', node: 'n1', num4: 1 }), { code: 'retries', message: /gave up after 3 conflicting writes/ })
  t.ok(DatastoreError)
})
