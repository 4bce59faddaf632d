// pinto-node's Prometheus metrics: BGP sessions per peer, felix's FIB and apply times, IPAM usage per
// pool and node, whether the datastore answers. Every value is read from the same narrow sources the REST API uses when Prometheus
// scrapes (prom-client `collect`); nothing here runs a timer or is pushed to by the agent.

import { Counter, Gauge, Histogram, type Registry } from 'prom-client'
import { blockCidr, affinityNode, type AllocationBlock, type Pool } from '../ipam/index.js'
import { cidrContains, cidrSize } from '../net/index.js'
import type { ApiDeps } from './api/deps.js'

export type MetricsSources = Pick<ApiDeps, 'node' | 'bgp' | 'ipam' | 'fib' | 'datastore'>

const STATES = ['Idle', 'Connect', 'Active', 'OpenSent', 'OpenConfirm', 'Established'] as const
/** Apply times range from a no-op diff (ms) to a full table through ip -batch (seconds). */
const APPLY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
const MARKER = 'pinto_bgp_session_state'

/** Calls `read` once for all collectors of one scrape (they start together and share the promise). */
function perScrape<T>(read: () => Promise<T>): () => Promise<T> {
  let inflight: Promise<T> | undefined
  return () => {
    if (inflight === undefined) {
      inflight = read().finally(() => {
        inflight = undefined
      })
    }
    return inflight
  }
}

/** A counter whose value is another object's running total (reset and re-set on each scrape). */
export function mirrorCounter<L extends string>(c: Counter<L>, values: Iterable<[Partial<Record<L, string>>, number]>): void {
  c.reset()
  for (const [labels, v] of values) c.inc(labels, Math.max(0, v))
}

/**
 * Registers pinto's collectors on `registry`, once: a second call on the same registry is a no-op
 * (buildApi calls this for every app it builds).
 */
export function registerPintoMetrics(registry: Registry, src: MetricsSources): void {
  if (registry.getSingleMetric(MARKER) !== undefined) return
  const registers = [registry]
  const peerLabels = ['peer', 'address', 'type'] as const
  const peers = () => src.bgp.peerStatus().map((p) => ({ p, labels: { peer: p.name, address: p.address, type: p.kind ?? p.type } }))

  new Gauge({
    name: MARKER,
    help: 'BGP session state per peer: 1 for the current FSM state, 0 for the others',
    labelNames: [...peerLabels, 'state'],
    registers,
    collect() {
      this.reset()
      for (const { p, labels } of peers()) for (const s of STATES) this.set({ ...labels, state: s }, p.state === s ? 1 : 0)
    },
  })
  const perPeerGauge = (name: string, help: string, value: (p: ReturnType<typeof peers>[number]['p']) => number): void => {
    new Gauge({
      name, help, labelNames: peerLabels, registers,
      collect() {
        this.reset()
        for (const { p, labels } of peers()) this.set(labels, value(p))
      },
    })
  }
  perPeerGauge('pinto_bgp_session_up', 'Whether the BGP session is Established (1) or not (0)', (p) => (p.state === 'Established' ? 1 : 0))
  perPeerGauge('pinto_bgp_prefixes_received', 'Prefixes the peer announced since its session came up, accepted or not', (p) => p.prefixesReceived)
  perPeerGauge('pinto_bgp_prefixes_accepted', 'Paths from the peer in the Adj-RIB-In now, after validation and import policy', (p) => p.prefixesAccepted)
  perPeerGauge('pinto_bgp_prefixes_advertised', 'Prefixes advertised (or queued) to the peer', (p) => p.prefixesAdvertised)
  perPeerGauge('pinto_bgp_families_disabled', 'Families of the session ignored since the peer sent a malformed MP_REACH_NLRI / MP_UNREACH_NLRI for them (RFC 4760 §7)', (p) => p.disabledFamilies.length)
  perPeerGauge('pinto_bgp_import_table_prefixes', 'Prefixes kept as received, before import policy, so that a policy change reaches them (the session has no route refresh)', (p) => p.importTable ?? 0)
  const perPeerCounter = (name: string, help: string, value: (p: ReturnType<typeof peers>[number]['p']) => number): void => {
    new Counter({
      name, help, labelNames: peerLabels, registers,
      collect() {
        mirrorCounter(this, peers().map(({ p, labels }) => [labels, value(p)]))
      },
    })
  }
  perPeerCounter('pinto_bgp_updates_received_total', 'UPDATE messages received from the peer', (p) => p.counters.updatesIn)
  perPeerCounter('pinto_bgp_updates_sent_total', 'UPDATE messages sent to the peer', (p) => p.counters.updatesOut)
  perPeerCounter('pinto_bgp_notifications_received_total', 'NOTIFICATION messages received from the peer', (p) => p.counters.notificationsIn)
  perPeerCounter('pinto_bgp_session_flaps_total', 'Times the session left Established', (p) => p.counters.flaps)
  new Counter({
    name: 'pinto_bgp_updates_refused_total', help: 'UPDATE sections from the peer refused, by kind (as-loop, first-as, originator-id, cluster-list, next-hop, rfc8212, treat-as-withdraw, afi-safi-disable)',
    labelNames: [...peerLabels, 'kind'], registers,
    collect() {
      mirrorCounter(this, peers().flatMap(({ p, labels }) => Object.entries(p.refused).map(([kind, n]): [Record<string, string>, number] => [{ ...labels, kind }, n ?? 0])))
    },
  })
  new Gauge({
    name: 'pinto_bgp_loc_rib_routes', help: 'Destinations in the Loc-RIB', registers,
    collect() {
      this.set(src.bgp.locRibSize)
    },
  })

  registerFibMetrics(registers, src.fib)
  registerIpamMetrics(registers, src.node, src.ipam, src.datastore)
  registerDatastoreMetrics(registers, src.datastore)
}

