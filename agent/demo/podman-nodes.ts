// pinto-node as Kubernetes runs it, on the demo's nodes: the DaemonSet's pod template from
// deploy/kubernetes converted per node (kube-pod.ts) and run by `podman kube play` inside the node's
// network namespace, host paths under the node's own root; and the node's container runtime exec'ing the
// CNI plugins the init container installed there. It owns the pods it plays and nothing else of podman.
// podman 4.3.1 ignores hostPID: pinto-node then sees none of the plugins' PIDs, so its CNI channel hands
// each ADD and DEL back and the plugin does it itself (agent/cni-service.ts).

import { existsSync } from 'node:fs'
import { access, chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { execa } from 'execa'
import { stringify } from 'yaml'
import { fillEtcd, findObject, type KubeObject } from './kube-manifest.js'
import { podForNode } from './kube-pod.js'
import { isAlive } from './processes.js'
import { ETCD_BIN } from './etcd.js'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..')
/** podman 4.3 here: runc with cgroupfs and bounded ulimits (scripts/podman-env.js names the same file). */
export const PODMAN_CONF = join(ROOT, 'scripts', 'podman-containers.conf')
/** What `npm run image` builds: localhost/pinto-node:<package.json's version>. */
export const NODE_IMAGE = `localhost/pinto-node:${(JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version}`

/** The pods' name: pdm<creator pid>-<6 hex>-<node>, as the demo's namespaces, so a later run can sweep them. */
const POD_RE = /^pdm(\d+)-[0-9a-f]{6}-/

export interface PodmanNode {
  readonly name: string
  readonly ns: string
  /** The node's directory: its host root is dir/root. */
  readonly dir: string
  readonly log: string
}

export async function podman(args: readonly string[], opts: { netns?: string; timeoutMs?: number; input?: string } = {}): Promise<string> {
  const [cmd, pre] = opts.netns !== undefined ? ['nsenter', [`--net=/run/netns/${opts.netns}`, 'podman']] : ['podman', []]
  const r = await execa(cmd, [...pre, ...args], {
    env: { CONTAINERS_CONF: process.env['CONTAINERS_CONF'] ?? PODMAN_CONF },
    timeout: opts.timeoutMs ?? 120_000,
    reject: false,
    ...(opts.input !== undefined ? { input: opts.input } : {}),
  })
  if (r.exitCode !== 0) throw new Error(`podman ${args.join(' ')}: ${r.exitCode === undefined ? 'timed out' : `exit ${String(r.exitCode)}`}: ${String(r.stderr).trim()}`)
  return String(r.stdout)
}

/** undefined when podman and `image` are there, else one line saying what is missing and how to get it. */
export async function podmanProblem(image: string): Promise<string | undefined> {
  const v = await execa('podman', ['--version'], { reject: false })
  if (v.exitCode !== 0) return 'the podman runtime needs podman, which is not installed: `npm run image`, as root, installs it and what the runtime needs (runc, catatonit, etcd, openssl), then builds the image'
  for (const [bin, pkg] of [[ETCD_BIN, 'etcd-server'], ['/usr/bin/openssl', 'openssl']] as const) {
    if (!existsSync(bin)) return `the podman runtime's datastore is etcd with TLS, and ${bin} is missing (Debian: ${pkg}): \`npm run image\`, as root, installs it`
  }
  const r = await execa('podman', ['image', 'exists', image], { env: { CONTAINERS_CONF: process.env['CONTAINERS_CONF'] ?? PODMAN_CONF }, reject: false })
  if (r.exitCode !== 0) return `the image ${image} is not in podman's store: \`npm run image\` builds it`
  return undefined
}

/** Removes the pods of runs whose creating process is gone (a killed demo or test). */
export async function sweepStalePods(): Promise<string[]> {
  const out = await podman(['pod', 'ls', '--format', '{{.Name}}']).catch(() => '')
  const stale = out.split('\n').filter((name) => {
    const m = POD_RE.exec(name)
    return m !== null && !isAlive(Number(m[1]))
  })
  for (const name of stale) await podman(['pod', 'rm', '--force', '--time', '0', name]).catch(() => undefined)
  return stale
}

/**
 * A shell that gives the node's CNI plugin the node's view of the host's files: in a mount namespace of
 * its own (`ip netns exec` makes one), /run and /var/lib show the node's root, so the conflist's default
 * socket (/var/run/pinto/pinto.sock) and MTU file are the node's pinto-node's; /run/netns stays the
 * machine's (where pods' namespaces are pinned). Then only the CNI_* variables are passed on.
 * $1: the node's root; the rest: the plugin and its environment, for `env -i`.
 */
const NODE_VIEW = `set -e
root=$1; shift
mkdir -p "$root/.view/run"
mount --rbind /run "$root/.view/run"
mount -t tmpfs -o mode=0755 node-run /run
mkdir /run/netns /run/pinto
mount --rbind "$root/.view/run/netns" /run/netns
mount --bind "$root/var/run/pinto" /run/pinto
mount --bind "$root/var/lib" /var/lib
exec env -i "$@"
`

export interface ManifestValues {
  /** datastore: the etcd endpoints, https://host:port with TLS. */
  readonly etcdEndpoints: string
  /** The etcd client's CA, certificate and key files, put into the Secret (and named by the ConfigMap). */
  readonly etcdTls: { readonly ca: string; readonly cert: string; readonly key: string } | undefined
  readonly nodeIp: string
  readonly poolCidr: string
  readonly ipip: 'Never' | 'Always'
  readonly vxlan: 'Never' | 'Always'
  readonly mtu: number
  readonly logLevel?: string
}

/** The manifest with pinto-config and pinto-etcd-secrets filled in, as an operator edits them before applying. */
export async function filledManifest(docs: readonly KubeObject[], v: ManifestValues): Promise<KubeObject[]> {
  const out = structuredClone(docs) as KubeObject[]
  await fillEtcd(out, { endpoints: v.etcdEndpoints, tls: v.etcdTls })
  const config = findObject(out, 'ConfigMap', 'pinto-config') as { data: Record<string, string> }
  Object.assign(config.data, {
    node_ip: v.nodeIp,
    ipv4pool_cidr: v.poolCidr,
    ipv4pool_ipip: v.ipip,
    ipv4pool_vxlan: v.vxlan,
    veth_mtu: String(v.mtu),
    ...(v.logLevel !== undefined ? { log_level: v.logLevel } : {}),
  })
  return out
}

export class PodmanNodes {
  /** Pods played and not removed: node name -> pod name. */
  /** The pod each node runs now, by node name. */
  private readonly playing = new Map<string, { node: PodmanNode; pod: string; image: string }>()

  /**
   * @param docs the manifest's objects with the ConfigMap and Secret filled in
   * @param prefix the pods' name prefix (the cluster's namespace prefix)
   */
  constructor(private readonly docs: readonly KubeObject[], readonly image: string, private readonly prefix: string) {
    findObject(docs, 'DaemonSet')
  }

  podName(n: PodmanNode): string {
    return `${this.prefix}-${n.name}`
  }

  hostRoot(n: PodmanNode): string {
    return join(n.dir, 'root')
  }

  /** The node's CNI socket as the host sees it. */
  socket(n: PodmanNode): string {
    return join(this.hostRoot(n), 'var/run/pinto/pinto.sock')
  }

  binDir(n: PodmanNode): string {
    return join(this.hostRoot(n), 'opt/cni/bin')
  }

  confList(n: PodmanNode): string {
    return join(this.hostRoot(n), 'etc/cni/net.d/10-pinto.conflist')
  }

  running(n: PodmanNode): boolean {
    return this.playing.has(n.name)
  }

  /**
   * The DaemonSet's pod for `n`, played in its namespace as the kubelet would start it: the Secret's files
   * written, install-cni run to completion, pinto-node started. Resolves once pinto-node's CNI socket is there.
   */
  async play(n: PodmanNode, opts: { image?: string; timeoutMs?: number } = {}): Promise<void> {
    const root = this.hostRoot(n)
    const name = this.podName(n)
    const { pod, files } = podForNode({
      daemonSet: findObject(this.docs, 'DaemonSet'),
      documents: this.docs,
      nodeName: n.name,
      podName: name,
      hostRoot: root,
      hostPathOverrides: { '/var/run/netns': '/run/netns' },
      image: opts.image ?? this.image,
      // podman 4.3.1 restarts init containers under Always and then fails the pod (kube-pod.ts).
      restartPolicy: 'OnFailure',
    })
    for (const f of files) {
      await mkdir(dirname(f.path), { recursive: true })
      await writeFile(f.path, f.content)
      await chmod(f.path, f.mode)
    }
    // DirectoryOrCreate as the kubelet does it; the node view (NODE_VIEW) mounts these before the pod runs.
    for (const d of ['opt/cni/bin', 'etc/cni/net.d', 'var/run/pinto', 'var/lib/pinto']) await mkdir(join(root, d), { recursive: true })
    await rm(this.socket(n), { force: true })
    const file = join(n.dir, 'pod.yaml')
    await writeFile(file, stringify(pod))
    this.playing.set(n.name, { node: n, pod: name, image: opts.image ?? this.image })
    await podman(['kube', 'play', file], { netns: n.ns, timeoutMs: 120_000 })
    const deadline = Date.now() + (opts.timeoutMs ?? 60_000)
    for (;;) {
      if (await exists(this.socket(n))) return
      const state = (await podman(['inspect', '--format', '{{.State.Status}}', `${name}-pinto-node`]).catch(() => 'gone')).trim()
      if (state !== 'running' && state !== 'created') throw new Error(`${n.name}: pinto-node's container is ${state}: ${await this.logTail(n)}`)
      if (Date.now() > deadline) throw new Error(`${n.name}: pinto-node made no CNI socket within ${opts.timeoutMs ?? 60_000} ms: ${await this.logTail(n)}`)
      await new Promise((r) => setTimeout(r, 100))
    }
  }

  /** Waits until GET /readyz answers 200 in the node's namespace (the readinessProbe podman ignores). */
  async waitReady(n: PodmanNode, timeoutMs = 60_000): Promise<void> {
    const deadline = Date.now() + timeoutMs
    let last = ''
    while (Date.now() < deadline) {
      const r = await execa('ip', ['netns', 'exec', n.ns, 'curl', '-s', '--max-time', '3', '-w', '\n%{http_code}', 'http://127.0.0.1:9099/readyz'], { reject: false })
      last = String(r.stdout).trim()
      if (last.endsWith('\n200')) return
      await new Promise((res) => setTimeout(res, 200))
    }
    throw new Error(`${n.name}: not ready within ${timeoutMs} ms: ${last.replace(/\n/g, ' ')}`)
  }

  /**
   * Stops the node's pod as the kubelet deletes one: SIGTERM (pinto-node's graceful stop), SIGKILL after
   * `graceSeconds`; its logs appended to n.log; then the pod is removed (`kube down`).
   */
  async stop(n: PodmanNode, graceSeconds = 30): Promise<void> {
    const name = this.playing.get(n.name)?.pod
    if (name === undefined) return
    await podman(['pod', 'stop', '--time', String(graceSeconds), name], { timeoutMs: (graceSeconds + 30) * 1000 }).catch(() => undefined)
    await this.saveLogs(n)
    await podman(['pod', 'rm', '--force', '--time', '0', name], { timeoutMs: 60_000 }).catch(() => undefined)
    this.playing.delete(n.name)
  }

  private async saveLogs(n: PodmanNode): Promise<void> {
    const name = this.podName(n)
    const image = this.playing.get(n.name)?.image ?? this.image
    // install-cni's container is gone by now: podman removes an init container once it has run.
    for (const c of ['pinto-node']) {
      const r = await execa('podman', ['logs', `${name}-${c}`], { env: { CONTAINERS_CONF: process.env['CONTAINERS_CONF'] ?? PODMAN_CONF }, reject: false, all: true })
      await writeFile(n.log, `--- ${name}-${c} (${image})\n${String(r.all ?? '')}\n`, { flag: 'a' })
    }
  }

  private async logTail(n: PodmanNode): Promise<string> {
    const r = await execa('podman', ['logs', '--tail', '5', `${this.podName(n)}-pinto-node`], { env: { CONTAINERS_CONF: process.env['CONTAINERS_CONF'] ?? PODMAN_CONF }, reject: false, all: true })
    return String(r.all ?? '').trim().replace(/\s*\n\s*/g, ' | ') || 'no log'
  }

  /**
   * Execs the node's installed `pinto` as a runtime does: from the node's CNI bin dir, with the node's
   * conflist's plugin config on stdin and nothing in its environment but the CNI_* variables.
   */
  async cni(n: PodmanNode, cniEnv: Readonly<Record<string, string>>): Promise<{ code: number; stdout: string; stderr: string }> {
    const list = JSON.parse(await readFile(this.confList(n), 'utf8')) as { name: string; cniVersion: string; plugins: Record<string, unknown>[] }
    const conf = { cniVersion: list.cniVersion, name: list.name, ...list.plugins[0] }
    const env = Object.entries({ ...cniEnv, CNI_PATH: this.binDir(n) }).map(([k, v]) => `${k}=${v}`)
    const r = await execa('ip', ['netns', 'exec', n.ns, 'sh', '-c', NODE_VIEW, 'sh', this.hostRoot(n), ...env, join(this.binDir(n), 'pinto')], { input: JSON.stringify(conf), env: {}, extendEnv: false, reject: false, timeout: 60_000 })
    return { code: r.exitCode ?? -1, stdout: String(r.stdout), stderr: String(r.stderr) }
  }

  /** Removes every pod played here (SIGTERM first unless `hurry`), with their containers. */
  async destroy(hurry = false): Promise<void> {
    await Promise.all(
      [...this.playing.values()].map(async ({ node, pod }) => {
        // The pods' logs join the earlier ones in each node's n.log before they go.
        if (!hurry) await this.saveLogs(node).catch(() => undefined)
        await podman(['pod', 'rm', '--force', '--time', hurry ? '0' : '10', pod], { timeoutMs: 60_000 }).catch(() => undefined)
      }),
    )
    this.playing.clear()
  }
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(() => true, () => false)
}
