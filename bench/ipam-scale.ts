// IPAM at cluster scale, on etcd and on the Kubernetes API (the kubernetes datastore) in one run: N nodes and M
// allocations preloaded into each, then pod ADD/DEL from 20 agent processes at once (each one node's identity).
// Prints ADD p50/p99, datastore round trips and writes per ADD beside Calico's count for the same allocation, CAS
// failures per ADD, the time of `pintoctl ipam check` over the whole store and the agents' start-up reads, with
// the load average; on Kubernetes also one real pinto-node's requests to the apiserver (start-up, idle,
// churning) and an estimate of the whole cluster's; then both datastores side by side.
// Run: npx tsc -p . && node dist/bench/ipam-scale.js [--datastore etcd,kubernetes] [--nodes 5000] [--allocations 150000]
//      [--agents 20] [--adds 200] [--rate ADDS_PER_S_PER_AGENT] [--path service|ipam] [--ahead on|off] [--cpu-prof DIR]
//      [--node-idle 60] [--node-churn 60] [--node-rate 1] [--kubelet-period 300] [--json FILE]
// --json FILE also writes the check's time, ADD p50/p99 per path and etcd's own floor there (bench/json-figures),
// the kubernetes run's named "kubernetes: ...".
// Per ADD it keeps what the ADD's own datastore calls were (a block claim, round trips, commits, time in etcd),
// and etcd's WAL fsync and backend commit latencies over each phase, so the tail can be told pinto's or the disk's.
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Etcd3 } from 'etcd3'
import { ETCD_BIN, TEST_LIMIT_ARGS, startEtcd } from '../test/harness/etcd.js'
import { kubernetesBin } from '../test/harness/kubernetes-bin.js'
import { BLOCKS_PREFIX } from '../ipam/records.js'
import type { ScaleWorkerArgs } from './ipam-scale-worker.js'
import { POOL, nodeName, scaleRecords } from './ipam-scale-data.js'
import { type AgentsConfig, type AgentsResult, children, load, ms, pct, runAgents } from './ipam-scale-agents.js'
import { type KubeRunResult, runKubernetes } from './ipam-scale-kube-run.js'
import { numberArg } from './args.js'
import { type Figure, figure, jsonPathArg, writeFigures } from './json-figures.js'

const PINTOCTL = fileURLToPath(new URL('../../bin/pintoctl.js', import.meta.url))
const NODES = numberArg('--nodes', 5000)
const ALLOCATIONS = numberArg('--allocations', 150000)
const AGENTS = numberArg('--agents', 20)
const ADDS = numberArg('--adds', 200)
const stringArg = (name: string): string | undefined => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : undefined)
const DATASTORES = (stringArg('--datastore') ?? 'etcd').split(',')
for (const d of DATASTORES) if (d !== 'etcd' && d !== 'kubernetes') throw new Error(`--datastore: ${JSON.stringify(d)} is not etcd or kubernetes (a comma-separated list of them)`)
const PATHS = (stringArg('--path') !== undefined ? [stringArg('--path')] : ['service', 'ipam']) as ScaleWorkerArgs['path'][]
const CONFIG: AgentsConfig = {
  nodes: NODES, agents: AGENTS, adds: ADDS,
  /** Pods an agent holds before each ADD is followed by a DEL of its oldest: enough that each agent claims a second block. */
  window: numberArg('--window', 40),
  /** ADDs per second each agent starts on a fixed schedule; 0: back to back (each when its last ADD/DEL is done). */
  rate: numberArg('--rate', 0),
  /** --ahead off: the service without its start-up warm and claims ahead (each block claimed by the ADD that needs it). */
  ahead: stringArg('--ahead') !== 'off',
  /** Where agent 0 of each path writes a CPU profile of its ADD/DEL phase (--cpu-prof DIR). */
  profileDir: stringArg('--cpu-prof'),
}
const TXN_OPS = 128 // etcd's default --max-txn-ops
const JSON_OUT = jsonPathArg()

/**
 * Writes the bench's records (ipam-scale-data.ts) into etcd as pinto's etcd datastore keeps them, in transactions
 * of 128 keys, because 150,000 ADDs through the IPAM (two round trips each) would take most of the ten minutes
 * the bench may run.
 */
