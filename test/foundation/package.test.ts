// The repository contract: the bin entries exist, npm test lints, and programs that have not landed refuse to
// fake output.
import t from 'tap'
import { readFileSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { join } from 'node:path'

const root = fileURLToPath(new URL('../../../', import.meta.url))
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { name: string; type: string; bin: Record<string, string>; scripts: Record<string, string> }

t.test('package.json names pinto, is ESM and has the five programs', async (t) => {
  t.equal(pkg.name, 'pinto')
  t.equal(pkg.type, 'module')
  t.same(Object.keys(pkg.bin).sort(), ['pinto', 'pinto-fanout', 'pinto-ipam', 'pinto-node', 'pintoctl'])
})

t.test('npm test lints, allowing no warning, before it runs the suite', async (t) => {
  t.equal(pkg.scripts['lint'], 'eslint . --max-warnings 0')
  const steps = (pkg.scripts['test'] ?? '').split(' && ')
  t.ok(steps.includes('npm run lint'), `npm test runs npm run lint: ${pkg.scripts['test']}`)
  t.ok(steps.indexOf('npm run lint') < steps.indexOf('node scripts/run-tests.js'), 'before the suite')
})

t.test('pintoctl with an unknown command exits non-zero and says so', async (t) => {
  const r = spawnSync(process.execPath, [join(root, 'bin/pintoctl.js'), 'no-such-command'], { encoding: 'utf8' })
  t.not(r.status, 0)
  t.match(r.stderr, /no-such-command/)
})
