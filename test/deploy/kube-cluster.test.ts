// pinto in a real Kubernetes cluster on this machine: a control plane and three nodes, each with containerd,
// a kubelet and kube-proxy (agent/demo/kube/). pinto goes in as an operator installs it (kubectl apply of the
// shipped manifest, then rollout status); the nodes stay NotReady until its install-cni wrote the conflist. A
// Deployment of six pods spread over the nodes gets pinto addresses; every pod reaches every pod and every
// node, and a ClusterIP and a NodePort Service answer from every node and every pod through kube-proxy. The
// DaemonSet is rolled to a rebuilt image while the pods ping each other and the rack's BIRD logs its routes;
// pinto-fanout is turned on for that update, and the agents stay behind it for a lost kubelet, a drain and a
// deleted node; then pinto reinstalled from its Helm chart.

import t from 'tap'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { execa } from 'execa'
import { parseAllDocuments } from 'yaml'
import { CHART, CLUSTER_BINARIES, KubeCluster, nodeAddress, POD_CIDR, MANIFESTS } from '../../agent/demo/kube/cluster.js'
import { importImages, podmanImage } from '../../agent/demo/kube/images.js'
import { cgroupDirs, type KubeNode } from '../../agent/demo/kube/kube-node.js'
import { httpGet, kubePingMatrix, runningPods, webDeployment, webService, WEB_LABEL } from '../../agent/demo/kube/workload.js'
import { matrixFailures } from '../../agent/demo/observe.js'
import { ROOT } from '../../agent/demo/cluster-spec.js'
import { cidrContains, parseAddr, parseCidr } from '../../net/index.js'
import { kubernetesBin, kubernetesUnavailable } from '../harness/kubernetes-bin.js'
import { waitFor } from '../harness/wait.js'
import { drainAndDeleteNode, podGcBehindStoppedKubelet } from './kube-steps.js'
import { birdWithdrawals, longestGap, startPing } from './continuous-ping.js'

const FANOUT_MANIFEST = join(ROOT, 'deploy', 'kubernetes', 'fanout', 'pinto-fanout.yaml')
const hasPodman = existsSync('/usr/bin/podman')
const unavailable = await kubernetesUnavailable()
const skip = process.getuid?.() !== 0 ? 'needs root' : !hasPodman ? 'podman is not installed (it builds pinto\'s image)' : unavailable ?? false

/** The file's own tap object: its timeout is the test process's (a subtest's would not lift it). */
const file = t

