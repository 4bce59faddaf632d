// scripts/test-unit.js's list against the tests themselves: every file it names exists, is named once,
// and imports nothing that needs root, makes namespaces, starts a daemon or runs pinto's programs, so
// `npm run test:unit` stays runnable by any user with nothing installed but node_modules.
import t from 'tap'
import { existsSync, readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { join } from 'node:path'

const root = fileURLToPath(new URL('../../../', import.meta.url))
const { UNIT_TESTS, compiledPath } = (await import(join(root, 'scripts', 'test-unit.js'))) as { UNIT_TESTS: string[]; compiledPath: (source: string) => string }
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> }

/** Imports a unit test may not have, and why. */
const FORBIDDEN: readonly [RegExp, string][] = [
  [/harness\/(netns|ns-bridge|tcpdump)\.js'/, 'makes network namespaces or captures in them (root)'],
  [/harness\/(bird|frr|gobgp|bfdd|etcd|daemons|certs)\.js'/, 'starts a daemon'],
  [/harness\/node-lts\.js'/, "fetches the Node.js pinto ships"],
  [/cni\/lab\.js'|agent\/demo\/cluster\.js'|e2e\/cluster\.js'/, 'builds pods or a cluster in namespaces (root)'],
  [/pintoctl\/run\.js'|agent-proc(ess)?\.js'/, "runs pinto's programs"],
  [/datastore-etcd\.js'/, 'needs etcd'],
  [/scripts\/sea\.js|dist\/sea\//, 'needs the single executable'],
  [/getuid\?\.\(\) !== 0|getuid\(\) !== 0/, 'depends on running as root'],
]

t.test('package.json has test:unit, and npm test still runs every test', async (t) => {
  t.equal(pkg.scripts['test:unit'], 'node scripts/test-unit.js')
  t.notMatch(pkg.scripts['test'] ?? '', /test-unit|--direct/, 'npm test is not limited to the list')
})

t.test('every listed test exists, once, in dist where the runner looks', async (t) => {
  t.ok(UNIT_TESTS.length > 50, `${UNIT_TESTS.length} unit tests`)
  t.equal(new Set(UNIT_TESTS).size, UNIT_TESTS.length, 'no file twice')
  t.same(UNIT_TESTS.filter((f) => !existsSync(join(root, f))), [], 'each source exists')
  t.same(UNIT_TESTS.filter((f) => !/^test\/.+\.test\.ts$/.test(f)), [], 'each is a test source')
  t.equal(compiledPath('test/agent/api/endpoints.test.ts'), join('dist', 'test', 'agent', 'api', 'endpoints.test.js'))
  t.ok(UNIT_TESTS.includes('test/foundation/unit-tests.test.ts'), 'this test is one of them')
})

t.test('no listed test imports what needs root, a daemon or a program', async (t) => {
  const bad: string[] = []
  for (const f of UNIT_TESTS) {
    const text = readFileSync(join(root, f), 'utf8')
    for (const [re, why] of FORBIDDEN) if (re.test(text)) bad.push(`${f}: ${why} (${re.source})`)
  }
  t.same(bad, [])
})
