// `pintoctl demo`: the local cluster as the README's main command. It checks what the options need, builds
// the cluster (agent/demo/cluster.ts), creates pods, waits for convergence, prints peers, routes and the
// ping matrix, then waits for Ctrl-C (or, with --check, tears down at once) and removes everything it made.

import { DemoCluster, DemoError, POOL_CIDR, API_PORT, birdInstalled, kernelHasIpip, type DemoNode } from '../demo/cluster.js'
import { DEMO_USAGE, OptionError, parseDemoOptions, type DemoOptions } from '../demo/options.js'
import { kernelRoutes, matrixFailures, peers, pingMatrix, waitConverged } from '../demo/observe.js'
import { forwardIntoNamespace, type Forward } from '../demo/forward.js'
import { DEMO_WIDTH, matrixTable } from '../demo/tables.js'
import { accessReport, stateReport } from '../demo/report.js'
import { TOR_ADDRESS, TOR_AS, TOR_PREFIX } from '../demo/tor.js'
import { NODE_IMAGE, podmanProblem } from '../demo/podman-nodes.js'
import { StopRequests } from '../demo/stop-requests.js'
import { kubeDemoCommand } from './demo-kube.js'

type Write = (text: string) => void

/** What must hold before anything is built; each failure is one plain sentence. */
async function preflight(o: DemoOptions): Promise<string | undefined> {
  if (process.getuid?.() !== 0) return 'the demo makes network namespaces and needs root: run it as root (or with sudo)'
  if (o.encap === 'ipip') {
    const ipip = await kernelHasIpip()
    if (!ipip.ok) return `this kernel cannot make ipip links (\`ip link add type ipip\` said: ${ipip.reason || 'no reason'}); use --encap vxlan or --encap none`
  }
  if (o.tor === 'bird' && !(await birdInstalled())) return '--tor bird needs BIRD 2, which is not installed (Debian/Ubuntu: apt-get install bird2)'
  if (o.runtime === 'podman') return podmanProblem(o.image ?? NODE_IMAGE)
  return undefined
}

/** Reads the cluster's peers, top-of-rack, routes and pods and renders them. */
async function stateText(cluster: DemoCluster): Promise<string> {
  const peerFacts = []
  for (const n of cluster.nodes) peerFacts.push({ node: n.name, ...(await peers(n)) })
  const routes = []
  for (const n of cluster.nodes) routes.push({ node: n.name, rows: await kernelRoutes(n.ns) })
  const tor = cluster.tor === undefined ? undefined : { address: TOR_ADDRESS, as: TOR_AS, sessions: await cluster.tor.sessions(), learned: await cluster.tor.learned() }
  return stateReport({ peers: peerFacts, ...(tor !== undefined ? { tor } : {}), routes, pods: cluster.pods })
}

/** Host ports for the nodes' status pages: node1 on 9101, node2 on 9102, ... (any free port if taken). */
const PAGE_PORT_BASE = 9100

function accessText(cluster: DemoCluster, pages: readonly (Forward | undefined)[]): string {
  const first = cluster.nodes[0]
  const logs = cluster.podman && first ? `podman logs ${cluster.podman.podName(first).replace(/node1$/, 'nodeN')}-pinto-node` : (first?.log.replace(/node1/, 'nodeN') ?? '')
  const nodes = cluster.nodes.map((n: DemoNode, i) => ({ name: n.name, address: n.address, ns: n.ns, page: pages[i]?.url }))
  return accessReport({ apiPort: API_PORT, nodes, logs, podNs: cluster.pods[0]?.ns })
}

