// The kubernetes datastore's run of bench/ipam-scale.ts: the apiserver preloaded and checked, `pintoctl ipam
// check` through the API, one real pinto-node at start, idle and churning (with kubelets' Node reports going
// on), the agents' start-up and ADD/DEL as on etcd, and what each agent asks of the apiserver and receives
// from it, scaled to the whole cluster as an estimate. Bench-only.

import { scaleRecords } from './ipam-scale-data.js'
import { AGENTS_USER, type BenchApiserver, checkPreload, preloadApiserver, startBenchApiserver } from './ipam-scale-kube.js'
import { KubeletReports, PINTO_RESOURCES, PintoNodeRun, REPAIR_SECONDS, type Window } from './ipam-scale-node.js'
import { cpuMsOf } from './proc-cpu.js'
import { type AgentsConfig, type AgentsResult, load, ms, pct, runAgents } from './ipam-scale-agents.js'
import { type AuditTally, auditMark, bytes, deltaBy, describeKinds, scrape, tallyAudit, total } from './ipam-scale-api-figures.js'
import type { ScaleWorkerArgs } from './ipam-scale-worker.js'

interface Teardown {
  teardown(fn: () => unknown): void
}

export interface KubeRunConfig extends AgentsConfig {
  readonly allocations: number
  readonly paths: readonly ScaleWorkerArgs['path'][]
  /** pinto-node's idle window and its own churn window, seconds; its own pods a second in the churn window. */
  readonly nodeIdle: number
  readonly nodeChurn: number
  readonly nodeRate: number
  /** The kubelets' Node status report period, seconds (their nodeStatusReportFrequency). */
  readonly kubeletPeriod: number
  /** Runs `pintoctl ipam check` over the store; returns its line. */
  readonly ipamCheck: (env: NodeJS.ProcessEnv) => Promise<{ line: string; seconds: number; ok: boolean }>
}

export interface KubeRunResult {
  readonly preloadSeconds: number
  readonly checkSeconds: number
  readonly agents: AgentsResult | undefined
  /** Every path's ADD figures, in the order run. */
  readonly paths: readonly { readonly path: ScaleWorkerArgs['path']; readonly result: AgentsResult }[]
  readonly nodeStartSeconds: number
  readonly nodeIdlePerMinute: number
  readonly nodeChurnPerMinute: number
  readonly nodeAddP50: number
  readonly nodeAddP99: number
  /** The agents' requests per ADD or DEL, as the audit log has them. */
  readonly requestsPerOp: number
}

const perMinute = (n: number, seconds: number): number => (n * 60) / seconds

function describeWindow(label: string, w: Window, rssMb: number, rate = true): string[] {
  const a = w.audit
  return [
    `${label}: ${w.seconds.toFixed(0)} s, ${a.requests} requests${rate ? ` (${perMinute(a.requests, w.seconds).toFixed(1)} a minute)` : ''} of which ${a.watches} watch streams opened; ${describeKinds(a.byKind)}` +
      `${a.failures.size > 0 ? `; failed: ${describeKinds(new Map([...a.failures].map(([c, n]) => [String(c), n])))}` : ''}`,
    `  pinto-node CPU ${(w.cpuMs / w.seconds / 10).toFixed(2)} % of a core, RSS ${rssMb.toFixed(0)} MB`,
    ...w.served.map((l) => `  the apiserver served ${l}`),
    `  etcd answered ${w.etcd}`,
  ]
}

/** Requests an identity's audit tally shows, per "verb resource", as a line. */
const auditLine = (a: AuditTally): string => `${a.requests} requests, ${a.watches} watch streams; ${describeKinds(a.byKind)}`

