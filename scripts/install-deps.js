#!/usr/bin/env node
// Installs what a fresh Debian machine lacks for pinto's build, tests and demo:
// npm packages when node_modules is missing or stale, and (as root) the Debian packages of the
// real peers the tests run against. It never starts a system service: apt is fenced by policy-rc.d.
import { execFileSync, spawnSync } from 'node:child_process'
import { existsSync, readFileSync, statSync, writeFileSync, chmodSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ensureNode } from './node-lts.js'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')

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
  console.error('[install-deps] npm packages missing or stale: running npm ci')
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

try {
  npmDeps()
  debianDeps()
} catch (err) {
  console.error(`[install-deps] ${err instanceof Error ? err.message : String(err)}`)
  process.exit(1)
}
