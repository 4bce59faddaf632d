// One node of the Kubernetes demo cluster: a network namespace on the fabric plus a mount namespace of its own,
// in which /etc, /opt and /var are overlays of the machine's (their writes land in the node's directory) and
// /run is empty, so the paths a DaemonSet's hostPath volumes name (/etc/cni/net.d, /opt/cni/bin, /var/run/pinto,
// /var/lib/pinto, /var/run/netns) are the node's own. containerd, the kubelet and kube-proxy run there, in a
// cgroup root of the node's own. It owns those processes, every container they start, its cgroups and its
// directory's contents; stop() kills all of them and removes the cgroups.

import { spawn, type ChildProcess } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, rmdirSync, writeFileSync } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { isAlive, killQuietly, namespacePids } from '../processes.js'
import { spawnLogged, stopAll } from './control-plane.js'

const CGROUP = '/sys/fs/cgroup'

/** Where Debian's containernetworking-plugins puts the reference plugins. */
const REFERENCE_PLUGINS_DIR = '/usr/lib/cni'
/**
 * The reference plugins a node's /opt/cni/bin holds before any pod network is installed, as the kubernetes-cni
 * package of a kubeadm node and kind's node image put them there: portmap (hostPort, which pinto's install-cni
 * chains when present), loopback, and those a pod-start comparison against ptp + host-local runs.
 */
export const NODE_CNI_PLUGINS = ['portmap', 'loopback', 'host-local', 'ptp', 'bandwidth', 'tuning'] as const

export interface KubeNodeSpec {
  readonly name: string
  readonly ns: string
  readonly address: string
  readonly bin: string
  readonly dir: string
  /** The admin kubeconfig the kubelet and kube-proxy use. */
  readonly kubeconfig: string
  readonly podCidr: string
  readonly pauseImage: string
  /** The cgroup under which this node's kubelet puts its pods (unique on the machine). */
  readonly cgroupRoot: string
  /** The cluster DNS Service's address the kubelet gives pods, if the cluster has DNS. */
  readonly clusterDns?: string
}

/** The cgroup v1 hierarchies mounted here (cpu, memory, ...), or [] on a cgroup v2 machine. */
function v1Hierarchies(): string[] {
  if (existsSync(join(CGROUP, 'cgroup.controllers'))) return []
  return readdirSync(CGROUP).filter((d) => d !== 'unified' && existsSync(join(CGROUP, d, 'cgroup.procs')))
}

/** The directories `root` is in, one per hierarchy (one on cgroup v2). */
export function cgroupDirs(root: string): string[] {
  const v1 = v1Hierarchies()
  return v1.length === 0 ? [join(CGROUP, root)] : v1.map((h) => join(CGROUP, h, root))
}

/** The node's cgroup root, which the kubelet wants to exist; a v1 cpuset needs its CPUs and memory nodes. */
function makeCgroupRoot(root: string): void {
  for (const d of cgroupDirs(root)) {
    mkdirSync(d, { recursive: true })
    if (d.startsWith(join(CGROUP, 'cpuset'))) {
      for (const f of ['cpuset.cpus', 'cpuset.mems']) writeFileSync(join(d, f), readFileSync(join(CGROUP, 'cpuset', f)))
    }
  }
}

/** Every process in a cgroup tree. */
function cgroupPids(dir: string): number[] {
  if (!existsSync(dir)) return []
  const here = readFileSync(join(dir, 'cgroup.procs'), 'utf8').split('\n').filter((l) => l !== '').map(Number)
  const below = readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory()).flatMap((e) => cgroupPids(join(dir, e.name)))
  return [...here, ...below]
}

/** Removes a cgroup tree, deepest first (a cgroup goes only once it has no children and no processes). */
function removeCgroupTree(dir: string): void {
  if (!existsSync(dir)) return
  for (const e of readdirSync(dir, { withFileTypes: true })) if (e.isDirectory()) removeCgroupTree(join(dir, e.name))
  try {
    rmdirSync(dir)
  } catch {
    // still busy: the sweep of a later run removes it
  }
}

/** Kills every process of a cgroup root and removes it; used by stop() and by the sweep of dead runs. */
export async function removeCgroupRoot(root: string): Promise<void> {
  const dirs = cgroupDirs(root)
  const deadline = Date.now() + 10_000
  for (;;) {
    const pids = [...new Set(dirs.flatMap(cgroupPids))]
    if (pids.length === 0 || Date.now() > deadline) break
    for (const pid of pids) killQuietly(pid, 'SIGKILL')
    await new Promise((r) => setTimeout(r, 100))
  }
  for (const d of dirs) removeCgroupTree(d)
}

