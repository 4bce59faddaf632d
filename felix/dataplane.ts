// felix as the agent drives it: what the cluster says (pools, nodes and their VTEPs, local blocks, pods,
// static routes) assembled into the desired state, then devices, VTEP entries, NAT and the route
// reconciler brought to it. The learned routes reach the same desired table through learned-feed.ts.

import type { Logger } from 'pino'
import { deepEqual, nodeAddressNames, type IPPool, type Node } from '../config/index.js'
import type { NextHopTable } from '../bgp/index.js'
import { DesiredTable, type HopSource } from './desired-table.js'
import type { LearnedNextHop, LearnedRoute, RemoteVtep } from './desired-state.js'
import { detectHostMtu, enableForwarding, ensureTunl0, ensureVxlan, podMtu, writePodMtu } from './devices.js'
import type { KernelRoute } from './kernel-route.js'
import { applyNat } from './nat.js'
import { renderDesired, VXLAN_DEVICE } from './render-routes.js'
import { RouteReconciler, type ApplyResult } from './route-reconciler.js'
import type { RouteSocket } from './route-socket.js'
import { ExecaRunner, type ProcessRunner } from './runner.js'
import { syncVtepEntries } from './vtep-entries.js'

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
  const byAddress = nodeAddressNames(nodes)
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
  /** What the NAT rules, the devices and the render context were last made from (undefined: not yet). */
  private lastNat: unknown
  private devicesKey: unknown
  private contextKey: unknown
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
    const devicesKey = [vxlanOn, ipipOn, ipv6, inputs.vxlan, inputs.ipipAddress]
    if (this.devicesKey === undefined || !deepEqual(devicesKey, this.devicesKey)) {
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
    const contextKey = [inputs.pools.map((p) => p.spec), state.vteps, state.localNode, nodeAddresses]
    const contextChanged = this.contextKey === undefined || !deepEqual(contextKey, this.contextKey)
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
    const nat = inputs.pools.map((p) => [p.spec.cidr, p.spec.natOutgoing, p.spec.disabled])
    if (this.lastNat === undefined || !deepEqual(nat, this.lastNat)) {
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
