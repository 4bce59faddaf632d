// The DaemonSet's pod template run for real on one node by `podman kube play`, as the later end-to-end
// run will: converted by kube-pod.ts, played inside a node namespace with a stand-in image that keeps
// the image's contract. The init container installs into the node's CNI directories, pinto-node gets
// its env from the ConfigMap, the Secret's files, the host network and its API, and SIGTERM on stop.
import t from 'tap'
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { stringify } from 'yaml'
import { createTopology } from '../harness/netns.js'
import { waitFor } from '../harness/wait.js'
import { parseManifest, type KubeObject } from './kube-schema.js'
import { podForNode } from '../../agent/demo/kube-pod.js'
import { Podman } from './podman.js'

const MANIFEST = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'deploy', 'kubernetes', 'pinto.yaml')
const IMAGE = 'localhost/pinto-node-stand-in:test'
type Loose = any

function readIfThere(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8')
  } catch {
    return undefined
  }
}

t.test('podman kube play runs the pod template on a node', async (t) => {
  const topo = await createTopology(t)
  const node = await topo.addNode({ name: 'kp', v4: '192.0.2.41/24' })
  const podman = Podman.create(t)
  await podman.buildStandIn(IMAGE)
  const root = mkdtempSync(join(tmpdir(), 'pinto-node-root-'))
  t.teardown(() => rmSync(root, { recursive: true, force: true }))

  const docs = parseManifest(readFileSync(MANIFEST, 'utf8'), 'pinto.yaml')
  const config = docs.find((d) => d.kind === 'ConfigMap') as Loose
  config.data.datastore = 'etcd://192.0.2.1:2379'
  config.data.veth_mtu = '1400'
  const { pod, files } = podForNode({
    daemonSet: docs.find((d) => d.kind === 'DaemonSet') as KubeObject,
    documents: docs,
    nodeName: 'kp-node',
    hostRoot: root,
    hostPathOverrides: { '/var/run/netns': '/run/netns' },
    image: IMAGE,
    restartPolicy: 'OnFailure',
  })
  for (const f of files) {
    mkdirSync(dirname(f.path), { recursive: true })
    writeFileSync(f.path, f.content)
    chmodSync(f.path, f.mode)
  }
  const podFile = join(root, 'pod.yaml')
  writeFileSync(podFile, stringify(pod))
  await podman.run(['kube', 'play', podFile], { netns: node.ns })

  const conflist = JSON.parse(readFileSync(join(root, 'etc/cni/net.d/10-pinto.conflist'), 'utf8'))
  t.equal(conflist.plugins[0].mtu, 1400, 'install-cni wrote the conflist with veth_mtu from pinto-config')
  for (const plugin of ['pinto', 'pinto-ipam']) t.equal(statSync(join(root, 'opt/cni/bin', plugin)).mode & 0o111, 0o111, `install-cni wrote ${plugin} into the node's /opt/cni/bin`)

  const state = join(root, 'var/lib/pinto')
  // The stand-in records its env, the Secret's mode and the netns mount, each whole (by rename): wait for all three.
  const env = await waitFor(() => readIfThere(join(state, 'secret-mode')) !== undefined && readIfThere(join(state, 'netns-mount')) !== undefined && readIfThere(join(state, 'env')), { timeoutMs: 30_000, what: 'pinto-node recording its env, the Secret\'s mode and the netns mount' })
  t.match(env, /^PINTO_NODENAME=kp-node$/m, 'PINTO_NODENAME from spec.nodeName')
  t.match(env, /^PINTO_DATASTORE=etcd:\/\/192\.0\.2\.1:2379$/m, 'PINTO_DATASTORE from pinto-config')
  t.match(env, /^PINTO_ETCD_CA_CERT_FILE=$/m)
  t.equal(readIfThere(join(state, 'secret-mode')), '400 0\n', 'the Secret\'s etcd-ca at /etc/pinto/etcd-secrets, mode 0400')
  t.match(readIfThere(join(state, 'netns-mount')) ?? '', / master:\d+ /, '/var/run/netns receives the host\'s mounts (HostToContainer is rslave)')
  const livez = await waitFor(async () => (await topo.exec(node.ns, 'busybox', ['wget', '-q', '-O', '-', 'http://127.0.0.1:9099/livez'])).stdout, { timeoutMs: 15_000, what: 'the API on 127.0.0.1:9099 in the node namespace' })
  t.equal(String(livez).trim(), 'ok', 'host network: the probe address answers in the node\'s namespace')

  const podName = (pod.metadata as Loose).name as string
  const inspect = JSON.parse(await podman.run(['inspect', `${podName}-pinto-node`])) as Loose[]
  const c = inspect[0]
  t.equal(c.HostConfig.Privileged, true, 'privileged')
  t.equal(c.HostConfig.NetworkMode, 'host', 'hostNetwork')
  t.comment(`podman 4.3.1 made of the rest: PidMode ${JSON.stringify(c.HostConfig.PidMode)} (hostPID ${c.HostConfig.PidMode === 'host' ? 'honoured' : 'ignored'}), ` +
    `healthcheck ${JSON.stringify(c.Config.Healthcheck?.Test ?? null)} (from livenessProbe; readinessProbe has none), StopTimeout ${String(c.Config.StopTimeout)} s (terminationGracePeriodSeconds 30)`)

  await podman.run(['pod', 'stop', '--time', '30', podName])
  t.equal(readIfThere(join(state, 'stopped')), 'SIGTERM\n', 'stopping the pod sends SIGTERM (pinto-node\'s graceful stop)')
})
