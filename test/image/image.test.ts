// pinto's node image (`npm run image`) run by podman as a DaemonSet runs it: the init container's
// `pintoctl install-cni` writing the single-executable plugins and the conflist into host directories,
// pinto-node under the image's Node.js with host networking in a test namespace (dataplane none, a
// temporary embedded store), `pintoctl node status` answering inside it, and the installed plugins
// ADDing and DELeting a pod against it from the host side with no Node.js reachable.

import t from 'tap'
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { execa } from 'execa'
import { createLab, DIST } from '../cni/lab.js'
import { waitFor } from '../harness/wait.js'

const ROOT = join(DIST, '..')
const PODMAN = ['/usr/bin/podman', '/usr/local/bin/podman'].find((p) => existsSync(p))
const ENV = { ...process.env, CONTAINERS_CONF: process.env['CONTAINERS_CONF'] ?? join(ROOT, 'scripts', 'podman-containers.conf') }
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version
const IMAGE = `localhost/pinto-node:${VERSION}`

if (PODMAN === undefined) t.comment('skipped: podman is not installed (Debian: apt-get install podman)')

t.test('the image installs the CNI plugins, runs pinto-node and its plugins wire a pod', { skip: PODMAN === undefined ? 'podman is not installed' : false, timeout: 600_000 }, async (t) => {
  const podman = PODMAN as string
  // Built, or found already built from the same inputs (the image's pinto.inputs label).
  const built = execFileSync(process.execPath, [join(ROOT, 'scripts', 'image.js')], { env: ENV, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] })
  t.match(built, new RegExp(`^${IMAGE} \\(pinto.inputs=[0-9a-f]{16}, (built|already built)\\): [0-9.]+ MB\\n$`))
  const run = (args: readonly string[], ns?: string) =>
    ns === undefined ? execa(podman, args, { env: ENV, reject: false }) : execa('nsenter', [`--net=/run/netns/${ns}`, podman, ...args], { env: ENV, reject: false })

  const lab = await createLab(t, { service: false, plugins: 'none' })
  const conf = join(lab.dir, 'net.d')
  mkdirSync(conf)
  mkdirSync(join(lab.dir, 'run'), { recursive: true })

  // The init container, exactly as the DaemonSet runs it, with the ConfigMap's settings as env.
  const init = await run(['run', '--rm', '--network', 'none', '-v', `${lab.binDir}:/host/opt/cni/bin`, '-v', `${conf}:/host/etc/cni/net.d`,
    '-e', `PINTO_CNI_SOCKET=${lab.socket}`, '-e', 'PINTO_CNI_MTU=1400', '--entrypoint', 'pintoctl', IMAGE,
    'install-cni', '--bin-dir', '/host/opt/cni/bin', '--conf-dir', '/host/etc/cni/net.d'])
  t.equal(init.exitCode, 0, init.stderr)
  t.equal(init.stdout, 'installed /host/opt/cni/bin/pinto\ninstalled /host/opt/cni/bin/pinto-ipam\ninstalled /host/etc/cni/net.d/10-pinto.conflist')
  const list = JSON.parse(readFileSync(join(conf, '10-pinto.conflist'), 'utf8')) as { plugins: Record<string, unknown>[] }
  t.match(list.plugins[0], { type: 'pinto', mtu: 1400, socket: lab.socket, ipam: { type: 'pinto-ipam', socket: lab.socket } })

  // pinto-node, host network in the lab's host namespace, its state in the lab's directory.
  const name = `pinto-test-${lab.topo.fabric.replace(/-fabric$/, '')}`
  const apiSocket = join(lab.dir, 'run', 'api.sock')
  t.teardown(async () => {
    await run(['rm', '-f', '-t', '0', name])
  })
  const env = {
    PINTO_NODENAME: 'node1', PINTO_DATASTORE: join(lab.dir, 'store'), PINTO_SOCKET: lab.socket, PINTO_API_SOCKET: apiSocket,
    PINTO_STATE_DIR: join(lab.dir, 'state'), PINTO_MTU_FILE: lab.mtuFile, PINTO_DATAPLANE: 'none', PINTO_IP: '192.0.2.1/24',
    PINTO_IPV4POOL_CIDR: 'none',
  }
  const start = await run(['run', '-d', '--name', name, '--network', 'host', '-v', `${lab.dir}:${lab.dir}`,
    ...Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]), IMAGE], lab.hostNs)
  t.equal(start.exitCode, 0, start.stderr)
  // An exit is returned, and reported at once, not waited out.
  const status = await waitFor(async () => {
    const r = await run(['exec', name, 'pintoctl', 'node', 'status', '--api', `unix:${apiSocket}`])
    if (r.exitCode === 0) return { out: String(r.stdout) }
    const state = await run(['inspect', '--format', '{{.State.Status}}', name])
    return String(state.stdout).trim() === 'exited' ? { exited: String((await run(['logs', name])).stderr) } : undefined
  }, { timeoutMs: 60_000, intervalMs: 250, what: 'pintoctl node status answering in the container' })
  if ('exited' in status) throw new Error(`pinto-node exited: ${status.exited}`)
  t.match(status.out, /node1|Peer/)
  t.equal(String((await run(['exec', name, 'node', '--version'])).stdout).trim(), 'v26.12.1', 'pinto-node runs under Node 26')
  // TCP-MD5 and GTSM need koffi and its prebuilt binary (@koromix/koffi-linux-x64) in the image.
  const ffi = await run(['exec', name, 'node', '--input-type=module', '-e',
    "const m = await import('/opt/pinto/dist/bgp/session/socket-options.js'); console.log(JSON.stringify(m.socketOptionsAvailable()))"])
  t.equal(String(ffi.stdout).trim(), '{"ok":true}', `setsockopt through koffi loads in the container: ${String(ffi.stderr)}`)

  // The installed plugins, exec'd on the host side with the CNI variables only.
  const netns = await lab.pod('img')
  const att = { containerId: 'img1', netns, args: 'K8S_POD_NAMESPACE=default;K8S_POD_NAME=img-1' }
  const net = { ...list.plugins[0], name: 'k8s-pod-network', cniVersion: '1.0.0' }
  const add = await lab.exec('pinto', 'ADD', net, att)
  t.equal(add.code, 0, add.stdout + add.stderr)
  const r = add.json as { interfaces: { name: string }[]; ips: { address: string }[] }
  const v4 = r.ips[0]?.address ?? ''
  t.match(v4, /^198\.1[89]\.\d+\.\d+\/32$/)
  t.match(await lab.ip(netns.replace('/run/netns/', ''), ['addr', 'show', 'dev', 'eth0']), 'mtu 1400')
  const shown = await run(['exec', name, 'pintoctl', 'ipam', 'show', `--ip=${v4.split('/')[0] ?? ''}`])
  t.equal(shown.exitCode, 0, shown.stderr)
  t.match(shown.stdout, `IP ${v4.split('/')[0] ?? ''} is in use\nHandle ID: k8s-pod-network.img1`, 'the address is the pod\'s')
  const del = await lab.exec('pinto', 'DEL', net, att)
  t.equal(del.code, 0, del.stdout + del.stderr)
  t.notOk((await lab.links(lab.hostNs)).includes(r.interfaces[0]?.name ?? ''), 'host veth gone')
})
