#!/usr/bin/env node
// Builds pinto's node image, localhost/pinto-node:<version>, with podman from a FROM-scratch root
// assembled here (.cache/image/rootfs) out of files this machine has: the shipped Node.js, the built
// app with its production packages, the single-executable CNI plugins, and the programs pinto runs
// (ip, nsenter, nft, dash as /bin/sh, busybox's sysctl and mkfifo) with the shared libraries they
// link. Run after `npm run build`.
// Every file's time is 0 and podman builds with --timestamp 0, so the same inputs give the same image;
// the root's content hash is the image's label pinto.inputs, and an image carrying it is not rebuilt.
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { chmodSync, copyFileSync, cpSync, existsSync, linkSync, lstatSync, mkdirSync, readFileSync, readdirSync, readlinkSync, realpathSync, rmSync, symlinkSync, utimesSync, lutimesSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ensureNode } from './node-lts.js'
import { podmanEnv } from './podman-env.js'
import { tryLock } from './lock-file.js'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const version = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version
export const IMAGE = `localhost/pinto-node:${version}`
const work = join(root, '.cache', 'image')
const rootfs = join(work, 'rootfs')
const APP = '/opt/pinto'

/** The compiled directories the agent and pintoctl load (dist/test and dist/bench stay out). */
const DIST_DIRS = ['net', 'agent', 'bgp', 'cni', 'config', 'felix', 'ipam', 'bundle', 'sea']
/**
 * Programs pinto runs: host path -> image path. /bin/sh (agent/warm-runner.ts) is dash, not busybox's
 * shell, which runs its own `ip` and `nsenter` applets in place of iproute2's and util-linux's.
 */
const PROGRAMS = { '/usr/sbin/ip': '/usr/sbin/ip', '/usr/bin/nsenter': '/usr/bin/nsenter', '/usr/sbin/nft': '/usr/sbin/nft', '/bin/dash': '/bin/sh' }
/** busybox applets, exec'd by name: sysctl (felix/devices.ts), mkfifo (agent/cni-service.ts). */
const APPLETS = ['sysctl', 'mkfifo']

function sh(cmd, args, opts = {}) {
  return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], ...opts })
}

function put(hostPath, imagePath) {
  const dest = join(rootfs, imagePath)
  mkdirSync(dirname(dest), { recursive: true })
  if (!existsSync(dest)) copyFileSync(realpathSync(hostPath), dest)
}

