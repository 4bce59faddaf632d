// Releases a plugin owes (cni/release-spool.ts): its assign over the IPAM socket was taken and never
// answered, and the agent stayed away longer than the plugin's retries. The plugin notes the release before
// it retries; the restarted agent makes it before it serves, unless a later ADD wired the container (its
// host veth names it); a later ADD's answer settles the note.

import t from 'tap'
import net from 'node:net'
import { existsSync, mkdirSync, readdirSync, utimesSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { execa } from 'execa'
import { loadPoolSpecs } from '../../agent/ipam-service-pools.js'
import { openDatastore } from '../../config/datastore-open.js'
import { handleOf } from '../../cni/config.js'
import { oweRelease, settleRelease, spoolDir, takeOwedReleases } from '../../cni/release-spool.js'
import { Ipam } from '../../ipam/ipam.js'
import { HANDLES_PREFIX } from '../../ipam/records.js'
import { createLab, pintoConf } from '../cni/lab.js'
import { waitFor } from '../harness/wait.js'
import { startAgent } from './agent-proc.js'

t.test('the note: written whole, settled, taken once; files of others left or swept', async (t) => {
  const lab = await createLab(t, { service: false })
  const socket = join(lab.dir, 'notes', 'pinto.sock')
  oweRelease(socket, { handle: 'net.a', containerId: 'a', hostVeth: 'pnta' })
  oweRelease(socket, { handle: 'net.b/odd', containerId: 'b', hostVeth: 'pntb' })
  oweRelease(socket, { handle: 'net.c', containerId: 'c', hostVeth: 'pntc' })
  settleRelease(socket, 'net.c')
  settleRelease(socket, 'net.never-owed')
  const dir = spoolDir(socket)
  writeFileSync(join(dir, 'junk'), 'not json')
  writeFileSync(join(dir, '.being-written'), '{')
  writeFileSync(join(dir, '.left-by-a-dead-plugin'), '{')
  const old = new Date(Date.now() - 120_000)
  utimesSync(join(dir, '.left-by-a-dead-plugin'), old, old)
  const taken = takeOwedReleases(socket).sort((x, y) => x.handle.localeCompare(y.handle))
  t.same(taken, [{ handle: 'net.a', containerId: 'a', hostVeth: 'pnta' }, { handle: 'net.b/odd', containerId: 'b', hostVeth: 'pntb' }], 'the owed ones, the settled one not')
  t.same(readdirSync(dir), ['.being-written'], 'taken notes and foreign files gone; a note being written left to its writer, a dead writer\'s swept')
  t.same(takeOwedReleases(socket), [], 'each taken once')
  t.same(takeOwedReleases(join(lab.dir, 'nowhere', 'pinto.sock')), [], 'no directory: nothing owed')
})

t.test('a plugin whose assign is never answered owes the release; the restarted agent makes it', async (t) => {
  const lab = await createLab(t, { service: false })
  const env = { PINTO_DATASTORE: join(lab.dir, 'store'), PINTO_IPAM_REPAIR_SECONDS: '0' }
  const store = await openDatastore(join(lab.dir, 'store'))
  t.teardown(() => store.close())
  // The socket's taker reads each request and cuts it unanswered, as an agent killed between taking an
  // assign and answering it; no agent runs.
  mkdirSync(dirname(lab.socket), { recursive: true })
  const cut = net.createServer((s) => s.once('data', () => s.destroy()))
  await new Promise<void>((r) => cut.listen(lab.socket, () => r()))
  t.teardown(() => new Promise<void>((r) => cut.close(() => r())))
  const conf = pintoConf(lab, '1.0.0')
  const pods = await Promise.all(['lost', 'wired'].map((n) => lab.pod(`owed-${n}`)))
  const att = (i: number) => ({ containerId: `owed${i}`, netns: pods[i]!, args: `K8S_POD_NAMESPACE=owed;K8S_POD_NAME=pod-${i}` })
  const handles = [0, 1].map((i) => handleOf('k8s-pod-network', att(i).containerId, 'eth0'))
  const runs = await Promise.all([0, 1].map((i) => lab.exec('pinto', 'ADD', conf, att(i))))
  for (const r of runs) {
    t.not(r.code, 0, 'the ADD failed')
    t.match(r.stdout, /pinto-node releases what it may have assigned to this container when it starts again/, 'and says who frees what it may hold')
  }
  const owed = readdirSync(spoolDir(lab.socket)).sort()
  t.same(owed, handles.map((h) => encodeURIComponent(h)).sort(), 'one note per container')
  t.same((await lab.links(lab.hostNs)).filter((l) => l !== 'lo' && l !== 'eth0'), [], 'no host veth made')
  await new Promise<void>((r) => cut.close(() => r()))

  // What the cut assigns may have taken: each container's addresses, as the agent would have committed them.
  const ipam = new Ipam(store, { pools: await loadPoolSpecs(store) })
  for (const h of handles) await ipam.autoAssign({ handle: h, node: 'node1', num4: 1, num6: 0 })
  // The second container's pod was wired meanwhile by a later ADD: its host veth names the container.
  await execa('ip', ['-n', lab.hostNs, 'link', 'add', 'owedveth1', 'type', 'veth', 'peer', 'name', 'owedpeer1'])
  await execa('ip', ['-n', lab.hostNs, 'link', 'set', 'owedveth1', 'alias', att(1).containerId])
  // The note names the veth the plugin computes; this one stands for it under a name of the test's.
  const notes = takeOwedReleases(lab.socket)
  for (const n of notes) oweRelease(lab.socket, n.containerId === att(1).containerId ? { ...n, hostVeth: 'owedveth1' } : n)

  const agent = await startAgent(t, lab, env)
  const left = await waitFor(async () => {
    const h = (await store.list(HANDLES_PREFIX)).items.map((kv) => kv.key.slice(HANDLES_PREFIX.length))
    return h.includes(handles[0]!) ? undefined : h
  }, { timeoutMs: 15_000, what: 'the owed release made' })
  t.same(left, [handles[1]], 'the lost ADD\'s addresses released; the wired pod\'s kept')
  t.notOk(existsSync(join(spoolDir(lab.socket), encodeURIComponent(handles[0]!))), 'its note taken')
  t.same(readdirSync(spoolDir(lab.socket)), [], 'nothing more owed')
  await agent.kill('SIGTERM')
})
