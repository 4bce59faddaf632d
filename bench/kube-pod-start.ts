// bench/kube-pod-start: pod start at cluster scale on the real Kubernetes cluster (agent/demo/kube/). Half the
// nodes run pinto, installed from its manifest; the other half run the reference plugins (ptp + host-local,
// with portmap chained as pinto's install-cni chains it), written into their /etc/cni/net.d as an operator of
// such a cluster would. Rounds alternate between the two: PODS pods created at once (one `kubectl create` of a
// List) on that half's nodes, timed from the moment the API announced each pod (a watch started beforehand)
// to the moment it announced the pod Ready; then all deleted, and the next half's burst. Beside it, what the
// kubelets say of the same pods: the RunPodSandbox time in their histogram (the runtime's sandbox, whose
// network set-up is the CNI ADD), estimated from the histogram's buckets; on pinto's nodes, pinto-node's own
// histogram of the ADDs it served (pinto_cni_request_duration_seconds): IPAM and wiring, the plugin's exec not in
// it. A part's figure, beside the whole.
// pinto's datastore is the Kubernetes API (the KDD manifest) or, with --datastore etcd, an etcd of its own (the
// etcd manifest, as the real-cluster tests install it).
// With --profile-agent DIR, a CPU profile of each pinto-node over each pinto burst (through its inspector).
// Run as root: npm run build && node dist/bench/kube-pod-start.js [--pods 100] [--nodes 4] [--rounds 2] [--datastore kubernetes|etcd] [--profile-agent DIR]

import { execFile, spawn } from 'node:child_process'
import { mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { KubeCluster, MANIFESTS } from '../agent/demo/kube/cluster.js'
import { BUSYBOX_IMAGE } from '../agent/demo/kube/images.js'
import { ROOT } from '../agent/demo/cluster-spec.js'
import { numberArg, stringArg } from './args.js'
import { type Classes, type ProcCpu, machineBusyMs, snapshot, spent } from './proc-cpu.js'
import { type Scrape, parseMetrics } from './ipam-scale-api-figures.js'

const PODS = numberArg('--pods', 100)
const NODES = numberArg('--nodes', 4)
const execFileP = promisify(execFile)
const ROUNDS = numberArg('--rounds', 2)
const DATASTORE = stringArg('--datastore') ?? 'kubernetes'
/** Where a CPU profile of each pinto-node over each pinto burst goes (through its inspector), if anywhere. */
const PROFILE_DIR = stringArg('--profile-agent')
const NETWORKS = ['pinto', 'reference'] as const
type Network = (typeof NETWORKS)[number]
const LABEL = 'bench.pinto.dev/network'

const say = (line: string): void => void process.stdout.write(`${line}\n`)

function pct(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? Number.NaN
}

/** The reference network a node runs: ptp with host-local over its own /24, then portmap. */
function referenceConflist(subnet: string): object {
  return {
    cniVersion: '1.0.0', name: 'reference',
    plugins: [
      { type: 'ptp', mtu: 1500, ipam: { type: 'host-local', ranges: [[{ subnet }]], routes: [{ dst: '0.0.0.0/0' }] } },
      { type: 'portmap', snat: true, capabilities: { portMappings: true } },
    ],
  }
}

/** PODS pods that only sleep, on `network`'s nodes, spread evenly, with nothing to wait for but the runtime. */
function burst(network: Network, round: number): object {
  const items = Array.from({ length: PODS }, (_, i) => ({
    apiVersion: 'v1', kind: 'Pod',
    metadata: { name: `${network}-${round}-${i}`, namespace: 'default', labels: { bench: `${network}-${round}`, app: 'bench' } },
    spec: {
      nodeSelector: { [LABEL]: network },
      terminationGracePeriodSeconds: 0,
      topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'DoNotSchedule', labelSelector: { matchLabels: { bench: `${network}-${round}` } } }],
      containers: [{ name: 'sleep', image: BUSYBOX_IMAGE, imagePullPolicy: 'Never', command: ['/bin/sleep', '3600'] }],
    },
  }))
  return { apiVersion: 'v1', kind: 'List', items }
}

interface PodWatch {
  readonly seen: Map<string, number>
  readonly ready: Map<string, number>
  stop(): void
}

/**
 * Watches the burst's pods: when the API first announced each, and when it announced it Ready. Resolves once the
 * watch request is open (kubectl's -v=6 log says so), so no pod created after it is missed. A watch kubectl ends
 * before it is stopped is started again (said, with why it ended): its first list brings what changed meanwhile,
 * a pod that became Ready in the gap counted Ready when that list came.
 */