async function preloadEtcd(endpoint: string): Promise<number> {
  const client = new Etcd3({ hosts: `http://${endpoint}` })
  const batch: { key: string; value: string }[] = []
  const inFlight = new Set<Promise<unknown>>()
  let keys = 0
  const flush = async (): Promise<void> => {
    const ops = batch.splice(0).map((kv) => ({ request_put: { key: Buffer.from(kv.key), value: Buffer.from(kv.value) } }))
    keys += ops.length
    const p = client.kv.txn({ success: ops })
    inFlight.add(p)
    void p.finally(() => inFlight.delete(p))
    if (inFlight.size >= 8) await Promise.race(inFlight)
  }
  try {
    for (const r of scaleRecords(NODES, ALLOCATIONS)) {
      batch.push(r)
      if (batch.length >= TXN_OPS) await flush()
    }
    if (batch.length > 0) await flush()
    await Promise.all(inFlight)
    return keys
  } finally {
    client.close()
  }
}

/**
 * etcd alone doing an ADD's writes from `clients` clients at once: create a key that is absent (the handle) and
 * compare-and-swap a value the size of a real block (the block), either back to back (Calico's order, two
 * commits) or in one transaction (pinto's, one commit). What any IPAM that writes a handle and a block pays on
 * this etcd at this size; the keys are removed after.
 */
async function etcdFloor(endpoint: string, clients: number, rounds: number, oneTxn: boolean): Promise<number[]> {
  const admin = new Etcd3({ hosts: `http://${endpoint}` })
  const sample = await admin.getAll().prefix(BLOCKS_PREFIX).limit(1).strings()
  const value = Object.values(sample)[0] ?? 'x'.repeat(4096)
  const cs = Array.from({ length: clients }, () => new Etcd3({ hosts: `http://${endpoint}` }))
  const times: number[] = []
  try {
    await Promise.all(cs.map(async (c, ci) => {
      const block = `/pinto-bench-floor/block-${ci}`
      let rev = Number((await c.put(block).value(value).exec()).header.revision)
      for (let i = 0; i < rounds; i++) {
        const t0 = performance.now()
        const handle = `/pinto-bench-floor/handle-${ci}-${i}`
        let r
        if (oneTxn) {
          r = await c.if(handle, 'Create', '==', 0).and(block, 'Mod', '==', rev).then(c.put(handle).value('{}'), c.put(block).value(value)).commit()
        } else {
          await c.if(handle, 'Create', '==', 0).then(c.put(handle).value('{}')).commit()
          r = await c.if(block, 'Mod', '==', rev).then(c.put(block).value(value)).commit()
        }
        if (!r.succeeded) throw new Error(`etcd floor: the block CAS of client ${ci} failed`)
        rev = Number(r.header.revision)
        times.push(performance.now() - t0)
      }
    }))
  } finally {
    await admin.delete().prefix('/pinto-bench-floor/').exec()
    for (const c of [admin, ...cs]) c.close()
  }
  return times.sort((a, b) => a - b)
}

function run(cmd: string, args: readonly string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; out: string; ms: number }> {
  const t0 = performance.now()
  const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] })
  children.add(child)
  let out = ''
  child.stdout.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr.on('data', (d: Buffer) => (out += d.toString()))
  return new Promise((resolve) => child.once('exit', (code) => { children.delete(child); resolve({ code, out, ms: performance.now() - t0 }) }))
}

/** `pintoctl ipam check` over every node, timed. */
async function ipamCheck(env: NodeJS.ProcessEnv): Promise<{ line: string; seconds: number; ok: boolean }> {
  const nodes = Array.from({ length: NODES }, (_, i) => nodeName(i)).join(',')
  const check = await run(process.execPath, [PINTOCTL, 'ipam', 'check', `--nodes=${nodes}`], env)
  const summary = check.out.split('\n').filter((l) => /Found|IPAM handles|Allocated IPs|complete|Error|error/.test(l)).map((l) => l.trim()).join('; ')
  return { line: `pintoctl ipam check --nodes=<all ${NODES}>: ${(check.ms / 1000).toFixed(1)} s (target < 30 s), exit ${check.code}: ${summary.slice(0, 400)}`, seconds: check.ms / 1000, ok: check.code === 0 }
}

/** What teardown() undoes, last first: the stores and the namespaces, even when the bench fails or is interrupted. */
const teardowns: (() => unknown)[] = []
const teardown = { teardown: (fn: () => unknown): void => void teardowns.push(fn) }
async function cleanUp(): Promise<void> {
  for (const c of children) c.kill('SIGKILL')
  for (const fn of teardowns.splice(0).reverse()) {
    try {
      await fn()
    } catch (err) {
      console.error(`clean-up: ${(err as Error).message}`)
    }
  }
}

