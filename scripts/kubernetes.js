#!/usr/bin/env node
// Builds the Kubernetes components the tests run (and the etcd Kubernetes is tested with) from the Go module in
// scripts/kubernetes/, containerd with its runc shim and ctr from scripts/containerd/, helm from scripts/helm/
// and CoreDNS from scripts/coredns/, once per machine, into .cache/kubernetes-<version>/bin in the checkout,
// and prints that directory. Go is a test tool here: nothing it builds or fetches is part of pinto or of the
// repository.
// `node scripts/kubernetes.js kube-apiserver kubectl` builds just those; no names builds them all.
import { execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { setTimeout as delay } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { tryLock } from './lock-file.js'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
export const MODULE_DIR = join(root, 'scripts', 'kubernetes')
const CONTAINERD_DIR = join(root, 'scripts', 'containerd')
const HELM_DIR = join(root, 'scripts', 'helm')
const COREDNS_DIR = join(root, 'scripts', 'coredns')

const k8s = (pkg) => ({ dir: MODULE_DIR, pkg })
const containerd = (cmd) => ({ dir: CONTAINERD_DIR, pkg: `github.com/containerd/containerd/v2/cmd/${cmd}`, version: 'containerd' })

/**
 * Each component by the module directory and package its binary is built from; all are tools of their module,
 * so go.sum covers them. `version` names whose version the binary reports (default Kubernetes').
 */
export const COMPONENTS = {
  'kube-apiserver': k8s('k8s.io/kubernetes/cmd/kube-apiserver'),
  'kube-controller-manager': k8s('k8s.io/kubernetes/cmd/kube-controller-manager'),
  'kube-scheduler': k8s('k8s.io/kubernetes/cmd/kube-scheduler'),
  'kube-proxy': k8s('k8s.io/kubernetes/cmd/kube-proxy'),
  kubelet: k8s('k8s.io/kubernetes/cmd/kubelet'),
  kubectl: k8s('k8s.io/kubernetes/cmd/kubectl'),
  // Debian's etcd (3.4) is older than Kubernetes supports; this is the version Kubernetes pins for its own tests.
  etcd: { ...k8s('go.etcd.io/etcd/server/v3'), version: 'etcd' },
  // The image Kubernetes' network tests run, and those tests (`go test -c` of test/e2e: a test binary, not a tool).
  agnhost: { ...k8s('k8s.io/kubernetes/test/images/agnhost'), version: 'none' },
  'e2e.test': { ...k8s('k8s.io/kubernetes/test/e2e'), version: 'none', test: true },
  // Ginkgo's CLI, at the version e2e.test is built with: it runs e2e.test as parallel processes.
  ginkgo: { ...k8s('github.com/onsi/ginkgo/v2/ginkgo'), version: 'none' },
  containerd: containerd('containerd'),
  'containerd-shim-runc-v2': containerd('containerd-shim-runc-v2'),
  ctr: containerd('ctr'),
  helm: { dir: HELM_DIR, pkg: 'helm.sh/helm/v4/cmd/helm', version: 'helm' },
  // The cluster's DNS: CoreDNS with the few plugins scripts/coredns/main.go names.
  coredns: { dir: COREDNS_DIR, pkg: '.', version: 'coredns' },
}

/**
 * What the test suite runs, in the order its files first need them: the API server's harness, then a whole
 * cluster, then helm. `npm test` builds these in the background while the suite's other files run.
 */
export const SUITE_COMPONENTS = ['etcd', 'kube-apiserver', 'kubectl', 'kube-controller-manager', 'kube-scheduler', 'kubelet', 'kube-proxy', 'containerd', 'containerd-shim-runc-v2', 'ctr', 'coredns', 'helm']

/** The version a module's go.mod requires of a module, e.g. v1.37.2 for k8s.io/kubernetes. */
function required(modulePath, dir = MODULE_DIR) {
  const goMod = readFileSync(join(dir, 'go.mod'), 'utf8')
  const m = new RegExp(`^\\s*(?:require\\s+)?${modulePath.replaceAll('.', '\\.')}\\s+(v\\S+)`, 'm').exec(goMod)
  if (m === null) throw new Error(`${join(dir, 'go.mod')} requires no ${modulePath}`)
  return m[1]
}

export const KUBERNETES_VERSION = required('k8s.io/kubernetes')
export const ETCD_VERSION = required('go.etcd.io/etcd/server/v3')
export const CONTAINERD_VERSION = required('github.com/containerd/containerd/v2', CONTAINERD_DIR)
export const HELM_VERSION = required('helm.sh/helm/v4', HELM_DIR)
export const COREDNS_VERSION = required('github.com/coredns/coredns', COREDNS_DIR)
export const BIN_DIR = join(root, '.cache', `kubernetes-${KUBERNETES_VERSION}`, 'bin')

/** How many packages go builds at once (`go build -p`); the machines are small and shared. */
const JOBS = process.env['PINTO_GO_BUILD_JOBS'] ?? '2'

const log = (s) => process.stderr.write(`kubernetes: ${s}\n`)

/** The -X flags that make `--version` report the release, as each project's own build does. */
function versionFlags(name) {
  if (COMPONENTS[name].version === 'containerd') {
    // containerd's Makefile: the module proxy serves no commit, so the revision is left empty.
    return [`-X github.com/containerd/containerd/v2/version.Version=${CONTAINERD_VERSION}`, '-X github.com/containerd/containerd/v2/version.Revision=']
  }
  // helm's Makefile: the version with its patch, which the source says only as major.minor.
  if (COMPONENTS[name].version === 'helm') return [`-X helm.sh/helm/v4/internal/version.version=${HELM_VERSION}`]
  // Kubernetes' hack/lib/version.sh.
  const [, major, minor] = /^v(\d+)\.(\d+)\./.exec(KUBERNETES_VERSION)
  // The module's publication time, so the same inputs give the same binary.
  const date = execFileSync('go', ['list', '-m', '-f', '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}', 'k8s.io/kubernetes'], { cwd: MODULE_DIR, encoding: 'utf8' }).trim()
  const flags = []
  for (const pkg of ['k8s.io/component-base/version', 'k8s.io/client-go/pkg/version']) {
    // The module proxy serves no commit; "archive" is Kubernetes' tree state for a build from a source archive.
    const vars = { gitVersion: KUBERNETES_VERSION, gitMajor: major, gitMinor: minor, gitCommit: '', gitTreeState: 'archive', buildDate: date }
    for (const [name, value] of Object.entries(vars)) flags.push(`-X ${pkg}.${name}=${value}`)
  }
  return flags
}

/** What a built binary says its version is, checked against the module's. */
function checkVersion(name, bin) {
  if (COMPONENTS[name].version === 'none') return
  const args = { kubectl: ['version', '--client'], 'containerd-shim-runc-v2': ['-v'], helm: ['version', '--short'], coredns: ['-version'] }[name] ?? ['--version']
  const out = execFileSync(bin, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
  const want = { etcd: `etcd Version: ${ETCD_VERSION.slice(1)}`, containerd: CONTAINERD_VERSION, helm: HELM_VERSION, coredns: `CoreDNS-${COREDNS_VERSION.slice(1)}` }[COMPONENTS[name].version ?? ''] ?? KUBERNETES_VERSION
  if (!out.includes(want)) throw new Error(`${bin} ${args.join(' ')} says ${JSON.stringify(out.trim())}, expected ${want}`)
}

/**
 * One build at a time per bin dir (two test files, or a test and the suite's background build, may ask at once),
 * taken per component so a waiter gets its component as soon as it is built; a lock left by a dead process is
 * taken over.
 */
async function withLock(fn) {
  const lock = join(BIN_DIR, '.build.lock')
  let waiting = false
  for (;;) {
    const r = tryLock(lock)
    if (r === 'taken') break
    if (r === 'retry') continue
    if (!waiting && r !== 'wait') log(`waiting for the build in process ${r}`)
    waiting = true
    await delay(r === 'wait' ? 100 : 1000)
  }
  try {
    return await fn()
  } finally {
    rmSync(lock, { force: true })
  }
}

function goBuild(name, out) {
  const { dir, pkg, version, test } = COMPONENTS[name]
  // containerd's release tags: no docs in its CLIs, and its shim without gRPC (it speaks ttrpc only).
  const tags = version === 'containerd' ? ['-tags', name === 'containerd-shim-runc-v2' ? 'urfave_cli_no_docs,no_grpc' : 'urfave_cli_no_docs'] : []
  const args = ['-n', '19', 'go', ...(test === true ? ['test', '-c'] : ['build']), '-p', JOBS, '-trimpath', ...tags, `-ldflags=-s -w ${versionFlags(name).join(' ')}`, '-o', out, pkg]
  // Static binaries; -mod=readonly so a missing go.sum line fails the build instead of editing the checkout.
  const env = { ...process.env, CGO_ENABLED: '0', GOFLAGS: `${process.env['GOFLAGS'] ?? ''} -mod=readonly`.trim(), GOTOOLCHAIN: 'local' }
  return new Promise((resolve, reject) => {
    const child = spawn('nice', args, { cwd: dir, env, stdio: ['ignore', 'inherit', 'inherit'] })
    const started = Date.now()
    // go build is silent while it compiles; a line a minute shows a CI log that it is not stuck.
    const beat = setInterval(() => log(`  ${name}: still building, ${Math.round((Date.now() - started) / 1000)} s`), 60_000)
    child.on('error', (err) => {
      clearInterval(beat)
      reject(err)
    })
    child.on('exit', (code, signal) => {
      clearInterval(beat)
      if (code === 0) resolve()
      else reject(new Error(`go build ${pkg} failed (${signal ?? `exit ${code}`})`))
    })
  })
}

/** Why nothing can be built here, or undefined when Go is there. */
export function goAbsent() {
  try {
    execFileSync('go', ['version'], { stdio: 'ignore' })
    return undefined
  } catch {
    return 'go is not on PATH: the Kubernetes components are built from source with Go 1.26 or later (go.dev/dl; Debian 12 packages only Go 1.19)'
  }
}

/** The bin dir, after building whichever of `names` are not there yet. */
export async function ensureKubernetes(names = Object.keys(COMPONENTS)) {
  for (const name of names) if (!(name in COMPONENTS)) throw new Error(`unknown component ${JSON.stringify(name)}; known: ${Object.keys(COMPONENTS).join(', ')}`)
  const missing = () => names.filter((n) => !existsSync(join(BIN_DIR, n)))
  if (missing().length === 0) return BIN_DIR
  const absent = goAbsent()
  if (absent !== undefined) throw new Error(absent)
  mkdirSync(BIN_DIR, { recursive: true })
  const all = Date.now()
  log(`building ${missing().join(', ')} (Kubernetes ${KUBERNETES_VERSION}, etcd ${ETCD_VERSION}, containerd ${CONTAINERD_VERSION}) into ${BIN_DIR}`)
  let built = 0
  for (const name of missing()) {
    await withLock(async () => {
      // Another process may have built it while this one waited.
      if (existsSync(join(BIN_DIR, name))) return
      const started = Date.now()
      const tmp = join(BIN_DIR, `.${name}.${process.pid}`)
      try {
        await goBuild(name, tmp)
        checkVersion(name, tmp)
        renameSync(tmp, join(BIN_DIR, name))
      } finally {
        rmSync(tmp, { force: true })
      }
      built++
      log(`  ${name}: built in ${Math.round((Date.now() - started) / 1000)} s`)
    })
  }
  log(`${names.join(', ')}: ready; ${built} built here in ${Math.round((Date.now() - all) / 1000)} s`)
  return BIN_DIR
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    process.stdout.write(`${await ensureKubernetes(process.argv.length > 2 ? process.argv.slice(2) : undefined)}\n`)
  } catch (err) {
    log(err.message)
    process.exit(1)
  }
}