function registerDatastoreMetrics(registers: Registry[], datastore: MetricsSources['datastore']): void {
  if (datastore === undefined) return
  new Gauge({ name: 'pinto_datastore_up', help: 'Whether the datastore answers (1) or not (0), as the agent last saw it', registers, collect() { this.set(datastore.health().state === 'up' ? 1 : 0) } })
  new Counter({
    name: 'pinto_datastore_transitions_total', help: 'Times the datastore went down or came back', labelNames: ['state'], registers,
    collect() {
      const { transitions } = datastore.health()
      mirrorCounter(this, [[{ state: 'down' }, transitions.down], [{ state: 'up' }, transitions.up]])
    },
  })
}

function registerFibMetrics(registers: Registry[], fib: MetricsSources['fib']): void {
  if (fib === undefined) return
  new Gauge({
    name: 'pinto_fib_routes', help: 'Routes felix keeps in the kernel, per address family', labelNames: ['family'], registers,
    collect() {
      const n = { 4: 0, 6: 0 }
      for (const r of fib.routes()) n[r.family]++
      this.set({ family: '4' }, n[4])
      this.set({ family: '6' }, n[6])
    },
  })
  let seen = 0
  new Histogram({
    name: 'pinto_fib_apply_duration_seconds', help: 'Time felix took per apply (read the kernel, write the diff)', buckets: APPLY_BUCKETS, registers,
    collect() {
      // Each apply is observed once: only durations newer than the last scrape are added.
      for (const r of fib.stats().recent) {
        if (r.seq <= seen) continue
        this.observe(r.seconds)
        seen = r.seq
      }
    },
  })
  new Counter({ name: 'pinto_fib_applies_total', help: 'Applies felix ran', registers, collect() { mirrorCounter(this, [[{}, fib.stats().applies]]) } })
  new Counter({ name: 'pinto_fib_apply_failures_total', help: 'Applies that ended with route errors or failed', registers, collect() { mirrorCounter(this, [[{}, fib.stats().failures]]) } })
  new Gauge({ name: 'pinto_fib_route_errors', help: 'Routes whose last write failed', registers, collect() { this.set(fib.stats().routeErrors) } })
}

interface PoolUsage {
  readonly pools: readonly Pool[]
  readonly rows: Map<string, { ippool: string; node: string; blocks: number; inUse: number; borrowed: number }>
}

/** Each pool's blocks, addresses in use and borrowed, by node: only `node`'s rows, which its own agent exports. */
function usage(pools: readonly Pool[], blocks: Iterable<AllocationBlock>, node: string): PoolUsage {
  const rows: PoolUsage['rows'] = new Map()
  const row = (ippool: string, node: string) => {
    const k = `${ippool}\0${node}`
    let r = rows.get(k)
    if (r === undefined) rows.set(k, (r = { ippool, node, blocks: 0, inUse: 0, borrowed: 0 }))
    return r
  }
  for (const b of blocks) {
    const c = blockCidr(b)
    const ippool = pools.find((p) => cidrContains(p.cidr, c.family, c.base))?.spec.name ?? 'none'
    const owner = affinityNode(b) ?? ''
    row(ippool, owner).blocks++
    for (const attr of b.allocations) {
      if (attr === null) continue
      // Counted on the node that holds the address, as kube-controllers' ipam_allocations_in_use does.
      const node = b.attributes[attr]?.secondary['node'] ?? owner
      const r = row(ippool, node)
      r.inUse++
      if (node !== owner) r.borrowed++
    }
  }
  for (const [k, r] of rows) if (r.node !== node) rows.delete(k)
  return { pools, rows }
}

