// `pintoctl install-cni` as an operator runs it, into temporary plugin and config directories: the single
// executable under both names (or, with --node, the bundles with that Node.js in their #! line) runs when
// exec'd directly, a re-install replaces each file by rename, the conflist is pinto's with the chain and
// PINTO_CNI_* settings asked for, and every bad input is refused naming its flag or variable.
import t, { type Test } from 'tap'
import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, openSync, readFileSync, readSync, closeSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BUNDLE_DIR, installCni, pintoConflist, seaExecutable, shebangFor, withShebang } from '../../agent/install-cni.js'
import { runPintoctl } from './pintoctl/run.js'

function dirs(t: Test): { bin: string; conf: string; root: string } {
  const root = mkdtempSync(join(tmpdir(), 'pinto-install-'))
  t.teardown(() => rmSync(root, { recursive: true, force: true }))
  const bin = join(root, 'bin')
  const conf = join(root, 'net.d')
  mkdirSync(bin)
  mkdirSync(conf)
  return { bin, conf, root }
}

t.test('the #! line', async (t) => {
  t.equal(shebangFor('/usr/bin/node'), '#!/usr/bin/node\n')
  t.throws(() => shebangFor('node'), /--node: "node" is not an absolute path/)
  t.throws(() => shebangFor('/opt/my node/bin/node'), /--node: .* contains whitespace/)
  t.throws(() => shebangFor(`/${'n'.repeat(260)}`), /--node: the path is 261 bytes; a #! line holds at most 253/)
  t.equal(withShebang('#!/usr/bin/env node\n"use strict";\n', '/usr/bin/node'), '#!/usr/bin/node\n"use strict";\n')
  t.equal(withShebang('"use strict";\n', '/usr/bin/node'), '#!/usr/bin/node\n"use strict";\n')
})

t.test('the conflist', async (t) => {
  t.same(pintoConflist({ mtu: 0, chain: [] }), {
    name: 'k8s-pod-network',
    cniVersion: '1.0.0',
    plugins: [{ type: 'pinto', mtu: 0, ipam: { type: 'pinto-ipam' } }],
  })
  t.same(pintoConflist({ mtu: 1440, socket: '/run/p.sock', chain: ['portmap', 'bandwidth', 'tuning'] }).plugins, [
    { type: 'pinto', mtu: 1440, socket: '/run/p.sock', ipam: { type: 'pinto-ipam', socket: '/run/p.sock' } },
    { type: 'portmap', snat: true, capabilities: { portMappings: true } },
    { type: 'bandwidth', capabilities: { bandwidth: true } },
    { type: 'tuning' },
  ])
  t.throws(() => pintoConflist({ mtu: 0, chain: ['../evil'] }), /--chain: "..\/evil" is not a plugin name/)
})

t.test('pintoctl install-cni --node installs runnable bundles and pinto\'s config', async (t) => {
  const { bin, conf } = dirs(t)
  writeFileSync(join(bin, 'portmap'), '', { mode: 0o755 })
  const r = await runPintoctl(['install-cni', '--bin-dir', bin, '--conf-dir', conf, '--socket', '/run/pinto-test.sock', '--node', process.execPath])
  t.equal(r.status, 0, r.stderr)
  t.equal(r.stdout, `installed ${join(bin, 'pinto')}\ninstalled ${join(bin, 'pinto-ipam')}\ninstalled ${join(conf, '10-pinto.conflist')}\n`)
  for (const name of ['pinto', 'pinto-ipam']) {
    const text = readFileSync(join(bin, name), 'utf8')
    const bundle = readFileSync(join(BUNDLE_DIR, `${name}.cjs`), 'utf8')
    t.equal(text.slice(0, text.indexOf('\n') + 1), `#!${process.execPath}\n`, `${name}: this Node.js by absolute path`)
    t.equal(text.slice(text.indexOf('\n')), bundle.slice(bundle.indexOf('\n')), `${name}: the bundle otherwise`)
    t.equal(statSync(join(bin, name)).mode & 0o777, 0o755)
    // exec'd as the runtime does: the file itself, no interpreter named, an environment of its own.
    const v = spawnSync(join(bin, name), [], { input: '{"cniVersion":"1.0.0"}', env: { CNI_COMMAND: 'VERSION', PATH: '/nonexistent' }, encoding: 'utf8' })
    t.equal(v.status, 0, `${name} VERSION: ${v.stderr}`)
    t.match(JSON.parse(v.stdout), { cniVersion: '1.0.0', supportedVersions: ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'] })
  }
  t.same(JSON.parse(readFileSync(join(conf, '10-pinto.conflist'), 'utf8')), pintoConflist({ mtu: 0, socket: '/run/pinto-test.sock', chain: ['portmap'] }), 'portmap chained: it is in the bin dir')
  t.same(readdirSync(bin).sort(), ['pinto', 'pinto-ipam', 'portmap'], 'no temporary file left')
})

const sea = seaExecutable()
t.test('pintoctl install-cni installs the single executable under both names, settings from PINTO_CNI_*', { skip: sea === undefined ? 'dist/sea/pinto is not built: run `node scripts/sea.js` (npm test does)' : false }, async (t) => {
  if (sea === undefined) return
  const { bin, conf } = dirs(t)
  const env = { PINTO_CNI_BIN_DIR: bin, PINTO_CNI_CONF_DIR: conf, PINTO_CNI_MTU: '1380', PINTO_CNI_SOCKET: '/run/pinto-env.sock' }
  const r = await runPintoctl(['install-cni'], { env })
  t.equal(r.status, 0, r.stderr)
  t.equal(r.stdout, `installed ${join(bin, 'pinto')}\ninstalled ${join(bin, 'pinto-ipam')}\ninstalled ${join(conf, '10-pinto.conflist')}\n`)
  const main = statSync(join(bin, 'pinto'))
  t.equal(main.size, statSync(sea).size, 'pinto is the executable')
  t.equal(main.mode & 0o777, 0o755)
  t.equal(statSync(join(bin, 'pinto-ipam')).ino, main.ino, 'pinto-ipam is a hard link to it')
  t.same(JSON.parse(readFileSync(join(conf, '10-pinto.conflist'), 'utf8')), pintoConflist({ mtu: 1380, socket: '/run/pinto-env.sock', chain: [] }))
  // No Node.js reachable: an empty environment but the CNI variables.
  const v = spawnSync(join(bin, 'pinto-ipam'), [], { input: '{"cniVersion":"1.0.0"}', env: { CNI_COMMAND: 'VERSION' }, encoding: 'utf8' })
  t.equal(v.status, 0, `VERSION: ${v.stderr}`)
  t.match(JSON.parse(v.stdout), { cniVersion: '1.0.0' })
  // A flag wins over its variable; a re-install replaces both names by rename and leaves no temporary file.
  const other = dirs(t)
  const f = await runPintoctl(['install-cni', '--bin-dir', other.bin, '--no-conf'], { env })
  t.equal(f.status, 0, f.stderr)
  t.same(readdirSync(other.bin).sort(), ['pinto', 'pinto-ipam'])
  const again = await runPintoctl(['install-cni', '--no-conf'], { env })
  t.equal(again.status, 0, again.stderr)
  t.not(statSync(join(bin, 'pinto')).ino, main.ino, 'a new inode under the same name')
  t.equal(statSync(join(bin, 'pinto-ipam')).ino, statSync(join(bin, 'pinto')).ino, 'the link follows the new file')
  t.same(readdirSync(bin).sort(), ['pinto', 'pinto-ipam'], 'no temporary file left')
  const bad = await runPintoctl(['install-cni'], { env: { ...env, PINTO_CNI_MTU: 'jumbo' } })
  t.equal(bad.status, 1)
  t.match(bad.stderr, /PINTO_CNI_MTU: "jumbo" is not a number/)
  const big = await runPintoctl(['install-cni'], { env: { ...env, PINTO_CNI_MTU: '70000' } })
  t.match(big.stderr, /PINTO_CNI_MTU: 70000 is not 0 or an MTU/)
  const gone = await runPintoctl(['install-cni'], { env: { ...env, PINTO_CNI_BIN_DIR: join(bin, 'nope') } })
  t.equal(gone.status, 1)
  t.match(gone.stderr, `PINTO_CNI_BIN_DIR: ${join(bin, 'nope')} does not exist`)
})

t.test('a re-install replaces each file by rename: an exec in flight keeps reading the old one', async (t) => {
  const { bin } = dirs(t)
  installCni({ binDir: bin, confDir: undefined, node: process.execPath })
  const path = join(bin, 'pinto')
  const before = statSync(path).ino
  const fd = openSync(path, 'r')
  t.teardown(() => closeSync(fd))
  installCni({ binDir: bin, confDir: undefined, node: '/bin/sh' })
  t.not(statSync(path).ino, before, 'a new inode under the same name')
  t.match(readFileSync(path, 'utf8'), /^#!\/bin\/sh\n/)
  const old = Buffer.alloc(64)
  readSync(fd, old, 0, 64, 0)
  t.match(old.toString(), new RegExp(`^#!${process.execPath}\n`), 'the open file is the old one, whole')
  t.same(readdirSync(bin).sort(), ['pinto', 'pinto-ipam'])
})

t.test('without portmap in the bin dir, nothing is chained; another config sorting first is pointed out', async (t) => {
  const { bin, conf } = dirs(t)
  writeFileSync(join(conf, '05-other.conflist'), '{}')
  const r = await runPintoctl(['install-cni', `--bin-dir=${bin}`, `--conf-dir=${conf}`, '--mtu', '1400', '--conf-name', '20-pinto.conflist'])
  t.equal(r.status, 0, r.stderr)
  t.same(JSON.parse(readFileSync(join(conf, '20-pinto.conflist'), 'utf8')).plugins, [{ type: 'pinto', mtu: 1400, ipam: { type: 'pinto-ipam' } }])
  t.equal(r.stderr, `note: 05-other.conflist in ${conf} sorts before 20-pinto.conflist: the runtime uses the first config file\n`)
  const c = await runPintoctl(['install-cni', `--bin-dir=${bin}`, '--no-conf', '--chain', 'bandwidth'])
  t.equal(c.status, 0, c.stderr)
  t.equal(c.stdout.split('\n').filter((l) => l !== '').length, 2, '--no-conf: plugins only')
})

t.test('bad input is refused, naming the flag, and nothing is written', async (t) => {
  const { bin, conf, root } = dirs(t)
  const cases: [string[], number, RegExp][] = [
    [['--node', 'node'], 1, /--node: "node" is not an absolute path/],
    [['--node', '/nonexistent/node'], 1, /--node: \/nonexistent\/node is not an executable file/],
    [['--node', '/etc'], 1, /--node: \/etc is not a file/],
    [['--mtu', 'big'], 1, /--mtu: "big" is not a number/],
    [['--mtu', '70000'], 1, /--mtu: 70000 is not 0 or an MTU/],
    [['--conf-name', '../x.conflist'], 1, /--conf-name: "..\/x.conflist" is not a file name ending in .conflist/],
    [['--chain', 'portmap,a/b'], 1, /--chain: "a\/b" is not a plugin name/],
    [['--bogus'], 2, /unknown flag --bogus/],
    [['extra'], 2, /unexpected "extra"/],
    [['--node'], 2, /--node needs a value/],
  ]
  for (const [args, status, message] of cases) {
    const r = await runPintoctl(['install-cni', '--bin-dir', bin, '--conf-dir', conf, ...args])
    t.equal(r.status, status, args.join(' '))
    t.match(r.stderr, message, args.join(' '))
  }
  const missing = await runPintoctl(['install-cni', '--bin-dir', join(root, 'nope'), '--conf-dir', conf])
  t.match(missing.stderr, new RegExp(`--bin-dir: ${join(root, 'nope')} does not exist`))
  const notDir = await runPintoctl(['install-cni', '--bin-dir', bin, '--conf-dir', process.execPath])
  t.match(notDir.stderr, /--conf-dir: .* is not a directory/)
  t.throws(() => installCni({ binDir: bin, confDir: conf, node: process.execPath, bundleDir: root }), /pinto\.cjs is missing: run `npm run build` in the pinto checkout first/)
  t.same(readdirSync(bin), [], 'no plugin written')
  t.same(readdirSync(conf), [], 'no config written')
})