interface EtcdRunResult {
  readonly preloadSeconds: number
  readonly checkSeconds: number
  readonly agents: AgentsResult | undefined
  /** The check, etcd's floor and each path's ADD p50/p99, for --json. */
  readonly figures: readonly Figure[]
}

async function runEtcd(bin: string): Promise<EtcdRunResult> {
  // etcd as operators run it: its default quota, snapshot count and WAL retention, every commit fsynced.
  const etcd = await startEtcd(undefined, { defaults: true, bin })
  teardown.teardown(() => etcd.stop())
  console.log(`\n=== etcd datastore (private etcd ${etcd.endpoint}): ${NODES} nodes, ${ALLOCATIONS} allocations in pool ${POOL.cidr} /${POOL.blockSize} blocks; load ${load()}`)
  console.log(`etcd: ${bin}, one member, its default limits (none of ${TEST_LIMIT_ARGS.filter((a) => a.startsWith('--')).join(', ')}) and durability (every commit fsynced to its WAL; no --unsafe-no-fsync), data in ${etcd.dataDir}`)
  const t0 = performance.now()
  const keys = await preloadEtcd(etcd.endpoint)
  const preloadSeconds = (performance.now() - t0) / 1000
  console.log(`preload: ${keys} keys (Node resources, affinities, blocks, handles as ipam/ writes them) in ${preloadSeconds.toFixed(1)} s, written directly in etcd transactions`)
  const check = await ipamCheck({ ...process.env, PINTO_DATASTORE: `etcd://${etcd.endpoint}` })
  console.log(check.line)
  const figures: Figure[] = [figure('pintoctl ipam check', check.ok ? check.seconds : NaN, 's')]
  for (const oneTxn of [false, true]) {
    for (const n of [...new Set([1, AGENTS])]) {
      const f = await etcdFloor(etcd.endpoint, n, Math.max(50, Math.ceil(ADDS / 2)), oneTxn)
      const how = oneTxn ? 'in one transaction (one commit)' : 'back to back (two commits)'
      console.log(`etcd alone, an ADD's two writes ${how} (create the handle, CAS a block-sized value), ${n} client${n === 1 ? '' : 's'} at once: p50 ${ms(pct(f, 50))}  p99 ${ms(pct(f, 99))}, load ${load()}`)
      if (oneTxn && n === AGENTS) figures.push(figure(`etcd alone: an ADD's writes in one transaction, ${n} clients, p50`, pct(f, 50), 'ms', true), figure(`etcd alone: an ADD's writes in one transaction, ${n} clients, p99`, pct(f, 99), 'ms', true))
    }
  }
  let agents: AgentsResult | undefined
  for (const [i, path] of PATHS.entries()) {
    const r = await runAgents(CONFIG, { store: `etcd://${etcd.endpoint}`, path, startup: i === 0, etcdUrl: etcd.url, servers: [{ name: 'etcd', pid: etcd.pid }] })
    if (i === 0) agents = r
    figures.push(...addFigures('', path, r))
  }
  return { preloadSeconds, checkSeconds: check.seconds, agents, figures }
}

const addFigures = (prefix: string, path: string, r: AgentsResult): Figure[] => [figure(`${prefix}${path} path: ADD p50`, r.add.p50, 'ms'), figure(`${prefix}${path} path: ADD p99`, r.add.p99, 'ms')]

