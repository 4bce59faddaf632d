// Helpers for felix's kernel tests: pods wired the way the CNI plugin wires them (veth, /32 routes,
// proxy ARP), reading felix's routes back as `ip` lines, and running a whole felix node in a namespace.
// Built on test/harness/netns.ts; every namespace made here is removed in t.teardown.

import { execa } from 'execa'
import type { IPPool } from '../../config/resources/index.js'
import type { NetNode, Teardown, Topology } from '../harness/netns.js'
import { waitFor } from '../harness/wait.js'
import { ensureVxlan, enableForwarding, ExecaRunner, renderDesired, RouteReconciler, syncVtepEntries, workloadAddresses, type DesiredState, type ProcessRunner, type RouteReconcilerOptions } from '../../felix/index.js'
import { replaceLine } from '../../felix/kernel-route.js'
import { parseRouteJson } from '../../felix/route-parse.js'

export const PROTO = 87

export function pool(name: string, cidr: string, spec: Partial<IPPool['spec']> = {}): IPPool {
  return { apiVersion: 'projectcalico.org/v3', kind: 'IPPool', metadata: { name }, spec: { cidr, ...spec } }
}

/** felix's routes in a namespace as `route replace` lines, sorted, for exact comparison. */
export async function ourRoutes(ns: string, family: 4 | 6 = 4, proto = PROTO): Promise<string[]> {
  const r = await execa('ip', ['-n', ns, '-N', '-json', `-${family}`, 'route', 'show', 'table', '254'])
  return parseRouteJson(r.stdout, family, 254)
    .filter((x) => x.protocol === proto)
    .map(replaceLine)
    .sort()
}

export interface Pod {
  readonly ns: string
  readonly address: string
  readonly hostIf: string
}

/**
 * A pod namespace attached to `node` as the CNI plugin does it: veth with the host end `hostIf`, the pod's
 * /32 on eth0, a default route via 169.254.1.1 (answered by proxy ARP on the host end), and the host's
 * `/32 dev hostIf scope link` route.
 */
export async function addPod(t: Teardown, topo: Topology, node: NetNode, name: string, address: string, hostIf: string): Promise<Pod> {
  const ns = `pth${process.pid}-${topo.id}-${name}`
  t.teardown(() => execa('ip', ['netns', 'del', ns], { reject: false }))
  await execa('ip', ['netns', 'add', ns])
  const ipn = (n: string, args: string[]) => execa('ip', ['-n', n, ...args])
  await ipn(node.ns, ['link', 'add', hostIf, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns])
  await ipn(ns, ['link', 'set', 'lo', 'up'])
  await ipn(ns, ['addr', 'add', `${address}/32`, 'dev', 'eth0'])
  await ipn(ns, ['link', 'set', 'eth0', 'up'])
  await ipn(ns, ['route', 'add', '169.254.1.1', 'dev', 'eth0', 'scope', 'link'])
  await ipn(ns, ['route', 'add', 'default', 'via', '169.254.1.1', 'dev', 'eth0'])
  await execa('ip', ['netns', 'exec', node.ns, 'sysctl', '-q', '-w', `net.ipv4.conf.${hostIf}.proxy_arp=1`])
  await ipn(node.ns, ['link', 'set', hostIf, 'up'])
  await ipn(node.ns, ['route', 'add', `${address}/32`, 'dev', hostIf, 'scope', 'link'])
  return { ns, address, hostIf }
}

/** Pings until one reply comes back or the deadline passes. */
export async function pingWorks(fromNs: string, to: string, timeoutMs = 5000): Promise<boolean> {
  return waitFor(
    async () => {
      const r = await execa('ip', ['netns', 'exec', fromNs, 'ping', '-c', '1', '-W', '1', to], { reject: false })
      return r.exitCode === 0
    },
    { timeoutMs, intervalMs: 100, what: `ping ${to} from ${fromNs}` },
  ).catch(() => false)
}

export interface VxlanNode {
  readonly node: NetNode
  readonly reconciler: RouteReconciler
}

/**
 * A whole felix node as the agent will run it: forwarding on, vxlan.pinto up with its VTEP, neighbours and
 * FDB in place, the reconciler started. The reconciler is stopped in t.teardown.
 */
export async function startVxlanNode(
  t: Teardown,
  node: NetNode,
  vtep: { mac: string; tunnelAddress: string },
  state: DesiredState,
  opts: Partial<RouteReconcilerOptions> = {},
  runner: ProcessRunner = new ExecaRunner(),
): Promise<VxlanNode> {
  const ctx = { runner, netns: node.ns }
  await enableForwarding(ctx, false)
  await ensureVxlan(ctx, { mtu: 1450, mac: vtep.mac, address: vtep.tunnelAddress, localAddress: node.v4 ?? '', parentInterface: node.ifname })
  const out = renderDesired(state, { protocol: PROTO })
  if (out.problems.length > 0) throw new Error(`render problems: ${JSON.stringify(out.problems)}`)
  await syncVtepEntries(ctx, 'vxlan.pinto', out.neighbours, out.fdb)
  const reconciler = new RouteReconciler({ runner, netns: node.ns, protocol: PROTO, ...opts })
  t.teardown(() => reconciler.stop())
  reconciler.setDesired(out.routes, workloadAddresses(state))
  const res = await reconciler.start()
  if (res.errors.length > 0) throw new Error(`apply errors: ${JSON.stringify(res.errors)}`)
  return { node, reconciler }
}

/** A runner of real processes that counts the table reads made with `ip route show`. */
export function countingRunner(): { runner: ProcessRunner; ipReads: () => number } {
  const execa = new ExecaRunner()
  let reads = 0
  const runner: ProcessRunner = {
    run: (cmd, args, opts) => {
      if (args.includes('route') && args.includes('show')) reads++
      return execa.run(cmd, args, opts)
    },
    watch: (cmd, args, opts) => execa.watch(cmd, args, opts),
  }
  return { runner, ipReads: () => reads }
}
