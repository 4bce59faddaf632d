// The bridge from what the agent knows to what felix programs: learned routes from the speaker's
// Loc-RIB, pools and VTEPs from the cluster state, local blocks from origination, pods from IPAM.
// It assembles felix's DesiredState and runs the reconciler, devices, VTEP entries and NAT; the
// decisions of what a route looks like stay in felix.

import type { Logger } from 'pino'
import type { RouteSocket } from '../felix/route-socket.js'
import {
  ExecaRunner,
  RouteReconciler,
  VXLAN_DEVICE,
  applyNat,
  detectHostMtu,
  enableForwarding,
  ensureTunl0,
  ensureVxlan,
  podMtu,
  renderDesired,
  syncVtepEntries,
  writePodMtu,
  type DesiredState,
  type LearnedRoute,
  type ProcessRunner,
  type RemoteVtep,
  type KernelRoute,
  type ApplyResult,
} from '../felix/index.js'
import type { IPPool, Node } from '../config/resources/index.js'
import { formatPrefix } from '../bgp/codec/nlri.js'
import { kernelMetricOf } from '../bgp/policy/index.js'
import type { Rib } from '../bgp/rib/rib.js'

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
}

/** Learned routes from the Loc-RIB: best paths from peers (ours are not routed to ourselves). */
export function learnedRoutes(rib: Rib, nodes: readonly Node[]): LearnedRoute[] {
  const byAddress = new Map<string, string>()
  for (const n of nodes) {
    const a4 = n.spec.bgp?.ipv4Address?.split('/')[0]
    const a6 = n.spec.bgp?.ipv6Address?.split('/')[0]
    if (a4) byAddress.set(a4, n.metadata.name)
    if (a6) byAddress.set(a6, n.metadata.name)
  }
  const out: LearnedRoute[] = []
  for (const [prefix, best] of rib.locRib()) {
    if (best.path.peer === undefined) continue
    const hops = new Map<string, { address: string; nodeName?: string }>()
    for (const p of best.multipath.length > 0 ? best.multipath : [best.path]) {
      const address = p.attrs.nextHop[0] ?? p.attrs.attrs.nextHop
      if (address === undefined) continue
      const nodeName = byAddress.get(address)
      hops.set(address, nodeName ? { address, nodeName } : { address })
    }
    // A BGPFilter setPriority (or a Calico node's priority) is the kernel route's metric.
    const metric = kernelMetricOf(best.path.attrs.attrs.localPref)
    if (hops.size > 0) out.push({ prefix: formatPrefix(prefix), nextHops: [...hops.values()], ...(metric !== undefined ? { metric } : {}) })
  }
  return out
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

export class Dataplane {
  private readonly runner: ProcessRunner
  private readonly reconciler: RouteReconciler
  /** What the last render could not use (a pool or route it had to skip), for the log and the API. */
  problems: string[] = []
  private hostMtu: number | undefined
  private lastNat = ''
  private devicesKey = ''
  private started = false

  private current: ReadonlyMap<string, KernelRoute> = new Map()

  constructor(
    private readonly opts: {
      protocol: number
      resyncSeconds: number
      mtuFile: string
      log: Logger
      runner?: ProcessRunner
      /** felix's rtnetlink socket for writing routes; without one, `ip -batch`. */
      routeSocket?: RouteSocket
      /** Told about every apply, for /metrics. */
      onApply?: (result: ApplyResult | Error, seconds: number) => void
    },
  ) {
    this.runner = opts.runner ?? new ExecaRunner()
    this.reconciler = new RouteReconciler({
      runner: this.runner,
      protocol: opts.protocol,
      resyncIntervalMs: opts.resyncSeconds * 1000,
      vethPrefix: 'pinto',
      logger: opts.log,
      ...(opts.routeSocket !== undefined ? { routeSocket: opts.routeSocket } : {}),
    })
  }

  /** Renders and applies; cheap to call often (the reconciler coalesces overlapping runs). */
  async update(inputs: DataplaneInputs, learned: readonly LearnedRoute[]): Promise<void> {
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
    const state: DesiredState = {
      pools: inputs.pools,
      routes: learned,
      localBlocks: inputs.localBlocks,
      vteps: remoteVteps(inputs.nodes, inputs.nodeName),
      localNode: {
        name: inputs.nodeName,
        ...(inputs.ipv4Address ? { ipv4Address: inputs.ipv4Address } : {}),
        ...(inputs.ipv6Address ? { ipv6Address: inputs.ipv6Address } : {}),
        parentInterface: inputs.parentInterface,
      },
      workloads: inputs.workloads.map((address) => ({ address })),
    }
    const rendered = renderDesired(state, { protocol: this.opts.protocol })
    this.problems = rendered.problems.map((p) => `${p.path}: ${p.message}`)
    if (vxlanOn) await syncVtepEntries(ctx, VXLAN_DEVICE, rendered.neighbours, rendered.fdb)
    const nat = JSON.stringify(inputs.pools.map((p) => [p.spec.cidr, p.spec.natOutgoing, p.spec.disabled]))
    if (nat !== this.lastNat) {
      await applyNat(ctx, inputs.pools).catch((err: Error) => this.opts.log.warn({ err: err.message }, 'natOutgoing rules not applied'))
      this.lastNat = nat
    }
    this.reconciler.setDesired(rendered.routes, new Set(inputs.workloads))
    this.current = rendered.routes
    const t0 = performance.now()
    let result: ApplyResult
    try {
      result = this.started ? await this.reconciler.apply() : await this.reconciler.start()
    } catch (err) {
      this.opts.onApply?.(err as Error, (performance.now() - t0) / 1000)
      throw err
    }
    this.started = true
    this.opts.onApply?.(result, (performance.now() - t0) / 1000)
    if (result.errors.length > 0) this.opts.log.warn({ errors: result.errors.slice(0, 5).map((e) => e.message) }, `${result.errors.length} routes failed; retrying`)
  }

  /** The routes felix keeps in the kernel, as last applied. */
  routes(): Iterable<KernelRoute> {
    return this.current.values()
  }

  /** Stops watching; every route stays in the kernel. */
  async stop(): Promise<void> {
    await this.reconciler.stop()
  }
}
