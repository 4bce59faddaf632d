// The bridge from what the agent knows to what felix programs: learned routes from the speaker's
// Loc-RIB, pools and VTEPs from the cluster state, local blocks from origination, pods from IPAM.
// It assembles felix's DesiredState and runs the reconciler, devices, VTEP entries and NAT; the
// decisions of what a route looks like stay in felix.

import type { Logger } from 'pino'
import type { RouteSocket } from '../felix/route-socket.js'
import {
  DesiredTable,
  ExecaRunner,
  RouteReconciler,
  VXLAN_DEVICE,
  V4PrefixMap,
  V6PrefixMap,
  applyNat,
  detectHostMtu,
  enableForwarding,
  ensureTunl0,
  ensureVxlan,
  ipv6Within,
  podMtu,
  renderDesired,
  syncVtepEntries,
  writePodMtu,
  type HopSource,
  type LearnedNextHop,
  type LearnedRoute,
  type ProcessRunner,
  type RemoteVtep,
  type KernelRoute,
  type ApplyResult,
} from '../felix/index.js'
import type { IPPool, Node } from '../config/resources/index.js'
import { formatPrefix, ipv6Prefix, parsePrefix } from '../bgp/codec/nlri.js'
import { formatIpv4 } from '../bgp/codec/ip.js'
import { kernelMetricOf } from '../bgp/policy/index.js'
import type { Rib } from '../bgp/rib/rib.js'
import { DELTA_LOCAL, DELTA_WITHDRAWN, type LocRibDeltas, type NextHopTable } from '../bgp/rib/loc-rib-delta.js'
import type { Path } from '../bgp/rib/types.js'
import { preferAffineNodes, type NextHop } from './block-owners.js'
import type { AffinityConflict } from './refusals.js'

export interface DataplaneInputs {
  readonly nodeName: string
  readonly ipv4Address: string | undefined // "addr/len"
  readonly ipv6Address: string | undefined
  readonly parentInterface: string
  readonly pools: readonly IPPool[]
  readonly nodes: readonly Node[]
  readonly localBlocks: readonly string[]
  readonly workloads: readonly string[]
  /** This node's own tunnel endpoints, when encapsulation is on. */
  readonly vxlan?: { readonly address: string; readonly mac: string }
  readonly ipipAddress?: string
  /** Static routes felix programs beside the learned ones (a peer's reachableBy). */
  readonly staticRoutes: readonly LearnedRoute[]
}

/** What decides which learned routes felix programs, besides the Loc-RIB itself. */
export interface ProgramRules {
  /** This node: its own blocks never come from BGP. */
  readonly me: string
  /** Service ranges other nodes originate: kube-proxy owns them (Calico's rejectcidrs). */
  readonly services: readonly string[]
  /** Block CIDR (canonical) -> the node holding its affinity: a block goes to that node when it announces it. */
  readonly owners: ReadonlyMap<string, string>
  /** Prefixes (canonical) felix routes statically instead (a peer's reachableBy). */
  readonly fixed: readonly string[]
  /** Node address -> node name, for the next hops of owned blocks. */
  readonly nodeOfAddress: ReadonlyMap<string, string>
}

const NO_RULES: ProgramRules = { me: '', services: [], owners: new Map(), fixed: [], nodeOfAddress: new Map() }

/** An IPv6 network address with its host bits clear: `addr` itself unless a peer sent bits past the length. */
function network6(addr: Uint8Array, len: number): Uint8Array {
  if (len >= 128) return addr
  let host = addr[len >> 3]! & (0xff >> (len & 7))
  for (let i = (len >> 3) + 1; i < 16; i++) host |= addr[i]!
  return host === 0 ? addr : ipv6Prefix(addr, len).addr
}

/**
 * The Loc-RIB's deltas into felix's desired table: each changed destination becomes a set or a delete of
 * one learned route (best paths from peers, their next hops by id, LOCAL_PREF as the kernel metric), after
 * the rules above. Blocks with an affine owner (a few) are worked out together from their paths, as
 * preferAffineNodes says; everything else takes numbers only.
 */