export async function demoCommand(args: readonly string[]): Promise<number> {
  if (args.includes('-h') || args.includes('--help')) {
    process.stdout.write(DEMO_USAGE)
    return 0
  }
  let o: DemoOptions
  try {
    o = parseDemoOptions(args)
  } catch (e) {
    if (!(e instanceof OptionError)) throw e
    process.stderr.write(`pintoctl demo: ${e.message}\n${DEMO_USAGE}`)
    return 2
  }
  if (o.runtime === 'kubernetes') return kubeDemoCommand(o)
  const problem = await preflight(o)
  if (problem !== undefined) {
    process.stderr.write(`pintoctl demo: ${problem}\n`)
    return 1
  }

  // From here on the output may vanish (a pipe's reader quits, the terminal closes): writes go through
  // `stops`, which drops them once a stream failed and treats that as a request to stop.
  let wake: (() => void) | undefined
  const stops = new StopRequests((reason, nth) => {
    if (nth === 1) {
      out(reason === 'output closed' ? '' : '\nstopping: removing the cluster (Ctrl-C again to hurry)\n')
      void cluster.destroy()
    } else if (nth === 2) {
      out('\nhurrying: killing the agents\n')
      void cluster.destroy({ hurry: true })
    } else out('\nstill removing namespaces; one moment\n')
    wake?.()
  })
  const out: Write = (text) => stops.write(process.stdout, text)
  const err: Write = (text) => stops.write(process.stderr, text)
  const say = (line: string): void => out(`  ${line}\n`)
  const cluster = DemoCluster.prepare({ nodes: o.nodes, encap: o.encap, topology: o.topology, tor: o.tor === 'bird', runtime: o.runtime, ...(o.image !== undefined ? { image: o.image } : {}), say })
  const unlisten = stops.listen(process, [process.stdout, process.stderr])
  let code = 0
  const pages: (Forward | undefined)[] = []
  try {
    out(`pinto demo: ${o.nodes} nodes, ${o.pods} pods each, encapsulation ${o.encap}, ${o.topology === 'rr' ? 'route reflectors' : 'full mesh'}${o.tor ? ', BIRD top-of-rack' : ''}${o.runtime === 'podman' ? ', pinto-node as the DaemonSet\'s pods under podman' : ''}; pods from ${POOL_CIDR}\n`)
    const started = Date.now()
    await cluster.start()
    for (const n of cluster.nodes) {
      for (let i = 0; i < o.pods; i++) {
        const p = await cluster.addPod(n)
        say(`${p.name}: ${p.address} on ${n.name} (CNI ADD)`)
      }
    }
    try {
      const ms = await waitConverged(cluster, o.timeout * 1000, o.tor ? [TOR_PREFIX.replace('0/24', '1')] : [])
      say(`converged in ${((Date.now() - started) / 1000).toFixed(1)} s: every node routes to every other node's pods (${ms} ms after the last pod)`)
    } catch (e) {
      if (cluster.closing) throw e
      err(`pintoctl demo: ${(e as Error).message}\n`)
      code = 1
    }
    if (cluster.closing) return stops.exitCode() ?? 1
    out(await stateText(cluster))
    const matrix = await pingMatrix(cluster.pods)
    const failures = matrixFailures(matrix)
    const names = cluster.pods.map((p) => p.name)
    out(`\npod-to-pod ping matrix (${names.length * (names.length - 1) - failures.length} of ${names.length * (names.length - 1)} reached)\n`)
    out(matrixTable(names, (a, b) => matrix.get(a)?.get(b), { maxWidth: DEMO_WIDTH }))
    if (failures.length > 0) code = 1
    if (o.check) {
      out(failures.length === 0 ? 'check passed: every pod reached every other pod\n' : `check FAILED: ${failures.join(', ')}\n`)
      return code
    }
    if (cluster.closing) return stops.exitCode() ?? 1
    // Page forwards end with the command: closed in the finally below, before the namespaces go.
    for (const [i, n] of cluster.nodes.entries()) {
      pages.push(
        await forwardIntoNamespace(n.ns, API_PORT, PAGE_PORT_BASE + i + 1).catch((e: unknown) => {
          err(`pintoctl demo: no status page forward for ${n.name}: ${(e as Error).message}\n`)
          return undefined
        }),
      )
    }
    out(accessText(cluster, pages))
    out('\nrunning; press Ctrl-C to stop and remove everything\n')
    await new Promise<void>((resolve) => {
      wake = resolve
      if (cluster.closing) resolve()
    })
    return code
  } catch (e) {
    if (cluster.closing && stops.count > 0) return stops.exitCode() ?? 1
    err(`pintoctl demo: ${e instanceof DemoError || process.env['PINTO_DEBUG'] === undefined ? (e as Error).message : (e as Error).stack ?? String(e)}\n`)
    return 1
  } finally {
    await Promise.all(pages.filter((p) => p !== undefined).map((p) => p.close()))
    await cluster.destroy()
    out('removed the demo cluster: namespaces, processes and temporary files\n')
    unlisten()
  }
}