/**
 * The IPAM gauges of the agent's own node, as every agent of a DaemonSet exports its own: the sum over the agents
 * is the cluster's, with no row twice. They come from the blocks the agent holds in memory, so a scrape sends the
 * datastore nothing but the pools' read.
 */
function registerIpamMetrics(registers: Registry[], node: string, ipam: MetricsSources['ipam'], datastore: MetricsSources['datastore']): void {
  // While the datastore is away the gauges keep their last values (pinto_datastore_up says so) and /metrics answers.
  const read = perScrape(async () => {
    if (datastore?.health().state === 'down') return undefined
    try {
      return usage(await ipam.pools(), ipam.heldBlocks?.() ?? (await ipam.blocks()), node)
    } catch {
      return undefined
    }
  })
  const labelNames = ['ippool', 'node'] as const
  const gauge = (name: string, help: string, pick: (r: PoolUsage['rows'] extends Map<string, infer R> ? R : never) => number): void => {
    new Gauge({
      name, help, labelNames, registers,
      async collect() {
        const u = await read()
        if (u === undefined) return
        this.reset()
        for (const r of u.rows.values()) this.set({ ippool: r.ippool, node: r.node }, pick(r))
      },
    })
  }
  gauge('pinto_ipam_blocks', 'IPAM blocks per pool and affine node', (r) => r.blocks)
  gauge('pinto_ipam_allocations_in_use', 'Allocated addresses per pool and the node they were given to', (r) => r.inUse)
  gauge('pinto_ipam_allocations_borrowed', 'Addresses given to a node from a block affine to another', (r) => r.borrowed)
  new Gauge({
    name: 'pinto_ipam_ippool_size', help: 'Addresses in each IP pool', labelNames: ['ippool'], registers,
    async collect() {
      const u = await read()
      if (u === undefined) return
      this.reset()
      for (const p of u.pools) this.set({ ippool: p.spec.name }, Number(cidrSize(p.cidr)))
    },
  })
}

/** Buckets of the CNI requests' time in the agent: from a few ms (an ADD on a warm block) to the plugin's 30 s. */
const CNI_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

/**
 * The histogram of the CNI requests the agent served (pinto_cni_request_duration_seconds), on `registry` (once);
 * returns what observes one.
 */
export function registerCniMetrics(registry: Registry): (command: string, outcome: string, seconds: number) => void {
  const h = (registry.getSingleMetric('pinto_cni_request_duration_seconds') as Histogram | undefined) ?? new Histogram({
    name: 'pinto_cni_request_duration_seconds', help: 'Time pinto-node took to serve a CNI ADD or DEL of the plugin (IPAM and wiring), from taking the request to its answer, by command and outcome',
    labelNames: ['command', 'outcome'], buckets: CNI_BUCKETS, registers: [registry],
  })
  return (command, outcome, seconds) => h.observe({ command, outcome }, seconds)
}

/** What the agent did to keep its node's IPAM records whole (agent/recovery/: the node repair, the release queue, the ADDs rolled back). */
export interface IpamSafetySources {
  readonly repaired: () => Readonly<Record<string, number>>
  readonly pendingReleases: () => number
  readonly addsRolledBack: () => number
  readonly blocksClaimedAhead: () => number
}

/** Registers the IPAM repair and rollback metrics on `registry` (once per registry). */
export function registerIpamSafetyMetrics(registry: Registry, src: IpamSafetySources): void {
  if (registry.getSingleMetric('pinto_ipam_repairs_total') !== undefined) return
  const registers = [registry]
  new Counter({
    name: 'pinto_ipam_repairs_total', help: "IPAM problems of this node's blocks the agent repaired, by kind", labelNames: ['kind'], registers,
    collect() {
      mirrorCounter(this, Object.entries(src.repaired()).map(([kind, n]) => [{ kind }, n]))
    },
  })
  new Gauge({ name: 'pinto_ipam_pending_releases', help: 'IPAM handles whose release failed and is being retried', registers, collect() { this.set(src.pendingReleases()) } })
  new Counter({
    name: 'pinto_cni_adds_rolled_back_total', help: 'CNI ADDs a previous run took and never answered, rolled back at start', registers,
    collect() {
      mirrorCounter(this, [[{}, src.addsRolledBack()]])
    },
  })
  new Counter({
    name: 'pinto_ipam_blocks_claimed_ahead_total', help: "IPAM blocks the agent claimed for its node before an ADD needed them (PINTO_IPAM_CLAIM_AHEAD)", registers,
    collect() {
      mirrorCounter(this, [[{}, src.blocksClaimedAhead()]])
    },
  })
}