export class LearnedFeed {
  private rules = NO_RULES
  /** The rules but the owners, which change as blocks are claimed and are compared block by block. */
  private rulesKey = ''
  private services4: { readonly net: number; readonly len: number }[] = []
  private services6: { readonly net: Uint8Array; readonly len: number }[] = []
  private readonly owned4 = new V4PrefixMap()
  private readonly owned6 = new V6PrefixMap()
  private readonly fixed4 = new V4PrefixMap()
  private readonly fixed6 = new V6PrefixMap()
  private readonly hops: number[] = []
  /** Affinity conflicts by block, kept per block so one block's change re-resolves that block alone. */
  private readonly conflicts = new Map<string, AffinityConflict>()

  constructor(
    private readonly rib: Rib,
    private readonly desired: DesiredTable,
    private readonly onConflicts: (conflicts: readonly AffinityConflict[]) => void,
  ) {}

  /**
   * New rules. A change of services, static routes or node addresses works out every learned route again
   * (a streaming walk of the Loc-RIB); a change of block owners (a block claimed or released somewhere in
   * the cluster) re-resolves the blocks whose owner changed, nothing else.
   */
  setRules(rules: ProgramRules): void {
    const key = JSON.stringify([rules.me, rules.services, rules.fixed, [...rules.nodeOfAddress]])
    const before = this.rules.owners
    this.rules = rules
    this.owned4.clear()
    this.owned6.clear()
    for (const block of rules.owners.keys()) this.addTo(block, this.owned4, this.owned6)
    if (key !== this.rulesKey) {
      this.rulesKey = key
      this.services4 = []
      this.services6 = []
      for (const c of rules.services) {
        const p = parsePrefix(c)
        if (p.afi === 1) this.services4.push({ net: p.addr, len: p.len })
        else this.services6.push({ net: ipv6Prefix(p.addr, p.len).addr, len: p.len })
      }
      this.fixed4.clear()
      this.fixed6.clear()
      for (const f of rules.fixed) this.addTo(f, this.fixed4, this.fixed6)
      this.reseed()
      return
    }
    const changed: string[] = []
    for (const [block, owner] of rules.owners) if (before.get(block) !== owner) changed.push(block)
    for (const block of before.keys()) if (!rules.owners.has(block)) changed.push(block)
    if (changed.length > 0) this.resolveBlocks(changed)
  }

  private addTo(text: string, v4: V4PrefixMap, v6: V6PrefixMap): void {
    const p = parsePrefix(text)
    if (p.afi === 1) v4.set(p.addr, p.len, 1)
    else v6.set(ipv6Prefix(p.addr, p.len).addr, p.len, 1)
  }

  /** Every learned route from the Loc-RIB again (start-up, new rules). */
  reseed(): void {
    this.rib.walkLocRib((batch) => this.apply(batch, false))
    this.conflicts.clear()
    this.resolveBlocks([...this.rules.owners.keys()])
  }

  /** One flush's changes (read during the call only, as the RIB reuses the batch). */
  apply(batch: LocRibDeltas, owned = true): void {
    let touched: string[] | undefined
    const d = this.desired
    for (let i = 0; i < batch.count; i++) {
      const family = batch.family(i)
      const len = batch.len(i)
      const addr4 = family === 4 ? batch.ipv4(i) : 0
      const addr6 = family === 6 ? batch.ipv6(i) : undefined
      const net6 = addr6 !== undefined && (this.owned6.size > 0 || this.fixed6.size > 0 || this.services6.length > 0) ? network6(addr6, len) : addr6
      if (family === 4 ? this.owned4.size > 0 && this.owned4.has(addr4, len) : this.owned6.size > 0 && this.owned6.has(net6!, len)) {
        if (owned) (touched ??= []).push(family === 4 ? `${formatIpv4(addr4)}/${len}` : formatPrefix(ipv6Prefix(net6!, len)))
        continue
      }
      const n = batch.hopCount(i)
      if ((batch.flags(i) & (DELTA_WITHDRAWN | DELTA_LOCAL)) !== 0 || n === 0 || this.excluded(family, addr4, net6, len)) {
        d.delete(family, addr4, addr6, len)
        continue
      }
      const hops = this.hops
      hops.length = n
      for (let k = 0; k < n; k++) hops[k] = batch.hop(i, k)
      // A BGPFilter setPriority (or a Calico node's priority) is the kernel route's metric.
      d.set(family, addr4, addr6, len, hops, kernelMetricOf(batch.localPref(i)))
    }
    if (touched !== undefined) this.resolveBlocks(touched)
  }

