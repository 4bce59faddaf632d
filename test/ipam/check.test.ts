// Leak check and repair on a real embedded store: each kind of damage is made for real, found, and fixed.
import t from 'tap'
import { parseCidr } from '../../net/index.js'
import { checkIpam, describeProblem, repairIpam } from '../../ipam/check.js'
import { Ipam } from '../../ipam/ipam.js'
import { BLOCKS_PREFIX, affinityKey, handleKey } from '../../ipam/records.js'
import { embeddedStore } from './stores.js'

const POOLS = [{ name: 'v4', cidr: '198.18.0.0/28', blockSize: 30 }]

t.test('a healthy store checks clean', async (t) => {
  const { store } = await embeddedStore(t)
  const ipam = new Ipam(store, { pools: POOLS })
  await ipam.autoAssign({ handle: 'net.a', node: 'n1', num4: 2 })
  await ipam.autoAssign({ handle: 'net.b', node: 'n2', num4: 1 })
  const r = await checkIpam(ipam, { liveHandles: ['net.a', 'net.b'], liveNodes: ['n1', 'n2'] })
  t.same(r, { blocks: 2, affinities: 2, handles: 2, allocations: 3, problems: [] })
})

t.test('every kind of damage is reported, then repaired, then checks clean', async (t) => {
  const { store } = await embeddedStore(t)
  const ipam = new Ipam(store, { pools: POOLS })
  const live = await ipam.autoAssign({ handle: 'net.live', node: 'n1', num4: 1 })
  const leaked = await ipam.autoAssign({ handle: 'net.gone', node: 'n1', num4: 1 })
  await ipam.autoAssign({ handle: 'net.nohandle', node: 'n1', num4: 1 })
  await store.delete(handleKey('net.nohandle')) // an allocation whose handle record was lost
  await store.create(handleKey('net.empty'), JSON.stringify({ handleId: 'net.empty', blocks: { '198.18.0.0/30': 1 } }))
  await ipam.autoAssign({ handle: 'net.dead', node: 'dead', num4: 1 })
  const affKv = (await store.list('/pinto/ipam/affinities/n1/')).items[0]!
  const hKv = (await store.get(handleKey('net.live')))!
  await store.update(hKv.key, JSON.stringify({ handleId: 'net.live', blocks: { [live.ipv4[0]!.block]: 3 } }), hKv.revision)
  const stray = parseCidr('198.18.0.12/30')
  await store.create(affinityKey('n2', stray), JSON.stringify({ state: 'confirmed', node: 'n2', cidr: '198.18.0.12/30', type: 'host' }))
  t.ok(affKv)

  const report = await checkIpam(ipam, { liveHandles: ['net.live', 'net.nohandle', 'net.empty'], liveNodes: ['n1', 'n2'] })
  const kinds = report.problems.map((p) => p.kind).sort()
  t.same(kinds, [
    'address-without-handle', 'affinity-of-deleted-node', 'affinity-without-block', 'block-of-deleted-node',
    'handle-count-mismatch', 'handle-without-addresses', 'leaked-allocation', 'leaked-allocation',
  ])
  const texts = report.problems.map(describeProblem)
  t.ok(texts.includes(`${leaked.ipv4[0]!.address} is allocated to net.gone but not in use`), texts.join('\n'))
  t.ok(texts.includes('handle net.empty has no matching IPs'))

  const fixed = await repairIpam(ipam, report)
  t.same(fixed.failed, [])
  t.equal(fixed.fixed, report.problems.length)
  const after = await checkIpam(ipam, { liveHandles: ['net.live', 'net.nohandle'], liveNodes: ['n1', 'n2'] })
  t.same(after.problems, [], 'clean after repair')
  t.same((await ipam.handleAddresses('net.live')).map((a) => a.address), [live.ipv4[0]!.address], 'the live pod keeps its address')
  t.equal((await ipam.handleAddresses('net.nohandle')).length, 1, 'a live allocation gets its handle record back')
  const blocks = (await store.list(BLOCKS_PREFIX)).items.map((kv) => JSON.parse(kv.value) as { affinity: string | null })
  t.notOk(blocks.some((b) => b.affinity === 'host:dead'), 'nothing left affine to the deleted node')
})

t.test('a stale report never frees an address that was reused since', async (t) => {
  const { store } = await embeddedStore(t)
  const ipam = new Ipam(store, { pools: [{ name: 'one', cidr: '198.18.0.0/32', blockSize: 32 }] })
  await ipam.autoAssign({ handle: 'net.old', node: 'n1', num4: 1 })
  const report = await checkIpam(ipam, { liveHandles: [] })
  t.equal(report.problems.length, 1)
  await ipam.releaseByHandle('net.old')
  await ipam.autoAssign({ handle: 'net.old', node: 'n1', num4: 1 }) // same handle id, same address, new sequence number
  const r = await repairIpam(ipam, report)
  t.equal(r.fixed, 0)
  t.match(r.failed[0]?.error, /bad-sequence/)
  t.equal((await ipam.handleAddresses('net.old')).length, 1)
})
