// A CNI lab whose agent reads its node's pods from a real kube-apiserver (bridged into the lab's host namespace),
// with the datastore either the kubernetes one or a private etcd beside it. Pods are made with kubectl on node1
// (no scheduler: spec.nodeName is set), and ADDs and DELs go through the installed plugin with the pod's CNI_ARGS.
// Everything is removed at teardown by the harnesses it uses.

import type { Test } from 'tap'
import { openDatastore } from '../../config/datastore-open.js'
import type { Datastore } from '../../config/index.js'
import { encodeResource, resourceKey } from '../../config/resources/index.js'
import { IpamService } from '../../agent/ipam-service.js'
import { type Lab, type PluginRun, createLab, pintoConf } from '../cni/lab.js'
import { startEtcd } from '../harness/etcd.js'
import { bridgeLoopback } from '../harness/ns-bridge.js'
import type { KubeApiserver } from '../harness/kube-apiserver.js'
import { kubernetesApi } from '../ipam/stores.js'
import { waitFor } from '../harness/wait.js'
import { type AgentProcess, startAgent } from './agent-proc.js'

export const NODE = 'node1'
export const NETWORK = 'k8s-pod-network'

export interface PoolDef {
  readonly name: string
  readonly cidr: string
  readonly disabled?: boolean
}

export interface PodLab {
  readonly api: KubeApiserver
  readonly lab: Lab
  /** The agent now running (restartAgent() replaces it). */
  readonly agent: AgentProcess
  /** kill -9 of the agent, then one started again with the same settings and state dir. */
  restartAgent(): Promise<void>
  readonly store: Datastore
  /** Reads allocations from the datastore (the agent's service is in its own process). */
  readonly reader: IpamService
  /** Makes a namespace (with its default ServiceAccount, which pod admission wants) and its annotations. */
  namespace(name: string, annotations?: Record<string, string>): Promise<void>
  /** Makes a pod bound to `nodeName` (default node1). */
  pod(ns: string, name: string, opts?: { annotations?: Record<string, string>; nodeName?: string }): Promise<void>
  /** CNI ADD or DEL of the pod's sandbox `containerId` through the installed plugin. */
  cni(command: 'ADD' | 'DEL', ns: string, name: string, containerId: string): Promise<PluginRun>
  /** The pod's annotations as the apiserver has them now (undefined: no such pod). */
  annotations(ns: string, name: string): Promise<Record<string, string> | undefined>
  /** The addresses the sandbox's IPAM handle holds. */
  held(containerId: string): Promise<string[]>
  /** `kubectl delete pod --force --grace-period=0` (no CNI DEL follows); resolves once the pod GC freed the sandbox's addresses, with the seconds that took. */
  forceDeleteUntilFreed(ns: string, name: string, containerId: string): Promise<number>
}

const pool = (p: PoolDef): string => encodeResource({ apiVersion: 'projectcalico.org/v3', kind: 'IPPool', metadata: { name: p.name }, spec: { cidr: p.cidr, blockSize: p.cidr.includes(':') ? 122 : 26, ...(p.disabled ? { disabled: true } : {}) } } as never)

/** The lab, or why it cannot run here (no Go to build Kubernetes). `t` is the file's root tap object. */
export async function kubePodLab(t: Test, mode: 'kubernetes' | 'etcd', pools: readonly PoolDef[], env: Record<string, string> = {}): Promise<PodLab | { skip: string }> {
  const k8s = await kubernetesApi(t)
  if ('skip' in k8s) return k8s
  const { api } = k8s
  const lab = await createLab(t, { service: false })
  await bridgeLoopback(t, lab.topo, lab.hostNs, Number(new URL(api.url).port))
  let spec = 'kubernetes'
  if (mode === 'etcd') {
    const etcd = await startEtcd(t)
    spec = `etcd://${etcd.endpoint}`
    await bridgeLoopback(t, lab.topo, lab.hostNs, Number(etcd.endpoint.split(':')[1]))
  }
  const store = await openDatastore(spec, { kubeEnv: { KUBECONFIG: api.kubeconfig } })
  t.teardown(() => store.close())
  for (const p of pools) await store.create(resourceKey('IPPool', p.name), pool(p))
  const agentEnv = { PINTO_DATASTORE: spec, KUBECONFIG: api.kubeconfig, PINTO_NODENAME: NODE, PINTO_IPAM_REPAIR_SECONDS: '0', ...env }
  let agent = await startAgent(t, lab, agentEnv)
  const reader = new IpamService({ store, node: NODE, socket: `${lab.dir}/reader.sock` })
  const conf = pintoConf(lab, '1.0.0')
  const netns = new Map<string, string>()
  const held = async (containerId: string): Promise<string[]> => {
    const handle = `${NETWORK}.${containerId}`
    return (await reader.allocations(handle)).filter((a) => a.handle === handle).map((a) => a.address)
  }
  return {
    api, lab, store, reader,
    get agent() {
      return agent
    },
    async restartAgent() {
      await agent.kill('SIGKILL')
      agent = await startAgent(t, lab, agentEnv)
    },
    async namespace(name, annotations = {}) {
      await api.kubectlWithInput(JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, annotations } }), 'create', '-f', '-')
      await api.kubectl('-n', name, 'create', 'serviceaccount', 'default').catch((err: Error) => {
        if (!/already exists/.test(err.message)) throw err
      })
    },
    async pod(ns, name, opts = {}) {
      const pod = {
        apiVersion: 'v1', kind: 'Pod',
        metadata: { name, namespace: ns, annotations: opts.annotations ?? {} },
        spec: { nodeName: opts.nodeName ?? NODE, automountServiceAccountToken: false, containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] },
      }
      await api.kubectlWithInput(JSON.stringify(pod), 'create', '-f', '-')
    },
    async cni(command, ns, name, containerId) {
      let path = netns.get(containerId)
      if (path === undefined) netns.set(containerId, (path = await lab.pod(containerId.slice(0, 8))))
      return lab.exec('pinto', command, conf, { containerId, netns: path, args: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${ns};K8S_POD_NAME=${name}` })
    },
    async annotations(ns, name) {
      const out = await api.kubectl('-n', ns, 'get', 'pod', name, '-o', 'json', '--ignore-not-found')
      if (out.trim() === '') return undefined
      return ((JSON.parse(out) as { metadata: { annotations?: Record<string, string> } }).metadata.annotations) ?? {}
    },
    held,
    async forceDeleteUntilFreed(ns, name, containerId) {
      await api.kubectl('-n', ns, 'delete', 'pod', name, '--force', '--grace-period=0')
      const deletedAt = Date.now()
      await waitFor(async () => (await held(containerId)).length === 0, { timeoutMs: 60_000, intervalMs: 250, what: `the addresses of force-deleted pod ${ns}/${name} freed` })
      return (Date.now() - deletedAt) / 1000
    },
  }
}

/** The first pod address of an ADD's result, without its length. */
export function addressOf(r: PluginRun): string | undefined {
  const ips = (r.json?.['ips'] ?? []) as { address: string }[]
  return ips[0]?.address.split('/')[0]
}
