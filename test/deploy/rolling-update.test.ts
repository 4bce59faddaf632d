// The DaemonSet for real: pinto's image built from this checkout, the pod template from deploy/kubernetes
// played by podman kube play in each of three node namespaces (DemoCluster runtime 'podman'), etcd over
// TLS, a BIRD top-of-rack. Pods made through the plugins each node's install-cni put there ping across
// nodes; then a rolling update to a rebuilt image, node by node as maxUnavailable 1 does, while pings run
// 10 a second, BIRD logs every route change, and ADDs keep running on the node being replaced.
import t from 'tap'
import { mkdtempSync, readFileSync, rmSync, watch, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { execa } from 'execa'
import { AddFailed, birdInstalled, DemoCluster, type DemoNode, type DemoPod } from '../../agent/demo/cluster.js'
import { covered, matrixFailures, pingMatrix, waitConverged } from '../../agent/demo/observe.js'
import { podman } from '../../agent/demo/podman-nodes.js'
import { waitFor } from '../harness/wait.js'
import { birdWithdrawals, longestGap, startPing } from './continuous-ping.js'

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..')
const hasPodman = (await execa('podman', ['--version'], { reject: false })).exitCode === 0
const hasBird = await birdInstalled()
const skip = process.getuid?.() !== 0 ? 'needs root' : !hasPodman ? 'podman is not installed' : !hasBird ? 'bird2 is not installed' : false

interface AddRecord {
  readonly start: number
  readonly end: number
  readonly code: number
  readonly message: string
}

/** The CNI error code in a plugin's error result (-1 when there is none: the plugin did not answer as one). */
function cniCode(text: string): number {
  const m = /\{"cniVersion".*\}/.exec(text)
  try {
    return m === null ? -1 : Number((JSON.parse(m[0]) as { code?: number }).code ?? -1)
  } catch {
    return -1
  }
}

/**
 * A runtime creating pods on `n` one after another until stop(): each ADD exec'd through the node's
 * installed plugin; an ADD answered "try again later" (CNI code 11) is retried with the same container,
 * as the kubelet retries a sandbox. Every exec is recorded.
 */
function addLoop(c: DemoCluster, n: DemoNode): { stop(): Promise<{ execs: AddRecord[]; pods: DemoPod[] }> } {
  const execs: AddRecord[] = []
  const pods: DemoPod[] = []
  let stopping = false
  const run = (async () => {
    while (!stopping) {
      const start = Date.now()
      try {
        pods.push(await c.addPod(n))
        execs.push({ start, end: Date.now(), code: 0, message: '' })
        continue
      } catch (err) {
        if (!(err instanceof AddFailed)) throw err
        execs.push({ start, end: Date.now(), code: cniCode(err.message), message: err.message })
        // Retried every 25 ms, as a kubelet would sooner or later: install-cni's writes are brief, and the
        // next assertion wants an ADD inside them, so the gap between two ADDs must be shorter.
        for (;;) {
          await new Promise((r) => setTimeout(r, 25))
          const s = Date.now()
          const r = await c.cni(n, 'ADD', err.pod)
          const code = r.code === 0 ? 0 : cniCode(r.stdout)
          execs.push({ start: s, end: Date.now(), code, message: `${r.stdout.trim()} ${r.stderr.trim()}` })
          if (code !== 0 && code !== 11) break
          if (code !== 0) continue
          const address = (JSON.parse(r.stdout) as { ips: { address: string }[] }).ips[0]!.address.split('/')[0]!
          const pod = { ...err.pod, address }
          c.pods.push(pod)
          pods.push(pod)
          break
        }
      }
    }
  })()
  return {
    async stop() {
      stopping = true
      await run
      return { execs, pods }
    },
  }
}

t.test('the DaemonSet on three nodes under podman, and a rolling update to a rebuilt image', { skip }, async (t) => {
  const started = Date.now()
  const id = `${process.pid}-${Math.random().toString(16).slice(2, 8)}`
  const image1 = `localhost/pinto-node:e2e-${id}-a`
  const image2 = `localhost/pinto-node:e2e-${id}-b`
  t.teardown(async () => {
    for (const tag of [image2, image1]) await podman(['rmi', tag]).catch(() => undefined)
  })
  const { buildImage } = (await import(pathToFileURL(join(ROOT, 'scripts', 'image.js')).href)) as { buildImage: (o: { tag: string }) => { size: number } }
  const built = buildImage({ tag: image1 })
  // The rebuilt image: the same root with one more label, so its id differs as a new release's would.
  const ctx = mkdtempSync(join(tmpdir(), 'pinto-e2e-image-'))
  t.teardown(() => rmSync(ctx, { recursive: true, force: true }))
  writeFileSync(join(ctx, 'Containerfile'), `FROM ${image1}\nLABEL pinto.rollout=${id}\n`)
  await podman(['build', '--quiet', '--tag', image2, ctx])
  const ids = await Promise.all([image1, image2].map(async (i) => (await podman(['image', 'inspect', '--format', '{{.Id}}', i])).trim()))
  t.not(ids[0], ids[1], 'the rebuilt image has another id')
  t.comment(`image ${image1}: ${(built.size / 1e6).toFixed(1)} MB; built and rebuilt in ${((Date.now() - started) / 1000).toFixed(1)} s`)

  const c = await DemoCluster.create({ nodes: 3, tor: true, runtime: 'podman', image: image1 })
  t.teardown(() => c.destroy())
  const tor = c.tor!
  const pm = c.podman!
  for (const n of c.nodes) {
    const bin = readFileSync(join(pm.binDir(n), 'pinto'))
    t.equal(bin.subarray(0, 4).toString('latin1'), '\x7fELF', `${n.name}: install-cni put the single executable into the node's /opt/cni/bin`)
    const list = JSON.parse(readFileSync(pm.confList(n), 'utf8')) as { plugins: { mtu: number }[] }
    t.equal(list.plugins[0]!.mtu, 1400, `${n.name}: the node's conflist has veth_mtu from pinto-config`)
  }
  for (const n of c.nodes) await c.addPod(n)
  await waitConverged(c, 30_000)
  t.same(matrixFailures(await pingMatrix(c.pods)), [], 'every pod pings every other, across nodes')
  const sessions = await waitFor(async () => {
    const s = [...(await tor.sessions()).values()]
    return s.length === 3 && s.every((x) => x === 'Established') ? s : undefined
  }, { timeoutMs: 30_000, what: 'BIRD Established with every node' })
  t.equal(sessions.length, 3, 'the BIRD top-of-rack peers with every node')
  const learnedBefore = await tor.learned()
  t.equal(learnedBefore.length, 3, `BIRD learned each node's block: ${learnedBefore.join(', ')}`)
  for (const n of c.nodes) await pm.waitReady(n)

  // Every route change BIRD makes from here on is logged (debug routes: "added", "removed", ...).
  await tor.birdc('debug', 'all', '{', 'routes', ',', 'states', '}')
  const birdLog = join(c.nodes[0]!.dir, '..', 'tor', 'bird.log')
  const logStart = readFileSync(birdLog, 'utf8').length
  const pods = [...c.pods]
  const pings = pods.flatMap((a) => pods.filter((b) => b.node !== a.node).map((b) => startPing(['ip', 'netns', 'exec', a.ns], a.name, b.address, b.name)))
  const updateStart = Date.now()
  const perNode: string[] = []
  const adds: { node: string; execs: AddRecord[]; pods: DemoPod[]; install: { started: number; finished: number; events: number } }[] = []
  let results: { p: (typeof pings)[number]; replies: number[]; sent: number }[]
  try {
    for (const n of c.nodes) {
      const t0 = Date.now()
      // install-cni's writes as the node's filesystem sees them (podman removes the init container after it ran).
      const writes: number[] = []
      const watcher = watch(pm.binDir(n), () => writes.push(Date.now()))
      const load = addLoop(c, n)
      await new Promise((r) => setTimeout(r, 300))
      await c.stopAgent(n, 'SIGTERM', 30_000)
      const stopped = Date.now()
      await pm.play(n, { image: image2 })
      await pm.waitReady(n)
      const ready = Date.now()
      // A few more ADDs through the new pod before moving on.
      await new Promise((r) => setTimeout(r, 500))
      const r = await load.stop()
      watcher.close()
      adds.push({ node: n.name, ...r, install: { started: writes[0] ?? 0, finished: writes.at(-1) ?? 0, events: writes.length } })
      perNode.push(`${n.name}: stopped in ${stopped - t0 - 300} ms, new pod ready ${ready - stopped} ms later`)
      const image = (await podman(['inspect', '--format', '{{.ImageName}}', `${pm.podName(n)}-pinto-node`])).trim()
      t.equal(image, image2, `${n.name} runs the rebuilt image`)
    }
  } finally {
    results = await Promise.all(pings.map(async (p) => ({ p, ...(await p.stop()) })))
  }
  const updateEnd = Date.now()
  t.comment(perNode.join('; '))

  let worst = { ms: 0, at: 0, pair: '' }
  for (const r of results) {
    const g = longestGap(r.replies, updateStart, updateEnd)
    if (g.ms > worst.ms) worst = { ...g, pair: `${r.p.from} -> ${r.p.to}` }
    t.ok(r.replies.length > 0, `${r.p.from} -> ${r.p.to}: ${r.replies.length} of ${r.sent} replies`)
  }
  t.comment(`longest ping gap during the update: ${worst.ms} ms (${worst.pair}, ${((worst.at - updateStart) / 1000).toFixed(1)} s in); update took ${((updateEnd - updateStart) / 1000).toFixed(1)} s`)
  t.ok(worst.ms < 1000, `no pod-to-pod ping lost for a second or more (longest gap ${worst.ms} ms)`)

  const log = readFileSync(birdLog, 'utf8').slice(logStart)
  // BIRD's route trace: "NODE.ipv4 > ..." is a route imported from NODE into BIRD's table ("removed [sole]": the
  // prefix left the table; "removed [replaced]" or "removed": that node's path went, another stayed), "<" an export.
  const ownBlock = new Map(c.nodes.map((n) => [n.name, pods.find((p) => p.node === n.name)!.address]))
  const { imports, gone, paths, ownWithdrawn } = birdWithdrawals(log, (peer) => ownBlock.get(peer), (prefix, address) => covered([{ prefix, type: 'unicast', via: '' }], address))
  t.comment(`BIRD imported ${imports.length} route changes during the update: ${gone.length} prefixes left its table, ${ownWithdrawn.length} own blocks withdrawn, ${paths.length} paths through a restarted node to other nodes' blocks withdrawn`)
  t.same(gone, [], 'no pod block left BIRD\'s table while the nodes were replaced')
  t.same(ownWithdrawn, [], 'no node\'s own block was withdrawn at BIRD (graceful restart kept them)')
  t.same(paths, [], 'no path withdrawn at BIRD: a restarted node ends its table only once its peers have sent theirs')
  for (const name of new Set(paths.map((l) => /(node\d+)\.ipv4 > /.exec(l)?.[1] ?? ''))) {
    // What the restarted node's speaker did: its sessions, the peers' End-of-RIB and when it sent its own.
    const n = c.nodes.find((x) => x.name === name)
    const log = n === undefined ? '' : await podman(['logs', `${pm.podName(n)}-pinto-node`]).catch((err: Error) => err.message)
    t.comment(`${name}'s pinto-node after its restart:\n${log.split('\n').filter((l) => /established|End-of-RIB|peers updated|tables in|restarting|deadline/.test(l)).join('\n')}`)
  }
  const ups = c.nodes.filter((n) => new RegExp(`${n.name}: State changed to up`).test(log))
  t.equal(ups.length, 3, 'BIRD saw every node\'s session come back up (the trace covers the update)')
  t.same(await tor.learned(), learnedBefore, 'BIRD holds the same blocks after the update')

  for (const a of adds) {
    const failed = a.execs.filter((e) => e.code !== 0)
    const other = failed.filter((e) => e.code !== 11)
    const during = a.execs.filter((e) => e.end >= a.install.started && e.start <= a.install.finished)
    t.comment(`${a.node}: ${a.execs.length} ADD execs (${a.execs.length - failed.length} succeeded, ${failed.length} answered try-again-later while no pinto-node ran), ${during.length} during install-cni's writes (${a.install.finished - a.install.started} ms), ${a.pods.length} pods added`)
    t.same(other.map((e) => e.message), [], `${a.node}: no ADD failed but for "pinto-node is not running" (code 11, retried)`)
    // Not running (nothing reads the channel), or stopped before it answered (the old pod took the ADD as
    // it was being replaced): either way no pinto-node holds the request, and the runtime retries it.
    const unexpected = failed.filter((e) => !/pinto-node is not running|pinto-node stopped before answering/.test(e.message))
    t.same(unexpected.map((e) => e.message), [], `${a.node}: each retried ADD said pinto-node is not running or stopped before answering`)
    t.ok(during.length > 0, `${a.node}: ADDs ran while install-cni replaced the plugins`)
    t.ok(a.install.events > 0, `${a.node}: install-cni wrote the plugins again`)
    t.ok(a.pods.length > 0, `${a.node}: pods were added during its update`)
  }
  await waitConverged(c, 30_000)
  const newest = c.nodes.map((n) => c.pods.filter((p) => p.node === n.name).at(-1)!)
  t.same(matrixFailures(await pingMatrix([...pods, ...newest])), [], 'the newest pod of each node and the first ones ping each other')
  t.comment(`wall time ${((Date.now() - started) / 1000).toFixed(1)} s`)
})