function containerdConfig(spec: KubeNodeSpec): string {
  const d = spec.dir
  return `version = 3
root = "${d}/containerd/root"
state = "${d}/containerd/state"
[grpc]
  address = "${d}/containerd.sock"
[plugins.'io.containerd.internal.v1.opt']
  path = "${d}/containerd/opt"
[plugins.'io.containerd.nri.v1.nri']
  disable = true
[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'overlayfs'
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = '${spec.pauseImage}'
[plugins.'io.containerd.cri.v1.runtime']
  # Without CAP_SYS_RESOURCE (as in a container) no score can go below containerd's own.
  restrict_oom_score_adj = true
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ['/opt/cni/bin']
    conf_dir = '/etc/cni/net.d'
    use_internal_loopback = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
    BinaryName = '/usr/sbin/runc'
    SystemdCgroup = false
`
}

function kubeletConfig(spec: KubeNodeSpec): string {
  return JSON.stringify({
    apiVersion: 'kubelet.config.k8s.io/v1beta1', kind: 'KubeletConfiguration',
    cgroupDriver: 'cgroupfs', cgroupRoot: `/${spec.cgroupRoot}`,
    // Some machines still mount cgroup v1; the kubelet refuses it unless told.
    failCgroupV1: false, failSwapOn: false,
    authentication: { anonymous: { enabled: true }, webhook: { enabled: false } },
    authorization: { mode: 'AlwaysAllow' },
    healthzBindAddress: '127.0.0.1', readOnlyPort: 0, resolvConf: '/etc/resolv.conf',
    // Many nodes share one disk here: eviction would act on the machine's use, not the node's.
    evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '1%', 'imagefs.available': '1%', 'nodefs.inodesFree': '1%' },
    imageGCHighThresholdPercent: 100, imageGCLowThresholdPercent: 99,
    serializeImagePulls: false,
    containerRuntimeEndpoint: `unix://${spec.dir}/containerd.sock`,
    podLogsDir: join(spec.dir, 'pod-logs'),
    clusterDomain: 'cluster.local',
    ...(spec.clusterDns !== undefined ? { clusterDNS: [spec.clusterDns] } : {}),
  }, null, 2)
}

function kubeProxyConfig(spec: KubeNodeSpec): string {
  return JSON.stringify({
    apiVersion: 'kubeproxy.config.k8s.io/v1alpha1', kind: 'KubeProxyConfiguration',
    mode: 'nftables', clientConnection: { kubeconfig: spec.kubeconfig }, hostnameOverride: spec.name,
    clusterCIDR: spec.podCidr,
    // conntrack's limits are the machine's, not the node's: leave them alone.
    conntrack: { maxPerCore: 0, min: 0, tcpEstablishedTimeout: '0s', tcpCloseWaitTimeout: '0s' },
    metricsBindAddress: '127.0.0.1:10249', healthzBindAddress: '127.0.0.1:10256',
  }, null, 2)
}

/** The mount namespace's set-up, run by sh in it before it holds the namespace open with sleep. */
function holderScript(dir: string): string {
  const ov = (d: string): string => `mkdir -p ${dir}/root/${d}/upper ${dir}/root/${d}/work && mount -t overlay overlay -o lowerdir=/${d},upperdir=${dir}/root/${d}/upper,workdir=${dir}/root/${d}/work /${d}`
  return [
    'set -e',
    // A sysfs of the node's network namespace, with the machine's cgroup mounts moved back under it.
    `mkdir -p ${dir}/cg && mount --rbind /sys/fs/cgroup ${dir}/cg && mount -t sysfs sysfs /sys && mount --move ${dir}/cg /sys/fs/cgroup`,
    ov('etc'), ov('opt'), ov('var'),
    'mount -t tmpfs -o mode=755 tmpfs /run',
    'mkdir -p /etc/cni/net.d /opt/cni/bin /run/netns /run/pinto /var/lib/pinto /var/log/containers',
    // What the runtime and pinto's install-cni see, kept where a test can read it from the machine.
    `mkdir -p ${dir}/cni-net.d ${dir}/cni-bin && mount --bind ${dir}/cni-net.d /etc/cni/net.d && mount --bind ${dir}/cni-bin /opt/cni/bin`,
    // HostToContainer volumes (pinto's /var/run/netns) need a shared source; the peers are this namespace's.
    'mount --make-rshared /',
    'echo ready',
    'exec sleep infinity',
  ].join('\n')
}

export class KubeNode {
  private holder: ChildProcess | undefined
  private readonly children: ChildProcess[] = []

  constructor(readonly spec: KubeNodeSpec) {}

  get containerdSocket(): string {
    return join(this.spec.dir, 'containerd.sock')
  }

  /** The host-side directories install-cni writes into. */
  get cniConfDir(): string {
    return join(this.spec.dir, 'cni-net.d')
  }

  get cniBinDir(): string {
    return join(this.spec.dir, 'cni-bin')
  }

  /** The holder's pid: `nsenter -t PID -m -n` enters the node. */
  get pid(): number {
    const pid = this.holder?.pid
    if (pid === undefined) throw new Error(`node ${this.spec.name} is not started`)
    return pid
  }

