// `pintoctl demo --runtime kubernetes`: the demo as a real cluster (agent/demo/kube/). It builds the control
// plane and the nodes, installs pinto from its manifest, runs a Deployment of web pods spread over the nodes,
// prints the pods and the ping matrix, then forwards the API server to this machine's loopback and prints a
// kubeconfig for kubectl, and waits for Ctrl-C (or, with --check, tears down at once).

import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { execa } from 'execa'
import { ROOT } from '../demo/cluster-spec.js'
import { forwardIntoNamespace, type Forward } from '../demo/forward.js'
import { CLUSTER_BINARIES, KubeCluster, nodeAddress, POD_CIDR } from '../demo/kube/cluster.js'
import { API_PORT, writeKubeconfig } from '../demo/kube/control-plane.js'
import { kubePingMatrix, runningPods, webDeployment, WEB_LABEL } from '../demo/kube/workload.js'
import type { DemoOptions } from '../demo/options.js'
import { matrixFailures } from '../demo/observe.js'
import { NODE_IMAGE, PODMAN_CONF } from '../demo/podman-nodes.js'
import { StopRequests } from '../demo/stop-requests.js'
import { DEMO_WIDTH, matrixTable, table } from '../demo/tables.js'

type Write = (text: string) => void

const podmanEnv = (): NodeJS.ProcessEnv => ({ ...process.env, CONTAINERS_CONF: process.env['CONTAINERS_CONF'] ?? PODMAN_CONF })

/** What must hold before anything is built: podman with pinto's image, and Go or the built binaries. */
export async function kubeProblem(image: string): Promise<string | undefined> {
  const v = await execa('podman', ['--version'], { reject: false })
  if (v.exitCode !== 0) return 'the kubernetes runtime imports pinto\'s image from podman, which is not installed: `npm run image`, as root, installs it and builds the image'
  const r = await execa('podman', ['image', 'exists', image], { env: podmanEnv(), reject: false })
  if (r.exitCode !== 0) return `the image ${image} is not in podman's store: \`npm run image\` builds it`
  const script = join(ROOT, 'scripts', 'kubernetes.js')
  if (!existsSync(script)) return 'the kubernetes runtime runs from a checkout of pinto (it builds Kubernetes with scripts/kubernetes.js)'
  const { goAbsent, BIN_DIR } = (await import(pathToFileURL(script).href)) as { goAbsent: () => string | undefined; BIN_DIR: string }
  if (CLUSTER_BINARIES.some((b) => !existsSync(join(BIN_DIR, b)))) return goAbsent()
  return undefined
}

/** The API server on this machine's loopback, and a kubeconfig for it next to the cluster's files. */
async function hostAccess(cluster: KubeCluster): Promise<{ forward: Forward; kubeconfig: string }> {
  const forward = await forwardIntoNamespace(cluster.controlPlaneNs, API_PORT, API_PORT)
  const port = new URL(forward.url).port
  const kubeconfig = join(cluster.runDir, 'kubeconfig')
  const admin = JSON.parse(await cluster.kubectl(['config', 'view', '--raw', '-o', 'json'])) as { clusters: { cluster: { 'certificate-authority': string } }[]; users: { user: { token: string } }[] }
  await writeKubeconfig(kubeconfig, `https://127.0.0.1:${port}`, admin.clusters[0]!.cluster['certificate-authority'], admin.users[0]!.user.token)
  return { forward, kubeconfig }
}

export async function kubeDemoCommand(o: DemoOptions): Promise<number> {
  const image = o.image ?? NODE_IMAGE
  const problem = await kubeProblem(image)
  if (problem !== undefined) {
    process.stderr.write(`pintoctl demo: ${problem}\n`)
    return 1
  }
  let wake: (() => void) | undefined
  const stops = new StopRequests((reason, nth) => {
    out(nth === 1 ? (reason === 'output closed' ? '' : '\nstopping: removing the cluster\n') : '\nstill removing the cluster; one moment\n')
    if (nth === 1) void cluster.destroy()
    wake?.()
  })
  const out: Write = (text) => stops.write(process.stdout, text)
  const err: Write = (text) => stops.write(process.stderr, text)
  const say = (line: string): void => out(`  ${line}\n`)
  const cluster = KubeCluster.prepare({ nodes: o.nodes, image, podmanEnv: podmanEnv(), say })
  const unlisten = stops.listen(process, [process.stdout, process.stderr])
  let forward: Forward | undefined
  try {
    out(`pinto demo: a Kubernetes cluster of ${o.nodes} nodes (containerd, kubelet, kube-proxy each), pinto from deploy/kubernetes/kdd, ${o.pods} web pods per node; pods from ${POD_CIDR}\n`)
    const started = Date.now()
    await cluster.start()
    const replicas = o.nodes * o.pods
    if (replicas > 0) {
      say(`kubectl apply: Deployment web, ${replicas} pods spread over the nodes`)
      await cluster.kubectl(['apply', '-f', '-'], JSON.stringify(webDeployment(replicas)))
      await cluster.kubectl(['rollout', 'status', 'deploy/web', `--timeout=${o.timeout}s`])
    }
    say(`ready in ${((Date.now() - started) / 1000).toFixed(1)} s`)
    const nodes = await cluster.kubectl(['get', 'nodes', '-o', 'wide'])
    out(`\n${nodes}`)
    const pods = await runningPods(cluster, WEB_LABEL)
    out('\npods\n' + table(['pod', 'node', 'address'], pods.map((p) => [p.name, p.node, p.ip]), { maxWidth: DEMO_WIDTH }))
    let code = 0
    if (pods.length > 0) {
      const targets = new Map([...pods.map((p): [string, string] => [p.name, p.ip]), ...cluster.nodes.map((n, i): [string, string] => [n.spec.name, nodeAddress(i)])])
      const matrix = await kubePingMatrix(cluster, pods, targets)
      const failures = matrixFailures(matrix)
      out(`\nping matrix from each pod (kubectl exec), to every other pod and every node (${pods.length * (targets.size - 1) - failures.length} of ${pods.length * (targets.size - 1)} reached)\n`)
      out(matrixTable([...targets.keys()], (a, b) => matrix.get(a)?.get(b), { maxWidth: DEMO_WIDTH }, pods.map((p) => p.name)))
      if (failures.length > 0) code = 1
      if (o.check) {
        out(failures.length === 0 ? 'check passed: every pod reached every other pod and every node\n' : `check FAILED: ${failures.join(', ')}\n`)
        return code
      }
    } else if (o.check) return code
    const access = await hostAccess(cluster)
    forward = access.forward
    out(`\nthe cluster's API server is on this machine at ${forward.url.replace('http://', 'https://')}\n`)
    out(`  export KUBECONFIG=${access.kubeconfig}\n`)
    out(`  ${join(cluster.binDir, 'kubectl')} get nodes,pods -A -o wide\n`)
    out(`  ${join(cluster.binDir, 'kubectl')} -n kube-system exec ds/pinto-node -c pinto-node -- pintoctl node status\n`)
    out('\nrunning; press Ctrl-C to stop and remove everything\n')
    await new Promise<void>((resolve) => {
      wake = resolve
      if (stops.count > 0) resolve()
    })
    return stops.exitCode() ?? code
  } catch (e) {
    if (stops.count > 0) return stops.exitCode() ?? 1
    err(`pintoctl demo: ${(e as Error).message}\n`)
    return 1
  } finally {
    await forward?.close()
    await cluster.destroy()
    out('removed the demo cluster: namespaces, processes, cgroups and temporary files\n')
    unlisten()
  }
}
