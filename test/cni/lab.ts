// A node for CNI tests: a "host" namespace where the plugins and the IPAM service (with its CNI channel) run
// (nothing in the machine's own namespace), empty pod namespaces, a temp store with the 198.18.0.0/15
// pools, and a runner that execs the installed plugins as real processes with CNI env and stdin.
// Everything goes in t.teardown.

import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { execa, execaSync } from 'execa'
import { openDatastore } from '../../config/datastore-open.js'
import { encodeResource, resourceKey } from '../../config/resources/index.js'
import { PLUGIN_EXEC_ENV } from '../../agent/node-flags.js'
import { installCni, seaExecutable } from '../../agent/install-cni.js'
import { IpamService } from '../../agent/ipam-service.js'
import { waitFor } from '../harness/wait.js'
import { type Teardown, type Topology, createTopology } from '../harness/netns.js'

export const DIST = new URL('../../', import.meta.url).pathname
export const BUNDLE = join(DIST, 'bundle')

export const REF_CNI = '/usr/lib/cni'

const SERVICE_MAIN = join(DIST, 'agent', 'ipam-service-main.js')

const IP = execaSync('sh', ['-c', 'command -v ip']).stdout.trim()

export interface PluginRun {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
  /** stdout parsed, when it is JSON. */
  readonly json: Record<string, unknown> | undefined
}

export interface Attachment {
  readonly containerId: string
  readonly netns: string
  readonly ifname?: string
  readonly args?: string
}

export interface Lab {
  readonly topo: Topology
  readonly hostNs: string
  readonly dir: string
  readonly socket: string
  readonly cniPath: string
  /** Where `pinto` and `pinto-ipam` are installed (the first directory of cniPath). */
  readonly binDir: string
  readonly mtuFile: string
  /** The IPAM service's view of the datastore, for reading allocations (the service itself runs in the host namespace). */
  service: IpamService | undefined
  stopService(): Promise<void>
  startService(): Promise<IpamService>
  /** A new empty namespace (loopback only); returns its path. */
  pod(name: string): Promise<string>
  /** Execs plugin `type` from cniPath inside the host namespace (or node namespace `inNs`). */
  exec(type: string, command: string, conf: unknown, att?: Partial<Attachment>, extraEnv?: Record<string, string>, inNs?: string): Promise<PluginRun>
  ip(ns: string, args: readonly string[]): Promise<string>
  /** Link names in a namespace. */
  links(ns: string): Promise<string[]>
}

const POOLS = [
  { apiVersion: 'projectcalico.org/v3', kind: 'IPPool', metadata: { name: 'pods-v4' }, spec: { cidr: '198.18.0.0/15', blockSize: 26 } },
  { apiVersion: 'projectcalico.org/v3', kind: 'IPPool', metadata: { name: 'pods-v6' }, spec: { cidr: '2001:db8:18::/48', blockSize: 122 } },
]

export interface LabOptions {
  /** Start the IPAM service (default true). */
  readonly service?: boolean
  /**
   * What binDir holds: the bundles with this Node.js in their #! line (default), the single executable,
   * or nothing (the test installs them). With the last two, plugins are exec'd with the CNI variables
   * only, as `env -i` would: no PATH, no Node.js reachable.
   */
  readonly plugins?: 'bundle' | 'sea' | 'none'
  /** A default route on the host namespace (default true); a node without one is a case of its own. */
  readonly defaultRoute?: boolean
  /** An IPv6 address (with length) on the host's fabric interface. */
  readonly hostV6?: string
}

export async function createLab(t: Teardown, opts: LabOptions = {}): Promise<Lab> {
  const plugins = opts.plugins ?? 'bundle'
  const topo = await createTopology(t)
  const host = await topo.addNode({ name: 'host', v4: '192.0.2.1/24', ...(opts.hostV6 !== undefined ? { v6: opts.hostV6 } : {}) })
  // Most nodes have a default route (a node without one is a case of its own: defaultRoute false).
  if (opts.defaultRoute !== false) await execa('ip', ['-n', host.ns, 'route', 'add', 'default', 'via', '192.0.2.254', 'dev', 'eth0'])
  // Our own prefix, removed by our teardown below (kept out of the harness's pth- sweep of dead runs).
  const dir = await mkdtemp(join(tmpdir(), 'pinto-cni-'))
  const storeDir = join(dir, 'store')
  const store = await openDatastore(storeDir)
  for (const p of POOLS) await store.create(resourceKey('IPPool', p.metadata.name), encodeResource(p as never))
  await store.close()
  // CNI_PATH: our bundles under their plugin names, then the reference plugins.
  const bin = join(dir, 'bin')
  await mkdir(bin)
  // Installed as on a node (copies with this Node.js in their #! line), not links: another developer's
  // build may wipe dist/ while this test runs.
  if (plugins === 'bundle') installCni({ binDir: bin, confDir: undefined, node: process.execPath, bundleDir: BUNDLE })
  if (plugins === 'sea') {
    if (seaExecutable() === undefined) throw new Error('dist/sea/pinto is not built: run `node scripts/sea.js`')
    installCni({ binDir: bin, confDir: undefined })
  }
  const socket = join(dir, 'run', 'pinto.sock')
  const mtuFile = join(dir, 'mtu')
  const pods: string[] = []
  const lab: Lab = {
    topo, hostNs: host.ns, dir, socket, cniPath: `${bin}:${REF_CNI}`, binDir: bin, mtuFile,
    service: undefined,
    async startService() {
      // Its own process in the host namespace, as pinto-node runs beside the plugins on a node: the CNI
      // channel does an ADD only for a plugin in its own namespace. The tests read allocations through
      // a second handle on the same datastore.
      const svc = await spawnIpamService(topo, host.ns, { PINTO_DATASTORE: storeDir, PINTO_SOCKET: socket, PINTO_MTU_FILE: mtuFile, PINTO_STATE_DIR: join(dir, 'state') }, 'the IPAM service')
      const store = await openDatastore(storeDir)
      const reader = new IpamService({ store, node: 'node1', socket, mtuFile })
      lab.service = reader
      stopper = async () => {
        await svc.kill('SIGTERM')
        await store.close()
      }
      return reader
    },
    async stopService() {
      const s = stopper
      stopper = undefined
      lab.service = undefined
      if (s) await s()
    },
    async pod(name) {
      const ns = `${topo.fabric.replace(/-fabric$/, '')}-${name}`
      await execa('ip', ['netns', 'add', ns])
      pods.push(ns)
      await execa('ip', ['-n', ns, 'link', 'set', 'lo', 'up'])
      return `/run/netns/${ns}`
    },
    async exec(type, command, conf, att = {}, extraEnv = {}, inNs = host.ns) {
      const file = ['pinto', 'pinto-ipam'].includes(type) ? join(bin, type) : join(REF_CNI, type)
      return execPlugin(lab, file, command, conf, att, extraEnv, plugins === 'bundle', inNs)
    },
    async ip(ns, args) {
      return String((await execa('ip', ['-n', ns, ...args])).stdout)
    },
    async links(ns) {
      const out = JSON.parse(await lab.ip(ns, ['-j', 'link', 'show'])) as { ifname: string }[]
      return out.map((l) => l.ifname)
    },
  }
  let stopper: (() => Promise<void>) | undefined
  t.teardown(async () => {
    await lab.stopService()
    for (const ns of pods) await execa('ip', ['netns', 'del', ns], { reject: false })
    await rm(dir, { recursive: true, force: true })
  })
  await writeFile(mtuFile, '1450\n')
  if (opts.service !== false) await lab.startService()
  return lab
}