async function watchPods(c: KubeCluster, selector: string): Promise<PodWatch> {
  const seen = new Map<string, number>()
  const ready = new Map<string, number>()
  let stopped = false
  let child: ReturnType<typeof spawn> | undefined
  const start = (): Promise<void> => {
    const kubectl = (child = spawn('ip', ['netns', 'exec', c.controlPlaneNs, join(c.binDir, 'kubectl'), '--kubeconfig', c.kubeconfig, '-v=6', 'get', 'pods', '-l', selector, '--watch', '-o',
      'jsonpath={.metadata.name} {.status.conditions[?(@.type=="Ready")].status}{"\\n"}'], { stdio: ['ignore', 'pipe', 'pipe'] }))
    let log = ''
    let opened = false
    let rest = ''
    kubectl.stdout?.on('data', (b: Buffer) => {
      const now = Date.now()
      const lines = (rest + b.toString()).split('\n')
      rest = lines.pop() ?? ''
      for (const line of lines) {
        const [name, status] = line.trim().split(' ')
        if (name === undefined || name === '') continue
        if (!seen.has(name)) seen.set(name, now)
        if (status === 'True' && !ready.has(name)) ready.set(name, now)
      }
    })
    return new Promise<void>((resolve, reject) => {
      kubectl.stderr?.on('data', (b: Buffer) => {
        log = (log + b.toString()).slice(-4000)
        if (!opened && /watch=true\S*\s.*200 OK/.test(log)) {
          opened = true
          resolve()
        }
      })
      kubectl.once('exit', (code) => {
        if (!opened) return reject(new Error(`kubectl get pods --watch exited (${code}): ${log.slice(-500)}`))
        if (stopped) return
        say(`    the pods' watch ended (kubectl exited ${code}: ${log.trim().split('\n').slice(-2).join(' | ').slice(0, 300)}); watching again`)
        void start().catch((err: Error) => say(`    watching the pods again failed: ${err.message}`))
      })
    })
  }
  await start()
  return {
    seen, ready,
    stop: () => {
      stopped = true
      child?.kill()
    },
  }
}

/** The kubelets' RunPodSandbox histogram, summed over `nodes`: cumulative counts by upper bound (seconds). */
async function sandboxHistogram(c: KubeCluster, nodes: readonly string[]): Promise<Map<number, number>> {
  const out = new Map<number, number>()
  for (const n of nodes) {
    const text = await c.kubectl(['get', '--raw', `/api/v1/nodes/${n}/proxy/metrics`])
    for (const m of text.matchAll(/^kubelet_run_podsandbox_duration_seconds_bucket\{[^}]*le="([^"]+)"[^}]*\} (\S+)$/gm)) {
      const le = m[1] === '+Inf' ? Number.POSITIVE_INFINITY : Number(m[1])
      out.set(le, (out.get(le) ?? 0) + Number(m[2]))
    }
  }
  return out
}

/** pinto-node's own histogram of the ADDs it served (pinto_cni_request_duration_seconds), summed over `nodes`. */
async function pintoAddHistogram(c: KubeCluster, nodes: readonly string[]): Promise<Map<number, number>> {
  const out = new Map<number, number>()
  for (const node of c.nodes.filter((n) => nodes.includes(n.spec.name))) {
    const { stdout } = await execFileP('ip', ['netns', 'exec', node.spec.ns, 'curl', '-sf', 'http://127.0.0.1:9099/metrics'])
    for (const m of stdout.matchAll(/^pinto_cni_request_duration_seconds_bucket\{le="([^"]+)",command="ADD",outcome="done"\} (\S+)$/gm)) {
      const le = m[1] === '+Inf' ? Number.POSITIVE_INFINITY : Number(m[1])
      out.set(le, (out.get(le) ?? 0) + Number(m[2]))
    }
  }
  return out
}

/**
 * The p-th percentile of the observations between two cumulative histograms, interpolated inside its bucket;
 * +Infinity when it falls above the last finite bucket (the histogram cannot say how far).
 */
