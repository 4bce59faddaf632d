// A lab whose pinto-node agents run over the kubernetes datastore, as on a cluster with Calico's KDD: one
// kube-apiserver per test file (pinto's CRDs applied, one IPv4 pool 198.18.0.0/16 in /26 blocks), node namespaces
// on one fabric with the apiserver bridged into each on its own port (its certificate is for 127.0.0.1), core Nodes
// created as a kubelet registers them, and the CNI plugins run in a node's namespace against its agent. Everything
// is stopped and removed at teardown, even when the test fails.
//
//   const lab = await kubeLab(t)                      // the file's root tap object; { skip } where Go is absent
//   const n1 = await lab.addNode('n1', '192.0.2.11')   // a namespace on the fabric (/24), the apiserver bridged in
//   await lab.registerNode(n1, { rack: 'a' })          // the core Node as the kubelet makes it: InternalIP, labels
//   const a1 = lab.startAgent(t, n1)                   // pinto-node (kernel dataplane) on PINTO_DATASTORE=kubernetes
//   await a1.ready()                                   // an agent waits for its Node before it answers
//   const netns = await lab.pod('p1')                  // an empty pod namespace
//   await lab.cni(n1, a1, 'ADD', { containerId: 'c1', netns })
//   lab.api.kubectl('label', 'node', 'n1', 'rack=b'); lab.api.crash(); lab.api.freeze()
//   lab.store                                          // the kubernetes datastore, opened from this process
//   lab.peers(a1), lab.routes(n1), logged(a1, /waiting/)

import { execa } from 'execa'
import { join } from 'node:path'
import { mkdir } from 'node:fs/promises'
import type { Test } from 'tap'
import { type Datastore, encodeResource, openDatastore, resourceKey } from '../../config/index.js'
import { installCni } from '../../agent/install-cni.js'
import { kernelRoutes, type KernelRouteRow } from '../../agent/demo/observe.js'
import { BUNDLE, REF_CNI, execPlugin, type Attachment, type PluginRun } from '../cni/lab.js'
import type { KubeApiserver } from '../harness/kube-apiserver.js'
import { type NetNode, type Topology, createTopology } from '../harness/netns.js'
import { bridgeLoopback } from '../harness/ns-bridge.js'
import { kubernetesApi } from '../ipam/stores.js'
import { type AgentProcess, startAgent } from './agent-process.js'

export const POOL_CIDR = '198.18.0.0/16'

export interface KubeLab {
  readonly api: KubeApiserver
  readonly topo: Topology
  /** The admin kubeconfig the agents use (its server, https://127.0.0.1:PORT, is bridged into every node). */
  readonly kubeconfig: string
  /** The kubernetes datastore, opened from this process (closed at teardown). */
  readonly store: Datastore
  /** A node namespace at `v4` (/24 on the fabric) with the apiserver reachable inside; no core Node, no agent. */
  addNode(name: string, v4: string): Promise<NetNode>
  /** Creates the core Node as the kubelet registers it: its InternalIP and hostname, Ready, the given labels, no annotations. */
  registerNode(node: NetNode, labels?: Readonly<Record<string, string>>): Promise<void>
  /**
   * pinto-node in `node`'s namespace over the kubernetes datastore, with the kernel dataplane; `env` overrides.
   * Stopped at t's teardown; when t failed, the end of its log goes into the TAP output first.
   */
  startAgent(t: Test, node: NetNode, env?: Readonly<Record<string, string>>): AgentProcess
  /** A new empty pod namespace (loopback up); its path. */
  pod(name: string): Promise<string>
  /** The pinto CNI plugin run in `node`'s namespace with `agent`'s socket. */
  cni(node: NetNode, agent: AgentProcess, command: string, att: Partial<Attachment>): Promise<PluginRun>
  /** The network config the plugins get for `agent`. */
  cniConf(agent: AgentProcess): Record<string, unknown>
  /** GET /v1/peers of an agent. */
  peers(agent: AgentProcess): Promise<PeerRow[]>
  /** felix's routes in a node's kernel. */
  routes(node: NetNode): Promise<KernelRouteRow[]>
}

export interface PeerRow {
  readonly name: string
  readonly address: string
  readonly state: string
  readonly since: string | null
}