/** The figures both runs have, one row each, the datastores side by side. */
function sideBySide(etcd: EtcdRunResult | undefined, kube: KubeRunResult | undefined): void {
  const cols = [...(etcd ? ['etcd'] : []), ...(kube ? ['kubernetes'] : [])]
  const rows: [string, (r: EtcdRunResult | KubeRunResult) => string][] = [
    ['preload', (r) => `${r.preloadSeconds.toFixed(1)} s`],
    ['pintoctl ipam check', (r) => `${r.checkSeconds.toFixed(1)} s`],
    ['agent start-up reads p50 / max', (r) => (r.agents?.startupMs ? `${ms(r.agents.startupMs.p50)} / ${ms(r.agents.startupMs.max)}` : '-')],
    [`ADD p50 / p99 (${PATHS[0]} path)`, (r) => (r.agents ? `${ms(r.agents.add.p50)} / ${ms(r.agents.add.p99)}` : '-')],
    ['DEL p50 / p99', (r) => (r.agents ? `${ms(r.agents.del.p50)} / ${ms(r.agents.del.p99)}` : '-')],
    ['datastore round trips / commits per ADD', (r) => (r.agents ? `${r.agents.roundTripsPerAdd.toFixed(2)} / ${r.agents.commitsPerAdd.toFixed(2)}` : '-')],
    ['apiserver requests per ADD or DEL (its audit log)', (r) => ('requestsPerOp' in r ? r.requestsPerOp.toFixed(2) : '-')],
    ['ADD errors', (r) => (r.agents ? String(r.agents.errors) : '-')],
  ]
  console.log(`\n=== side by side: ${NODES} nodes, ${ALLOCATIONS} allocations, ${AGENTS} agents x ${ADDS} ADDs${CONFIG.rate > 0 ? ` at ${CONFIG.rate}/s each` : ' back to back'}; load ${load()}`)
  console.log(`| | ${cols.join(' | ')} |`)
  console.log(`|---|${cols.map(() => '---').join('|')}|`)
  for (const [label, f] of rows) console.log(`| ${label} | ${[...(etcd ? [f(etcd)] : []), ...(kube ? [f(kube)] : [])].join(' | ')} |`)
  if (kube !== undefined) {
    console.log(`pinto-node on kubernetes: start-up ${kube.nodeStartSeconds.toFixed(1)} s; ${kube.nodeIdlePerMinute.toFixed(1)} requests a minute idle, ${kube.nodeChurnPerMinute.toFixed(1)} with its own pods churning (ADD through its socket p50 ${ms(kube.nodeAddP50)}, p99 ${ms(kube.nodeAddP99)})`)
  }
}

async function main(): Promise<void> {
  console.log(`ipam-scale: ${DATASTORES.join(' and ')}; ${NODES} nodes, ${ALLOCATIONS} allocations, ${AGENTS} agents; load ${load()}`)
  // With both, etcd mode runs the etcd the apiserver runs on, so the two differ by the apiserver alone.
  const etcdBin = DATASTORES.includes('kubernetes') ? join(await kubernetesBin(['etcd', 'kube-apiserver', 'kubectl']), 'etcd') : ETCD_BIN
  let etcd: EtcdRunResult | undefined
  let kube: KubeRunResult | undefined
  try {
    if (DATASTORES.includes('etcd')) {
      etcd = await runEtcd(etcdBin)
      console.log('\nCalico (libcalico-go/lib/ipam, read from its code) for the same ADD, one address from an affine block with room:')
      console.log('  10 round trips, 2 writes in 2 commits: get IPAMConfig, list IPReservations, get Node, list IPPools, list the host\'s affinities,')
      console.log('  get the affinity, get the block, get the handle, create the handle, update the block (CAS) (ipam.go assignFromExistingBlock:')
      console.log('  incrementHandle, then the block\'s Update; no transaction joins them).')
      console.log('  DEL: 6 round trips, 2 writes: get handle, get IPAMConfig, get block, update block, get handle, delete handle.')
      console.log('  A new block claim adds a list of every block, then create affinity, create block, update affinity.')
      await cleanUp()
    }
    if (DATASTORES.includes('kubernetes')) {
      kube = await runKubernetes(teardown, {
        ...CONFIG, allocations: ALLOCATIONS, paths: PATHS, ipamCheck,
        nodeIdle: numberArg('--node-idle', 60), nodeChurn: numberArg('--node-churn', 60), nodeRate: numberArg('--node-rate', 1), kubeletPeriod: numberArg('--kubelet-period', 300),
      })
    }
    sideBySide(etcd, kube)
    writeFigures(JSON_OUT, 'ipam-scale', [
      ...(etcd?.figures ?? []),
      ...(kube !== undefined ? [figure('kubernetes: pintoctl ipam check', kube.checkSeconds, 's'), figure('kubernetes: pinto-node start-up', kube.nodeStartSeconds, 's'), ...kube.paths.flatMap((p) => addFigures('kubernetes: ', p.path, p.result))] : []),
    ])
  } finally {
    await cleanUp()
  }
}

for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => void cleanUp().finally(() => process.exit(130)))
}

main().catch((err: unknown) => {
  console.error(err)
  process.exitCode = 1
})
