// The CNI channel: pinto ADD and DEL with pinto-ipam are done by pinto-node (its IPAM in-process, its `ip`
// processes started ahead), and the plugin does them itself whenever the agent cannot: a config over PIPE_BUF, a
// plugin in another network namespace. A FIFO nobody reads is an agent that is down (code 11, at once);
// garbage on the FIFO does not stop the agent; an answer seconds away is still taken. Each case leaves nothing
// behind.

import t, { type Test } from 'tap'
import { execa } from 'execa'
import { closeSync, constants, existsSync, mkdirSync, openSync, readSync, renameSync, writeFileSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { waitFor } from '../harness/wait.js'
import { channelPaths } from '../../cni/agent-channel.js'
import { IpamClient } from '../../cni/ipam-client.js'
import type { CniChannelStatus } from '../../agent/ipam-service.js'
import { type Lab, createLab, pintoConf } from './lab.js'

async function channel(lab: Lab): Promise<CniChannelStatus> {
  const s = (await new IpamClient(lab.socket).status()) as { cniChannel?: CniChannelStatus }
  if (s.cniChannel === undefined) throw new Error('the IPAM service reports no CNI channel')
  return s.cniChannel
}

async function hostVeths(lab: Lab, ns = lab.hostNs): Promise<string[]> {
  return (await lab.links(ns)).filter((l) => l.startsWith('pinto'))
}

t.test('ADD and DEL through pinto-node, CHECK by the plugin', async (t) => {
  const lab = await createLab(t)
  const netns = await lab.pod('ch')
  const att = { containerId: 'ch1', netns, args: 'K8S_POD_NAMESPACE=default;K8S_POD_NAME=ch' }
  const conf = pintoConf(lab, '1.1.0', true)
  const before = await channel(lab)
  const add = await lab.exec('pinto', 'ADD', conf, att)
  t.equal(add.code, 0, add.stdout + add.stderr)
  const after = await channel(lab)
  t.equal(after.done, before.done + 1, 'pinto-node did the ADD')
  t.equal(after.ipStartedAhead + after.ipSpawnedOnDemand, before.ipStartedAhead + before.ipSpawnedOnDemand, 'with no ip process: the wiring went through rtnetlink')
  const r = add.json as { ips: { address: string }[]; interfaces: { name: string }[] }
  t.equal(r.ips.length, 2)
  t.match(await lab.ip(netns.replace('/run/netns/', ''), ['route', 'show']), 'default via 169.254.1.1 dev eth0')
  t.match(await lab.ip(lab.hostNs, ['route', 'show', 'dev', r.interfaces[0]!.name]), `${r.ips[0]!.address.split('/')[0]} scope link`)
  const check = await lab.exec('pinto', 'CHECK', { ...conf, prevResult: add.json }, att)
  t.equal(check.code, 0, check.stdout)
  const del = await lab.exec('pinto', 'DEL', conf, att)
  t.equal(del.code, 0, del.stdout)
  const afterDel = await channel(lab)
  t.equal(afterDel.done, before.done + 2, 'pinto-node did the DEL too')
  t.equal(afterDel.ipStartedAhead + afterDel.ipSpawnedOnDemand, before.ipStartedAhead + before.ipSpawnedOnDemand, 'the DEL with no ip process either')
  t.same(await hostVeths(lab), [])
  t.same(await lab.service!.allocations(''), [])
  const again = await lab.exec('pinto', 'DEL', conf, att)
  t.equal(again.code, 0, 'DEL again: nothing to do is success')
})

t.test('what the channel cannot carry, the plugin does itself', async (t) => {
  const lab = await createLab(t)
  const conf = pintoConf(lab, '1.0.0')

  // Over PIPE_BUF: one write(2) could interleave with another plugin's.
  const big = await lab.pod('big')
  const before = await channel(lab)
  const add = await lab.exec('pinto', 'ADD', { ...conf, args: { cni: { note: 'x'.repeat(5000) } } }, { containerId: 'big1', netns: big })
  t.equal(add.code, 0, add.stdout + add.stderr)
  t.same(await channel(lab), before, 'pinto-node saw nothing of it')
  t.equal((await hostVeths(lab)).length, 1)
  t.equal((await lab.exec('pinto', 'DEL', conf, { containerId: 'big1', netns: big })).code, 0)

  // A plugin in another network namespace than the agent: the host end must go where the plugin is.
  const other = await lab.topo.addNode({ name: 'other', v4: '192.0.2.9/24' })
  const pod = await lab.pod('oth')
  const env = { CNI_COMMAND: 'ADD', CNI_CONTAINERID: 'oth1', CNI_NETNS: pod, CNI_IFNAME: 'eth0', CNI_ARGS: '', CNI_PATH: lab.cniPath, NODE_OPTIONS: undefined, NODE_EXTRA_CA_CERTS: undefined }
  const r = await execa('ip', ['netns', 'exec', other.ns, `${lab.dir}/bin/pinto`], { input: JSON.stringify(conf), env, extendEnv: true, reject: false })
  t.equal(r.exitCode, 0, String(r.stdout) + String(r.stderr))
  t.equal((await channel(lab)).handedBack, before.handedBack + 1, 'pinto-node handed it back')
  t.equal((await hostVeths(lab, other.ns)).length, 1, 'the host end is in the plugin\'s namespace')
  t.same(await hostVeths(lab), [], 'not in the agent\'s')
  const d = await execa('ip', ['netns', 'exec', other.ns, `${lab.dir}/bin/pinto`], { input: JSON.stringify(conf), env: { ...env, CNI_COMMAND: 'DEL' }, extendEnv: true, reject: false })
  t.equal(d.exitCode, 0, String(d.stdout))
  t.same(await hostVeths(lab, other.ns), [])
  t.same(await lab.service!.allocations(''), [])
})

t.test('garbage on the FIFO is dropped and the next ADD is served', async (t) => {
  const lab = await createLab(t)
  const { requests } = channelPaths(lab.socket)
  const fd = openSync(requests, constants.O_WRONLY | constants.O_NONBLOCK)
  writeSync(fd, 'not json\n{"id":"../../etc/x","v":1}\n{"v":1,"id":"bad-env","pid":1,"stdin":"{}","env":{}}\n' + 'y'.repeat(70000).slice(0, 4000) + '\n')
  closeSync(fd)
  const netns = await lab.pod('g')
  const conf = pintoConf(lab, '1.0.0')
  const add = await lab.exec('pinto', 'ADD', conf, { containerId: 'g1', netns })
  t.equal(add.code, 0, add.stdout + add.stderr)
  const s = await channel(lab)
  t.equal(s.done, 1)
  t.equal(s.failed, 1, 'the request with a bad env was answered with an error')
  t.equal((await lab.exec('pinto', 'DEL', conf, { containerId: 'g1', netns })).code, 0)
})

t.test('a FIFO nobody reads: pinto-node is down, code 11 at once, nothing made', async (t) => {
  const lab = await createLab(t)
  await lab.stopService()
  const { requests } = channelPaths(lab.socket)
  // What a killed agent leaves: the FIFO, without its reader.
  await execa('mkfifo', ['-m', '600', requests])
  const netns = await lab.pod('down')
  const started = Date.now()
  const add = await lab.exec('pinto', 'ADD', pintoConf(lab, '1.0.0'), { containerId: 'd1', netns })
  t.equal(add.code, 1)
  t.equal(add.json?.['code'], 11, add.stdout)
  t.match(String(add.json?.['msg']), `pinto-node is not running: nothing reads its CNI channel ${requests}`)
  t.ok(Date.now() - started < 5000, 'at once, not after a timeout')
  t.same(await hostVeths(lab), [])
  t.same(await lab.links(netns.replace('/run/netns/', '')), ['lo'])
})

/** A stand-in agent that takes requests off the FIFO and answers as the test says (or never). */
async function standIn(t: Test, lab: Lab): Promise<{ replies: string; request(): Promise<string>; close(): void }> {
  await lab.stopService()
  const { requests, replies } = channelPaths(lab.socket)
  await execa('mkfifo', ['-m', '600', requests])
  mkdirSync(replies)
  const fd = openSync(requests, constants.O_RDWR | constants.O_NONBLOCK)
  let open = true
  const close = (): void => {
    if (open) closeSync(fd)
    open = false
  }
  t.teardown(close)
  const buf = Buffer.alloc(8192)
  const request = (): Promise<string> => waitFor(() => {
    try {
      const n = readSync(fd, buf)
      return n > 0 ? buf.subarray(0, n).toString() : undefined
    } catch {
      return undefined // EAGAIN: nothing yet
    }
  }, { timeoutMs: 30_000, what: 'the plugin\'s request on the FIFO' })
  return { replies, request, close }
}

t.test('pinto-node gone after taking the ADD: code 11 within seconds, not after the 30 s timeout', async (t) => {
  const lab = await createLab(t)
  // An agent that reads the request and dies before answering.
  const agent = await standIn(t, lab)
  const netns = await lab.pod('gone')
  const started = Date.now()
  const add = lab.exec('pinto', 'ADD', pintoConf(lab, '1.0.0'), { containerId: 'gone1', netns })
  t.ok(await agent.request())
  agent.close()
  const r = await add
  t.equal(r.json?.['code'], 11, r.stdout)
  t.match(String(r.json?.['msg']), 'pinto-node stopped before answering the ADD')
  t.ok(Date.now() - started < 10_000, 'seconds, not the 30 s timeout')
  t.same(await hostVeths(lab), [])
})

t.test('an answer seconds after the request is taken, past the first polling, through the watch of the answers', async (t) => {
  const lab = await createLab(t)
  // A slow agent: reads the request, and answers 1.5 s later as pinto-node does (written aside, renamed in).
  const agent = await standIn(t, lab)
  const netns = await lab.pod('slow')
  const add = lab.exec('pinto', 'ADD', pintoConf(lab, '1.0.0'), { containerId: 'slow1', netns })
  const { id } = JSON.parse(await agent.request()) as { id: string }
  await new Promise((r) => setTimeout(r, 1500)) // the agent's slowness is the case itself
  const { replies } = agent
  writeFileSync(join(replies, `.${id}`), JSON.stringify({ ok: false, code: 7, msg: 'the slow agent\'s answer', details: '' }))
  renameSync(join(replies, `.${id}`), join(replies, id))
  const r = await add
  t.equal(r.json?.['code'], 7, r.stdout)
  t.equal(r.json?.['msg'], 'the slow agent\'s answer')
  t.notOk(existsSync(join(replies, id)), 'the answer taken away')
})
