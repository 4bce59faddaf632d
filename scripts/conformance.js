#!/usr/bin/env node
// Kubernetes' own network conformance tests against pinto: builds e2e.test, agnhost and ginkgo's CLI
// (scripts/kubernetes.js), makes the demo's Kubernetes cluster (three nodes, pinto installed from
// deploy/kubernetes/kdd), imports the tests' images built here, and runs e2e.test with provider skeleton on
// `\[sig-network\].*\[Conformance\]` in a few parallel processes, less the tests named in SKIPPED with the reason. Prints each test's outcome and a last line
// "conformance: N passed, N failed, N skipped"; exits 1 unless every selected test passed. Run after
// `npm run build`, as root: `npm run conformance`.
import { execFileSync, spawn } from 'node:child_process'
import { closeSync, mkdirSync, openSync, readFileSync, writeFileSync, writeSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const dist = (p) => pathToFileURL(join(root, 'dist', p)).href

/** The tests left out, each with why: a pattern of their names for --ginkgo.skip, and the reason. */
export const SKIPPED = []

/** The versions of the images built here that e2e.test asks for, from its own image list. */
function agnhostVersion(e2e) {
  const list = execFileSync(e2e, ['--list-images'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
  const versions = [...list.matchAll(/e2e-test-images\/agnhost:(\S+)/g)].map((m) => m[1])
  const busybox = [...list.matchAll(/e2e-test-images\/busybox:(\S+)/g)].map((m) => m[1])
  const glibc = [...list.matchAll(/e2e-test-images\/glibc-dns-testing:(\S+)/g)].map((m) => m[1])
  return { agnhost: [...new Set(versions)], busybox: [...new Set(busybox)], glibc: [...new Set(glibc)] }
}

/**
 * Runs e2e.test under ginkgo's CLI, as `nodes` parallel processes, in the control plane's namespace; resolves to
 * its exit code. Its output goes to the log, and each test's verdict to stdout.
 */
function runE2e(cluster, ginkgo, e2e, ginkgoArgs, args, env, log) {
  return new Promise((resolve) => {
    const child = spawn('ip', ['netns', 'exec', cluster.controlPlaneNs, ginkgo, ...ginkgoArgs, e2e, '--', ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
    const file = openSync(log, 'w')
    const take = (b) => {
      writeSync(file, b)
      const text = b.toString()
      // Only the per-test verdict lines; the whole output is in the log.
      // (--ginkgo.no-color: no escape codes to strip.)
      for (const line of text.split('\n')) if (/^\s*(\[(FAILED|PASSED)\]|Ran \d+|FAIL!|SUCCESS!)/.test(line)) process.stdout.write(`  ${line}\n`)
    }
    child.stdout.on('data', take)
    child.stderr.on('data', (b) => writeSync(file, b))
    child.on('exit', (code) => {
      closeSync(file)
      resolve(code ?? 1)
    })
  })
}

/** passed / failed / skipped from the JUnit report e2e.test writes. */
function junitCounts(file, focus) {
  const selected = new RegExp(focus)
  const xml = readFileSync(file, 'utf8')
  const cases = [...xml.matchAll(/<testcase name="([^"]*)"[^>]*?(\/>|>([\s\S]*?)<\/testcase>)/g)]
  const r = { passed: [], failed: [], skipped: 0 }
  for (const [, name, , body = ''] of cases) {
    if (/<skipped/.test(body)) r.skipped += selected.test(name.replaceAll('&#39;', "'")) ? 1 : 0
    else if (/<failure|<error/.test(body)) r.failed.push(name)
    else if (!/^\[(SynchronizedBeforeSuite|SynchronizedAfterSuite|BeforeSuite|AfterSuite|ReportAfterSuite|ReportBeforeSuite)\]/.test(name)) r.passed.push(name)
  }
  return r
}

async function main() {
  if (process.getuid?.() !== 0) throw new Error('the cluster makes namespaces, mounts and cgroups: run as root')
  const { kubernetesBinaries, kubernetesSource, KubeCluster, CLUSTER_BINARIES } = await import(dist('agent/demo/kube/cluster.js'))
  const { agnhostImage, e2eBusyboxImage, glibcDnsImage, E2E_REGISTRY } = await import(dist('agent/demo/kube/images.js'))
  const { buildImage } = await import(pathToFileURL(join(root, 'scripts', 'image.js')).href)
  const { podmanEnv } = await import(pathToFileURL(join(root, 'scripts', 'podman-env.js')).href)
  const bin = await kubernetesBinaries([...CLUSTER_BINARIES, 'agnhost', 'e2e.test', 'ginkgo'])
  const e2e = join(bin, 'e2e.test')
  const want = agnhostVersion(e2e)
  const images = [...(await Promise.all(want.agnhost.map(async (v) => agnhostImage(join(bin, 'agnhost'), v, await kubernetesSource())))), ...(await Promise.all(want.busybox.map((v) => e2eBusyboxImage(v)))), ...(await Promise.all(want.glibc.map((v) => glibcDnsImage(v))))]
  const image = buildImage().image
  const say = (line) => process.stdout.write(`  ${line}\n`)
  const cluster = KubeCluster.prepare({ nodes: 3, image, podmanEnv: podmanEnv(), images, say })
  const stop = () => void cluster.destroy().then(() => process.exit(130))
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
  const started = Date.now()
  try {
    process.stdout.write('conformance: a three-node cluster with pinto\n')
    await cluster.start()
    const dir = join(cluster.runDir, 'e2e')
    mkdirSync(dir, { recursive: true })
    const repoList = join(dir, 'repo-list.yaml')
    // Every image the tests name comes from this machine: pause is the cluster's own sandbox image.
    writeFileSync(repoList, `promoterE2eRegistry: ${E2E_REGISTRY}\ngcRegistry: localhost\n`)
    const focus = process.env['PINTO_CONFORMANCE_FOCUS'] ?? '\\[sig-network\\].*\\[Conformance\\]'
    const skip = SKIPPED.map(([pattern]) => pattern).join('|') || '^$'
    process.stdout.write(`conformance: e2e.test --ginkgo.focus='${focus}' --ginkgo.skip='${skip}'\n`)
    for (const [pattern, why] of SKIPPED) process.stdout.write(`  left out: ${pattern.replaceAll('\\', '')}: ${why}\n`)
    // Most of a network test's time is waiting for pods and endpoints: a few run at once, as Kubernetes' own CI
    // runs them (tests marked Serial still run alone, at the end).
    const nodes = process.env['PINTO_CONFORMANCE_PROCESSES'] ?? '3'
    process.stdout.write(`conformance: ${nodes} e2e.test processes at once (PINTO_CONFORMANCE_PROCESSES)\n`)
    const code = await runE2e(cluster, join(bin, 'ginkgo'), e2e, [`--procs=${nodes}`, `--focus=${focus}`, `--skip=${skip}`, '--no-color', '--timeout=2h'], [
      // The tests exec into pods with kubectl.
      `--kubeconfig=${cluster.kubeconfig}`, `--kubectl-path=${join(bin, 'kubectl')}`, '--provider=skeleton',
      `--report-dir=${dir}`, '--disable-log-dump', '--dump-logs-on-failure=false',
    ], { KUBE_TEST_REPO_LIST: repoList }, join(dir, 'e2e.log'))
    let counts
    try {
      counts = junitCounts(join(dir, 'junit_01.xml'), focus)
    } catch {
      process.stdout.write(readFileSync(join(dir, 'e2e.log'), 'utf8').slice(-4000))
      throw new Error(`e2e.test wrote no report (exit ${code})`)
    }
    for (const name of counts.passed) process.stdout.write(`  passed: ${name}\n`)
    for (const name of counts.failed) process.stdout.write(`  FAILED: ${name}\n`)
    const logCopy = join(root, '.cache', 'conformance-last.log')
    writeFileSync(logCopy, readFileSync(join(dir, 'e2e.log')))
    process.stdout.write(`conformance: the whole e2e.test output is in ${logCopy}; ${((Date.now() - started) / 60000).toFixed(1)} min\n`)
    process.stdout.write(`conformance: ${counts.passed.length} passed, ${counts.failed.length} failed, ${counts.skipped} skipped\n`)
    return counts.failed.length === 0 && counts.passed.length > 0 && code === 0 ? 0 : 1
  } finally {
    await cluster.destroy()
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().then(
    (code) => process.exit(code),
    (err) => {
      process.stderr.write(`conformance: ${err.message}\n`)
      process.stdout.write('conformance: 0 passed, 1 failed, 0 skipped\n')
      process.exit(1)
    },
  )
}