function histogramQuantile(before: ReadonlyMap<number, number>, after: ReadonlyMap<number, number>, p: number): number {
  const bounds = [...after.keys()].sort((a, b) => a - b)
  const counts = bounds.map((b) => (after.get(b) ?? 0) - (before.get(b) ?? 0))
  const total = counts.at(-1) ?? 0
  if (total === 0) return Number.NaN
  const rank = (p / 100) * total
  let lower = 0
  let below = 0
  for (const [i, b] of bounds.entries()) {
    const c = counts[i] ?? 0
    if (c >= rank) return b === Number.POSITIVE_INFINITY ? b : lower + ((b - lower) * (rank - below)) / Math.max(1, c - below)
    lower = b
    below = c
  }
  return lower
}

interface Round {
  readonly network: Network
  readonly toReady: number[]
  readonly wall: number
  readonly sandbox: { p50: number; p99: number; count: number }
  /** pinto-node's ADD time as its own histogram has it (pinto only). */
  readonly agentAdd?: { p50: number; p99: number; count: number }
  /** The kubelets' FailedCreatePodSandBox events for the round's pods: how many, and their distinct messages. */
  readonly failures: { count: number; messages: string[] }
  /** CPU ms from the pods' creation to the last one Ready: by class of process, and the machine's in all. */
  readonly cpu: { byClass: Map<string, number>; machine: number }
  /** The requests the apiserver served meanwhile (every client's), by verb and resource. */
  readonly requests: Map<string, number>
}

/** apiserver_request_total between two scrapes, by `verb resource[/subresource]`, most first. */
function requestsBy(before: Scrape, after: Scrape): Map<string, number> {
  const out = new Map<string, number>()
  const add = (s: Scrape, sign: number): void => {
    for (const x of s) {
      if (x.name !== 'apiserver_request_total') continue
      const key = `${x.labels['verb'] ?? '?'} ${x.labels['resource'] ?? ''}${x.labels['subresource'] ? `/${x.labels['subresource']}` : ''}`
      out.set(key, (out.get(key) ?? 0) + sign * x.value)
    }
  }
  add(after, 1)
  add(before, -1)
  return new Map([...out].filter(([, n]) => n > 0).sort((a, b) => b[1] - a[1]))
}

/**
 * The classes of process whose CPU a round reports: the control plane's, and on each node (by its network
 * namespace) the kubelet, containerd with the CNI plugins and shim starts it reaps, the shims with their runc,
 * kube-proxy and pinto-node. Node processes are named by the network of their node.
 */
function classifier(nodeNetwork: ReadonlyMap<string, Network>): (p: ProcCpu) => Classes {
  return (p) => {
    if (p.comm === 'kube-apiserver' || p.comm === 'etcd') return { own: p.comm, children: p.comm }
    if (p.comm.startsWith('kube-controller') || p.comm === 'kube-scheduler') return { own: 'controller-manager, scheduler' }
    const net = nodeNetwork.get(p.netns)
    if (net === undefined) return {}
    if (p.comm === 'containerd') return { own: `${net}: containerd`, children: `${net}: CNI plugins, shim starts` }
    if (p.comm.startsWith('containerd-shim')) return { own: `${net}: shims, runc`, children: `${net}: shims, runc` }
    if (p.comm === 'kubelet' || p.comm === 'kube-proxy') return { own: `${net}: ${p.comm}` }
    // Node.js names its main thread, and so the process, node-MainThread (Node 20: node).
    if ((p.comm === 'node' || p.comm === 'node-MainThread') && net === 'pinto') return { own: 'pinto: pinto-node', children: 'pinto: pinto-node' }
    return {}
  }
}

/** The classes a round of `network` reports, in order: the shared ones, then its nodes'. */
function roundClasses(byClass: ReadonlyMap<string, number>, network: Network): [string, number][] {
  return [...byClass].filter(([cls]) => !cls.includes(':') || cls.startsWith(`${network}:`)).sort((a, b) => b[1] - a[1])
}

/** The FailedCreatePodSandBox events of the pods named `<prefix>*`: each failed sandbox the kubelet retried. */
async function sandboxFailures(c: KubeCluster, prefix: string): Promise<Round['failures']> {
  const text = await c.kubectl(['get', 'events', '-n', 'default', '--field-selector', 'reason=FailedCreatePodSandBox', '-o', 'json'])
  const items = (JSON.parse(text) as { items: { involvedObject: { name: string }; message: string; count?: number }[] }).items.filter((e) => e.involvedObject.name.startsWith(prefix))
  // The pod's name and sandbox id make each message unique; what failed is the rest.
  const messages = new Set(items.map((e) => e.message.replace(/[0-9a-f]{64}/g, '<id>').replace(new RegExp(`${prefix}\\d+`, 'g'), '<pod>').slice(0, 300)))
  return { count: items.reduce((n, e) => n + (e.count ?? 1), 0), messages: [...messages].slice(0, 5) }
}

