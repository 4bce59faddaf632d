// A real Kubernetes cluster on one machine, for `pintoctl demo --runtime kubernetes`, the tests and the
// benches: a fabric bridge, a control plane namespace (control-plane.ts) and N nodes (kube-node.ts), each with
// containerd, a kubelet and kube-proxy; the images imported into every node (images.ts); then pinto installed
// from deploy/kubernetes as an operator applies it. It owns every namespace, process, cgroup and directory it
// makes and removes them all in destroy(), also when start-up fails half way.

import { mkdtemp, rm } from 'node:fs/promises'
import { readdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { execa } from 'execa'
import { stringify } from 'yaml'
import { CLUSTER_AS } from '../cluster-resources.js'
import { fillEtcd, findObject, readManifest, type EtcdValues, type KubeObject } from '../kube-manifest.js'
import { ETCD_ADDRESS, ROOT } from '../cluster-spec.js'
import { startEtcd, type DemoEtcd } from '../etcd.js'
import { isAlive, Namespaces } from '../netns.js'
import { startControlPlane, type ControlPlane } from './control-plane.js'
import { busyboxImage, corednsImage, importImages, pauseImage, PAUSE_IMAGE, podmanImage, type ImageArchive } from './images.js'
import { DNS_IP, dnsObjects } from './dns.js'
import { KubeNode, removeCgroupRoot } from './kube-node.js'
import { startTor, TOR_ADDRESS, TOR_AS, type Tor } from '../tor.js'

/** The top-of-rack router's address, every host's default gateway. */
export const FABRIC_GATEWAY = TOR_ADDRESS
export const CONTROL_PLANE_ADDRESS = '192.0.2.10'
/** Node i (from 0) is 192.0.2.(11 + i). */
export const nodeAddress = (i: number): string => `192.0.2.${11 + i}`
export const SERVICE_CIDR = '198.51.100.0/24'
export const SERVICE_IP = '198.51.100.1'
export const POD_CIDR = '198.18.0.0/16'

/** The binaries a cluster runs, built by scripts/kubernetes.js. */
export const CLUSTER_BINARIES = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler', 'kubelet', 'kube-proxy', 'kubectl', 'containerd', 'containerd-shim-runc-v2', 'ctr', 'coredns'] as const

/** pinto's manifests, as shipped: the Kubernetes API as datastore (kdd/) or etcd (the default kustomization). */
export const MANIFESTS = { kubernetes: join(ROOT, 'deploy', 'kubernetes', 'kdd', 'pinto.yaml'), etcd: join(ROOT, 'deploy', 'kubernetes', 'pinto.yaml') } as const
export const CHART = join(ROOT, 'deploy', 'helm', 'pinto')

export interface KubeClusterSpec {
  readonly nodes: number
  /** pinto's image, in podman's store (scripts/image.js builds it). */
  readonly image: string
  readonly podmanEnv: NodeJS.ProcessEnv
  /** More images every node gets (agnhost, say). */
  readonly images?: readonly ImageArchive[]
  /** More environment for the pinto-node container (a grace period shortened for a test, say). */
  readonly agentEnv?: Readonly<Record<string, string>>
  /**
   * pinto's datastore: the Kubernetes API (default), or an etcd with TLS on a fabric host of its own, which the
   * etcd manifest's pinto-config and pinto-etcd-secrets are filled in for.
   */
  readonly datastore?: 'kubernetes' | 'etcd'
  /** Runs pinto only on the nodes with these labels (the others keep whatever network they have). */
  readonly pintoNodeSelector?: Readonly<Record<string, string>>
  /** CoreDNS as the cluster's DNS, started once pods have a network (default true). */
  readonly dns?: boolean
  /** Installs pinto from its manifests once the nodes are up (default true). */
  readonly installPinto?: boolean
  readonly say?: (line: string) => void
}

interface BuildScript {
  ensureKubernetes(names: readonly string[]): Promise<string>
  /** The CoreDNS version scripts/coredns builds, e.g. v1.14.7. */
  readonly COREDNS_VERSION: string
}

const buildScript = async (): Promise<BuildScript> => (await import(pathToFileURL(join(ROOT, 'scripts', 'kubernetes.js')).href)) as BuildScript

/** The Kubernetes binaries' directory, building what is missing (scripts/kubernetes.js, with Go). */
export async function kubernetesBinaries(names: readonly string[] = CLUSTER_BINARIES): Promise<string> {
  return (await buildScript()).ensureKubernetes(names)
}

/** The Go module cache's copy of k8s.io/kubernetes (pause.c and agnhost's files are in it). */
export async function kubernetesSource(): Promise<string> {
  const r = await execa('go', ['list', '-m', '-f', '{{.Dir}}', 'k8s.io/kubernetes'], { cwd: join(ROOT, 'scripts', 'kubernetes') })
  return String(r.stdout).trim()
}

/** Cgroup roots of runs whose creating process is gone (named like the namespaces: pdm<pid>-<id>-<node>). */
async function sweepCgroups(): Promise<void> {
  for (const d of readdirSync('/sys/fs/cgroup/pids', { withFileTypes: true })) {
    const m = /^pdm(\d+)-[0-9a-f]{6}-/.exec(d.name)
    if (m !== null && d.isDirectory() && !isAlive(Number(m[1]))) await removeCgroupRoot(d.name)
  }
}

/** The shipped manifest with this cluster's choices: pinto's image, the pool's CIDR, and more agent settings. */
export async function clusterManifest(file: string, image: string, agentEnv: Readonly<Record<string, string>> = {}, nodeSelector: Readonly<Record<string, string>> = {}, etcd?: EtcdValues): Promise<KubeObject[]> {
  const docs = readManifest(file)
  if (etcd !== undefined) await fillEtcd(docs, etcd)
  const config = findObject(docs, 'ConfigMap', 'pinto-config') as { data: Record<string, string> }
  config.data['ipv4pool_cidr'] = POD_CIDR
  const ds = findObject(docs, 'DaemonSet', 'pinto-node') as { spec: { template: { spec: { nodeSelector?: Record<string, string>; initContainers: { image: string }[]; containers: { name: string; image: string; env?: { name: string; value: string }[] }[] } } } }
  const pod = ds.spec.template.spec
  pod.nodeSelector = { ...pod.nodeSelector, ...nodeSelector }
  for (const c of [...ds.spec.template.spec.initContainers, ...ds.spec.template.spec.containers]) c.image = image
  const agent = ds.spec.template.spec.containers.find((c) => c.name === 'pinto-node')
  if (agent === undefined) throw new Error(`${file}: the DaemonSet has no pinto-node container`)
  for (const [name, value] of Object.entries(agentEnv)) (agent.env ??= []).push({ name, value })
  return docs
}

export class KubeCluster {
  readonly nodes: KubeNode[] = []
  /** The rack's router (BIRD): every host's gateway, peering with every node and routing to the pods. */
  tor: Tor | undefined
  /** pinto's etcd, with the etcd datastore. */
  etcd: DemoEtcd | undefined
  private readonly netns = new Namespaces()
  private controlPlane: ControlPlane | undefined
  private dir = ''
  private bin = ''
  private images: ImageArchive[] = []
  private destroying: Promise<void> | undefined
  private dnsStarted = false

  private constructor(readonly spec: KubeClusterSpec) {}

  /** A cluster not built yet, so a caller can hold it (and destroy it on a signal) while start() runs. */
  static prepare(spec: KubeClusterSpec): KubeCluster {
    return new KubeCluster(spec)
  }

  static async create(spec: KubeClusterSpec): Promise<KubeCluster> {
    const c = new KubeCluster(spec)
    await c.start()
    return c
  }

  private say(line: string): void {
    this.spec.say?.(line)
  }

  get kubeconfig(): string {
    return this.plane.kubeconfig
  }

  get controlPlaneNs(): string {
    return this.netns.name('cp')
  }

  get runDir(): string {
    return this.dir
  }

  get binDir(): string {
    return this.bin
  }

  private get plane(): ControlPlane {
    if (this.controlPlane === undefined) throw new Error('the cluster is not started')
    return this.controlPlane
  }

  kubectl(args: readonly string[], input?: string): Promise<string> {
    return this.plane.kubectl(args, input)
  }

  /** Runs one of the cluster's binaries (helm, say) in the control plane's namespace with KUBECONFIG set. */
  async run(name: string, args: readonly string[]): Promise<string> {
    const r = await execa('ip', ['netns', 'exec', this.controlPlaneNs, join(this.bin, name), ...args], { env: { KUBECONFIG: this.plane.kubeconfig }, reject: false })
    if (r.exitCode !== 0) throw new Error(`${name} ${args.join(' ')}: ${String(r.stderr).trim()}`)
    return String(r.stdout)
  }

  async start(): Promise<void> {
    try {
      await sweepCgroups()
      this.dir = await mkdtemp(join(tmpdir(), `pinto-demo-${this.netns.id}-kube-`))
      this.say('binaries: Kubernetes, etcd and containerd (built with Go on first use)')
      this.bin = await kubernetesBinaries()
      this.say('images: pause, busybox, pinto')
      this.images = [await pauseImage(await kubernetesSource()), await busyboxImage(), await podmanImage(this.spec.image, this.spec.podmanEnv), ...(this.spec.images ?? [])]
      if (this.dns) this.images.push(await corednsImage(join(this.bin, 'coredns'), (await buildScript()).COREDNS_VERSION))
      await this.netns.fabric()
      const torNs = await this.netns.host('tor', `${FABRIC_GATEWAY}/24`)
      await execa('ip', ['netns', 'exec', torNs, 'sysctl', '-qw', 'net.ipv4.ip_forward=1'])
      const neighbors = Array.from({ length: this.spec.nodes }, (_, i) => ({ name: `node_${i + 1}`, address: nodeAddress(i), as: CLUSTER_AS }))
      this.tor = await startTor(torNs, join(this.dir, 'tor'), neighbors, [], true)
      if (this.datastore === 'etcd') {
        const etcdNs = await this.netns.host('etcd', `${ETCD_ADDRESS}/24`, FABRIC_GATEWAY)
        this.etcd = await startEtcd(etcdNs, ETCD_ADDRESS, join(this.dir, 'etcd'), { tls: true })
        this.say(`etcd: pinto's datastore at ${this.etcd.datastore} (TLS, client certificates)`)
      }
      const cp = await this.netns.host('cp', `${CONTROL_PLANE_ADDRESS}/24`, FABRIC_GATEWAY)
      this.controlPlane = await startControlPlane({ ns: cp, address: CONTROL_PLANE_ADDRESS, bin: this.bin, dir: join(this.dir, 'control-plane'), serviceCidr: SERVICE_CIDR, serviceIp: SERVICE_IP }, (l) => this.say(l))
      for (let i = 0; i < this.spec.nodes; i++) {
        const name = `node-${i + 1}`
        const ns = await this.netns.host(name, `${nodeAddress(i)}/24`, FABRIC_GATEWAY)
        this.nodes.push(new KubeNode({ name, ns, address: nodeAddress(i), bin: this.bin, dir: join(this.dir, name), kubeconfig: this.plane.kubeconfig, podCidr: POD_CIDR, pauseImage: PAUSE_IMAGE, cgroupRoot: `${this.netns.prefix}-${name}`, ...(this.dns ? { clusterDns: DNS_IP } : {}) }))
      }
      await Promise.all(this.nodes.map(async (n) => {
        await n.startRuntime()
        this.say(`${n.spec.name}: containerd up; importing ${this.images.length} images`)
        await importImages(join(this.bin, 'ctr'), n.containerdSocket, this.images)
        n.startKubelet()
        this.say(`${n.spec.name}: kubelet and kube-proxy started`)
      }))
      await this.waitNodes(this.spec.nodes, 'registered')
      if (this.spec.installPinto !== false) await this.installPinto()
    } catch (err) {
      await this.destroy()
      throw err
    }
  }

  private get datastore(): 'kubernetes' | 'etcd' {
    return this.spec.datastore ?? 'kubernetes'
  }

  private get etcdValues(): EtcdValues | undefined {
    return this.etcd === undefined ? undefined : { endpoints: this.etcd.datastore, tls: this.etcd.tls }
  }

  /**
   * Applies pinto's manifest for the cluster's datastore (or `file`) as an operator does, then waits for the
   * DaemonSet's rollout and every node Ready.
   */
  async installPinto(file: string = MANIFESTS[this.datastore]): Promise<void> {
    this.say(`pinto: kubectl apply --server-side -f ${file}`)
    const docs = await clusterManifest(file, this.spec.image, this.spec.agentEnv, this.spec.pintoNodeSelector, this.etcdValues)
    await this.kubectl(['apply', '--server-side', '-f', '-'], docs.map((d) => stringify(d)).join('---\n'))
    await this.peerWithTor()
    await this.waitPinto()
  }

  /** Installs pinto's Helm chart with this cluster's image and pool, then waits as installPinto does. */
  async installPintoChart(chart: string, extraValues: readonly string[] = []): Promise<void> {
    const at = this.spec.image.lastIndexOf(':')
    const values = [`image.repository=${this.spec.image.slice(0, at)}`, `image.tag=${this.spec.image.slice(at + 1)}`, `config.ipv4pool_cidr=${POD_CIDR}`, ...extraValues]
    // With etcd: its endpoints, and its TLS files as the chart's Secret (etcd has no CRDs to install).
    const etcd = this.etcdValues
    const files = etcd?.tls === undefined ? [] : Object.entries(etcd.tls).map(([k, f]) => `etcd.tls.${k}=${f}`)
    if (etcd !== undefined) {
      values.push('datastore=etcd', `etcd.endpoints=${etcd.endpoints}`)
      if (etcd.tls !== undefined) values.push(...['ca', 'cert', 'key'].map((k) => `config.etcd_${k}=/etc/pinto/etcd-secrets/etcd-${k}`))
    }
    const args = [...values.flatMap((v) => ['--set', v]), ...files.flatMap((v) => ['--set-file', v]), ...(etcd !== undefined ? ['--skip-crds'] : [])]
    this.say(`pinto: helm install pinto ${chart} --namespace kube-system ${args.join(' ')}`)
    await this.run('helm', ['install', 'pinto', chart, '--namespace', 'kube-system', ...args])
    // The chart has no values for these: set on its DaemonSet as an operator would, before the rollout is awaited.
    const env = Object.entries(this.spec.agentEnv ?? {}).map(([k, v]) => `${k}=${v}`)
    if (env.length > 0) await this.kubectl(['-n', 'kube-system', 'set', 'env', 'ds/pinto-node', '-c', 'pinto-node', ...env])
    if (this.spec.pintoNodeSelector !== undefined) await this.kubectl(['-n', 'kube-system', 'patch', 'ds/pinto-node', '--type=merge', '-p', JSON.stringify({ spec: { template: { spec: { nodeSelector: this.spec.pintoNodeSelector } } } })])
    await this.peerWithTor()
    await this.waitPinto()
  }

  /**
   * Every node peers with the rack's router: a global BGPPeer, as an operator writes it for a ToR. In the
   * Kubernetes API it is a CRD object kubectl applies; in etcd, pintoctl on a node writes it (as calicoctl would).
   */
  private async peerWithTor(): Promise<void> {
    this.say(`pinto: BGPPeer tor (${TOR_ADDRESS}, AS ${TOR_AS}) for every node`)
    if (this.datastore === 'kubernetes') {
      const peer = { apiVersion: 'crd.projectcalico.org/v1', kind: 'BGPPeer', metadata: { name: 'tor' }, spec: { peerIP: TOR_ADDRESS, asNumber: TOR_AS } }
      await this.kubectl(['wait', '--for=condition=established', '--timeout=60s', 'crd/bgppeers.crd.projectcalico.org'])
      await this.kubectl(['apply', '-f', '-'], JSON.stringify(peer))
      return
    }
    const peer = { apiVersion: 'projectcalico.org/v3', kind: 'BGPPeer', metadata: { name: 'tor' }, spec: { peerIP: TOR_ADDRESS, asNumber: TOR_AS } }
    await this.kubectl(['-n', 'kube-system', 'rollout', 'status', 'ds/pinto-node', '--timeout=300s'])
    await this.kubectl(['-n', 'kube-system', 'exec', '-i', 'ds/pinto-node', '-c', 'pinto-node', '--', 'pintoctl', 'apply', '-f', '-'], stringify(peer))
  }

  private async waitPinto(): Promise<void> {
    this.say('pinto: kubectl -n kube-system rollout status ds/pinto-node')
    await this.kubectl(['-n', 'kube-system', 'rollout', 'status', 'ds/pinto-node', '--timeout=300s'])
    const nodes = (await this.kubectl(['get', 'nodes', '-o', 'name'])).split('\n').filter((l) => l !== '').length
    await this.waitNodes(nodes, 'Ready')
    this.say(`pinto: ${nodes} nodes Ready`)
    if (this.dns && !this.dnsStarted) {
      // CoreDNS is a pod like any other: it runs once pinto gives pods a network.
      this.dnsStarted = true
      const image = this.images.find((i) => i.ref.startsWith('localhost/coredns:'))?.ref ?? ''
      this.say(`dns: CoreDNS as kube-dns (${DNS_IP})`)
      await this.kubectl(['apply', '-f', '-'], JSON.stringify(dnsObjects(image)))
      await this.kubectl(['-n', 'kube-system', 'rollout', 'status', 'deploy/coredns', '--timeout=180s'])
    }
  }

  private get dns(): boolean {
    return this.spec.dns !== false
  }

  /** Waits until `count` nodes are registered, or Ready. */
  async waitNodes(count: number, state: 'registered' | 'Ready', timeoutMs = 300_000): Promise<void> {
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const out = await this.kubectl(['get', 'nodes', '-o', 'jsonpath={range .items[*]}{.metadata.name} {.status.conditions[?(@.type=="Ready")].status}{"\\n"}{end}']).catch(() => '')
      const rows = out.split('\n').filter((l) => l !== '')
      const have = state === 'registered' ? rows.length : rows.filter((l) => l.endsWith(' True')).length
      if (have >= count) return
      if (Date.now() > deadline) throw new Error(`${have} of ${count} nodes ${state} after ${timeoutMs / 1000} s:\n${out}`)
      await new Promise((r) => setTimeout(r, 500))
    }
  }

  destroy(): Promise<void> {
    this.destroying ??= (async () => {
      for (const n of this.nodes) await n.stop()
      await this.controlPlane?.stop()
      await this.etcd?.stop()
      await this.netns.destroy()
      if (this.dir !== '') await rm(this.dir, { recursive: true, force: true })
    })()
    return this.destroying
  }
}
