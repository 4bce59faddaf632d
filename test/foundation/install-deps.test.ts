// scripts/install-deps.js's lists against the repository: every npm package with an install script is
// approved in package.json's allowScripts and explained in the line install-deps prints and in
// docs/development.md, and no other; `npm run demo` installs only the Debian packages the demo uses,
// npm test all of them.
import t from 'tap'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { join } from 'node:path'

const root = fileURLToPath(new URL('../../../', import.meta.url))
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { allowScripts?: Record<string, boolean>; scripts: Record<string, string> }
const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as { packages: Record<string, { hasInstallScript?: boolean }> }

interface InstallDeps {
  INSTALL_SCRIPTS: Record<string, string>
  installScriptsLine(): string
  DEBIAN_SETS: Record<string, { pkg: string; bins: string[] }[]>
  missingPackages(set: string, exists?: (path: string) => boolean): string[]
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

t.test('docs/development.md says why each of them has an install script, and the README points there', async (t) => {
  const doc = readFileSync(join(root, 'docs', 'development.md'), 'utf8')
  const section = doc.slice(doc.indexOf('## npm packages with install scripts'))
  const rows = section.slice(0, section.indexOf('\n## ')).split('\n').filter((l) => /^\| [a-z@]/.test(l) && !l.startsWith('| package |'))
  t.same(rows.map((l) => l.split(' | ')[0]?.slice(2)).sort(), withScripts, 'one row per package with an install script')
  for (const [name, why] of Object.entries(deps.INSTALL_SCRIPTS)) t.ok(rows.some((l) => l.startsWith(`| ${name} | ${why}`)), `${name}: ${why}`)
  t.match(readFileSync(join(root, 'README.md'), 'utf8'), 'docs/development.md#npm-packages-with-install-scripts')
})

const nothingInstalled = (): boolean => false

t.test('npm run demo installs what the demo runs, not the tests\' peers, podman or chromium', async (t) => {
  t.match(pkg.scripts['demo'], /^node scripts\/install-deps\.js demo && /, 'the demo script asks for the demo set')
  const demo = deps.missingPackages('demo', nothingInstalled)
  for (const p of ['iproute2', 'iputils-ping', 'curl', 'nftables', 'procps', 'bird2']) t.ok(demo.includes(p), `demo: ${p}`)
  for (const p of ['chromium', 'frr', 'gobgpd', 'tcpdump', 'podman', 'etcd-server']) t.notOk(demo.includes(p), `not for the demo: ${p}`)
})

t.test('npm run image adds what the podman runtime needs; npm test installs every package', async (t) => {
  t.match(pkg.scripts['image'], /^node scripts\/install-deps\.js image && /)
  const image = deps.missingPackages('image', nothingInstalled)
  for (const p of ['podman', 'runc', 'catatonit', 'busybox-static', 'etcd-server', 'openssl', 'bird2']) t.ok(image.includes(p), `image: ${p}`)
  t.notOk(image.includes('chromium'), 'no browser for the image')
  t.match(pkg.scripts['pretest'], /^node scripts\/install-deps\.js( test)?$/, 'pretest asks for the test set (the default)')
  const all = Object.values(deps.DEBIAN_SETS).flatMap((s) => s.map((d) => d.pkg))
  t.same(deps.missingPackages('test', nothingInstalled).sort(), [...new Set(all)].sort(), 'the test set is every package')
})

t.test('a package counts as there when any one of its programs is', async (t) => {
  const only = new Set(['/bin/ip', '/usr/bin/curl'])
  const missing = deps.missingPackages('demo', (p) => only.has(p))
  t.notOk(missing.includes('iproute2'), '/bin/ip is enough for iproute2')
  t.notOk(missing.includes('curl'))
  t.ok(missing.includes('iputils-ping'))
  t.throws(() => deps.missingPackages('everything'), /unknown set "everything": one of demo, image, test/)
})