export async function runKubernetes(t: Teardown, cfg: KubeRunConfig): Promise<KubeRunResult> {
  const b: BenchApiserver = await startBenchApiserver(t)
  const { api } = b
  const apiPid = api.pid
  console.log(`\n=== kubernetes datastore: kube-apiserver ${api.url} (${api.binDir}/kube-apiserver, --storage-media-type=application/json, audit of the bench's two identities), its etcd ${api.etcd.endpoint} with etcd's default limits; load ${load()}`)
  let t0 = performance.now()
  const preload = await preloadApiserver(api, scaleRecords(cfg.nodes, cfg.allocations), Math.max(1, Math.floor(cfg.allocations / 300)))
  const preloadSeconds = (performance.now() - t0) / 1000
  const objects = [...preload.counts.values()].reduce((a, b) => a + b, 0)
  console.log('The preload bypasses the API: the objects pinto would have written (config/kubernetes\'s own mappings, the core Nodes as a kubelet registers them with')
  console.log('pinto\'s annotations) go straight into the apiserver\'s etcd at /registry/<group>/<plural>/<name> (Nodes at /registry/minions/<name>), with the uid and')
  console.log(`creationTimestamp a create adds, because ${objects} creates through the API, each with admission and a commit of its own, would take most of the`)
  console.log('bench\'s time at full size. The apiserver\'s watch cache reads them from etcd as it reads any write.')
  console.log(`preload: ${objects} objects, ${bytes([...preload.bytes.values()].reduce((a, b) => a + b, 0))} of JSON, in ${preloadSeconds.toFixed(1)} s; per kind: ` +
    [...preload.counts].map(([p, n]) => `${p.slice(p.lastIndexOf('/') + 1)} ${n} (${bytes((preload.bytes.get(p) ?? 0) / n)} each)`).join(', '))
  t0 = performance.now()
  for (const l of await checkPreload(b, preload)) console.log(`check: ${l}`)
  console.log(`check: ${((performance.now() - t0) / 1000).toFixed(1)} s, load ${load()}`)

  const check = await cfg.ipamCheck({ ...process.env, PINTO_DATASTORE: 'kubernetes', KUBECONFIG: api.kubeconfig })
  console.log(check.line)

  // One real pinto-node, alone with the apiserver, as a node none of the agents is: its start-up, its first
  // minute (its first IPAM repair pass reads its handles), idle without and with the kubelets reporting, its own churn.
  const index = cfg.nodes >= 2 * cfg.agents ? Math.floor(cfg.nodes / cfg.agents / 2) : cfg.nodes - 1
  const { run: node, startup } = await PintoNodeRun.start(t, b, index)
  console.log(`\npinto-node (bin/pinto-node.js as ${node.name}, kubernetes datastore, node-to-node mesh off as at this size, dataplane none) in a namespace of its own:`)
  for (const l of describeWindow('  start-up to "pinto-node started"', startup, node.rssMb, false)) console.log(l)
  const sleep = (seconds: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(0, seconds * 1000)))
  let m = await node.mark()
  // Its repair starts before "pinto-node started": its first pass is done a minute after that at the latest.
  await sleep(startup.ms / 1000 + REPAIR_SECONDS + 3 - (performance.now() - node.launchedAt) / 1000)
  const first = await node.since(m)
  for (const l of describeWindow(`  the rest of its first minute (its first IPAM repair pass at ${REPAIR_SECONDS} s)`, first, node.rssMb)) console.log(l)
  m = await node.mark()
  await sleep(cfg.nodeIdle / 2)
  const quiet = await node.since(m)
  for (const l of describeWindow('  idle, no Node changing', quiet, node.rssMb)) console.log(l)
  const reports = new KubeletReports(b.admin, cfg.nodes, cfg.kubeletPeriod)
  reports.start()
  m = await node.mark()
  await sleep(cfg.nodeIdle)
  const idle = await node.since(m)
  for (const l of describeWindow(`  idle, with ${cfg.nodes} kubelets reporting Node status every ${cfg.kubeletPeriod} s (${reports.rate.toFixed(1)} Node writes/s)`, idle, node.rssMb)) console.log(l)
  m = await node.mark()
  const own = await node.churn(cfg.nodeChurn, cfg.nodeRate, 10)
  const churn = await node.since(m)
  reports.stop()
  for (const l of describeWindow(`  its own pods coming and going, ${cfg.nodeRate} ADD/s and as many DELs through its IPAM socket (ADD p50 ${ms(pct(own.add, 50))}, p99 ${ms(pct(own.add, 99))}${own.errors.length > 0 ? `, ${own.errors.length} errors: ${own.errors[0]}` : ''})`, churn, node.rssMb)) console.log(l)
  console.log(`  kubelet reports written ${reports.written}, failed ${reports.failed}`)

  // The agents, as on etcd, with pinto-node left running: it holds every watch an agent holds, blocks included.
  let agents: AgentsResult | undefined
  const paths: { path: ScaleWorkerArgs['path']; result: AgentsResult }[] = []
  let during: Window | undefined
  let agentsAudit: AuditTally | undefined
  let phaseSeconds = 0
  let blockWrites = 0
  for (const [i, path] of cfg.paths.entries()) {
    let auditFrom = 0
    let nm = m
    const result = await runAgents(cfg, {
      store: 'kubernetes', kubeconfig: b.kubeconfigs[AGENTS_USER], path, startup: i === 0, etcdUrl: api.etcd.url,
      servers: [{ name: 'apiserver', pid: apiPid }, { name: 'etcd', pid: api.etcd.pid }],
      beforePhase: async () => {
        auditFrom = auditMark(b.auditLog)
        nm = await node.mark()
      },
      afterPhase: async () => {
        if (i !== 0) return
        agentsAudit = tallyAudit(b.auditLog, auditFrom, auditMark(b.auditLog), AGENTS_USER)
        during = await node.since(nm)
        phaseSeconds = during.seconds
      },
    })
    if (i === 0) agents = result
    paths.push({ path, result })
  }
  if (agents !== undefined && agentsAudit !== undefined && during !== undefined) {
    const ops = agents.adds + agents.dels
    console.log(`\nthe agents' ADD/DEL phase as the apiserver's audit log has it: ${auditLine(agentsAudit)}; ${(agentsAudit.requests / ops).toFixed(2)} requests per ADD or DEL`)
    blockWrites = ['update ipamblocks', 'create ipamblocks', 'delete ipamblocks'].reduce((a, k) => a + (agentsAudit?.byKind.get(k) ?? 0), 0)
    console.log(`pinto-node meanwhile (not churning itself; ${cfg.agents} other nodes are, ${(blockWrites / phaseSeconds).toFixed(1)} block writes/s):`)
    for (const l of describeWindow('  its own requests', during, node.rssMb)) console.log(l)
  }

  const end = await scrape(b.admin)
  console.log('\nthe apiserver\'s watch cache over the whole run:')
  const received = deltaBy(end, [], 'apiserver_watch_cache_events_received_total', 'resource')
  const dispatched = deltaBy(end, [], 'apiserver_watch_cache_events_dispatched_total', 'resource')
  const consistent = deltaBy(end, [], 'apiserver_watch_cache_consistent_read_total', 'resource', { success: 'true', fallback: 'false' })
  const fallback = deltaBy(end, [], 'apiserver_watch_cache_consistent_read_total', 'resource', { fallback: 'true' })
  const lists = deltaBy(end, [], 'apiserver_response_sizes_count', 'resource', { verb: 'LIST' })
  for (const r of PINTO_RESOURCES) {
    if (!received.has(r) && !lists.has(r)) continue
    console.log(`  ${r}: ${received.get(r) ?? 0} events from etcd, ${dispatched.get(r) ?? 0} dispatched to watchers; ${lists.get(r) ?? 0} lists, of which ${consistent.get(r) ?? 0} consistent reads from the cache, ${fallback.get(r) ?? 0} fell back to etcd`)
  }
  const handlesPath = [...preload.counts.keys()].find((p) => p.endsWith('/ipamhandles')) ?? ''
  estimate(cfg, { startup, quiet, idle, during, reportsPerSecond: reports.rate, reportsInIdle: reports.rate * idle.seconds,
    // pinto-node's own: the product's path through its socket (the pod's and namespace's annotations read too).
    requestsPerOp: churn.audit.requests / (2 * (own.add.length + own.errors.length)),
    handles: preload.counts.get(handlesPath) ?? 0, handleBytes: (preload.bytes.get(handlesPath) ?? 0) / (preload.counts.get(handlesPath) ?? 1), blockWrites })
  const apiCpu = cpuMsOf(apiPid)
  console.log(`apiserver CPU over the whole run ${(apiCpu / 1000).toFixed(0)} s; load ${load()}`)
  console.log(`pinto-node's warnings, errors and IPAM repairs over the run: ${node.logSummary()}`)
  await node.stop()
  return {
    preloadSeconds, checkSeconds: check.ok ? check.seconds : NaN, agents, paths,
    nodeStartSeconds: startup.ms / 1000,
    nodeIdlePerMinute: perMinute(quiet.audit.requests, quiet.seconds), nodeChurnPerMinute: perMinute(churn.audit.requests, churn.seconds),
    nodeAddP50: pct(own.add, 50), nodeAddP99: pct(own.add, 99),
    requestsPerOp: agents !== undefined && agentsAudit !== undefined ? agentsAudit.requests / (agents.adds + agents.dels) : NaN,
  }
}

