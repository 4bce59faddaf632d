// `pintoctl demo` options: parsed and checked here, purely; a bad one is an error naming the option.
// Nothing is built from them here (cluster.ts does that).

export type Encap = 'none' | 'vxlan' | 'ipip'
export type DemoTopology = 'mesh' | 'rr'

export interface DemoOptions {
  readonly nodes: number
  readonly pods: number
  readonly encap: Encap
  readonly topology: DemoTopology
  readonly tor: 'bird' | undefined
  readonly check: boolean
  /**
   * How nodes run pinto-node: processes, the DaemonSet's pods from deploy/kubernetes under podman, or a real
   * Kubernetes cluster (kubelets and containerd) that pinto is installed into.
   */
  readonly runtime: 'process' | 'podman' | 'kubernetes'
  /** The image --runtime podman or kubernetes runs; undefined: localhost/pinto-node:<version>. */
  readonly image: string | undefined
  /** Seconds to wait for convergence before giving up. */
  readonly timeout: number
}

export const DEMO_DEFAULTS: DemoOptions = { nodes: 3, pods: 2, encap: 'none', topology: 'mesh', tor: undefined, check: false, runtime: 'process', image: undefined, timeout: 60 }

export class OptionError extends Error {}

export const DEMO_USAGE = `usage: pintoctl demo [--nodes N] [--pods N] [--encap none|vxlan|ipip] [--topology mesh|rr] [--tor bird] [--runtime process|podman|kubernetes [--image REF]]
                     [--check] [--timeout SECONDS]

Builds a local cluster from network namespaces (nodes 192.0.2.11..., pods from 198.18.0.0/15), runs
pinto-node in each node, creates pods through the pinto CNI plugin, waits for the routes, and prints
peers, routes and a pod-to-pod ping matrix. It keeps running until Ctrl-C, then removes everything.

  --nodes N        nodes (1-50, default 3)
  --pods N         pods per node (0-20, default 2)
  --encap MODE     none (plain routes), vxlan or ipip (default none)
  --topology T     mesh (iBGP full mesh) or rr (route reflectors, mesh off) (default mesh)
  --tor bird       a BIRD top-of-rack router over eBGP (AS 65000), originating 203.0.113.0/24
  --runtime R      process (pinto-node run directly, default) or podman: each node runs the DaemonSet's
                   pod from deploy/kubernetes (image localhost/pinto-node, \`npm run image\` builds it),
                   played by podman kube play in the node's namespace, with etcd over TLS; or kubernetes:
                   a real cluster (a control plane, and containerd, a kubelet and kube-proxy on each node,
                   built with Go on first use) into which pinto is installed from deploy/kubernetes/kdd,
                   with a Deployment of web pods; it prints a kubeconfig for kubectl
  --image REF      the image --runtime podman or kubernetes runs (default localhost/pinto-node:<version>)
  --check          build, check the full ping matrix, tear down; exit 0 only if every pod reached every other
  --timeout S      seconds to wait for convergence (default 60)
`

function intIn(option: string, value: string | undefined, min: number, max: number): number {
  if (value === undefined) throw new OptionError(`${option}: needs a value`)
  if (!/^\d+$/.test(value) || Number(value) < min || Number(value) > max) throw new OptionError(`${option}: ${JSON.stringify(value)} is not a whole number from ${min} to ${max}`)
  return Number(value)
}

function oneOf<T extends string>(option: string, value: string | undefined, allowed: readonly T[]): T {
  if (value === undefined) throw new OptionError(`${option}: needs a value (${allowed.join('|')})`)
  const hit = allowed.find((a) => a === value)
  if (hit === undefined) throw new OptionError(`${option}: ${JSON.stringify(value)} is not one of ${allowed.join(', ')}`)
  return hit
}

export function parseDemoOptions(args: readonly string[]): DemoOptions {
  const o: { -readonly [K in keyof DemoOptions]: DemoOptions[K] } = { ...DEMO_DEFAULTS }
  for (let i = 0; i < args.length; i++) {
    const raw = args[i] ?? ''
    // --name=value and --name value are both accepted.
    const eq = raw.indexOf('=')
    const name = eq > 0 ? raw.slice(0, eq) : raw
    const inline = eq > 0 ? raw.slice(eq + 1) : undefined
    const value = (): string | undefined => inline ?? args[++i]
    switch (name) {
      case '--nodes':
        o.nodes = intIn(name, value(), 1, 50)
        break
      case '--pods':
        o.pods = intIn(name, value(), 0, 20)
        break
      case '--encap':
        o.encap = oneOf(name, value(), ['none', 'vxlan', 'ipip'] as const)
        break
      case '--topology':
        o.topology = oneOf(name, value(), ['mesh', 'rr'] as const)
        break
      case '--tor':
        o.tor = oneOf(name, value(), ['bird'] as const)
        break
      case '--runtime':
        o.runtime = oneOf(name, value(), ['process', 'podman', 'kubernetes'] as const)
        break
      case '--image': {
        const v = value()
        if (v === undefined || !/^[a-z0-9][a-z0-9._/:@-]*$/.test(v)) throw new OptionError(`--image: ${v === undefined ? 'needs a value' : `${JSON.stringify(v)} is not an image reference`}`)
        o.image = v
        break
      }
      case '--timeout':
        o.timeout = intIn(name, value(), 1, 3600)
        break
      case '--check':
        if (inline !== undefined) throw new OptionError('--check: takes no value')
        o.check = true
        break
      default:
        throw new OptionError(`${raw}: unknown option`)
    }
  }
  if (o.image !== undefined && o.runtime === 'process') throw new OptionError('--image: only with --runtime podman or kubernetes')
  if (o.runtime === 'kubernetes') {
    // The cluster's pinto comes from its manifest: these are the process and podman runtimes' own settings.
    if (o.encap !== 'none') throw new OptionError('--encap: not with --runtime kubernetes (the pool\'s encapsulation is pinto-config\'s)')
    if (o.topology !== 'mesh') throw new OptionError('--topology: not with --runtime kubernetes')
    if (o.tor !== undefined) throw new OptionError('--tor: not with --runtime kubernetes')
  }
  return o
}
