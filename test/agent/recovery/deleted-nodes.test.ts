// What a deleted node left, over a real embedded store: its allocations (by the `node` attribute, in any
// node's block) and its blocks' affinities are released; a live node's, an allocation naming no node, and
// the agent's own node (even when its Node resource is missing) are left alone.

import t from 'tap'
import { deletedNodes, releaseDeletedNodes } from '../../../agent/recovery/deleted-nodes.js'
import { checkIpam } from '../../../ipam/check.js'
import { Ipam } from '../../../ipam/ipam.js'
import { BLOCKS_PREFIX, HANDLES_PREFIX, decodeBlock } from '../../../ipam/records.js'
import { embeddedStore } from '../../ipam/stores.js'

const POOLS = [{ name: 'v4', cidr: '198.18.0.0/24', blockSize: 28 }]

t.test("a deleted node's addresses and blocks go back; the live nodes' and the agent's own stay", async (t) => {
  const { store } = await embeddedStore(t)
  const ipam = new Ipam(store, { pools: POOLS })
  const assign = (handle: string, node: string, attrs: Record<string, string> = { node }): Promise<unknown> => ipam.autoAssign({ handle, node, num4: 1, attrs })
  await assign('net.live', 'live')
  await assign('net.gone-1', 'gone')
  await assign('net.gone-2', 'gone')
  await assign('net.self', 'self')
  await assign('net.anon', 'live', {}) // no node attribute: nobody's to judge
  const blocks = async () => (await store.list(BLOCKS_PREFIX)).items.map((kv) => decodeBlock(kv.key, kv.value))

  const gone = deletedNodes(await blocks(), new Set(['live']), 'self')
  t.same([...gone].map(([n, h]) => [n, [...h].sort()]), [['gone', ['net.gone-1', 'net.gone-2']]], 'the deleted node and its handles; not the agent\'s own')

  const done: unknown[] = []
  await releaseDeletedNodes(ipam, gone, (node, handles, released) => void done.push({ node, handles, released }))
  t.same(done, [{ node: 'gone', handles: 2, released: 1 }])
  const handles = (await store.list(HANDLES_PREFIX)).items.map((kv) => kv.key.slice(HANDLES_PREFIX.length)).sort()
  t.same(handles, ['net.anon', 'net.live', 'net.self'])
  t.notOk((await blocks()).some((b) => b.affinity === 'host:gone'), 'nothing affine to the deleted node')
  t.same((await checkIpam(ipam)).problems, [], 'ipam check clean')
  t.same([...deletedNodes(await blocks(), new Set(['live']), 'self')], [], 'a second pass finds nothing')
})