/**
 * The whole cluster's load on the apiserver with one pinto-node per Node, from the one pinto-node's figures:
 * its requests and watches times the nodes, and what a Node or block change costs times the watchers.
 */
interface EstimateInputs {
  readonly startup: Window
  /** Idle with no Node changing, and idle with the kubelets reporting. */
  readonly quiet: Window
  readonly idle: Window
  readonly during: Window | undefined
  readonly reportsPerSecond: number
  /** Node reports written while pinto-node idled: the Node events it received. */
  readonly reportsInIdle: number
  /** pinto-node's requests per ADD or DEL of its own pods (the audit log's). */
  readonly requestsPerOp: number
  readonly handles: number
  readonly handleBytes: number
  /** Block writes of the other nodes (the agents) in the `during` window. */
  readonly blockWrites: number
}

function estimate(cfg: KubeRunConfig, x: EstimateInputs): void {
  const { startup, quiet, idle, during } = x
  const n = cfg.nodes
  const eventsPer = (w: Window, resource: string): { events: number; bytes: number } => ({
    events: total(w.after, 'apiserver_watch_events_total', { resource }) - total(w.before, 'apiserver_watch_events_total', { resource }),
    bytes: total(w.after, 'apiserver_watch_events_sizes_sum', { resource }) - total(w.before, 'apiserver_watch_events_sizes_sum', { resource }),
  })
  const nodeEvents = eventsPer(idle, 'nodes')
  const nodeEventBytes = nodeEvents.events > 0 ? nodeEvents.bytes / nodeEvents.events : NaN
  const startBytes = total(startup.after, 'apiserver_response_sizes_sum', { verb: 'LIST' }) - total(startup.before, 'apiserver_response_sizes_sum', { verb: 'LIST' })
  const idlePerMinute = perMinute(quiet.audit.requests, quiet.seconds)
  console.log(`\nESTIMATE (not measured: one pinto-node's measured figures times ${n} agents, one per Node):`)
  console.log(`  watches held: ${startup.audit.watches} per agent -> ${startup.audit.watches * n} watch streams on the apiserver, each served from its watch cache (no etcd watch per agent)`)
  console.log(`  idle requests: ${idlePerMinute.toFixed(1)} a minute per agent -> ${((idlePerMinute * n) / 60).toFixed(0)} requests/s`)
  console.log(`  every agent restarting at once (a DaemonSet rollout restarts a few at a time): ${startup.audit.requests} requests and ${bytes(startBytes)} of lists each -> ${startup.audit.requests * n} requests, ${bytes(startBytes * n)}`)
  // What the reports added to its idle CPU, per report received.
  const cpuPerReport = x.reportsInIdle > 0 ? Math.max(0, idle.cpuMs - (quiet.cpuMs * idle.seconds) / quiet.seconds) / x.reportsInIdle : NaN
  console.log(`  Node status reports: ${n} kubelets every ${cfg.kubeletPeriod} s = ${x.reportsPerSecond.toFixed(1)} Node changes/s, each sent to every agent (${bytes(nodeEventBytes)} an event) -> ` +
    `${(x.reportsPerSecond * n).toFixed(0)} watch events/s, ${bytes(x.reportsPerSecond * n * nodeEventBytes)}/s from the apiserver; none changes what pinto-node reads of a Node; ` +
    `each agent ${(cpuPerReport * x.reportsPerSecond / 10).toFixed(2)} % of a core on them (what they added to its idle CPU: ${cpuPerReport.toFixed(2)} ms a report)`)
  // pinto-node is the only watcher of blocks and affinities while the agents churn: every such event is one it
  // received. It is no node of theirs, so it stands for an agent whose blocks another node's pods do not touch.
  const blocks = during !== undefined ? eventsPer(during, 'ipamblocks') : { events: 0, bytes: 0 }
  const claims = during !== undefined ? eventsPer(during, 'blockaffinities') : { events: 0, bytes: 0 }
  const received = blocks.events + claims.events
  const perWrite = x.blockWrites > 0 ? received / x.blockWrites : NaN
  const perEvent = received > 0 ? (blocks.bytes + claims.bytes) / received : NaN
  const cpuPerEvent = during !== undefined && received > 0 ? Math.max(0, during.cpuMs - (quiet.cpuMs * during.seconds) / quiet.seconds) / received : NaN
  if (during !== undefined) {
    console.log(`  while ${x.blockWrites} block writes of other nodes: it received ${blocks.events} block events (${bytes(blocks.bytes)}) and ${claims.events} affinity events (${bytes(claims.bytes)}), ` +
      `${perWrite.toFixed(3)} per write; ${Number.isNaN(cpuPerEvent) ? 'no CPU to share among them' : `${cpuPerEvent.toFixed(2)} ms of CPU each`}`)
  }
  for (const podsPerNodeMinute of [1, 10]) {
    // An ADD and its DEL each write the pod's block once.
    const ops = (2 * podsPerNodeMinute * n) / 60
    const events = ops * n * perWrite
    console.log(`  pods churning at ${podsPerNodeMinute} a minute on every node: ${ops.toFixed(0)} ADDs and DELs/s -> ${(ops * x.requestsPerOp).toFixed(0)} requests/s (${x.requestsPerOp.toFixed(2)} each); ` +
      `${ops.toFixed(0)} block writes/s, ${perWrite.toFixed(3)} events each to every other agent -> ${events.toFixed(0)} watch events/s, ${bytes(events * (Number.isNaN(perEvent) ? 0 : perEvent))}/s from the apiserver, ` +
      `and ${Number.isNaN(cpuPerEvent) ? '0' : ((ops * perWrite * cpuPerEvent) / 10).toFixed(2)} % of a core in every agent`)
  }
  const pages = Math.ceil(x.handles / 500)
  console.log(`  the once-a-day check of every handle by each agent: ${(n / 86400).toFixed(3)} checks/s -> ${((n * pages) / 86400).toFixed(1)} list pages/s, ${bytes((n * x.handles * x.handleBytes) / 86400)}/s ` +
    `(each ${pages} pages, ${bytes(x.handles * x.handleBytes)}; was every agent every minute: ${((n * pages) / 60).toFixed(0)} pages/s, ${bytes((n * x.handles * x.handleBytes) / 60)}/s)`)
}
