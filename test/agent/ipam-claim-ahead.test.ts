// The agent's IPAM service claims its node's next block ahead of the pods: when the node's blocks run low it
// claims one in the background, so the ADD that would have found them full is one transaction with no claim.
// A claim ahead obeys what an inline claim obeys (maxBlocksPerHost, autoAllocateBlocks, a full pool) and is not
// made under strictAffinity; it never fails an ADD; two agents claiming at once never take the same block.
// Both backends: the embedded store and a real etcd.
import t, { type Test } from 'tap'
import { IpamService } from '../../agent/ipam-service.js'
import { loadPoolSpecs, readInputs } from '../../agent/ipam-service-pools.js'
import { type Datastore, DatastoreError } from '../../config/datastore.js'
import { CountingDatastore, commits, diffCounts } from '../../config/datastore-counting.js'
import { openEmbeddedDatastore } from '../../config/datastore-embedded.js'
import { openEtcdDatastore } from '../../config/datastore-etcd.js'
import { cidrContains, parseAddr, parseCidr } from '../../net/index.js'
import { encodeResource, resourceKey } from '../../config/resources/index.js'
import { Ipam } from '../../ipam/ipam.js'
import { AFFINITIES_PREFIX, BLOCKS_PREFIX, affinityPrefix, decodeAffinity, decodeBlock } from '../../ipam/records.js'
import { startEtcd } from '../harness/etcd.js'
import { embeddedStore } from '../ipam/stores.js'

/** /28 blocks: 16 addresses, so the default threshold (a quarter of a block) is 4 free. */
const poolText = (cidr: string): string =>
  encodeResource({ apiVersion: 'projectcalico.org/v3', kind: 'IPPool', metadata: { name: 'p' }, spec: { cidr, blockSize: 28, nodeSelector: 'all()' } } as never)
const configText = (spec: Record<string, unknown>): string =>
  encodeResource({ apiVersion: 'projectcalico.org/v3', kind: 'IPAMConfig', metadata: { name: 'default' }, spec } as never)
const inCidr = (address: string, cidr: string): boolean => {
  const a = parseAddr(address, 'address')
  return cidrContains(parseCidr(cidr, 'cidr'), a.family, a.value)
}
const affinities = async (store: Datastore, node: string): Promise<string[]> =>
  (await store.list(affinityPrefix(node))).items.map((kv) => decodeAffinity(kv.key, kv.value).cidr).sort()

/** `store` whose affinity creates (a block claim's first write) fail while `failing` is set. */
function failingClaims(store: Datastore): { store: Datastore; failing: { on: boolean } } {
  const failing = { on: false }
  const refuse = (key: string): void => {
    if (failing.on && key.startsWith(AFFINITIES_PREFIX)) throw new DatastoreError('unavailable', `test: claim refused for ${key}`, key)
  }
  return {
    failing,
    store: {
      transactions: store.transactions,
      get: (key) => store.get(key),
      list: (prefix) => store.list(prefix),
      create: async (key, value) => (refuse(key), store.create(key, value)),
      update: (key, value, revision) => store.update(key, value, revision),
      delete: (key, revision) => store.delete(key, revision),
      txn: (ops) => store.txn(ops),
      watch: (prefix, from, onEvent, onError) => store.watch(prefix, from, onEvent, onError),
      close: () => store.close(),
    },
  }
}

