// pintoFootprint on stand-in directories: another program making a shared CNI directory, or its file in
// one, leaves it as it was; anything in pinto's own directories, or named for pinto in a shared one, changes it.
import t from 'tap'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pintoFootprint } from './host-paths.js'

t.test('only what pinto could have made is compared', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'pinto-footprint-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const dirs = { own: [join(dir, 'var-run-pinto')], shared: [join(dir, 'etc-cni-net.d')] }
  const before = await pintoFootprint(dirs)
  mkdirSync(dirs.shared[0]!)
  t.same(await pintoFootprint(dirs), before, 'another program making the shared directory changes nothing')
  writeFileSync(join(dirs.shared[0]!, '87-podman-bridge.conflist'), '{}')
  t.same(await pintoFootprint(dirs), [`${dirs.own[0]} (absent)`], 'an absent own directory is noted; the other program\'s file is not')
  writeFileSync(join(dirs.shared[0]!, '88-podman-net.conflist'), '{}')
  t.same(await pintoFootprint(dirs), before, 'another program adding a config changes nothing')
  writeFileSync(join(dirs.shared[0]!, '10-pinto.conflist'), '{}')
  t.not(JSON.stringify(await pintoFootprint(dirs)), JSON.stringify(before), 'a pinto config does')
  rmSync(join(dirs.shared[0]!, '10-pinto.conflist'))
  mkdirSync(dirs.own[0]!)
  t.not(JSON.stringify(await pintoFootprint(dirs)), JSON.stringify(before), 'pinto\'s own directory appearing does')
})
