// scripts/install-deps.js's lists against the repository: every npm package with an install script is
// approved in package.json's allowScripts and explained in the line install-deps prints, and no other.
import t from 'tap'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { join } from 'node:path'

const root = fileURLToPath(new URL('../../../', import.meta.url))
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { allowScripts?: Record<string, boolean> }
const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, { hasInstallScript?: boolean }> }

interface InstallDeps {
  INSTALL_SCRIPTS: Record<string, string>
  installScriptsLine(): string
}
const deps = (await import(join(root, 'scripts', 'install-deps.js'))) as InstallDeps

const withScripts = Object.entries(lock.packages)
  .filter(([path, p]) => path !== '' && p.hasInstallScript === true)
  .map(([path]) => path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length))
  .sort()

t.test('the packages with install scripts are approved and explained, no more, no fewer', async (t) => {
  t.ok(withScripts.length > 0, `the lockfile has packages with install scripts: ${withScripts.join(', ')}`)
  t.same(Object.keys(pkg.allowScripts ?? {}).sort(), withScripts, "package.json's allowScripts names exactly them")
  t.ok(Object.values(pkg.allowScripts ?? {}).every((v) => v === true), 'each is allowed')
  t.same(Object.keys(deps.INSTALL_SCRIPTS).sort(), withScripts, 'install-deps explains exactly them')
})

t.test('the line install-deps prints names each with its reason', async (t) => {
  const line = deps.installScriptsLine()
  t.notMatch(line, /\n/, 'one line')
  for (const [name, why] of Object.entries(deps.INSTALL_SCRIPTS)) t.match(line, `${name} ${why}`)
})