  /** Whether a route is one felix leaves to others (a service range) or routes statically (a fixed prefix). */
  private excluded(family: 4 | 6, addr4: number, net6: Uint8Array | undefined, len: number): boolean {
    if (family === 6) {
      if (this.fixed6.size > 0 && this.fixed6.has(net6!, len)) return true
      const services = this.services6
      for (let i = 0; i < services.length; i++) if (len >= services[i]!.len && ipv6Within(services[i]!.net, services[i]!.len, net6!)) return true
      return false
    }
    if (this.fixed4.size > 0 && this.fixed4.has(addr4, len)) return true
    // Indexed: it runs for every learned route (an iterator each time until optimized).
    const services = this.services4
    for (let i = 0; i < services.length; i++) {
      const s = services[i]!
      if (len >= s.len && (s.len === 0 || addr4 >>> (32 - s.len) === s.net >>> (32 - s.len))) return true
    }
    return false
  }

  /**
   * The routes of `blocks` (canonical CIDRs) from every path the RIB holds for them: an owned block as
   * preferAffineNodes says (and its conflict, if any), a block no longer owned as any other learned route.
   */
  private resolveBlocks(blocks: readonly string[]): void {
    const { owners, me, nodeOfAddress } = this.rules
    const hopOf = (p: Path): NextHop | undefined => {
      const address = p.attrs.nextHop[0] ?? p.attrs.attrs.nextHop
      if (address === undefined) return undefined
      const nodeName = nodeOfAddress.get(address)
      return nodeName !== undefined ? { address, nodeName } : { address }
    }
    const learned: LearnedRoute[] = []
    const mine = new Map<string, string>()
    for (const block of blocks) {
      const owner = owners.get(block)
      if (owner !== undefined) mine.set(block, owner)
      this.conflicts.delete(block)
      const prefix = parsePrefix(block)
      const best = this.rib.best(prefix)
      if (best === undefined || best.path.peer === undefined) continue
      if (this.excluded(prefix.afi === 1 ? 4 : 6, prefix.afi === 1 ? prefix.addr : 0, prefix.afi === 2 ? ipv6Prefix(prefix.addr, prefix.len).addr : undefined, prefix.len)) continue
      const hops = new Map<string, NextHop>()
      for (const p of best.multipath.length > 0 ? best.multipath : [best.path]) {
        const h = hopOf(p)
        if (h !== undefined) hops.set(h.address, h)
      }
      const metric = kernelMetricOf(best.path.attrs.attrs.localPref)
      if (hops.size > 0) learned.push({ prefix: block, nextHops: [...hops.values()], ...(metric !== undefined ? { metric } : {}) })
    }
    const announcers = (prefix: string): NextHop[] => this.rib.paths(parsePrefix(prefix)).flatMap((p) => (p.peer === undefined ? [] : [hopOf(p)].filter((h): h is NextHop => h !== undefined)))
    const { routes, conflicts } = preferAffineNodes(learned, mine, announcers, me)
    for (const c of conflicts) this.conflicts.set(c.block, c)
    this.onConflicts([...this.conflicts.values()])
    const programmed = new Map(routes.map((r) => [r.prefix, r]))
    for (const block of blocks) {
      const p = parsePrefix(block)
      const family = p.afi === 1 ? 4 : 6
      const addr4 = p.afi === 1 ? p.addr : 0
      const addr6 = p.afi === 2 ? p.addr : undefined
      const r = programmed.get(block)
      const ids = r?.nextHops.map((h) => this.rib.nextHops.idOf(h.address)).filter((id) => id >= 0) ?? []
      if (r === undefined || ids.length === 0) this.desired.delete(family, addr4, addr6, p.len)
      else this.desired.set(family, addr4, addr6, p.len, ids, r.metric)
    }
  }
}

