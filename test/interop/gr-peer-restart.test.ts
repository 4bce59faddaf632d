// Graceful restart, pinto as helper (RFC 4724 §4.2): BIRD (`birdc graceful restart`, then `bird -R`),
// FRR (bgpd SIGKILLed and started again, zebra kept) and GoBGP (SIGKILLed, `gobgpd -r`) restart while
// pinto's Loc-RIB is probed back to back: their routes never leave it, are marked stale while the
// daemon is away, and the stale flag clears once the daemon's End-of-RIB arrives.
import t from 'tap'
import { readFile, rm, writeFile } from 'node:fs/promises'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { execa } from 'execa'
import { createTopology, type Topology } from '../harness/netns.js'
import { startBird, type BirdDaemon } from '../harness/bird.js'
import { startFrr, type FrrDaemon } from '../harness/frr.js'
import { gobgpAddArgs, startGobgp, type GobgpDaemon } from '../harness/gobgp.js'
import type { Daemon } from '../harness/daemons.js'
import { isAlive, waitPidFile } from '../harness/pid.js'
import { waitFor } from '../harness/wait.js'
import { Pinto } from './pinto.js'
import { peerTo } from './sessions-suite.js'
import { Watcher } from './gr-steps.js'

const AS = 65000

async function killHard(pid: number): Promise<void> {
  process.kill(pid, 'SIGKILL')
  await waitFor(() => !isAlive(pid), { timeoutMs: 5000, what: `PID ${pid} gone` })
}

/** BIRD's own graceful restart: no NOTIFICATION on the way out, recovery mode (-R) on the way in. */
async function restartBird(topo: Topology, d: BirdDaemon): Promise<void> {
  await d.birdc('graceful', 'restart')
  await waitFor(() => !isAlive(d.pid), { timeoutMs: 5000, what: 'BIRD to exit for its graceful restart' })
  const pidFile = join(d.dir, 'bird2.pid')
  await topo.exec(d.node.ns, 'bird', ['-c', join(d.dir, 'bird.conf'), '-s', d.socket, '-P', pidFile, '-R'])
  topo.trackPid(await waitPidFile(pidFile, 5000))
}

/** bgpd dies hard (zebra stays), then comes back preserving forwarding state (F bit) so we keep its routes. */
async function restartFrr(topo: Topology, d: FrrDaemon): Promise<void> {
  const conf = join(d.dir, 'bgpd.conf')
  const text = await readFile(conf, 'utf8')
  await writeFile(conf, text.replace(' bgp graceful-restart\n', ' bgp graceful-restart\n bgp graceful-restart preserve-fw-state\n'))
  await killHard(d.pid)
  const pidFile = join(d.dir, 'bgpd2.pid')
  await topo.exec(d.node.ns, '/usr/lib/frr/bgpd', ['-d', '-f', conf, '-i', pidFile, '--vty_socket', d.dir, '-P', '0', '-z', join(d.dir, 'zserv.api'), '-u', 'frr', '-g', 'frr'])
  topo.trackPid(await waitPidFile(pidFile, 5000))
}

/** gobgpd dies hard and comes back with -r (Restart State); its route is added again through the API. */
async function restartGobgp(topo: Topology, d: GobgpDaemon): Promise<void> {
  await killHard(d.pid)
  const socket = join(d.dir, 'gobgp2.sock')
  await rm(socket, { force: true })
  const child = topo.spawn(d.node.ns, 'gobgpd', ['-f', join(d.dir, 'gobgpd.toml'), '--api-hosts', `unix://${socket}`, '--pprof-disable', '-p', '-l', 'info', '-r'], {
    stdout: { file: join(d.dir, 'gobgpd2.log') },
    stderr: { file: join(d.dir, 'gobgpd2.err') },
  })
  await waitFor(() => existsSync(socket) || child.exitCode !== null, { timeoutMs: 5000, what: 'restarted gobgpd API socket' })
  const cli = (...args: string[]) => execa('gobgp', ['--target', `unix://${socket}`, ...args])
  await waitFor(async () => (await cli('global')).stdout.includes(d.spec.routerId), { timeoutMs: 5000, what: 'restarted gobgpd answering' })
  for (const r of d.spec.originate ?? []) await cli(...gobgpAddArgs(r, d.node))
}

t.test('BIRD, FRR and GoBGP restart gracefully while pinto keeps their routes as stale', async (t) => {
  const topo = await createTopology(t)
  const np = await topo.addNode({ name: 'pinto', v4: '192.0.2.1/24' })
  const daemons: Daemon[] = []
  for (const [i, name] of (['bird', 'frr', 'gobgp'] as const).entries()) {
    const node = await topo.addNode({ name, v4: `192.0.2.${2 + i}/24` })
    const spec = {
      routerId: node.v4!,
      as: AS,
      holdTime: 9,
      gracefulRestart: true,
      neighbors: [{ name: 'pinto', address: np.v4!, as: AS, families: ['ipv4' as const] }],
      originate: [{ prefix: `198.18.${10 + i}.0/24`, communities: [`65000:${10 + i}`] }],
    }
    daemons.push(name === 'bird' ? await startBird(topo, node, spec) : name === 'frr' ? await startFrr(topo, node, spec, { zebra: true }) : await startGobgp(topo, node, spec))
  }
  const pinto = await Pinto.start(topo, np, {
    speaker: { asn: AS, routerId: np.v4!, listen: { port: 179, hosts: [np.v4!] } },
    peers: daemons.map((d) => peerTo(d.kind, d.node, np, AS, { families: ['ipv4'] })),
    originate: [{ prefix: '198.18.1.0/24' }],
  })
  const deadline = Date.now() + 20000
  for (const d of daemons) await pinto.waitEstablished(d.kind, deadline)

  for (const d of daemons) {
    await t.test(`${d.kind} restarts`, async (t) => {
      const prefix = d.spec.originate![0]!.prefix
      await pinto.waitRoute(prefix, `${prefix} from ${d.kind}`, (r) => r.peer === d.kind && !r.stale)
      const before = (await pinto.peer(d.kind)).since
      let staleSeen = false
      const w = new Watcher(`pinto Loc-RIB: ${prefix}`, async () => {
        const r = (await pinto.locRib()).find((x) => x.prefix === prefix && x.peer === d.kind)
        if (r?.stale === true) staleSeen = true
        return r !== undefined
      })
      t.teardown(() => w.stop())
      if (d.kind === 'bird') await restartBird(topo, d as BirdDaemon)
      else if (d.kind === 'frr') await restartFrr(topo, d as FrrDaemon)
      else await restartGobgp(topo, d as GobgpDaemon)
      const up = await waitFor(async () => {
        const p = await pinto.peer(d.kind)
        return p.state === 'Established' && p.since > before ? p : undefined
      }, { timeoutMs: 20000, intervalMs: 100, what: `pinto: new session with the restarted ${d.kind}` })
      t.ok(up.counters.flaps >= 1, 'the old session went down')
      const fresh = await pinto.waitRoute(prefix, `${prefix} no longer stale after ${d.kind}'s End-of-RIB`, (r) => r.peer === d.kind && !r.stale, 20000)
      await w.stop()
      t.ok(staleSeen, `pinto marked ${prefix} stale while ${d.kind} was away`)
      t.same(w.misses, [], `${prefix} stayed in pinto's Loc-RIB in all ${w.samples} probes`)
      t.same(fresh.attrs.communities, [`65000:${prefix.split('.')[2]}`])
    })
  }
})