/** The shared libraries `file` links, by the path the loader finds them at (ldd), copied there. */
function libraries(file) {
  const out = sh('ldd', [file])
  for (const line of out.split('\n')) {
    const m = /(?:=>\s*)?(\/\S+)\s+\(0x/.exec(line)
    if (m !== null) put(m[1], m[1])
  }
}

function writeText(imagePath, text, mode = 0o644) {
  const dest = join(rootfs, imagePath)
  mkdirSync(dirname(dest), { recursive: true })
  writeFileSync(dest, text, { mode })
  chmodSync(dest, mode)
}

/** The production packages of package-lock.json, installed once per lock file into .cache/image/modules-HASH. */
function productionModules() {
  const lock = readFileSync(join(root, 'package-lock.json'))
  const dir = join(work, `modules-${createHash('sha256').update(lock).digest('hex').slice(0, 16)}`)
  if (existsSync(join(dir, 'node_modules'))) return join(dir, 'node_modules')
  const tmp = `${dir}.tmp`
  rmSync(tmp, { recursive: true, force: true })
  mkdirSync(tmp, { recursive: true })
  copyFileSync(join(root, 'package.json'), join(tmp, 'package.json'))
  copyFileSync(join(root, 'package-lock.json'), join(tmp, 'package-lock.json'))
  sh('npm', ['ci', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline'], { cwd: tmp, stdio: ['ignore', 'ignore', 'inherit'] })
  rmSync(dir, { recursive: true, force: true })
  execFileSync('mv', [tmp, dir])
  return join(dir, 'node_modules')
}

function assemble(node) {
  rmSync(rootfs, { recursive: true, force: true })
  mkdirSync(rootfs, { recursive: true })
  put(node, '/usr/local/bin/node')
  libraries(node)
  for (const [host, image] of Object.entries(PROGRAMS)) {
    put(host, image)
    libraries(host)
  }
  put('/etc/iproute2/rt_protos', '/etc/iproute2/rt_protos')
  put('/etc/iproute2/rt_tables', '/etc/iproute2/rt_tables')
  put('/bin/busybox', '/bin/busybox')
  for (const a of APPLETS) symlinkSync('busybox', join(rootfs, 'bin', a))

  const app = join(rootfs, APP)
  for (const d of DIST_DIRS) cpSync(join(root, 'dist', d), join(app, 'dist', d), { recursive: true, filter: (f) => !f.endsWith('.map') && !f.endsWith('.d.ts') && !f.endsWith('sea-config.json') })
  // cpSync copies the hard link as a second file: make it one again (one 150 MB file under two names).
  rmSync(join(app, 'dist', 'sea', 'pinto-ipam'))
  linkSync(join(app, 'dist', 'sea', 'pinto'), join(app, 'dist', 'sea', 'pinto-ipam'))
  for (const f of ['pinto-node.js', 'pintoctl.js', 'pinto-fanout.js']) put(join(root, 'bin', f), join(APP, 'bin', f))
  put(join(root, 'package.json'), join(APP, 'package.json'))
  cpSync(productionModules(), join(app, 'node_modules'), { recursive: true, verbatimSymlinks: true })
  // The agent's V8 flags as in bin/pinto-node.js's #! line (`env -S`: the image has no /usr/bin/env).
  writeText('/usr/local/bin/pinto-node', `#!/bin/sh\nexec /usr/local/bin/node --max-semi-space-size=2 --heap-growing-percent=30 ${APP}/bin/pinto-node.js "$@"\n`, 0o755)
  writeText('/usr/local/bin/pintoctl', `#!/bin/sh\nexec /usr/local/bin/node ${APP}/bin/pintoctl.js "$@"\n`, 0o755)
  writeText('/usr/local/bin/pinto-fanout', `#!/bin/sh\nexec /usr/local/bin/node ${APP}/bin/pinto-fanout.js "$@"\n`, 0o755)

  writeText('/etc/passwd', 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n')
  writeText('/etc/group', 'root:x:0:\nnogroup:x:65534:\n')
  writeText('/etc/nsswitch.conf', 'passwd: files\ngroup: files\nhosts: files dns\n')
  writeText('/etc/hosts', '127.0.0.1 localhost\n::1 localhost\n')
  for (const d of ['/tmp', '/root', '/run', '/var/lib', '/opt/cni/bin', '/etc/cni/net.d']) mkdirSync(join(rootfs, d), { recursive: true })
  chmodSync(join(rootfs, 'tmp'), 0o1777)
  symlinkSync('../run', join(rootfs, 'var', 'run'))
}

/** Walks the root in name order: times set to 0, and the hash of every path, mode, link and content. */
function settle() {
  const hash = createHash('sha256')
  const seen = new Map()
  const walk = (dir) => {
    for (const name of readdirSync(dir).sort()) {
      const p = join(dir, name)
      const st = lstatSync(p)
      hash.update(`${p.slice(rootfs.length)}\0${st.mode}\0`)
      if (st.isSymbolicLink()) hash.update(readlinkSync(p))
      else if (st.isDirectory()) walk(p)
      else if (seen.has(st.ino)) hash.update(`link\0${seen.get(st.ino)}`)
      else {
        seen.set(st.ino, p.slice(rootfs.length))
        hash.update(readFileSync(p))
      }
      if (st.isSymbolicLink()) lutimesSync(p, 0, 0)
      else if (!st.isDirectory()) utimesSync(p, 0, 0)
    }
    utimesSync(dir, 0, 0)
  }
  walk(rootfs)
  return hash.digest('hex').slice(0, 16)
}

/** Blocks this thread for `ms` (the build is synchronous throughout). */
function sleepSync(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)
}

/**
 * Runs `fn` holding .cache/image.lock: one build at a time on a checkout, since every build assembles the same
 * root (two test files may build at once). A lock whose holder is dead is taken over.
 */
function withImageLock(fn) {
  const lock = join(root, '.cache', 'image.lock')
  mkdirSync(dirname(lock), { recursive: true })
  for (;;) {
    const r = tryLock(lock)
    if (r === 'taken') break
    if (r !== 'retry') sleepSync(r === 'wait' ? 100 : 500)
  }
  try {
    return fn()
  } finally {
    rmSync(lock, { force: true })
  }
}

/** Builds (or finds) the image as `tag`, default IMAGE; tests build their own tag, never touching IMAGE. */
export function buildImage({ tag = IMAGE } = {}) {
  return withImageLock(() => buildUnlocked(tag))
}

function buildUnlocked(tag) {
  for (const f of ['agent/pinto-node-main.js', 'bundle/pinto-sea.cjs']) {
    if (!existsSync(join(root, 'dist', f))) throw new Error(`dist/${f} is missing: run \`npm run build\` first`)
  }
  const node = ensureNode()
  execFileSync(process.execPath, [join(root, 'scripts', 'sea.js')], { stdio: ['ignore', 'ignore', 'inherit'] })
  assemble(node)
  const inputs = settle()
  const env = podmanEnv()
  let have = ''
  let previous = ''
  try {
    ;[previous = '', have = ''] = sh('podman', ['image', 'inspect', '--format', '{{.Id}} {{index .Labels "pinto.inputs"}}', tag], { env, stdio: ['ignore', 'pipe', 'ignore'] }).trim().split(' ')
  } catch {
    // no such image yet
  }
  if (have !== inputs) {
    sh('podman', ['build', '--timestamp', '0', '--label', `pinto.inputs=${inputs}`, '--tag', tag, '-f', join(root, 'deploy', 'image', 'Containerfile'), work], { env, stdio: ['ignore', 'ignore', 'inherit'] })
    // The image the tag left, unless another tag or a container still uses it.
    if (previous !== '') {
      try {
        sh('podman', ['image', 'rm', previous], { env, stdio: ['ignore', 'ignore', 'ignore'] })
      } catch {
        // still in use: kept
      }
    }
  }
  const size = Number(sh('podman', ['image', 'inspect', '--format', '{{.Size}}', tag], { env }).trim())
  return { image: tag, inputs, size, built: have !== inputs }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    const r = buildImage()
    process.stdout.write(`${r.image} (pinto.inputs=${r.inputs}, ${r.built ? 'built' : 'already built'}): ${(r.size / 1e6).toFixed(1)} MB\n`)
  } catch (err) {
    process.stderr.write(`image: ${err.message}\n`)
    process.exit(1)
  }
}
