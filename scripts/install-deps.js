#!/usr/bin/env node
// Installs what a fresh Debian machine lacks for pinto's build, tests and demo:
// npm packages when node_modules is missing or stale, and (as root) the Debian packages of the
// real peers the tests run against. It never starts a system service: apt is fenced by policy-rc.d.
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

// binary that proves the package is there -> Debian package name
const DEBIAN = {
  '/usr/sbin/bird': 'bird2',
  '/usr/lib/frr/bgpd': 'frr',
  '/usr/bin/gobgpd': 'gobgpd',
  '/usr/bin/etcd': 'etcd-server',
  '/usr/bin/etcdctl': 'etcd-client',
  '/usr/lib/cni/ptp': 'containernetworking-plugins',
  '/usr/bin/ping': 'iputils-ping',
  '/usr/bin/tcpdump': 'tcpdump',
  '/usr/sbin/nft': 'nftables',
  '/usr/bin/ip': 'iproute2',
  '/usr/sbin/ip': 'iproute2',
  // podman kube play runs the DaemonSet's pod template; its pause image needs catatonit, and crun
  // fails here (cgroups hybrid mode), so runc; busybox-static makes the stand-in image and the image's /bin/sh.
  '/usr/bin/podman': 'podman',
  '/usr/bin/buildah': 'buildah',
  '/usr/sbin/runc': 'runc',
  '/usr/bin/catatonit': 'catatonit',
  '/bin/busybox': 'busybox-static',
  '/usr/bin/openssl': 'openssl',
  // The status page's browser test drives Debian's chromium through playwright-core (no browser download).
  '/usr/bin/chromium': 'chromium',
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

function debianDeps() {
  if (process.platform !== 'linux' || process.getuid?.() !== 0) return
  if (!existsSync('/usr/bin/apt-get')) return
  const wanted = new Set()
  for (const [bin, pkg] of Object.entries(DEBIAN)) {
    if (pkg === 'iproute2' && (existsSync('/usr/bin/ip') || existsSync('/usr/sbin/ip') || existsSync('/sbin/ip'))) continue
    if (!existsSync(bin)) wanted.add(pkg)
  }
  if (wanted.size === 0) return
  // Debian starts a package's daemon on install unless policy-rc.d says no; the tests start their own.
  const policy = '/usr/sbin/policy-rc.d'
  if (!existsSync(policy) || !readFileSync(policy, 'utf8').includes('exit 101')) {
    writeFileSync(policy, '#!/bin/sh\nexit 101\n')
    chmodSync(policy, 0o755)
  }
  const pkgs = [...wanted]
  console.error(`[install-deps] installing Debian packages: ${pkgs.join(' ')}`)
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }
  execFileSync('apt-get', ['update', '-q'], { stdio: 'inherit', env })
  execFileSync('apt-get', ['install', '-y', '-q', '--no-install-recommends', ...pkgs], { stdio: 'inherit', env })
  disableUnits(pkgs)
}

// Run as a program (npm's pretest and demo scripts); imported, it only lends its lists (tests).
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  try {
    npmDeps()
    debianDeps()
  } catch (err) {
    console.error(`[install-deps] ${err instanceof Error ? err.message : String(err)}`)
    process.exit(1)
  }
}