export function remoteVteps(nodes: readonly Node[], me: string): RemoteVtep[] {
  const out: RemoteVtep[] = []
  for (const n of nodes) {
    if (n.metadata.name === me) continue
    const addr = n.spec.ipv4VXLANTunnelAddr
    const mac = n.spec.vxlanTunnelMACAddr
    const nodeAddress = n.spec.bgp?.ipv4Address?.split('/')[0]
    if (addr && mac && nodeAddress) out.push({ nodeName: n.metadata.name, nodeAddress, tunnelAddress: addr, mac })
  }
  return out
}

/** Next-hop ids of the Loc-RIB's table as felix's learned next hops, with the node each address is. */
function hopSource(nextHops: NextHopTable, nodes: readonly Node[]): HopSource {
  const byAddress = new Map<string, string>()
  for (const n of nodes) {
    for (const a of [n.spec.bgp?.ipv4Address, n.spec.bgp?.ipv6Address]) if (a) byAddress.set(a.split('/')[0]!, n.metadata.name)
  }
  const made: (LearnedNextHop | undefined)[] = []
  return {
    hop(id) {
      if (id < 0 || id >= nextHops.size) return undefined
      let h = made[id]
      if (h === undefined) {
        const address = nextHops.text(id)
        const nodeName = byAddress.get(address)
        made[id] = h = nodeName !== undefined ? { address, nodeName } : { address }
      }
      return h
    },
  }
}

export class Dataplane {
  private readonly runner: ProcessRunner
  private readonly reconciler: RouteReconciler
  /** The routes felix wants in the kernel, kept from the Loc-RIB's deltas (see LearnedFeed). */
  readonly desired: DesiredTable
  /** What the last render could not use (a pool or route it had to skip), for the log and the API. */
  problems: string[] = []
  private hostMtu: number | undefined
  private lastNat = ''
  private devicesKey = ''
  private contextKey = ''
  private started = false

  constructor(
    private readonly opts: {
      protocol: number
      resyncSeconds: number
      mtuFile: string
      log: Logger
      /** The next hops the learned routes name by id. */
      nextHops: NextHopTable
      runner?: ProcessRunner
      /** felix's rtnetlink socket for writing routes; without one, `ip -batch`. */
      routeSocket?: RouteSocket
      /** Told about every apply, for /metrics. */
      onApply?: (result: ApplyResult | Error, seconds: number) => void
    },
  ) {
    this.runner = opts.runner ?? new ExecaRunner()
    this.desired = new DesiredTable({ protocol: opts.protocol })
    this.reconciler = new RouteReconciler({
      runner: this.runner,
      protocol: opts.protocol,
      resyncIntervalMs: opts.resyncSeconds * 1000,
      vethPrefix: 'pinto',
      logger: opts.log,
      ...(opts.routeSocket !== undefined ? { routeSocket: opts.routeSocket } : {}),
    })
  }

