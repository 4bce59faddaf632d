// The README's main job, smoke-tested as a user runs it: `pintoctl demo --check --nodes 2 --pods 1` exits 0
// with a full ping matrix and leaves no namespace, temp dir or file outside its temp dir behind.

import t from 'tap'
import { readdir } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { execa } from 'execa'
import { NODE_BIN } from '../../agent/demo/cluster.js'
import { PINTO_DIRS, SHARED_CNI_DIRS, pintoFootprint } from '../harness/host-paths.js'

const PINTOCTL = NODE_BIN.replace(/pinto-node\.js$/, 'pintoctl.js')

t.test('pintoctl demo --check --nodes 2 --pods 1', async (t) => {
  // pinto-node's and the plugins' defaults: a real node's, which the demo must leave alone.
  const before = await pintoFootprint()
  const child = execa(process.execPath, [PINTOCTL, 'demo', '--check', '--nodes', '2', '--pods', '1'], { reject: false, timeout: 90_000 })
  // If this test dies first, the demo's own handler removes what it made.
  t.teardown(() => {
    child.kill('SIGINT')
  })
  const r = await child
  t.equal(r.exitCode, 0, r.exitCode === 0 ? "exit 0" : `exit ${r.exitCode}\n${String(r.stdout)}\n${String(r.stderr)}`)
  t.match(String(r.stdout), 'check passed: every pod reached every other pod')
  t.match(String(r.stdout), /pod-to-pod ping matrix \(2 of 2 reached\)/)
  t.match(String(r.stdout), /\| node1 \| .* \| 192\.0\.2\.12 /, 'the peers table names the other node')
  const ns = String((await execa('ip', ['netns', 'list'])).stdout)
  t.notMatch(ns, `pdm${child.pid}-`, 'no namespace left behind')
  const id = /namespaces pdm\d+-([0-9a-f]{6})-/.exec(String(r.stdout))?.[1]
  t.ok(id, 'the demo named its namespaces')
  t.notOk((await readdir(tmpdir())).some((e) => e.startsWith(`pinto-demo-${id}`)), 'no temp dir left behind')
  t.same(await pintoFootprint(), before, `nothing made or bound in ${PINTO_DIRS.join(', ')}, nothing named pinto in ${SHARED_CNI_DIRS.join(', ')}`)
})

t.test('bad options are named', async (t) => {
  const r = await execa(process.execPath, [PINTOCTL, 'demo', '--encap', 'gre'], { reject: false })
  t.equal(r.exitCode, 2)
  t.match(String(r.stderr), '--encap: "gre" is not one of none, vxlan, ipip')
})