  /**
   * A process of the pod `uid` on this node (its sandbox's or a container's), found by the pod's cgroup under the
   * node's cgroup root: `nsenter -t PID -n` runs a program in the pod's network namespace.
   */
  podPid(uid: string): number {
    const find = (dir: string, depth: number): string | undefined => {
      if (!existsSync(dir)) return undefined
      for (const e of readdirSync(dir, { withFileTypes: true })) {
        if (!e.isDirectory()) continue
        if (e.name === `pod${uid}`) return join(dir, e.name)
        const below = depth > 0 ? find(join(dir, e.name), depth - 1) : undefined
        if (below !== undefined) return below
      }
      return undefined
    }
    for (const root of cgroupDirs(this.spec.cgroupRoot)) {
      const pod = find(root, 3)
      const pid = pod === undefined ? undefined : cgroupPids(pod)[0]
      if (pid !== undefined) return pid
    }
    throw new Error(`node ${this.spec.name}: no process of pod ${uid} under its cgroup root ${this.spec.cgroupRoot}`)
  }

  /** The mount namespace, then containerd (which `ready` waits for before images are imported). */
  async startRuntime(): Promise<void> {
    const { dir } = this.spec
    await mkdir(join(dir, 'pod-logs'), { recursive: true })
    await mkdir(this.cniBinDir, { recursive: true })
    for (const p of NODE_CNI_PLUGINS) {
      const from = join(REFERENCE_PLUGINS_DIR, p)
      if (existsSync(from)) copyFileSync(from, join(this.cniBinDir, p))
    }
    makeCgroupRoot(this.spec.cgroupRoot)
    await writeFile(join(dir, 'containerd.toml'), containerdConfig(this.spec))
    await writeFile(join(dir, 'kubelet.json'), kubeletConfig(this.spec))
    await writeFile(join(dir, 'kube-proxy.json'), kubeProxyConfig(this.spec))
    const holder = spawn('nsenter', [`--net=/run/netns/${this.spec.ns}`, 'unshare', '--mount', '--propagation', 'private', 'sh', '-c', holderScript(dir)], { stdio: ['ignore', 'pipe', 'pipe'] })
    this.holder = holder
    await new Promise<void>((resolve, reject) => {
      let err = ''
      holder.stderr.on('data', (b: Buffer) => (err += b.toString()))
      holder.stdout.once('data', () => resolve())
      holder.once('exit', (code) => reject(new Error(`node ${this.spec.name}: its mount namespace could not be made (exit ${code}): ${err.trim()}`)))
    })
    this.run('containerd', ['--config', join(dir, 'containerd.toml')])
    const deadline = Date.now() + 30_000
    while (!existsSync(this.containerdSocket)) {
      if (Date.now() > deadline) throw new Error(`node ${this.spec.name}: containerd did not start; see ${join(dir, 'containerd.log')}`)
      await new Promise((r) => setTimeout(r, 100))
    }
  }

  /** The kubelet and kube-proxy, once the node's images are in. */
  startKubelet(): void {
    this.startDaemon('kubelet')
    this.run('kube-proxy', ['--config', join(this.spec.dir, 'kube-proxy.json')])
  }

  /** Stops one of the node's daemons (the kubelet, to play a lost node), leaving its pods running. */
  async stopDaemon(name: 'kubelet' | 'kube-proxy' | 'containerd'): Promise<void> {
    const c = this.children.find((x) => x.spawnargs.includes(join(this.spec.bin, name)))
    if (c?.pid !== undefined) await stopAll([c.pid])
  }

  /** The kubelet, at start or again after stopDaemon (its pods kept running meanwhile). */
  startDaemon(name: 'kubelet'): void {
    const { dir, address, kubeconfig } = this.spec
    this.run(name, ['--config', join(dir, 'kubelet.json'), '--kubeconfig', kubeconfig, '--hostname-override', this.spec.name, '--node-ip', address, '--root-dir', join(dir, 'kubelet')])
  }

  private run(name: string, args: readonly string[]): void {
    // A node's daemons start from a service manager's environment, not from whoever made the node: PATH (where
    // containerd finds its runc shim) and HOME. The plugins the runtime execs inherit it, so this shell's NODE_*
    // variables, say, would make every exec of pinto's plugin start twice (cni/sea-env.ts).
    const env = { PATH: `${this.spec.bin}:${process.env['PATH'] ?? '/usr/sbin:/usr/bin:/sbin:/bin'}`, HOME: '/root' }
    this.children.push(spawnLogged(['nsenter', '-t', String(this.pid), '-m', '-n', '--', join(this.spec.bin, name), ...args], join(this.spec.dir, `${name}.log`), env))
  }

  /** Kills the daemons, every container (by the node's cgroup root and namespace) and the namespace holder. */
  async stop(): Promise<void> {
    const pids = this.children.flatMap((c) => (c.pid !== undefined && isAlive(c.pid) ? [c.pid] : []))
    await stopAll(pids.reverse(), 3000)
    await removeCgroupRoot(this.spec.cgroupRoot)
    // The runc shims and host-network containers live in the node's network namespace.
    for (const pid of await namespacePids(this.spec.ns)) if (pid !== this.holder?.pid) killQuietly(pid, 'SIGKILL')
    if (this.holder?.pid !== undefined) await stopAll([this.holder.pid], 1000)
  }
}