t.test('pinto installed into a three-node Kubernetes cluster as an operator does', { skip }, async (t) => {
  // A cold build of the Kubernetes components and containerd takes many minutes: lift the timeout meanwhile.
  await kubernetesBin([...CLUSTER_BINARIES, 'helm'], file)
  // One cluster walks an operator's first week: install, pods, Services, a lost kubelet, a drain, a deleted
  // node, a move to Helm. It takes minutes on a small machine.
  file.setTimeout(20 * 60_000)
  const { buildImage } = (await import(pathToFileURL(join(ROOT, 'scripts', 'image.js')).href)) as { buildImage: () => { image: string } }
  const { podmanEnv } = (await import(pathToFileURL(join(ROOT, 'scripts', 'podman-env.js')).href)) as { podmanEnv: () => NodeJS.ProcessEnv }
  const image = buildImage().image
  const started = Date.now()
  // Grace periods short enough for a test: a pod gone without a DEL, and a deleted Node.
  const agentEnv = { PINTO_POD_GC_GRACE_SECONDS: '3', PINTO_NODE_GC_GRACE_SECONDS: '3' }
  const cluster = KubeCluster.prepare({ nodes: 3, image, podmanEnv: podmanEnv(), installPinto: false, agentEnv, say: (l) => t.comment(l) })
  t.teardown(() => cluster.destroy())
  await cluster.start()
  t.comment(`control plane and 3 nodes up in ${((Date.now() - started) / 1000).toFixed(1)} s`)

  const nodeNames = cluster.nodes.map((n) => n.spec.name)
  const notReady = await cluster.kubectl(['get', 'nodes', '-o', 'jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].message}{"\\n"}{end}'])
  t.equal(notReady.split('\n').filter((l) => /cni plugin not initialized|network plugin/i.test(l)).length, 3, 'before pinto, every node is NotReady: its runtime has no network plugin')
  for (const n of cluster.nodes) t.same(readdirSync(n.cniConfDir), [], `${n.spec.name}: no CNI config before install-cni`)

  const installed = Date.now()
  await cluster.installPinto(MANIFESTS.kubernetes)
  t.comment(`pinto rolled out and every node Ready in ${((Date.now() - installed) / 1000).toFixed(1)} s`)
  const ds = JSON.parse(await cluster.kubectl(['-n', 'kube-system', 'get', 'ds', 'pinto-node', '-o', 'json'])) as { status: { numberReady: number; desiredNumberScheduled: number } }
  t.equal(ds.status.numberReady, 3, 'the DaemonSet is Ready on every node')
  for (const n of cluster.nodes) {
    const list = JSON.parse(readFileSync(join(n.cniConfDir, '10-pinto.conflist'), 'utf8')) as { plugins: { type: string }[] }
    t.same(list.plugins.map((p) => p.type), ['pinto', 'portmap'], `${n.spec.name}: install-cni wrote the conflist into the node's /etc/cni/net.d, chaining the node's portmap`)
    t.equal(readFileSync(join(n.cniBinDir, 'pinto')).subarray(0, 4).toString('latin1'), '\x7fELF', `${n.spec.name}: and the plugin into its /opt/cni/bin`)
  }

  const agents = JSON.parse(await cluster.kubectl(['-n', 'kube-system', 'get', 'pods', '-l', 'k8s-app=pinto-node', '-o', 'json'])) as { items: { metadata: { name: string } }[] }
  const status = await waitFor(async () => {
    const out = await cluster.kubectl(['-n', 'kube-system', 'exec', agents.items[0]!.metadata.name, '-c', 'pinto-node', '--', 'pintoctl', 'node', 'status']).catch(() => '')
    return (out.match(/Established/g) ?? []).length >= 2 ? out : undefined
  }, { timeoutMs: 60_000, what: 'the BGP mesh Established' })
  t.match(status, /Established/, 'kubectl exec ... -- pintoctl node status: the node peers with the other two')

  await cluster.kubectl(['apply', '-f', '-'], JSON.stringify(webDeployment(6)))
  await cluster.kubectl(['rollout', 'status', 'deploy/web', '--timeout=180s'])
  const pods = await runningPods(cluster, WEB_LABEL)
  t.equal(pods.length, 6, 'six pods running')
  t.same([...new Set(pods.map((p) => p.node))].sort(), [...nodeNames].sort(), 'spread over all three nodes')
  t.equal(new Set(pods.map((p) => p.ip)).size, 6, 'six distinct addresses')
  const pool = parseCidr(POD_CIDR)
  t.ok(pods.every((p) => { const a = parseAddr(p.ip); return cidrContains(pool, a.family, a.value) }), `every address from pinto's pool ${POD_CIDR}: ${pods.map((p) => p.ip).join(', ')}`)

  const targets = new Map([...pods.map((p): [string, string] => [p.name, p.ip]), ...cluster.nodes.map((n, i): [string, string] => [n.spec.name, nodeAddress(i)])])
  t.same(matrixFailures(await kubePingMatrix(cluster, pods, targets)), [], `every pod pings every other pod and every node (${pods.length * (targets.size - 1)} pairs)`)

  await cluster.kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [webService('web', 'ClusterIP'), webService('web-np', 'NodePort')] }))
  const clusterIp = (await cluster.kubectl(['get', 'svc', 'web', '-o', 'jsonpath={.spec.clusterIP}'])).trim()
  const nodePort = Number(await cluster.kubectl(['get', 'svc', 'web-np', '-o', 'jsonpath={.spec.ports[0].nodePort}']))
  const podNames = new Set(pods.map((p) => p.name))
  const answers = (out: string): boolean => podNames.has(out.trim())
  // kube-proxy programs a Service within a second or two; wait for the first answer, then ask everywhere.
  await waitFor(async () => answers(await cluster.kubectl(['exec', pods[0]!.name, '--', 'sh', '-c', httpGet(clusterIp, 80)]).catch(() => '')) || undefined, { timeoutMs: 30_000, what: 'the ClusterIP Service answering' })
  const serviceFailures: string[] = []
  const viaService = [`${clusterIp}:80`, ...cluster.nodes.map((_, i) => `${nodeAddress(i)}:${nodePort}`)]
  for (const p of pods) {
    for (const target of viaService) {
      const [host, port] = target.split(':') as [string, string]
      const out = await cluster.kubectl(['exec', p.name, '--', 'sh', '-c', httpGet(host, Number(port))]).catch((e: Error) => e.message)
      if (!answers(out)) serviceFailures.push(`pod ${p.name} -> ${target}: ${JSON.stringify(out.trim())}`)
    }
  }
  for (const n of cluster.nodes) {
    for (const target of viaService) {
      const r = await execa('ip', ['netns', 'exec', n.spec.ns, 'curl', '-s', '-m', '3', `http://${target}/`], { reject: false })
      if (!answers(String(r.stdout))) serviceFailures.push(`node ${n.spec.name} -> ${target}: ${JSON.stringify(String(r.stdout).trim() || String(r.stderr).trim())}`)
    }
  }
  t.same(serviceFailures, [], `the ClusterIP and the NodePort on every node answer from every pod and every node (${(pods.length + 3) * viaService.length} requests)`)

  // pinto-fanout (Typha's place) turned on as its manifest says: the Deployment and Service, then pinto-config
  // naming the Service; the rolling update below brings every pinto-node up behind it, and everything after runs so.
  const fanoutObjects = parseAllDocuments(readFileSync(FANOUT_MANIFEST, 'utf8'), { version: '1.1' }).map((d) => d.toJS() as { kind: string; spec?: { template?: { spec: { containers: { image: string }[] } } } })
  for (const o of fanoutObjects) for (const c of o.spec?.template?.spec.containers ?? []) c.image = image
  await cluster.kubectl(['apply', '--server-side', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: fanoutObjects }))
  await cluster.kubectl(['-n', 'kube-system', 'rollout', 'status', 'deploy/pinto-fanout', '--timeout=180s'])
  await cluster.kubectl(['-n', 'kube-system', 'patch', 'configmap', 'pinto-config', '--type', 'merge', '-p', JSON.stringify({ data: { fanout_service: 'kube-system/pinto-fanout' } })])

  // A rolling update of the DaemonSet to a rebuilt image, driven by the DaemonSet controller (maxUnavailable 1),
  // while every pod pings every pod on the other nodes ten times a second and BIRD, the rack's router, logs
  // every route change.
  const image2 = `${image}-rollout-${process.pid}`
  const ctx = mkdtempSync(join(tmpdir(), 'pinto-rollout-'))
  t.teardown(async () => {
    rmSync(ctx, { recursive: true, force: true })
    await execa('podman', ['rmi', image2], { env: podmanEnv(), reject: false })
  })
  writeFileSync(join(ctx, 'Containerfile'), `FROM ${image}\nLABEL pinto.rollout=${process.pid}\n`)
  await execa('podman', ['build', '--quiet', '--tag', image2, ctx], { env: podmanEnv() })
  const archive = await podmanImage(image2, podmanEnv())
  for (const n of cluster.nodes) await importImages(join(cluster.binDir, 'ctr'), n.containerdSocket, [archive])
  const tor = cluster.tor!
  await tor.birdc('debug', 'all', '{', 'routes', ',', 'states', '}')
  const birdLog = join(cluster.runDir, 'tor', 'bird.log')
  const logStart = readFileSync(birdLog, 'utf8').length
  const learnedBefore = await tor.learned()
  const nodeOf = (name: string): KubeNode => cluster.nodes.find((n) => n.spec.name === name)!
  const pings = pods.flatMap((a) => pods.filter((b) => b.node !== a.node).map((b) => startPing(['nsenter', '-t', String(nodeOf(a.node).podPid(a.uid)), '-n'], a.name, b.ip, b.name)))
  const updateStart = Date.now()
  let results: { p: (typeof pings)[number]; replies: number[]; sent: number }[]
  try {
    // Every container of the pod template, the init container included, as a release bumps them together.
    await cluster.kubectl(['-n', 'kube-system', 'set', 'image', 'ds/pinto-node', `*=${image2}`])
    await cluster.kubectl(['-n', 'kube-system', 'rollout', 'status', 'ds/pinto-node', '--timeout=600s'])
    // The last node's speaker is back when BIRD has its session up again.
    await waitFor(async () => ([...(await tor.sessions()).values()].every((s) => s === 'Established') ? true : undefined), { timeoutMs: 60_000, what: 'BIRD Established with every node again' })
  } finally {
    results = await Promise.all(pings.map(async (p) => ({ p, ...(await p.stop()) })))
  }
  const updateEnd = Date.now()
  const images = (await cluster.kubectl(['-n', 'kube-system', 'get', 'pods', '-l', 'k8s-app=pinto-node', '-o', 'jsonpath={range .items[*]}{.spec.containers[0].image}{"\\n"}{end}'])).split('\n').filter((l) => l !== '')
  t.same(images, nodeNames.map(() => image2), `the controller replaced pinto-node on every node with the rebuilt image (${((updateEnd - updateStart) / 1000).toFixed(1)} s)`)
  let worst = { ms: 0, at: 0, pair: '' }
  for (const r of results) {
    const g = longestGap(r.replies, updateStart, updateEnd)
    if (g.ms > worst.ms) worst = { ...g, pair: `${r.p.from} -> ${r.p.to}` }
  }
  t.ok(results.every((r) => r.replies.length > 0), `${results.length} pod pairs across nodes pinged ten times a second throughout`)
  t.comment(`longest ping gap during the rolling update: ${worst.ms} ms (${worst.pair}, ${((worst.at - updateStart) / 1000).toFixed(1)} s in)`)
  t.ok(worst.ms < 1000, `no pod-to-pod ping gap of a second or more during the rolling update (longest ${worst.ms} ms)`)
  const blockOf = new Map(pods.map((p) => [p.node.replace('-', '_'), p.ip]))
  const trace = birdWithdrawals(readFileSync(birdLog, 'utf8').slice(logStart), (peer) => blockOf.get(peer), (prefix, address) => {
    const a = parseAddr(address)
    return cidrContains(parseCidr(prefix), a.family, a.value)
  })
  t.comment(`BIRD imported ${trace.imports.length} route changes during the update; ${trace.gone.length} prefixes left its table`)
  t.ok(nodeNames.every((n) => new RegExp(`${n.replace('-', '_')}: State changed to up`).test(readFileSync(birdLog, 'utf8').slice(logStart))), 'BIRD saw every node\'s session come back up: the trace covers the whole update')
  t.same(trace.gone, [], 'no pod block left the rack router\'s table during the update')
  t.same(trace.ownWithdrawn, [], 'no node\'s own block was withdrawn at the rack router (graceful restart kept it)')
  t.same(await tor.learned(), learnedBefore, 'the rack router holds the same blocks after the update')
  const fanoutLogs = await Promise.all(nodeNames.map(async (n) => {
    const pod = JSON.parse(await cluster.kubectl(['-n', 'kube-system', 'get', 'pods', '-l', 'k8s-app=pinto-node', '--field-selector', `spec.nodeName=${n}`, '-o', 'json'])) as { items: { metadata: { name: string } }[] }
    return cluster.kubectl(['-n', 'kube-system', 'logs', pod.items[0]!.metadata.name, '-c', 'pinto-node'])
  }))
  t.ok(fanoutLogs.every((l) => /following the cluster through the fan-out/.test(l)), 'after the update every pinto-node follows the cluster through pinto-fanout, found from its Service')

  // What pintoctl on a node says of an address.
  const ipamShow = async (ip: string): Promise<string> => {
    const agent = JSON.parse(await cluster.kubectl(['-n', 'kube-system', 'get', 'pods', '-l', 'k8s-app=pinto-node', '--field-selector', `spec.nodeName=${nodeNames[0]}`, '-o', 'json'])) as { items: { metadata: { name: string } }[] }
    return cluster.kubectl(['-n', 'kube-system', 'exec', agent.items[0]!.metadata.name, '-c', 'pinto-node', '--', 'pintoctl', 'ipam', 'show', `--ip=${ip}`])
  }

  // A pod deleted while its node's kubelet is stopped: no DEL can come, and pinto's pod GC frees its address.
  const node2 = cluster.nodes[1]!
  await podGcBehindStoppedKubelet(t, cluster, pods, node2, ipamShow)

  // kubectl drain, then the machine goes and kubectl delete node: the pods come back elsewhere with new addresses,
  // and the node's blocks are released.
  await drainAndDeleteNode(t, cluster, cluster.nodes[2]!, async (node) => {
    const blocks = JSON.parse(await cluster.kubectl(['get', 'ipamblocks.crd.projectcalico.org', '-o', 'json'])) as { items: { spec: { cidr: string; affinity?: string } }[] }
    const affinities = JSON.parse(await cluster.kubectl(['get', 'blockaffinities.crd.projectcalico.org', '-o', 'json'])) as { items: { spec: { node: string; cidr: string } }[] }
    return [...new Set([...affinities.items.filter((a) => a.spec.node === node).map((a) => a.spec.cidr), ...blocks.items.filter((b) => b.spec.affinity === `host:${node}`).map((b) => b.spec.cidr)])]
  })

  // The same cluster, pinto removed and installed again from the Helm chart, as an operator moving to Helm does.
  await cluster.kubectl(['delete', 'deploy/web', '--wait=true', '--timeout=120s'])
  await waitFor(async () => (await runningPods(cluster, WEB_LABEL)).length === 0 || undefined, { timeoutMs: 120_000, what: 'the web pods gone (their DELs through pinto)' })
  // CoreDNS's address would not survive pinto's IPAM going with the CRDs: it leaves first and comes back after.
  await cluster.kubectl(['-n', 'kube-system', 'scale', 'deploy/coredns', '--replicas=0'])
  await waitFor(async () => (await cluster.kubectl(['-n', 'kube-system', 'get', 'pods', '-l', 'k8s-app=kube-dns', '-o', 'name'])).trim() === '' || undefined, { timeoutMs: 120_000, what: 'CoreDNS stopped' })
  await cluster.kubectl(['-n', 'kube-system', 'delete', 'deploy/pinto-fanout', 'service/pinto-fanout', '--wait=true', '--timeout=120s'])
  await cluster.kubectl(['delete', '-f', MANIFESTS.kubernetes, '--wait=true', '--timeout=180s'])
  await cluster.installPintoChart(CHART)
  await cluster.kubectl(['-n', 'kube-system', 'scale', 'deploy/coredns', '--replicas=1'])
  const fromChart = JSON.parse(await cluster.kubectl(['-n', 'kube-system', 'get', 'ds', 'pinto-node', '-o', 'json'])) as { metadata: { labels?: Record<string, string>; annotations?: Record<string, string> }; status: { numberReady: number } }
  t.equal(fromChart.status.numberReady, 2, 'from the Helm chart, the DaemonSet is Ready on every node again')
  t.equal(fromChart.metadata.annotations?.['meta.helm.sh/release-name'], 'pinto', 'and it is the chart\'s release')
  const agentAfterHelm = JSON.parse(await cluster.kubectl(['-n', 'kube-system', 'get', 'ds', 'pinto-node', '-o', 'jsonpath={.spec.template.spec.containers[?(@.name=="pinto-node")].env}'])) as { name: string; value?: string }[]
  t.ok(Object.entries(agentEnv).every(([k, v]) => agentAfterHelm.some((e) => e.name === k && e.value === v)), 'the cluster\'s agent settings reach the chart\'s DaemonSet too')
  await cluster.kubectl(['apply', '-f', '-'], JSON.stringify(webDeployment(4)))
  await cluster.kubectl(['rollout', 'status', 'deploy/web', '--timeout=180s'])
  const again = await runningPods(cluster, WEB_LABEL)
  t.equal(new Set(again.map((p) => p.node)).size, 2, 'new pods on both nodes')
  const targetsAgain = new Map(again.map((p): [string, string] => [p.name, p.ip]))
  t.same(matrixFailures(await kubePingMatrix(cluster, again, targetsAgain)), [], 'and they reach each other')

  const roots = cluster.nodes.map((n) => n.spec.cgroupRoot)
  const dir = cluster.runDir
  const cpNs = cluster.controlPlaneNs
  await cluster.destroy()
  t.notOk(existsSync(dir), 'tear-down removed the cluster\'s directory')
  t.same(roots.flatMap(cgroupDirs).filter(existsSync), [], 'and every node\'s cgroups')
  const { stdout } = await execa('ip', ['netns', 'list'])
  t.notMatch(stdout, cpNs.split('-cp')[0]!, 'and every namespace')
})
