// One real pinto-node (bin/pinto-node.js, as the image runs it) on the kubernetes datastore for
// bench/ipam-scale.ts, in a network namespace of its own with the apiserver's port bridged in, as one of the
// bench's Nodes: what it sends the apiserver at start, idle, with pods of its own coming and going (through its
// IPAM socket, as the CNI plugin asks), and while other nodes churn; what the apiserver sends it; and kubelets'
// Node status reports, which every agent watching Nodes receives. Bench-only.

import { request } from 'node:http'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Topology } from '../test/harness/netns.js'
import { bridgeLoopback } from '../test/harness/ns-bridge.js'
import { waitFor } from '../test/harness/wait.js'
import { type AgentProcess, startAgent } from '../test/agent/agent-process.js'
import type { KubeHttp } from '../config/kubernetes/kube-http.js'
import { type AuditTally, type Scrape, auditMark, describeEtcd, describeServed, etcdRequests, scrape, tallyAudit } from './ipam-scale-api-figures.js'
import { type BenchApiserver, NODE_USER } from './ipam-scale-kube.js'
import { nodeAddress, nodeName } from './ipam-scale-data.js'
import { cpuMsOf } from './proc-cpu.js'

/** pinto-node's IPAM repair interval (its default), so the bench knows when its first pass is done. */
export const REPAIR_SECONDS = 60

/** The API resources pinto reads and writes, as the apiserver's metrics name them. */
export const PINTO_RESOURCES = ['nodes', 'ipamblocks', 'blockaffinities', 'ipamhandles', 'ippools', 'ipamconfigs', 'bgpconfigurations', 'bgppeers', 'bgpfilters', 'keyvalues']

interface Teardown {
  teardown(fn: () => unknown): void
}

function rssMb(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
  return Number(m?.[1] ?? NaN) / 1024
}

export interface Window {
  readonly seconds: number
  readonly audit: AuditTally
  /** What the apiserver served over the window (all clients: read with who else ran in mind). */
  readonly served: string[]
  readonly before: Scrape
  readonly after: Scrape
  /** pinto-node's CPU over the window, ms. */
  readonly cpuMs: number
  /** What etcd answered over the window (for every client of the apiserver). */
  readonly etcd: string
}

export interface Mark {
  readonly audit: number
  readonly scrape: Scrape
  readonly etcd: Scrape
  readonly cpuMs: number
  readonly at: number
}

/** POST over the agent's unix socket (the IPAM service's API the CNI plugin uses). */
function post(socketPath: string, path: string, body: unknown): Promise<{ status: number; text: string }> {
  const text = JSON.stringify(body)
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }, timeout: 30_000 }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }))
    })
    req.on('timeout', () => req.destroy(new Error(`POST ${path}: no answer within 30 s`)))
    req.on('error', reject)
    req.end(text)
  })
}

export class PintoNodeRun {
  private constructor(private readonly b: BenchApiserver, readonly agent: AgentProcess, readonly name: string) {}

  get pid(): number {
    return this.agent.child.pid ?? -1
  }

  get rssMb(): number {
    return rssMb(this.pid)
  }

  /** When it was launched (performance.now()). */
  launchedAt = 0

  /**
   * Starts pinto-node as the bench's node `index` (its IPAM repair every minute, as by default) and waits for its
   * "pinto-node started"; the window is its start-up.
   */
  static async start(t: Teardown, b: BenchApiserver, index: number): Promise<{ run: PintoNodeRun; startup: Window & { readonly ms: number } }> {
    const topo = await Topology.create(t)
    const ns = (await topo.addNode({ name: 'kddnode', v4: `${nodeAddress(index)}/24` })).ns
    await bridgeLoopback(t, topo, ns, b.port)
    const before = await scrape(b.admin)
    const etcd0 = await etcdRequests(b.api.etcd.url)
    const mark = auditMark(b.auditLog)
    const t0 = performance.now()
    const agent = startAgent(t, ns, {
      PINTO_NODENAME: nodeName(index), PINTO_IP: `${nodeAddress(index)}/24`, PINTO_BGP_PORT: '1179', PINTO_DATASTORE: 'kubernetes',
      KUBECONFIG: b.kubeconfigs[NODE_USER], PINTO_LOG_LEVEL: 'info', PINTO_IPAM_REPAIR_SECONDS: String(REPAIR_SECONDS),
    })
    await waitFor(() => {
      if (agent.child.exitCode !== null || agent.child.signalCode !== null) throw new Error(`pinto-node exited: ${agent.stdout().slice(-2000)} ${agent.stderr().slice(-2000)}`)
      return agent.stdout().includes('"pinto-node started"')
    }, { timeoutMs: 900_000, intervalMs: 100, what: 'pinto-node logging "pinto-node started"' }).catch((err: Error) => {
      throw new Error(`${err.message}\n--- stdout\n${agent.stdout().slice(-3000)}\n--- stderr\n${agent.stderr().slice(-3000)}`)
    })
    const ms = performance.now() - t0
    const run = new PintoNodeRun(b, agent, nodeName(index))
    run.launchedAt = t0
    const after = await scrape(b.admin)
    const startup = { ms, seconds: ms / 1000, audit: tallyAudit(b.auditLog, mark, auditMark(b.auditLog), NODE_USER), served: describeServed(after, before, PINTO_RESOURCES), before, after, cpuMs: cpuMsOf(run.pid), etcd: describeEtcd(await etcdRequests(b.api.etcd.url), etcd0) }
    return { run, startup }
  }

