#!/usr/bin/env node
// Installs what a fresh Debian machine lacks for pinto's build, tests and demo: npm packages when
// node_modules is missing or stale, and (as root) the Debian packages of one set: the demo's, the image's,
// or all the tests need (the real peers they run against). It never starts a system service: apt is
// fenced by policy-rc.d.
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, lstatSync, readFileSync, realpathSync, statSync, writeFileSync, chmodSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { ensureNode } from './node-lts.js'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')

/**
 * The npm packages whose install scripts run, each with what its script does. package.json's
 * "allowScripts" approves the same names, so an npm that checks it does not warn about them; a test
 * holds the three (this, allowScripts, the lockfile's hasInstallScript) equal.
 */
export const INSTALL_SCRIPTS = {
  // postinstall: checks @esbuild/linux-x64's binary and links it as bin/esbuild
  esbuild: 'links its platform binary',
  // install: cnoke --prebuild loads @koromix/koffi-linux-x64's addon, runs CMake only when it fails
  koffi: 'loads its prebuilt addon (builds only if none fits)',
  // install: node-gyp-build takes prebuilds/linux-x64, runs node-gyp only when none fits
  netlink: 'loads its prebuilt addon (builds only if none fits)',
  // postinstall (etcd3's gRPC): warns when a dependent's range for it is not ~x.y.z; writes nothing
  protobufjs: 'checks its version range, changes nothing',
}

/** The one line said before npm ci: which packages run install scripts, and why that is fine. */
export function installScriptsLine() {
  const why = Object.entries(INSTALL_SCRIPTS).map(([name, what]) => `${name} ${what}`)
  return `[install-deps] install scripts (approved in package.json's allowScripts): ${why.join('; ')}`
}

/**
 * The Debian packages, each with the programs that prove it is there (any one will do), by what needs
 * them. A set includes the ones before it: `demo` is what `npm run demo` needs, `image` adds what
 * `npm run image` and the demo's --runtime podman need, `test` (npm test's default) adds the tests' peers.
 */
export const DEBIAN_SETS = {
  demo: [
    // namespaces, veths and routes (ip), the BGP sessions when an API does not answer (ss)
    { pkg: 'iproute2', bins: ['/usr/sbin/ip', '/usr/bin/ip', '/sbin/ip', '/bin/ip'] },
    // felix: forwarding (sysctl) and natOutgoing (nft)
    { pkg: 'procps', bins: ['/usr/sbin/sysctl', '/sbin/sysctl'] },
    { pkg: 'nftables', bins: ['/usr/sbin/nft'] },
    // the ping matrix, and each node's REST API read from inside its namespace
    { pkg: 'iputils-ping', bins: ['/usr/bin/ping', '/bin/ping'] },
    { pkg: 'curl', bins: ['/usr/bin/curl'] },
    // --tor bird
    { pkg: 'bird2', bins: ['/usr/sbin/bird'] },
  ],
  image: [
    // podman kube play runs the DaemonSet's pod template; its pause image needs catatonit, and crun
    // fails here (cgroups hybrid mode), so runc; busybox-static makes the stand-in image and the image's sysctl.
    { pkg: 'podman', bins: ['/usr/bin/podman'] },
    { pkg: 'runc', bins: ['/usr/sbin/runc'] },
    { pkg: 'catatonit', bins: ['/usr/bin/catatonit'] },
    { pkg: 'busybox-static', bins: ['/bin/busybox'] },
    // the podman runtime's datastore: etcd with TLS (certificates made by openssl)
    { pkg: 'etcd-server', bins: ['/usr/bin/etcd'] },
    { pkg: 'etcd-client', bins: ['/usr/bin/etcdctl'] },
    { pkg: 'openssl', bins: ['/usr/bin/openssl'] },
    // scripts/sea.js strips the Node.js it builds the plugins' executable from.
    { pkg: 'binutils', bins: ['/usr/bin/strip'] },
    // The kubernetes runtime's pause image is Kubernetes' pause.c, compiled static here.
    { pkg: 'gcc', bins: ['/usr/bin/gcc'] },
    { pkg: 'libc6-dev', bins: ['/usr/include/stdio.h'] },
  ],
  test: [
    // the real peers and tools the tests run against
    { pkg: 'frr', bins: ['/usr/lib/frr/bgpd'] },
    { pkg: 'gobgpd', bins: ['/usr/bin/gobgpd'] },
    { pkg: 'containernetworking-plugins', bins: ['/usr/lib/cni/ptp'] },
    { pkg: 'tcpdump', bins: ['/usr/bin/tcpdump'] },
    // The agnhost image of Kubernetes' network tests runs OpenBSD's nc (UDP, -z), as its Alpine base has it.
    { pkg: 'netcat-openbsd', bins: ['/bin/nc.openbsd'] },
    // Its DNS tests run dig in agnhost and in the glibc image they name (Debian's dnsutils there too).
    { pkg: 'bind9-dnsutils', bins: ['/usr/bin/dig'] },
    // The status page's browser test drives Debian's chromium through playwright-core (no browser download).
    { pkg: 'chromium', bins: ['/usr/bin/chromium'] },
  ],
}

const SET_NAMES = Object.keys(DEBIAN_SETS)
const SET_FOR = { demo: 'what the demo needs', image: "what the image and the demo's podman runtime need", test: 'everything the tests need' }