async function claimsAhead(t: Test, inner: Datastore): Promise<void> {
  await inner.create(resourceKey('IPPool', 'p'), poolText('198.18.0.0/24'))
  const { store: faulty, failing } = failingClaims(inner)
  const store = new CountingDatastore(faulty)
  const logged: string[] = []
  const svc = new IpamService({ store, node: 'n1', socket: '/nonexistent/unused.sock', log: (msg) => void logged.push(msg) })
  t.teardown(() => svc.close())
  await svc.prepare()
  const first = (await svc.assign({ handle: 'h0', num4: 1 })).ipv4[0]?.block as string
  t.same(await affinities(inner, 'n1'), [first], 'the first pod claims the first block, inline (nothing is claimed for a node with no pod)')

  // The next 15 ADDs fill the first block; once fewer than 4 addresses are left a block is claimed ahead.
  let singleWrites = 0
  let failedOnce = false
  for (let i = 1; i < 16; i++) {
    if (i === 12) failing.on = true
    const before = store.counts()
    const r = await svc.assign({ handle: `h${i}`, num4: 1 })
    const d = diffCounts(store.counts(), before)
    singleWrites += commits(d) - d.txn
    t.ok(inCidr(r.ipv4[0]?.address as string, first), `ADD ${i} from the first block`)
    await svc.ahead.settled()
    if (failing.on && svc.ahead.failed > 0) {
      failing.on = false
      failedOnce = true
    }
  }
  t.ok(failedOnce, 'a claim ahead that failed failed in the background: the ADD that started it succeeded')
  t.ok(logged.includes('claiming an IPAM block ahead failed; tried again after the next ADD'), 'the failure is logged')
  t.equal(singleWrites, 0, 'each ADD filling the first block was one transaction: none claimed a block itself')
  const held = await affinities(inner, 'n1')
  t.equal(held.length, 2, `a second block was claimed ahead, after the failed try, on a later ADD: ${held.join(', ')}`)
  t.equal(svc.ahead.claimed, 1, 'counted once (pinto_ipam_blocks_claimed_ahead_total)')
  t.ok(logged.includes('claimed an IPAM block ahead of the pods'), 'and logged')
  const second = held.find((c) => c !== first) as string

  // The first block is full: the next ADD moves to the block claimed ahead, in one transaction, claiming nothing.
  const before = store.counts()
  const r = await svc.assign({ handle: 'h16', num4: 1 })
  const d = diffCounts(store.counts(), before)
  t.ok(inCidr(r.ipv4[0]?.address as string, second), `the ADD after the block filled took ${r.ipv4[0]?.address} from the block claimed ahead ${second}`)
  t.equal(d.txn, 1, 'one transaction')
  t.equal(commits(d) - d.txn, 0, 'and no other write (no claim)')
}

async function obeysTheRules(t: Test, inner: Datastore, spec: string): Promise<void> {
  await inner.create(resourceKey('IPPool', 'p'), poolText('198.18.0.0/26'))
  // As the agent's service makes it: the pools and IPAMConfig read from the store.
  const ipam = new Ipam(inner, { pools: () => loadPoolSpecs(inner), inputs: { read: (node) => readInputs(inner, node) } })
  t.same(await ipam.claimAhead('a', 4, 100), { outcome: 'no-block', free: 0 }, 'a node without a block of the family is left to its first pod')
  await ipam.autoAssign({ handle: 'a0', node: 'a', num4: 1 })
  let cfg = await inner.create(resourceKey('IPAMConfig', 'default'), configText({ strictAffinity: true }))
  let r = await ipam.claimAhead('a', 4, 100)
  t.equal(r.outcome, 'not-allowed', `strictAffinity: not claimed ahead (${'reason' in r ? r.reason : ''})`)
  await inner.update(resourceKey('IPAMConfig', 'default'), configText({ autoAllocateBlocks: false }), cfg.revision).then((kv) => (cfg = kv))
  r = await ipam.claimAhead('a', 4, 100)
  t.equal(r.outcome, 'not-allowed', `autoAllocateBlocks false: not claimed ahead (${'reason' in r ? r.reason : ''})`)
  await inner.update(resourceKey('IPAMConfig', 'default'), configText({ maxBlocksPerHost: 1 }), cfg.revision).then((kv) => (cfg = kv))
  r = await ipam.claimAhead('a', 4, 100)
  t.equal(r.outcome, 'limit', `maxBlocksPerHost 1: not claimed ahead (${'reason' in r ? r.reason : ''})`)
  t.equal((await affinities(inner, 'a')).length, 1, 'node a still holds one block')
  t.equal((await ipam.claimAhead('a', 4, 1)).outcome, 'enough', 'with room above the threshold nothing is claimed')
  await inner.update(resourceKey('IPAMConfig', 'default'), configText({}), cfg.revision)

  // Three more agents, each its own store client, fill the pool's 4 blocks; then all four claim ahead at once.
  const others = ['b', 'c', 'd']
  const stores = await Promise.all(others.map(() => (spec.startsWith('etcd:') ? openEtcdDatastore([spec.slice(5)]) : openEmbeddedDatastore(spec))))
  t.teardown(() => Promise.all(stores.map((s) => s.close())))
  const agents = stores.map((s) => new Ipam(s, { pools: [{ name: 'p', cidr: '198.18.0.0/26', blockSize: 28 }] }))
  await Promise.all(agents.map((a, i) => a.autoAssign({ handle: `${others[i]}0`, node: others[i] as string, num4: 1 })))
  const all = [ipam, ...agents]
  const nodes = ['a', ...others]
  const outcomes = await Promise.all(all.map((a, i) => a.claimAhead(nodes[i] as string, 4, 100)))
  t.same(outcomes.map((o) => o.outcome), ['exhausted', 'exhausted', 'exhausted', 'exhausted'], 'a full pool: nobody claims ahead, nobody fails')

  // Node d's pod goes and d gives its block up: the other three race for the one free block.
  const d = all[3] as Ipam
  await d.releaseByHandle('d0')
  await d.releaseHostAffinities('d')
  const race = await Promise.all(all.map((a, i) => a.claimAhead(nodes[i] as string, 4, 100)))
  t.same(race.map((o) => o.outcome).sort(), ['claimed', 'exhausted', 'exhausted', 'no-block'], `one agent claimed the free block: ${JSON.stringify(race)}`)
  const blocks = (await inner.list(BLOCKS_PREFIX)).items.map((kv) => decodeBlock(kv.key, kv.value))
  t.equal(blocks.length, 4, 'never more blocks than the pool holds')
  const affs = (await inner.list(AFFINITIES_PREFIX)).items.map((kv) => decodeAffinity(kv.key, kv.value))
  t.equal(affs.length, 4, `one affinity per block: ${JSON.stringify(affs.map((a) => `${a.node} ${a.cidr} ${a.state}`))}`)
  for (const b of blocks) t.ok(affs.some((a) => a.cidr === b.cidr && b.affinity === `host:${a.node}` && a.state === 'confirmed'), `block ${b.cidr} (${b.affinity}) and its owner's confirmed affinity agree`)

  // At most one claim ahead per node and family at once: a second call while one runs is the same claim.
  await inner.create(resourceKey('IPPool', 'q'), poolText('198.19.0.0/24'))
  const wide = new Ipam(inner, { pools: [{ name: 'q', cidr: '198.19.0.0/24', blockSize: 28 }] })
  await wide.autoAssign({ handle: 'e0', node: 'e', num4: 1 })
  const [x, y] = await Promise.all([wide.claimAhead('e', 4, 100), wide.claimAhead('e', 4, 100)])
  t.equal(x, y, 'two calls at once share one claim')
  t.equal((await affinities(inner, 'e')).length, 2, 'one block claimed ahead, not two')
}