/**
 * Profiles each pinto-node of `nodes` from now until the function returned is called: SIGUSR1 opens its inspector
 * on 127.0.0.1:9229 in its node's namespace, where inspector-profile.js (under the Node.js pinto ships) records.
 */
async function profileAgents(c: KubeCluster, nodes: readonly string[], round: number, dir: string): Promise<() => Promise<string[]>> {
  const node26 = join(ROOT, '.cache', 'node-v26.12.1', 'bin', 'node')
  const helpers: { child: ReturnType<typeof spawn>; file: string; done: Promise<void> }[] = []
  const procs = [...snapshot().values()]
  for (const n of c.nodes.filter((x) => nodes.includes(x.spec.name))) {
    const netns = `net:[${statSync(join('/run/netns', n.spec.ns)).ino}]`
    const agent = procs.find((p) => p.netns === netns && (p.comm === 'node' || p.comm === 'node-MainThread') && readFileSync(`/proc/${p.pid}/cmdline`, 'utf8').includes('pinto-node'))
    if (agent === undefined) throw new Error(`--profile-agent: no pinto-node process in ${n.spec.name}'s namespace`)
    process.kill(agent.pid, 'SIGUSR1')
    const file = join(dir, `pinto-node-${n.spec.name}-round${round + 1}.cpuprofile`)
    const child = spawn('ip', ['netns', 'exec', n.spec.ns, node26, join(ROOT, 'dist', 'bench', 'inspector-profile.js'), file], { stdio: ['ignore', 'pipe', 'inherit'] })
    const done = new Promise<void>((resolve) => child.once('exit', () => resolve()))
    await new Promise<void>((resolve, reject) => {
      child.stdout?.on('data', (b: Buffer) => b.toString().includes('profiling') && resolve())
      void done.then(() => reject(new Error(`--profile-agent: the profiler of ${n.spec.name}'s pinto-node exited`)))
    })
    helpers.push({ child, file, done })
  }
  return async () => {
    for (const h of helpers) h.child.kill('SIGTERM')
    await Promise.all(helpers.map((h) => h.done))
    return helpers.map((h) => h.file)
  }
}

async function runBurst(c: KubeCluster, network: Network, round: number, nodes: readonly string[], classOf: (p: ProcCpu) => Classes): Promise<Round> {
  const selector = `bench=${network}-${round}`
  const before = await sandboxHistogram(c, nodes)
  const agentBefore = network === 'pinto' ? await pintoAddHistogram(c, nodes) : undefined
  const w = await watchPods(c, selector)
  const profiled = PROFILE_DIR !== undefined && network === 'pinto' ? await profileAgents(c, nodes, round, PROFILE_DIR) : undefined
  const metrics0 = parseMetrics(await c.kubectl(['get', '--raw', '/metrics']))
  const procs0 = snapshot()
  const machine0 = machineBusyMs()
  const t0 = Date.now()
  await c.kubectl(['create', '-f', '-'], JSON.stringify(burst(network, round)))
  const deadline = Date.now() + 600_000
  while (w.ready.size < PODS) {
    if (Date.now() > deadline) throw new Error(`${network} round ${round}: ${w.ready.size} of ${PODS} pods Ready after 600 s`)
    await new Promise((r) => setTimeout(r, 200))
  }
  const wall = Math.max(...w.ready.values()) - t0
  const cpu = { byClass: spent(procs0, snapshot(), classOf), machine: machineBusyMs() - machine0 }
  const requests = requestsBy(metrics0, parseMetrics(await c.kubectl(['get', '--raw', '/metrics'])))
  if (profiled !== undefined) for (const f of await profiled()) say(`    pinto-node's CPU profile over the burst: ${f} (node dist/bench/cpu-profile-top.js FILE)`)
  w.stop()
  const after = await sandboxHistogram(c, nodes)
  const toReady = [...w.ready].map(([name, at]) => at - (w.seen.get(name) ?? t0))
  const count = ((after.get(Number.POSITIVE_INFINITY) ?? 0) - (before.get(Number.POSITIVE_INFINITY) ?? 0))
  const sandbox = { p50: histogramQuantile(before, after, 50) * 1000, p99: histogramQuantile(before, after, 99) * 1000, count }
  let agentAdd: Round['agentAdd']
  if (agentBefore !== undefined) {
    const agentAfter = await pintoAddHistogram(c, nodes)
    const n = (agentAfter.get(Number.POSITIVE_INFINITY) ?? 0) - (agentBefore.get(Number.POSITIVE_INFINITY) ?? 0)
    agentAdd = { p50: histogramQuantile(agentBefore, agentAfter, 50) * 1000, p99: histogramQuantile(agentBefore, agentAfter, 99) * 1000, count: n }
  }
  const failures = await sandboxFailures(c, `${network}-${round}-`)
  await c.kubectl(['delete', 'pods', '-l', selector, '--wait=true', '--timeout=300s'])
  return { network, toReady, wall, sandbox, failures, cpu, requests, ...(agentAdd !== undefined ? { agentAdd } : {}) }
}

