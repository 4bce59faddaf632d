// The lab of the Service advertisement tests: a real kube-apiserver (the harness's, on this process's loopback,
// bridged into every node namespace), node namespaces on one fabric with real pinto-node processes over the
// kubernetes datastore or an etcd with the apiserver's kubeconfig beside it, and a BIRD top-of-rack peered with
// every node by eBGP. What it makes is removed at teardown, even when the test fails.

import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import type { Test } from 'tap'
import { type DemoNode } from '../../agent/demo/cluster-spec.js'
import { startNodeAgent, stopNodeAgent } from '../../agent/demo/node-process.js'
import { startTor, TOR_ADDRESS, TOR_AS, type Tor } from '../../agent/demo/tor.js'
import { openDatastore } from '../../config/datastore-open.js'
import type { Datastore } from '../../config/datastore.js'
import type { Resource } from '../../config/resources/index.js'
import type { KubeApiserver } from '../harness/kube-apiserver.js'
import { createTopology, type Topology } from '../harness/netns.js'
import { bridgeLoopback } from '../harness/ns-bridge.js'
import { waitFor } from '../harness/wait.js'

export const CLUSTER_AS = 64512
const API_PORT = 9099

export interface ServicesLab {
  readonly topo: Topology
  readonly tor: Tor
  readonly nodes: DemoNode[]
  /** Starts (or starts again) a node's agent with this datastore and environment. */
  startAgent(n: DemoNode, env: Record<string, string>): Promise<void>
  /** SIGTERM, pinto-node's graceful stop. */
  stopAgent(n: DemoNode): Promise<void>
  /** The next hops (the nodes' addresses) BIRD holds for exactly this prefix, sorted; [] when it has none. */
  nextHops(prefix: string): Promise<string[]>
  /** Waits until BIRD's next hops for the prefix are exactly `want`. */
  waitNextHops(prefix: string, want: readonly string[], what: string): Promise<string[]>
}

/** The lab: `n` nodes (node1.. at 192.0.2.11..) and the ToR at 192.0.2.1, the apiserver's port reachable in every node. */
export async function servicesLab(t: Test, api: KubeApiserver, n: number): Promise<ServicesLab> {
  const topo = await createTopology(t)
  const torNs = (await topo.addNode({ name: 'tor', v4: `${TOR_ADDRESS}/24` })).ns
  const dir = await topo.tempDir('services')
  const apiPort = Number(new URL(api.url).port)
  const nodes: DemoNode[] = []
  for (let i = 1; i <= n; i++) {
    const name = `node${i}`
    const address = `192.0.2.${10 + i}`
    const ns = (await topo.addNode({ name, v4: `${address}/24` })).ns
    await bridgeLoopback(t, topo, ns, apiPort)
    const nodeDir = join(dir, name)
    await mkdir(nodeDir)
    nodes.push({ name, ns, address, dir: nodeDir, socket: join(nodeDir, 'pinto.sock'), mtuFile: join(nodeDir, 'mtu'), log: join(nodeDir, 'pinto-node.log'), reflector: false, agent: undefined })
  }
  // The ToR originates nothing of its own: what it holds is what the nodes advertise.
  const tor = await startTor(torNs, join(dir, 'tor'), nodes.map((x) => ({ name: x.name, address: x.address, as: CLUSTER_AS })), [])
  topo.trackPid(tor.pid)
  t.teardown(async () => {
    await Promise.all(nodes.map((x) => stopNodeAgent(x, 'SIGTERM', 3000)))
  })
  const nextHops = async (prefix: string): Promise<string[]> => {
    // birdc exits 1 with "Network not found" when BIRD holds no route for the prefix.
    const out = await tor.birdc('show', 'route', 'all', prefix).catch((err: Error) => {
      if (/Network not found/.test(err.message)) return ''
      throw err
    })
    return [...out.matchAll(/BGP\.next_hop: (\S+)/g)].map((m) => m[1]!).sort()
  }
  return {
    topo,
    tor,
    nodes,
    async startAgent(x, env) {
      await startNodeAgent(x, {
        node: process.execPath,
        timeoutMs: 90_000,
        env: {
          PINTO_NODENAME: x.name,
          PINTO_IP: `${x.address}/24`,
          PINTO_SOCKET: x.socket,
          PINTO_API_SOCKET: join(x.dir, 'api.sock'),
          PINTO_MTU_FILE: x.mtuFile,
          PINTO_STATE_DIR: x.dir,
          PINTO_API_LISTEN: `127.0.0.1:${API_PORT}`,
          PINTO_LOG_LEVEL: 'info',
          // Nothing of the machine's own cluster, whatever this process's environment holds.
          KUBECONFIG: '',
          KUBERNETES_SERVICE_HOST: '',
          ...env,
        },
      })
    },
    stopAgent: (x) => stopNodeAgent(x, 'SIGTERM', 10_000),
    nextHops,
    async waitNextHops(prefix, want, what) {
      const sorted = [...want].sort()
      return waitFor(async () => {
        const got = await nextHops(prefix)
        return JSON.stringify(got) === JSON.stringify(sorted) ? got : undefined
      }, { timeoutMs: 30_000, intervalMs: 200, what }).catch(async (err: Error) => {
        throw new Error(`${err.message}; BIRD holds ${prefix} from ${JSON.stringify(await nextHops(prefix))}`)
      })
    },
  }
}

/** The Calico resources of the lab: the BGP configuration given and the ToR as a global BGPPeer. */
export function labResources(config: Record<string, unknown>): Resource[] {
  return [
    { apiVersion: 'projectcalico.org/v3', kind: 'BGPConfiguration', metadata: { name: 'default' }, spec: { asNumber: CLUSTER_AS, ...config } },
    { apiVersion: 'projectcalico.org/v3', kind: 'BGPPeer', metadata: { name: 'tor' }, spec: { peerIP: TOR_ADDRESS, asNumber: TOR_AS } },
  ] as Resource[]
}

/** A datastore the test writes Calico's resources through, closed at teardown. */
export async function openStore(t: Test, spec: string, env: Record<string, string> = {}): Promise<Datastore> {
  const store = await openDatastore(spec, { kubeEnv: env })
  t.teardown(() => store.close())
  return store
}