/** The Debian packages `set` needs (with the sets before it) that `exists` finds none of the programs of. */
export function missingPackages(set, exists = existsSync) {
  const upTo = SET_NAMES.indexOf(set)
  if (upTo < 0) throw new Error(`unknown set ${JSON.stringify(set)}: one of ${SET_NAMES.join(', ')}`)
  return SET_NAMES.slice(0, upTo + 1)
    .flatMap((name) => DEBIAN_SETS[name])
    .filter((d) => !d.bins.some((b) => exists(b)))
    .map((d) => d.pkg)
}

/** The systemd units a package brings (services, sockets, timers). */
function unitsOf(pkg) {
  const r = spawnSync('dpkg', ['-L', pkg], { encoding: 'utf8' })
  if (r.status !== 0) return []
  return r.stdout.split('\n').filter((f) => /^\/(usr\/)?lib\/systemd\/system\/[^/@]+\.(service|socket|timer)$/.test(f)).map((f) => f.slice(f.lastIndexOf('/') + 1))
}

/**
 * apt enables a new package's units for the next boot even where policy-rc.d keeps them from starting
 * now; pinto needs the programs, not the services, so the units of packages installed here are disabled.
 */
function disableUnits(pkgs) {
  if (!existsSync('/usr/bin/systemctl') && !existsSync('/bin/systemctl')) return
  for (const unit of pkgs.flatMap(unitsOf)) {
    // Works on unit files alone, with or without a running systemd.
    const r = spawnSync('systemctl', ['--no-reload', 'disable', unit], { encoding: 'utf8' })
    if (r.status === 0) console.error(`[install-deps] disabled ${unit} (pinto runs the program itself when it needs it)`)
  }
}

/** npm's own script (npm-cli.js), found through the `npm` on PATH; undefined when it cannot be found. */
function npmCliPath() {
  const r = spawnSync('sh', ['-c', 'readlink -f "$(command -v npm)"'], { encoding: 'utf8' })
  const cli = r.status === 0 ? r.stdout.trim() : ''
  return cli.endsWith('npm-cli.js') && existsSync(cli) ? cli : undefined
}

function npmDeps() {
  const lock = join(root, 'package-lock.json')
  const marker = join(root, 'node_modules', '.package-lock.json')
  const stale = !existsSync(marker) || (existsSync(lock) && statSync(lock).mtimeMs > statSync(marker).mtimeMs + 1000)
  if (!stale) return
  // npm ci empties node_modules first; through a link that is another checkout's node_modules, in use there.
  const modules = join(root, 'node_modules')
  if (existsSync(modules) && lstatSync(modules).isSymbolicLink()) {
    console.error(`[install-deps] node_modules is a link to ${realpathSync(modules)}, which may be stale: not running npm ci through it (it would empty that directory); run npm ci where it lives if it needs it`)
    return
  }
  console.error('[install-deps] npm packages missing or stale: running npm ci')
  console.error(installScriptsLine())
  const cmd = existsSync(lock) ? ['ci', '--no-audit', '--no-fund'] : ['install', '--no-audit', '--no-fund']
  // npm runs under the Node.js pinto ships, as the packages' engines (Node 22+ for some) expect, so
  // npm checks them against that one rather than against an older Node that only started this script.
  const npmCli = npmCliPath()
  const r = npmCli === undefined ? spawnSync('npm', cmd, { cwd: root, stdio: 'inherit' }) : spawnSync(ensureNode(), [npmCli, ...cmd], { cwd: root, stdio: 'inherit' })
  if (r.status !== 0) throw new Error(`npm ${cmd[0]} failed with exit code ${r.status}`)
}

function debianDeps(set) {
  if (process.platform !== 'linux' || process.getuid?.() !== 0) return
  if (!existsSync('/usr/bin/apt-get')) return
  const pkgs = missingPackages(set)
  if (pkgs.length === 0) return
  // Debian starts a package's daemon on install unless policy-rc.d says no; the tests start their own.
  const policy = '/usr/sbin/policy-rc.d'
  if (!existsSync(policy) || !readFileSync(policy, 'utf8').includes('exit 101')) {
    writeFileSync(policy, '#!/bin/sh\nexit 101\n')
    chmodSync(policy, 0o755)
  }
  console.error(`[install-deps] installing Debian packages (${SET_FOR[set]}): ${pkgs.join(' ')}`)
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
  execFileSync('apt-get', ['update', '-q'], { stdio: 'inherit', env })
  execFileSync('apt-get', ['install', '-y', '-q', '--no-install-recommends', ...pkgs], { stdio: 'inherit', env })
  disableUnits(pkgs)
}

// Run as a program (npm's pretest, demo and image scripts): `install-deps.js [demo|image|test]`, test by
// default. Imported, it only lends its lists (tests).
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  try {
    const set = process.argv[2] ?? 'test'
    if (!SET_NAMES.includes(set)) throw new Error(`usage: install-deps.js [${SET_NAMES.join('|')}] (${JSON.stringify(set)} is not a set)`)
    npmDeps()
    debianDeps(set)
  } catch (err) {
    console.error(`[install-deps] ${err instanceof Error ? err.message : String(err)}`)
    process.exit(1)
  }
}