t.test('the service claims ahead at the threshold it is given (PINTO_IPAM_CLAIM_AHEAD), and not at all with 0', async (t) => {
  const runs: [number | undefined, number][] = []
  for (const below of [0, 12] as const) {
    const { store } = await embeddedStore(t)
    await store.create(resourceKey('IPPool', 'p'), poolText('198.18.0.0/24'))
    const svc = new IpamService({ store, node: 'n1', socket: '/nonexistent/unused.sock', claimAheadBelow: below })
    t.teardown(() => svc.close())
    await svc.prepare()
    // The first ADD claims the node's first /28 inline; then ADD until a second block is held, at most 15.
    let adds = 1
    await svc.assign({ handle: 'h0', num4: 1 })
    while (adds < 16 && (await affinities(store, 'n1')).length < 2) {
      await svc.assign({ handle: `h${adds++}`, num4: 1 })
      await svc.ahead.settled()
    }
    runs.push([below, (await affinities(store, 'n1')).length === 2 ? adds : -1])
  }
  t.same(runs[0], [0, -1], 'with 0, the 16 addresses of the first block are used and no block is claimed ahead')
  // 12 below: claimed after the ADD that leaves 11 free, the 5th; the default (a quarter, 4) waits for the 13th.
  t.same(runs[1], [12, 5], 'with 12, a block is claimed ahead once fewer than 12 addresses are free')
})

for (const backend of ['embedded', 'etcd'] as const) {
  t.test(`${backend}: a block is claimed ahead, and the ADD that finds its block full claims nothing`, async (t) => {
    if (backend === 'embedded') return claimsAhead(t, (await embeddedStore(t)).store)
    const etcd = await startEtcd(t)
    const store = await openEtcdDatastore([etcd.endpoint])
    t.teardown(() => store.close())
    return claimsAhead(t, store)
  })
  t.test(`${backend}: claims ahead obey strictAffinity, autoAllocateBlocks, maxBlocksPerHost and a full pool; racing agents take distinct blocks`, async (t) => {
    if (backend === 'embedded') {
      const { store, spec } = await embeddedStore(t)
      return obeysTheRules(t, store, spec)
    }
    const etcd = await startEtcd(t)
    const store = await openEtcdDatastore([etcd.endpoint])
    t.teardown(() => store.close())
    return obeysTheRules(t, store, `etcd:${etcd.endpoint}`)
  })
}

