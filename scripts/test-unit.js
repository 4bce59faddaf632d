#!/usr/bin/env node
// `npm run test:unit`: the unit tests alone, as any user, under the Node.js that runs it. They are the files
// UNIT_TESTS names: none needs root, a network namespace, a daemon (BIRD, FRR, GoBGP, etcd, podman), the
// single executable or the Node.js pinto ships. It compiles, then runs each
// as a plain node process through `run-tests.js --direct`; a checkout this user may not write is compiled
// into a mirror of it under the temp dir instead.
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { accessSync, constants, cpSync, existsSync, lstatSync, mkdirSync, readdirSync, realpathSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')

/**
 * The unit tests, by source file: each passes as an unprivileged user (nobody) with nothing but this
 * checkout and its node_modules, in seconds, mostly in its own process: tests that run pinto's programs
 * over and over (pintoctl's, --help's, install-cni's, the store's crash tests) stay with npm test. test/foundation/unit-tests.test.ts holds that
 * each exists and imports none of the harnesses that need root, make namespaces, start daemons or run
 * programs. A new test that needs none of those belongs here; `npm test` runs every test, listed or not.
 */
export const UNIT_TESTS = [
  'test/agent/advertisements.test.ts',
  'test/agent/api/endpoints.test.ts',
  'test/agent/api/http-errors.test.ts',
  'test/agent/api/pagination.test.ts',
  'test/agent/api/status-page.test.ts',
  'test/agent/bfd-annotation.test.ts',
  'test/agent/bgp-peers.test.ts',
  'test/agent/bgp-secrets.test.ts',
  'test/agent/cluster-state.test.ts',
  'test/agent/cni-service.test.ts',
  'test/agent/controllers/kube-node-labels.test.ts',
  'test/agent/datastore-health.test.ts',
  'test/agent/demo/stop-requests.test.ts',
  'test/agent/demo/tables.test.ts',
  'test/agent/ipam-service-close.test.ts',
  'test/agent/ipam-service-reads.test.ts',
  'test/agent/node-flags.test.ts',
  'test/agent/pod-annotations.test.ts',
  'test/agent/recovery/deleted-nodes.test.ts',
  'test/agent/recovery/journal.test.ts',
  'test/agent/recovery/node-repair.test.ts',
  'test/agent/service-routes.test.ts',
  'test/agent/settings.test.ts',
  'test/agent/ui/format.test.ts',
  'test/agent/ui/topology.test.ts',
  'test/bench/builds-report.test.ts',
  'test/bench/route-mix.test.ts',
  'test/bgp/bfd/codec.test.ts',
  'test/bgp/bfd/fsm.test.ts',
  'test/bgp/bfd/service.test.ts',
  'test/bgp/codec/captures.test.ts',
  'test/bgp/codec/errors.test.ts',
  'test/bgp/codec/fixtures.test.ts',
  'test/bgp/codec/framer.test.ts',
  'test/bgp/codec/fuzz.test.ts',
  'test/bgp/codec/intern.test.ts',
  'test/bgp/codec/nlri-text.test.ts',
  'test/bgp/codec/pack.test.ts',
  'test/bgp/policy/bgp-filter.test.ts',
  'test/bgp/policy/pool-guard.test.ts',
  'test/bgp/rib/best-path.test.ts',
  'test/bgp/rib/columns.test.ts',
  'test/bgp/rib/deltas.test.ts',
  'test/bgp/rib/destinations.test.ts',
  'test/bgp/rib/export-shared.test.ts',
  'test/bgp/rib/export.test.ts',
  'test/bgp/rib/import-table.test.ts',
  'test/bgp/rib/index-set.test.ts',
  'test/bgp/rib/peer.test.ts',
  'test/bgp/rib/receive.test.ts',
  'test/bgp/rib/round-pacing.test.ts',
  'test/bgp/rib/update-groups.test.ts',
  'test/bgp/rib/v6-index.test.ts',
  'test/bgp/session/fsm.test.ts',
  'test/bgp/session/graceful-restart.test.ts',
  'test/bgp/session/hold-timer.test.ts',
  'test/bgp/session/refusals.test.ts',
  'test/bgp/session/socket-options-md5.test.ts',
  'test/bgp/session/socket-options.test.ts',
  'test/bgp/session/timers.test.ts',
  'test/bgp/session/transition-log.test.ts',
  'test/bgp/session/update-sender.test.ts',
  'test/bgp/speaker-md5.test.ts',
  'test/bgp/speaker.test.ts',
  'test/cni/exec.test.ts',
  'test/cni/ipam-client.test.ts',
  'test/cni/ipam-plugin.test.ts',
  'test/cni/veth-name.test.ts',
  'test/cni/wiring-plan.test.ts',
  'test/config/datastore-embedded.test.ts',
  'test/config/datastore-open.test.ts',
  'test/config/duration.test.ts',
  'test/config/resources/defaults.test.ts',
  'test/config/resources/nodes.test.ts',
  'test/config/resources/parse.test.ts',
  'test/config/resources/validate.test.ts',
  'test/config/selector.test.ts',
  'test/deploy/kube-pod.test.ts',
  'test/deploy/manifests.test.ts',
  'test/felix/batch-dealer.test.ts',
  'test/felix/block-owners.test.ts',
  'test/felix/desired-table-keys.test.ts',
  'test/felix/desired-table.test.ts',
  'test/felix/known-table.test.ts',
  'test/felix/learned-feed.test.ts',
  'test/felix/pending-echoes.test.ts',
  'test/felix/render-routes.test.ts',
  'test/felix/route-diff.test.ts',
  'test/felix/rtnl-routes.test.ts',
  'test/felix/rtnl.test.ts',
  'test/foundation/install-deps.test.ts',
  'test/foundation/package.test.ts',
  'test/foundation/test-layout.test.ts',
  'test/foundation/unit-tests.test.ts',
  'test/harness/fixtures.test.ts',
  'test/harness/host-paths.test.ts',
  'test/harness/pcap.test.ts',
  'test/ipam/assignment-mode.test.ts',
  'test/ipam/block.test.ts',
  'test/ipam/check.test.ts',
  'test/ipam/family-pools.test.ts',
  'test/ipam/ipam.test.ts',
  'test/ipam/pools.test.ts',
  'test/ipam/round-trips.test.ts',
  'test/ipam/write-order.test.ts',
  'test/net/ip.test.ts',
  'test/net/parse.test.ts',
  'test/net/prefix-index.test.ts',
  'test/net/typed-arrays.test.ts',
  'test/net/v4-prefix-map.test.ts',
  'test/net/v6-prefix-map.test.ts',
]

/** The compiled file tap runs for a test source: test/x/y.test.ts -> dist/test/x/y.test.js. */
export function compiledPath(source) {
  return join('dist', source.replace(/\.ts$/, '.js'))
}

function writable(path) {
  try {
    accessSync(path, constants.W_OK)
    return true
  } catch {
    return false
  }
}

/**
 * Where to compile and run: the checkout itself when this user may write it (its dist/ and tap's .tap/),
 * else a directory of this user's under the temp dir that stands in for it: links to the checkout's
 * sources, tests, node_modules and the rest, its own dist/ and .tap/, and copies of bin/ and scripts/,
 * whose programs find the tree they run in from their own path and must find the mirror's dist/.
 */
function workTree() {
  if (writable(root) && ['dist', '.tap'].every((d) => !existsSync(join(root, d)) || writable(join(root, d)))) return root
  const id = createHash('sha256').update(realpathSync(root)).digest('hex').slice(0, 12)
  const dir = join(tmpdir(), `pinto-unit-${process.getuid?.() ?? 'user'}-${id}`)
  mkdirSync(dir, { recursive: true, mode: 0o700 })
  for (const entry of readdirSync(root)) {
    if (['dist', '.tap', '.git', 'bin', 'scripts'].includes(entry)) continue
    const link = join(dir, entry)
    let there = true
    try {
      lstatSync(link)
    } catch {
      there = false
    }
    if (!there) symlinkSync(join(root, entry), link)
  }
  for (const d of ['bin', 'scripts']) cpSync(join(root, d), join(dir, d), { recursive: true })
  console.log(`test:unit: ${root} is not writable by this user; compiling into ${dir}`)
  return dir
}

function run(cmd, args, cwd) {
  const r = spawnSync(cmd, args, { cwd, stdio: 'inherit' })
  if (r.status !== 0) {
    console.error(`test:unit: ${[cmd, ...args].join(' ')} failed (exit ${r.status ?? r.signal})`)
    process.exit(r.status ?? 1)
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(realpathSync(process.argv[1])).href) {
  const work = workTree()
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc')
  const started = Date.now()
  // Incremental, into the tree's own dist: a second run compiles only what changed.
  const tscArgs = ['-p', root, '--outDir', join(work, 'dist'), '--incremental', '--tsBuildInfoFile', join(work, 'dist', '.tsbuildinfo-unit')]
  run(process.execPath, [tsc, ...tscArgs], work)
  const files = UNIT_TESTS.map(compiledPath)
  const missing = files.filter((f) => !existsSync(join(work, f)))
  if (missing.length > 0) {
    // dist/ lost files behind tsc's back (its build info says they are there): compile everything once more.
    run(process.execPath, [tsc, ...tscArgs.slice(0, 4)], work)
  }
  // The status page's files, which its API test serves (esbuild, a second or so; no single executable).
  run(process.execPath, [join(work, 'scripts', 'bundle.js')], work)
  console.log(`test:unit: compiled in ${((Date.now() - started) / 1000).toFixed(1)} s`)
  // Each file as a plain node process under this Node.js: no shipped Node.js, none of tap's loaders.
  const r = spawnSync(process.execPath, [join(work, 'scripts', 'run-tests.js'), '--direct', ...files], {
    cwd: process.cwd(),
    stdio: 'inherit',
    env: { ...process.env, PINTO_TEST_NODE: 'system' },
  })
  process.exit(r.status ?? 1)
}
