// What a restarted pinto-node undoes for failed ADDs never takes a live attachment's: a CNI ADD its last run
// never answered that repeated a wired attachment (its journal entry says so) rolls back nothing; one that
// had made a veth of its own under another name (no CNI_ARGS) loses that veth, and its handle stays with
// the wired pod; a release a plugin owes for the wired pod's handle waits while the pod's veth is there.
// The pod's DEL then frees everything. State is written as the last run would have left it.

import t from 'tap'
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { execa } from 'execa'
import { openDatastore } from '../../config/datastore-open.js'
import { oweRelease } from '../../cni/release-spool.js'
import { HANDLES_PREFIX } from '../../ipam/records.js'
import { createLab, pintoConf } from '../cni/lab.js'
import { waitFor } from '../harness/wait.js'
import { startAgent } from './agent-proc.js'

t.test('a restarted agent rolls back nothing of a wired attachment', async (t) => {
  const lab = await createLab(t, { service: false })
  const env = { PINTO_DATASTORE: join(lab.dir, 'store'), PINTO_IPAM_REPAIR_SECONDS: '0' }
  const store = await openDatastore(join(lab.dir, 'store'))
  t.teardown(() => store.close())
  const handles = async (): Promise<string[]> => (await store.list(HANDLES_PREFIX)).items.map((kv) => kv.key.slice(HANDLES_PREFIX.length))
  const conf = pintoConf(lab, '1.0.0')
  const netns = await lab.pod('wired')
  const att = { containerId: 'wired1', netns, args: 'K8S_POD_NAMESPACE=ns1;K8S_POD_NAME=wired' }
  const handle = 'k8s-pod-network.wired1'

  let agent = await startAgent(t, lab, env)
  const add = await lab.exec('pinto', 'ADD', conf, att)
  t.equal(add.code, 0, add.stdout)
  const res = add.json as { ips: { address: string }[]; interfaces: { name: string }[] }
  const address = res.ips[0]!.address.split('/')[0]!
  const hostVeth = res.interfaces[0]!.name
  await agent.kill('SIGKILL')

  // What the killed run left: two ADDs of this attachment taken and never answered (a placeholder under
  // each answer's temporary name), and a release a plugin owes for its handle.
  const replies = `${lab.socket}.replies`
  const journal = join(lab.dir, 'state', 'cni-adds')
  mkdirSync(replies, { recursive: true })
  mkdirSync(journal, { recursive: true })
  const entry = (id: string, fields: Record<string, unknown>): void => {
    writeFileSync(join(replies, `.${id}`), '')
    writeFileSync(join(journal, id), JSON.stringify({ id, containerId: 'wired1', netns, ifname: 'eth0', handle, owner: handle, ...fields }))
  }
  // A repeat with the same CNI_ARGS: the wired veth was there when it began.
  entry('again-1', { hostVeth, prior: true })
  // A repeat without CNI_ARGS: it had made a veth of its own under another name before the kill.
  await execa('ip', ['-n', lab.hostNs, 'link', 'add', 'pintorepeat0', 'type', 'veth', 'peer', 'name', 'pintorepeat1'])
  await execa('ip', ['-n', lab.hostNs, 'link', 'set', 'pintorepeat0', 'alias', handle])
  entry('bare-1', { hostVeth: 'pintorepeat0' })
  oweRelease(lab.socket, { handle, containerId: 'wired1', hostVeth: 'pintorepeat0' })

  // Ready once the journal is replayed and the owed releases queued; the queue's first pass follows at once.
  agent = await startAgent(t, lab, env)
  const a = agent
  await waitFor(async () => a.log().includes('IPAM release waits: a live wiring on this node records the handle') || !(await handles()).includes(handle), { timeoutMs: 15_000, what: 'the queued release looked at' })
  t.match(a.log(), 'found its attachment wired; nothing rolled back', 'the repeat with its veth there rolled back nothing')
  const links = await lab.links(lab.hostNs)
  t.notOk(links.includes('pintorepeat0'), 'the veth the unanswered ADD made is gone')
  t.ok(links.includes(hostVeth), 'the wired pod\'s veth is there')
  t.same(await handles(), [handle], 'its handle is there')
  t.match(await lab.ip(lab.hostNs, ['route', 'show', 'dev', hostVeth]), `${address} scope link`, 'its host route too')
  await lab.topo.exec(lab.hostNs, 'ping', ['-c', '1', '-W', '2', address])
  t.pass(`the host reaches the pod at ${address}`)

  const del = await lab.exec('pinto', 'DEL', conf, att)
  t.equal(del.code, 0, del.stdout)
  t.same(await handles(), [], 'the pod\'s DEL frees its handle')
  const queue = join(lab.dir, 'state', 'ipam-releases')
  t.same(existsSync(queue) ? readdirSync(queue) : [], [], 'and takes the waiting release off the queue')
  await agent.kill('SIGTERM')
})