/**
 * Execs the plugin `file` inside the lab's host namespace with the CNI variables, `extraEnv` and (when
 * `inherit`) this process's environment; without it, nothing else: no PATH, as under `env -i`.
 */
export async function execPlugin(lab: Pick<Lab, 'cniPath' | 'hostNs'>, file: string, command: string, conf: unknown, att: Partial<Attachment> = {}, extraEnv: Record<string, string> = {}, inherit = true, inNs = lab.hostNs): Promise<PluginRun> {
  const env: Record<string, string | undefined> = {
    CNI_COMMAND: command, CNI_CONTAINERID: att.containerId ?? '', CNI_NETNS: att.netns ?? '',
    CNI_IFNAME: att.ifname ?? 'eth0', CNI_ARGS: att.args ?? '', CNI_PATH: lab.cniPath, ...PLUGIN_EXEC_ENV, ...extraEnv,
  }
  const input = typeof conf === 'string' ? conf : JSON.stringify(conf)
  // `ip` by absolute path: the plugin's PATH is the caller's to choose, not the wrapper's.
  const r = await execa(IP, ['netns', 'exec', inNs, file], { input, env, extendEnv: inherit, reject: false })
  let json: Record<string, unknown> | undefined
  try {
    json = JSON.parse(String(r.stdout)) as Record<string, unknown>
  } catch {
    json = undefined
  }
  return { code: r.exitCode ?? -1, stdout: String(r.stdout), stderr: String(r.stderr), json }
}

/** The IPAM service (and CNI channel) running as its own process in `ns`, ready. */
export interface ServiceProcess {
  readonly pid: number
  /** stderr so far (its log lines). */
  readonly log: () => string
  /** Resolves once it has exited. */
  kill(signal: NodeJS.Signals): Promise<void>
}

/**
 * Starts `node dist/agent/ipam-service-main.js` in a namespace, as pinto-node runs beside the plugins on
 * a node, and resolves once it printed `ready`; an exit before that is an error carrying its stderr.
 */
export async function spawnIpamService(topo: Topology, ns: string, env: Record<string, string>, what = 'the agent'): Promise<ServiceProcess> {
  const child = topo.spawn(ns, process.execPath, [SERVICE_MAIN], {
    env: { PINTO_NODENAME: 'node1', ...PLUGIN_EXEC_ENV, ...env },
    extendEnv: true, stdout: 'pipe', stderr: 'pipe', buffer: false,
  })
  let out = ''
  let err = ''
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr?.on('data', (d: Buffer) => (err += d.toString()))
  let exited = false
  const done = child.then(() => undefined, () => undefined).finally(() => (exited = true))
  const kill = async (signal: NodeJS.Signals): Promise<void> => {
    if (!exited) child.kill(signal)
    await done
  }
  // A probe that throws only means "not yet" to waitFor: an exit is returned, and reported at once.
  const state = await waitFor(() => (exited ? 'exited' : out.includes('ready') ? 'ready' : undefined), { timeoutMs: 30_000, what: `${what} ready` })
  if (state === 'exited') throw new Error(`${what} exited: ${err.trim()}`)
  return { pid: child.pid ?? -1, log: () => err, kill }
}

/** A pinto network config for `version`; dual adds IPv6. */
export function pintoConf(lab: Lab, version: string, dual = false, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    cniVersion: version, name: 'k8s-pod-network', type: 'pinto', mtu_file: lab.mtuFile,
    ipam: { type: 'pinto-ipam', socket: lab.socket, assign_ipv4: true, assign_ipv6: dual },
    ...extra,
  }
}
