// A demo cluster's pods: each a network namespace wired by the real `pinto` CNI plugin, exec'd as a
// container runtime does (ADD, CHECK, DEL) in its node's namespace, or in the node's pod under podman.
// It names the pods and keeps the list of those wired; the namespaces are the cluster's, removed with it.

import { AddFailed, DemoError, type DemoNode, type DemoPod } from './cluster-spec.js'
import type { Namespaces } from './netns.js'
import { execPinto } from './node-process.js'
import type { PodmanNodes } from './podman-nodes.js'

/** What of the cluster its pods are made in. */
export interface PodHost {
  /** The cluster's id, part of every container id so two clusters never share one. */
  readonly id: string
  /** Where the process runtime's plugins are installed. */
  readonly cniPath: string
  readonly podman: PodmanNodes | undefined
  node(name: string): DemoNode
}

export type CniCommand = 'ADD' | 'DEL' | 'CHECK'
export interface CniOutcome {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

export class DemoPods {
  /** The pods wired and not deleted, in the order they were added. */
  readonly list: DemoPod[] = []
  private seq = 0
  private readonly madePerNode = new Map<string, number>()

  constructor(
    private readonly host: PodHost,
    private readonly netns: Pick<Namespaces, 'add' | 'remove'>,
  ) {}

  /** `ipv4Pools`: the pools the pod's CNI config names (its ipam `ipv4_pools`), e.g. a Manual pool. */
  async add(n: DemoNode, opts: { ipv4Pools?: readonly string[] } = {}): Promise<DemoPod> {
    const seq = ++this.seq
    // Numbered per node (node1p1, node1p2, ...), never reused after a DEL: the name is the pod's identity.
    const nth = (this.madePerNode.get(n.name) ?? 0) + 1
    this.madePerNode.set(n.name, nth)
    const name = `${n.name}p${nth}`
    const ns = await this.netns.add(name)
    const pod = { name, node: n.name, ns, address: '', containerId: `demo-${this.host.id}-${seq}` }
    const r = await this.cni(n, 'ADD', pod, opts.ipv4Pools)
    if (r.code !== 0) throw new AddFailed(pod, `${name}: CNI ADD failed (exit ${r.code}): ${r.stdout.trim()} ${r.stderr.trim()}`)
    const result = JSON.parse(r.stdout) as { ips?: { address: string }[] }
    const address = result.ips?.[0]?.address?.split('/')[0]
    if (address === undefined) throw new DemoError(`${name}: the CNI result has no IP address: ${r.stdout}`)
    const added = { ...pod, address }
    this.list.push(added)
    return added
  }

  /** CNI DEL of a pod, then its namespace goes; a failed DEL leaves both (the caller may try again, as kubelet does). */
  async del(pod: DemoPod): Promise<void> {
    const r = await this.cni(this.host.node(pod.node), 'DEL', pod)
    if (r.code !== 0) throw new DemoError(`${pod.name}: CNI DEL failed (exit ${r.code}): ${r.stdout.trim()} ${r.stderr.trim()}`)
    await this.netns.remove(pod.ns)
    const i = this.list.indexOf(pod)
    if (i >= 0) this.list.splice(i, 1)
  }

  /** Execs the node's installed `pinto` plugin as a runtime does: the verb, the pod's identity, the network config on stdin. */
  async cni(n: DemoNode, command: CniCommand, pod: Pick<DemoPod, 'name' | 'ns' | 'containerId'>, ipv4Pools?: readonly string[]): Promise<CniOutcome> {
    const cniEnv = {
      CNI_COMMAND: command,
      CNI_CONTAINERID: pod.containerId,
      CNI_NETNS: `/run/netns/${pod.ns}`,
      CNI_IFNAME: 'eth0',
      CNI_ARGS: `K8S_POD_NAMESPACE=demo;K8S_POD_NAME=${pod.name}`,
    }
    const podman = this.host.podman
    if (podman) {
      if (ipv4Pools !== undefined) throw new DemoError('ipv4Pools: the podman runtime uses the installed network config, which names no pool')
      return podman.cni(n, cniEnv)
    }
    return execPinto(n, this.host.cniPath, cniEnv, ipv4Pools)
  }
}
