// The product under the Node.js it ships (Node 26, as in the image): a 3-node mesh whose pinto-node
// processes run under it, pods wired by the single-executable plugins, pinging each other across nodes.

import t from 'tap'
import { readlinkSync } from 'node:fs'
import { seaExecutable } from '../../agent/install-cni.js'
import { matrixFailures, pingMatrix, waitConverged } from '../../agent/demo/observe.js'
import { nodeLts } from '../harness/node-lts.js'
import { makeCluster } from './cluster.js'

const node = nodeLts()
const skip = 'reason' in node ? node.reason : seaExecutable() === undefined ? 'dist/sea/pinto is not built: run `node scripts/sea.js` (npm test does)' : false

t.test('a mesh under the shipped Node.js: pods ping across nodes', { skip }, async (t) => {
  if ('reason' in node) return
  const c = await makeCluster(t, { nodes: 3, encap: 'none', node: node.path, plugins: 'sea' })
  for (const n of c.nodes) t.equal(readlinkSync(`/proc/${n.agent?.pid ?? 0}/exe`), node.path, `${n.name}'s pinto-node runs under ${node.path}`)
  for (const n of c.nodes) await c.addPod(n)
  await waitConverged(c, 30_000)
  const m = await pingMatrix(c.pods)
  t.same(matrixFailures(m), [], 'every pod reaches every other pod')
  t.equal(c.pods.length, 3)
})