  async mark(): Promise<Mark> {
    return { audit: auditMark(this.b.auditLog), scrape: await scrape(this.b.admin), etcd: await etcdRequests(this.b.api.etcd.url), cpuMs: cpuMsOf(this.pid), at: performance.now() }
  }

  /** What happened since `m`: pinto-node's own requests (the audit log), the apiserver's account, its CPU. */
  async since(m: Mark): Promise<Window> {
    const after = await scrape(this.b.admin)
    return {
      seconds: (performance.now() - m.at) / 1000,
      audit: tallyAudit(this.b.auditLog, m.audit, auditMark(this.b.auditLog), NODE_USER),
      served: describeServed(after, m.scrape, PINTO_RESOURCES),
      before: m.scrape, after, cpuMs: cpuMsOf(this.pid) - m.cpuMs,
      etcd: describeEtcd(await etcdRequests(this.b.api.etcd.url), m.etcd),
    }
  }

  /**
   * Pods of its own for `seconds`: `rate` ADDs a second through its IPAM socket (one IPv6 address each, as
   * the CNI plugin asks), each ADD past `held` followed by a DEL of the oldest. Returns the ADD times, ms.
   */
  async churn(seconds: number, rate: number, held: number): Promise<{ add: number[]; errors: string[] }> {
    const socket = join(this.agent.dir, 'pinto.sock')
    const add: number[] = []
    const errors: string[] = []
    const live: string[] = []
    const t0 = performance.now()
    for (let i = 0; performance.now() - t0 < seconds * 1000; i++) {
      const at = t0 + (i * 1000) / rate
      if (at > performance.now()) await new Promise((r) => setTimeout(r, at - performance.now()))
      const handle = `k8s-pod-network.bench-node-${i}`
      const s = performance.now()
      const r = await post(socket, '/v1/assign', { handle, num6: 1, attrs: { namespace: 'bench', pod: `bench-node-${i}` } })
      if (r.status === 200) {
        add.push(performance.now() - s)
        live.push(handle)
      } else errors.push(`${r.status} ${r.text.slice(0, 200)}`)
      if (live.length > held) await post(socket, '/v1/release', { handle: live.shift() })
    }
    for (const h of live) await post(socket, '/v1/release', { handle: h })
    return { add: add.sort((a, b) => a - b), errors }
  }

  /** Its log's warnings and errors, and its IPAM repairs, counted by message. */
  logSummary(): string {
    const counts = new Map<string, number>()
    for (const line of this.agent.stdout().split('\n')) {
      if (!line.startsWith('{')) continue
      let l: { level?: number; msg?: string }
      try {
        l = JSON.parse(line) as typeof l
      } catch {
        continue
      }
      if ((l.level ?? 0) >= 40 || l.msg?.startsWith('IPAM repair') === true) counts.set(l.msg ?? '?', (counts.get(l.msg ?? '?') ?? 0) + 1)
    }
    return [...counts].map(([m, n]) => `${n} x ${m.slice(0, 160)}`).join('; ') || 'none'
  }

  async stop(): Promise<void> {
    await this.agent.stop()
  }
}

/**
 * The kubelets' periodic Node status reports (nodeStatusReportFrequency, 5 minutes by default, whether or not
 * anything changed): every Node's Ready condition's heartbeat patched once per `periodSeconds`, spread evenly.
 * Each report is a Node change that every watcher of Nodes receives.
 */
export class KubeletReports {
  private timer: NodeJS.Timeout | undefined
  private next = 0
  private due = 0
  private inFlight = 0
  written = 0
  failed = 0

  constructor(private readonly admin: KubeHttp, private readonly nodes: number, private readonly periodSeconds: number) {}

  start(): void {
    const tickMs = 50
    const perTick = (this.nodes * tickMs) / (this.periodSeconds * 1000)
    this.timer = setInterval(() => {
      this.due += perTick
      while (this.due >= 1 && this.inFlight < 32) {
        this.due -= 1
        const name = nodeName(this.next)
        this.next = (this.next + 1) % this.nodes
        this.inFlight++
        const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z')
        void this.admin.request('PATCH', `/api/v1/nodes/${name}/status`, undefined, { status: { conditions: [{ type: 'Ready', lastHeartbeatTime: now }] } }, 'application/strategic-merge-patch+json')
          .then((r) => (r.status === 200 ? this.written++ : this.failed++), () => this.failed++)
          .finally(() => this.inFlight--)
      }
    }, tickMs)
  }

  stop(): void {
    clearInterval(this.timer)
  }

  /** Reports a second across the cluster. */
  get rate(): number {
    return this.nodes / this.periodSeconds
  }
}