async function main(): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error('the cluster makes namespaces, mounts and cgroups: run as root')
  if (DATASTORE !== 'kubernetes' && DATASTORE !== 'etcd') throw new Error(`--datastore: kubernetes or etcd, got ${JSON.stringify(DATASTORE)}`)
  if (NODES < 2 || NODES % 2 !== 0) throw new Error(`--nodes: an even number of at least 2 (half pinto, half the reference), got ${NODES}`)
  const { buildImage } = (await import(pathToFileURL(join(ROOT, 'scripts', 'image.js')).href)) as { buildImage: () => { image: string } }
  const { podmanEnv } = (await import(pathToFileURL(join(ROOT, 'scripts', 'podman-env.js')).href)) as { podmanEnv: () => NodeJS.ProcessEnv }
  const image = buildImage().image
  const c = KubeCluster.prepare({ nodes: NODES, image, podmanEnv: podmanEnv(), datastore: DATASTORE, installPinto: false, dns: false, pintoNodeSelector: { [LABEL]: 'pinto' }, say: (l) => say(`  ${l}`) })
  const stop = (): void => void c.destroy().then(() => process.exit(130))
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
  try {
    say(`kube-pod-start: ${NODES} nodes, ${NODES / 2} with pinto (datastore: ${DATASTORE === 'etcd' ? 'an etcd of its own' : 'the Kubernetes API'}) and ${NODES / 2} with ptp + host-local; ${PODS} pods at once, ${ROUNDS} rounds each`)
    if (PROFILE_DIR !== undefined) mkdirSync(PROFILE_DIR, { recursive: true })
    await c.start()
    const half = { pinto: c.nodes.slice(0, NODES / 2), reference: c.nodes.slice(NODES / 2) }
    const nodeNetwork = new Map(NETWORKS.flatMap((net) => half[net].map((n): [string, Network] => [`net:[${statSync(join('/run/netns', n.spec.ns)).ino}]`, net])))
    const classOf = classifier(nodeNetwork)
    for (const n of half.pinto) await c.kubectl(['label', 'node', n.spec.name, `${LABEL}=pinto`])
    for (const [i, n] of half.reference.entries()) {
      await c.kubectl(['label', 'node', n.spec.name, `${LABEL}=reference`])
      writeFileSync(join(n.cniConfDir, '10-reference.conflist'), JSON.stringify(referenceConflist(`198.19.${i}.0/24`)))
    }
    await c.installPinto(MANIFESTS[DATASTORE])
    const rounds: Round[] = []
    for (let r = 0; r < ROUNDS; r++) {
      // Alternate which goes first, so neither always meets the other's leftovers.
      const order = r % 2 === 0 ? NETWORKS : [...NETWORKS].reverse()
      for (const network of order) {
        const round = await runBurst(c, network, r, half[network].map((n) => n.spec.name), classOf)
        say(`  round ${r + 1} ${network}: all ${PODS} Ready in ${(round.wall / 1000).toFixed(1)} s; creation to Ready p50 ${(pct(round.toReady, 50) / 1000).toFixed(2)} s, p99 ${(pct(round.toReady, 99) / 1000).toFixed(2)} s`)
        if (round.agentAdd !== undefined) say(`    pinto-node's own ADD time (its histogram, ${round.agentAdd.count} ADDs): p50 ${round.agentAdd.p50.toFixed(0)} ms, p99 ${round.agentAdd.p99.toFixed(0)} ms`)
        const sec = (ms: number): string => (ms / 1000).toFixed(1)
        say(`    CPU s until all were Ready (the machine: ${sec(round.cpu.machine)}): ${roundClasses(round.cpu.byClass, network).map(([cls, ms]) => `${cls} ${sec(ms)}`).join(', ')}`)
        say(`    apiserver requests per pod meanwhile (every client's): ${[...round.requests].slice(0, 10).map(([k, n]) => `${k} ${(n / PODS).toFixed(2)}`).join(', ')}`)
        say(`    sandboxes that failed and were tried again: ${round.failures.count}`)
        for (const m of round.failures.messages) say(`      ${m}`)
        rounds.push(round)
      }
    }
    say('')
    say(`${'network'.padEnd(28)} ${'creation to Ready p50'.padStart(22)} ${'p99'.padStart(8)} ${'all Ready'.padStart(10)} ${'kubelet RunPodSandbox p50'.padStart(26)} ${'p99'.padStart(8)}`)
    for (const network of NETWORKS) {
      const mine = rounds.filter((r) => r.network === network)
      const all = mine.flatMap((r) => r.toReady)
      const walls = mine.map((r) => r.wall)
      const sb50 = mine.map((r) => r.sandbox.p50)
      const sb99 = mine.map((r) => r.sandbox.p99)
      const name = network === 'pinto' ? 'pinto' : 'ptp + host-local (reference)'
      // Above the histogram's last bucket (10 s): only a bound is known.
      const ms = (v: number): string => (Number.isFinite(v) ? `${v.toFixed(0)} ms` : '> 10 s')
      say(`${name.padEnd(28)} ${`${(pct(all, 50) / 1000).toFixed(2)} s`.padStart(22)} ${`${(pct(all, 99) / 1000).toFixed(2)} s`.padStart(8)} ${`${(Math.max(...walls) / 1000).toFixed(1)} s`.padStart(10)} ${ms(Math.max(...sb50)).padStart(26)} ${ms(Math.max(...sb99)).padStart(8)}`)
    }
    say(`(${ROUNDS} rounds of ${PODS} pods each; the kubelet's figures are its histogram's, the worst round's, estimated within a bucket)`)
    // CPU per pod, each class beside its counterpart: the shared control plane's in each network's rounds, and each
    // half's own node processes.
    const perPod = (n: Network): Map<string, number> => {
      const out = new Map<string, number>()
      for (const r of rounds.filter((x) => x.network === n)) {
        for (const [cls, ms] of roundClasses(r.cpu.byClass, n)) out.set(cls.replace(`${n}: `, ''), (out.get(cls.replace(`${n}: `, '')) ?? 0) + ms / PODS / ROUNDS)
        out.set('the whole machine', (out.get('the whole machine') ?? 0) + r.cpu.machine / PODS / ROUNDS)
      }
      return out
    }
    const cpu = { pinto: perPod('pinto'), reference: perPod('reference') }
    say('')
    say(`${'CPU per pod, creation to all Ready'.padEnd(36)} ${'pinto'.padStart(10)} ${'reference'.padStart(10)}`)
    for (const cls of new Set([...cpu.pinto.keys(), ...cpu.reference.keys()])) {
      const ms = (m: Map<string, number>): string => `${(m.get(cls) ?? 0).toFixed(1)} ms`
      say(`${cls.padEnd(36)} ${ms(cpu.pinto).padStart(10)} ${ms(cpu.reference).padStart(10)}`)
    }
    const p99 = (n: Network): number => pct(rounds.filter((r) => r.network === n).flatMap((r) => r.toReady), 99)
    // A round's second burst may share the machine with the first's teardown (the runtime's, after the API's): only an even number
    // of rounds puts each network first as often.
    const verdict = ROUNDS % 2 === 1 ? 'not judged (an odd number of rounds: one network went first more often)' : p99('pinto') <= p99('reference') ? 'met' : 'NOT met'
    say(`target: pinto's creation-to-Ready p99 within the reference's: ${(p99('pinto') / 1000).toFixed(2)} s vs ${(p99('reference') / 1000).toFixed(2)} s: ${verdict}`)
  } finally {
    for (const n of c.nodes) rmSync(join(n.cniConfDir, '10-reference.conflist'), { force: true })
    await c.destroy()
  }
}

main().then(
  () => process.exit(0),
  (err: Error) => {
    process.stderr.write(`kube-pod-start: ${err.stack ?? err.message}\n`)
    process.exit(1)
  },
)