  /**
   * Takes a new view of the cluster (pools, nodes, local blocks, pods, static routes) and applies: a pool,
   * encapsulation or node change re-renders every route and resyncs with the kernel; anything else writes
   * only what changed. Cheap to call often (the reconciler coalesces overlapping runs).
   */
  async update(inputs: DataplaneInputs): Promise<void> {
    const ctx = { runner: this.runner }
    const vxlanOn = inputs.pools.some((p) => (p.spec.vxlanMode ?? 'Never') !== 'Never')
    const ipipOn = inputs.pools.some((p) => (p.spec.ipipMode ?? 'Never') !== 'Never')
    const ipv6 = inputs.pools.some((p) => p.spec.cidr.includes(':'))
    if (this.hostMtu === undefined) {
      this.hostMtu = await detectHostMtu(ctx, inputs.parentInterface).catch(() => 1500)
    }
    const devicesKey = JSON.stringify([vxlanOn, ipipOn, ipv6, inputs.vxlan, inputs.ipipAddress])
    if (devicesKey !== this.devicesKey) {
      await enableForwarding(ctx, ipv6)
      const mtu = podMtu(this.hostMtu, { vxlan: vxlanOn, ipip: ipipOn })
      await writePodMtu(this.opts.mtuFile, mtu).catch((err: Error) => this.opts.log.warn({ err: err.message }, 'could not write the pod MTU file'))
      if (vxlanOn && inputs.vxlan && inputs.ipv4Address) {
        await ensureVxlan(ctx, {
          mtu: this.hostMtu - 50,
          mac: inputs.vxlan.mac,
          address: inputs.vxlan.address,
          localAddress: inputs.ipv4Address.split('/')[0]!,
          parentInterface: inputs.parentInterface,
        })
      }
      if (ipipOn && inputs.ipipAddress) {
        await ensureTunl0(ctx, { address: inputs.ipipAddress, mtu: this.hostMtu - 20 }).catch((err: Error) =>
          this.opts.log.error({ err: err.message }, 'cannot make tunl0 (does this kernel have ipip?); IPIP routes will fail'),
        )
      }
      this.devicesKey = devicesKey
    }
    const state = {
      pools: inputs.pools,
      routes: inputs.staticRoutes,
      localBlocks: inputs.localBlocks,
      vteps: remoteVteps(inputs.nodes, inputs.nodeName),
      localNode: {
        name: inputs.nodeName,
        ...(inputs.ipv4Address ? { ipv4Address: inputs.ipv4Address } : {}),
        ...(inputs.ipv6Address ? { ipv6Address: inputs.ipv6Address } : {}),
        parentInterface: inputs.parentInterface,
      },
    }
    const nodeAddresses = inputs.nodes.map((n) => [n.metadata.name, n.spec.bgp?.ipv4Address, n.spec.bgp?.ipv6Address])
    const contextKey = JSON.stringify([inputs.pools.map((p) => p.spec), state.vteps, state.localNode, nodeAddresses])
    const contextChanged = contextKey !== this.contextKey
    if (contextChanged) {
      this.desired.setContext(state, hopSource(this.opts.nextHops, inputs.nodes))
      this.contextKey = contextKey
    }
    // The static routes and blackholes are few: rendered whole each time, and they win over learned routes.
    const rendered = renderDesired(state, { protocol: this.opts.protocol })
    this.desired.setFixed(rendered.routes)
    const own = rendered.problems.filter((p) => p.path.startsWith('routes') || p.path.startsWith('localBlocks'))
    this.problems = [...this.desired.problems(), ...own].map((p) => `${p.path}: ${p.message}`)
    if (vxlanOn) await syncVtepEntries(ctx, VXLAN_DEVICE, rendered.neighbours, rendered.fdb)
    const nat = JSON.stringify(inputs.pools.map((p) => [p.spec.cidr, p.spec.natOutgoing, p.spec.disabled]))
    if (nat !== this.lastNat) {
      await applyNat(ctx, inputs.pools).catch((err: Error) => this.opts.log.warn({ err: err.message }, 'natOutgoing rules not applied'))
      this.lastNat = nat
    }
    this.reconciler.setDesired(this.desired, new Set(inputs.workloads))
    await this.run(() => (!this.started ? this.reconciler.start() : contextChanged ? this.reconciler.resync() : this.reconciler.apply()))
    this.started = true
  }

  /** Writes what the learned routes changed since the last write; nothing before the first update(). */
  async applyChanges(): Promise<void> {
    if (this.started) await this.run(() => this.reconciler.apply())
  }

  private async run(apply: () => Promise<ApplyResult>): Promise<void> {
    const t0 = performance.now()
    let result: ApplyResult
    try {
      result = await apply()
    } catch (err) {
      this.opts.onApply?.(err as Error, (performance.now() - t0) / 1000)
      throw err
    }
    this.opts.onApply?.(result, (performance.now() - t0) / 1000)
    if (result.errors.length > 0) this.opts.log.warn({ errors: result.errors.slice(0, 5).map((e) => e.message) }, `${result.errors.length} routes failed; retrying`)
  }

  /** The routes felix keeps in the kernel (its desired set), each rendered as it is read. */
  routes(): Iterable<KernelRoute> {
    return this.desired.values()
  }

  /** Stops watching; every route stays in the kernel. */
  async stop(): Promise<void> {
    await this.reconciler.stop()
  }
}