/** The agent's JSON log lines whose msg matches `re`. */
export function logged(agent: AgentProcess, re: RegExp): Record<string, unknown>[] {
  return agent
    .stdout()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((l) => typeof l['msg'] === 'string' && re.test(l['msg']))
}

export async function kubeLab(t: Test): Promise<KubeLab | { skip: string }> {
  const k8s = await kubernetesApi(t)
  if ('skip' in k8s) return k8s
  const { api } = k8s
  const port = Number(new URL(api.url).port)
  const store = await openDatastore('kubernetes', { kubeEnv: { KUBECONFIG: api.kubeconfig } })
  t.teardown(() => store.close())
  await store.create(resourceKey('IPPool', 'pods-v4'), encodeResource({ apiVersion: 'projectcalico.org/v3', kind: 'IPPool', metadata: { name: 'pods-v4' }, spec: { cidr: POOL_CIDR, blockSize: 26, nodeSelector: 'all()' } } as never))
  const topo = await createTopology(t)
  const bin = join(await topo.tempDir('cni'), 'bin')
  await mkdir(bin)
  // Installed as on a node: copies with this Node.js in their #! line.
  installCni({ binDir: bin, confDir: undefined, node: process.execPath, bundleDir: BUNDLE })
  const cniPath = `${bin}:${REF_CNI}`
  const pods: string[] = []
  t.teardown(async () => {
    for (const ns of pods) await execa('ip', ['netns', 'del', ns], { reject: false })
  })
  const prefix = topo.fabric.replace(/-fabric$/, '')
  const lab: KubeLab = {
    api, topo, store,
    kubeconfig: api.kubeconfig,
    async addNode(name, v4) {
      const node = await topo.addNode({ name, v4: `${v4}/24` })
      await bridgeLoopback(t, topo, node.ns, port)
      return node
    },
    async registerNode(node, labels = {}) {
      const obj = {
        apiVersion: 'v1', kind: 'Node',
        metadata: { name: node.name, labels: { 'kubernetes.io/hostname': node.name, 'kubernetes.io/os': 'linux', ...labels } },
        status: {
          addresses: [{ type: 'InternalIP', address: node.v4 }, { type: 'Hostname', address: node.name }],
          conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', lastHeartbeatTime: new Date().toISOString(), lastTransitionTime: new Date().toISOString() }],
        },
      }
      await api.kubectlWithInput(JSON.stringify(obj), 'create', '-f', '-')
    },
    startAgent(at, node, env = {}) {
      at.teardown(() => {
        if (at.passing()) return
        const tail = (text: string): string => text.trim().split('\n').slice(-80).join('\n')
        at.comment(`pinto-node ${node.name} (exit ${agent.child.exitCode ?? agent.child.signalCode ?? 'none'}):\n${tail(agent.stdout())}\n${tail(agent.stderr())}`)
      })
      const agent = startAgent(at, node.ns, {
        PINTO_NODENAME: node.name,
        PINTO_IP: `${node.v4}/24`,
        PINTO_DATASTORE: 'kubernetes',
        KUBECONFIG: api.kubeconfig,
        PINTO_DATAPLANE: 'kernel',
        PINTO_IPV4POOL_CIDR: POOL_CIDR,
        PINTO_LOG_LEVEL: 'info',
        ...env,
      })
      return agent
    },
    async pod(name) {
      // Apart from the node namespaces (${prefix}-<node>).
      const ns = `${prefix}-p-${name}`
      await execa('ip', ['netns', 'add', ns])
      pods.push(ns)
      await execa('ip', ['-n', ns, 'link', 'set', 'lo', 'up'])
      return `/run/netns/${ns}`
    },
    cniConf(agent) {
      return {
        cniVersion: '1.0.0', name: 'k8s-pod-network', type: 'pinto', mtu_file: join(agent.dir, 'mtu'),
        ipam: { type: 'pinto-ipam', socket: join(agent.dir, 'pinto.sock'), assign_ipv4: true },
      }
    },
    cni(node, agent, command, att) {
      return execPlugin({ cniPath, hostNs: node.ns }, join(bin, 'pinto'), command, lab.cniConf(agent), att)
    },
    async peers(agent) {
      const r = await agent.get('/v1/peers')
      return (r.body as { peers?: PeerRow[] } | undefined)?.peers ?? []
    },
    routes: (node) => kernelRoutes(node.ns),
  }
  return lab
}
