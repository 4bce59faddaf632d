// What a demo cluster is made of, apart from the cluster itself: the spec a caller gives, its nodes and
// pods, its errors, where pinto's built programs are, and the host checks the demo and tests make before
// they build one. Plain data and two probes of the host; nothing here makes a namespace or a process.

import type { ChildProcess } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { execa } from 'execa'
import type { DemoTopology, Encap } from './options.js'

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..')
export const NODE_BIN = join(ROOT, 'bin', 'pinto-node.js')
export const PINTOCTL_BIN = join(ROOT, 'bin', 'pintoctl.js')
export const BUNDLE = join(ROOT, 'dist', 'bundle')
export const API_PORT = 9099
/** The fabric host of the cluster's etcd, when the datastore is etcd. */
export const ETCD_ADDRESS = '192.0.2.2'

export interface ClusterSpec {
  readonly nodes: number
  readonly encap?: Encap
  readonly topology?: DemoTopology
  readonly tor?: boolean
  /** What the top-of-rack originates (default 203.0.113.0/24); the idle bench gives it many prefixes. */
  readonly torPrefixes?: readonly string[]
  /**
   * Where the agents keep the cluster's state: one embedded store in the temp dir (default), or an etcd on a
   * fabric host of its own (192.0.2.2), with TLS and client certificates when `etcd-tls`.
   */
  readonly datastore?: 'embedded' | 'etcd' | 'etcd-tls'
  /**
   * How each node runs pinto-node: a process (default), or the DaemonSet's pod from deploy/kubernetes run
   * by `podman kube play` in the node's namespace, its CNI plugins those the pod's install-cni put in the
   * node's root. podman needs an etcd datastore (etcd-tls unless `etcd` is asked for).
   */
  readonly runtime?: 'process' | 'podman'
  /** The image the podman runtime plays (default localhost/pinto-node:<version>, `npm run image`). */
  readonly image?: string
  /** Extra environment for every agent (e.g. PINTO_LOG_LEVEL). */
  readonly env?: Readonly<Record<string, string>>
  /** The Node.js that runs pinto-node, by absolute path (default: this one). */
  readonly node?: string
  /** The plugins installed: the bundles under this Node.js (default) or the single executable (dist/sea). */
  readonly plugins?: 'bundle' | 'sea'
  /** Progress lines for a person; silent when absent. */
  readonly say?: (line: string) => void
}

export interface DemoNode {
  readonly name: string
  readonly ns: string
  readonly address: string
  readonly dir: string
  readonly socket: string
  readonly mtuFile: string
  readonly log: string
  readonly reflector: boolean
  agent: ChildProcess | undefined
}

/** The pods' MTU the podman runtime writes into pinto-config (veth_mtu). */
export const PODMAN_MTU = 1400

export interface DemoPod {
  readonly name: string
  readonly node: string
  readonly ns: string
  readonly address: string
  readonly containerId: string
}

export class DemoError extends Error {}

/** A failed ADD leaves its sandbox (namespace) as a runtime's does, for the DEL that tears it down. */
export class AddFailed extends DemoError {
  constructor(readonly pod: DemoPod, message: string) {
    super(message)
  }
}

/** Can this kernel make ipip links? Tried in a scratch namespace, which is removed again. */
export async function kernelHasIpip(): Promise<{ ok: boolean; reason: string }> {
  const ns = `pdm${process.pid}-ipipcheck`
  await execa('ip', ['netns', 'add', ns])
  try {
    const r = await execa('ip', ['-n', ns, 'link', 'add', 'name', 't', 'type', 'ipip'], { reject: false })
    return { ok: r.exitCode === 0, reason: String(r.stderr).trim() }
  } finally {
    await execa('ip', ['netns', 'del', ns], { reject: false })
  }
}

export async function birdInstalled(): Promise<boolean> {
  const r = await execa('bird', ['--version'], { reject: false })
  return r.exitCode === 0 || /BIRD/i.test(String(r.stderr))
}
