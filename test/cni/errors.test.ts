// Bad input and a missing agent give the spec's error JSON with the right code, a non-zero exit, and leave
// nothing behind: no veth, no allocation. A failure after the addresses were taken rolls them back.

import t, { type Test } from 'tap'
import net from 'node:net'
import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import { type Lab, createLab, pintoConf } from './lab.js'

async function nothingLeft(t: Test, lab: Lab, podNs?: string): Promise<void> {
  t.same(await lab.links(lab.hostNs), ['lo', 'eth0'], 'no veth on the host')
  if (podNs !== undefined) t.same(await lab.links(podNs.replace('/run/netns/', '')), ['lo'], 'nothing in the pod')
  if (lab.service) t.same(await lab.service.allocations(''), [], 'no allocation')
}


t.test('spec errors', async (t) => {
  const lab = await createLab(t)
  const netns = await lab.pod('e')
  const att = { containerId: 'e1', netns }
  const conf = pintoConf(lab, '1.0.0')
  const expect = async (name: string, run: Promise<{ code: number; json: Record<string, unknown> | undefined; stdout: string }>, code: number, msg: RegExp | string): Promise<void> => {
    const r = await run
    t.equal(r.code, 1, `${name}: exit 1`)
    t.equal(r.json?.['code'], code, `${name}: code ${code} (${r.stdout.trim()})`)
    t.match(String(r.json?.['msg']), msg, `${name}: message`)
    t.ok(r.json && 'cniVersion' in r.json && 'details' in r.json, `${name}: {cniVersion, code, msg, details}`)
  }
  await expect('malformed JSON', lab.exec('pinto', 'ADD', '{"cniVersion": "1.0.0", "name": ', att), 6, 'not JSON')
  await expect('missing CNI_NETNS', lab.exec('pinto', 'ADD', conf, { containerId: 'e1' }), 4, 'CNI_NETNS is not set')
  await expect('missing CNI_COMMAND', lab.exec('pinto', '', conf, att), 4, 'CNI_COMMAND is not set')
  await expect('unknown cniVersion', lab.exec('pinto', 'ADD', { ...conf, cniVersion: '9.9.9' }, att), 1, 'incompatible CNI versions')
  await expect('missing netns', lab.exec('pinto', 'ADD', conf, { containerId: 'e1', netns: '/run/netns/pinto-no-such-ns' }), 3, '/run/netns/pinto-no-such-ns does not exist')
  await expect('bad mtu', lab.exec('pinto', 'ADD', { ...conf, mtu: 20 }, att), 7, /^mtu: 20 is not/)
  await expect('unknown field', lab.exec('pinto', 'ADD', { ...conf, colour: 'red' }, att), 2, 'colour: field not supported')
  await expect('bad CNI_ARGS', lab.exec('pinto', 'ADD', conf, { ...att, args: 'K8S_POD_NAME' }), 4, 'CNI_ARGS: pair 1')
  await expect('CHECK under 0.3.1', lab.exec('pinto', 'CHECK', { ...conf, cniVersion: '0.3.1' }, att), 1, 'does not allow CHECK')
  await expect('pinto-ipam without ipam', lab.exec('pinto-ipam', 'ADD', { cniVersion: '1.0.0', name: 'n', type: 'ptp' }, att), 7, 'ipam: expected an object')
  // CNI_PATH, where the reference plugins' skeleton needs it: ADD, CHECK and DEL (not STATUS or GC).
  const noPath = { CNI_PATH: '' }
  for (const plugin of ['pinto', 'pinto-ipam']) {
    await expect(`${plugin} ADD without CNI_PATH`, lab.exec(plugin, 'ADD', conf, att, noPath), 4, 'CNI_PATH is not set (needed for ADD)')
    await expect(`${plugin} DEL without CNI_PATH`, lab.exec(plugin, 'DEL', conf, att, noPath), 4, 'CNI_PATH is not set (needed for DEL)')
    await expect(`${plugin} CHECK without CNI_PATH`, lab.exec(plugin, 'CHECK', { ...conf, prevResult: { cniVersion: '1.0.0' } }, att, noPath), 4, 'CNI_PATH is not set (needed for CHECK)')
  }
  const st = await lab.exec('pinto', 'STATUS', { ...conf, cniVersion: '1.1.0' }, {}, noPath)
  t.equal(st.code, 0, `STATUS needs no CNI_PATH: ${st.stdout}`)
  await nothingLeft(t, lab, netns)

  // A wiring failure while IPAM succeeds: CNI_IFNAME is taken in the pod, so the veth cannot be made there.
  const taken = await lab.pod('taken')
  const takenName = taken.replace('/run/netns/', '')
  await lab.ip(takenName, ['link', 'add', 'eth9', 'type', 'veth', 'peer', 'name', 'eth9p'])
  await expect('wiring fails', lab.exec('pinto', 'ADD', conf, { containerId: 'e3', netns: taken, ifname: 'eth9' }), 5, 'creating veth eth9/')
  t.same((await lab.links(takenName)).sort(), ['eth9', 'eth9p', 'lo'], 'the pod\'s own eth9 is left')
  await nothingLeft(t, lab)

  // A failure on the pod side after the veth is made: a default route already in the pod.
  const busy = await lab.pod('busy')
  const busyName = busy.replace('/run/netns/', '')
  await lab.ip(busyName, ['link', 'add', 'x0', 'type', 'veth', 'peer', 'name', 'x1'])
  await lab.ip(busyName, ['link', 'set', 'x0', 'up'])
  await lab.ip(busyName, ['route', 'add', 'default', 'dev', 'x0'])
  await expect('pod side fails', lab.exec('pinto', 'ADD', conf, { containerId: 'e2', netns: busy }), 5, /^wiring eth0 in .* failed: .*File exists/)
  t.same((await lab.links(busyName)).sort(), ['lo', 'x0', 'x1'], 'no eth0 left in the pod')
  await nothingLeft(t, lab)

  // VERSION answers without env or netns.
  const v = await lab.exec('pinto', 'VERSION', { cniVersion: '1.1.0' })
  t.same(v.json, { cniVersion: '1.1.0', supportedVersions: ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0'] })
})

t.test('the agent down: code 11 at once, for both plugins', async (t) => {
  const lab = await createLab(t, { service: false })
  const netns = await lab.pod('down')
  const att = { containerId: 'd1', netns }
  for (const [plugin, conf] of [['pinto', pintoConf(lab, '1.0.0')], ['pinto-ipam', { cniVersion: '1.0.0', name: 'n', type: 'ptp', ipam: { type: 'pinto-ipam', socket: lab.socket } }]] as const) {
    const started = Date.now()
    const r = await lab.exec(plugin, 'ADD', conf, att)
    t.equal(r.code, 1)
    t.equal(r.json?.['code'], 11, `${plugin}: try again later (${r.stdout.trim()} ${r.stderr.trim()} exit ${r.code})`)
    t.match(String(r.json?.['msg']), 'pinto-node is not running')
    t.ok(Date.now() - started < 3000, `${plugin} failed at once (${Date.now() - started} ms)`)
  }
  await nothingLeft(t, lab, netns)
  // DEL while the agent is down: the addresses cannot be released, so the runtime must retry.
  const del = await lab.exec('pinto', 'DEL', pintoConf(lab, '1.0.0'), att)
  t.equal(del.json?.['code'], 11)
})

t.test('a veth that cannot move to the host (its name taken there) is removed from the pod; the other link is left', async (t) => {
  // Dataplane.wire directly, in the host namespace: ADD itself replaces a veth under the pod's name before
  // wiring, so only a link made in between (another process) can take the name.
  const lab = await createLab(t, { service: false })
  const netns = await lab.pod('moved')
  await lab.ip(lab.hostNs, ['link', 'add', 'pintotaken0', 'type', 'veth', 'peer', 'name', 'pintotaken1'])
  await lab.ip(lab.hostNs, ['link', 'set', 'pintotaken0', 'alias', 'someone-else'])
  const wiring = new URL('../../cni/wiring.js', import.meta.url).href
  const script = `
    const { Dataplane } = await import(${JSON.stringify(wiring)})
    const v = { ifname: 'eth0', hostVeth: 'pintotaken0', mtu: 1500, podMac: '0a:00:00:00:00:09', owner: 'c9' }
    try {
      await new Dataplane().wire(v, ${JSON.stringify(netns)}, Promise.resolve({ v4: '198.18.9.9', v6: undefined }))
      console.log(JSON.stringify({ wired: true }))
    } catch (e) {
      console.log(JSON.stringify({ code: e.code, msg: e.message }))
    }`
  const out = JSON.parse(String((await lab.topo.exec(lab.hostNs, process.execPath, ['--input-type=module', '-e', script])).stdout)) as { code?: number; msg?: string }
  t.equal(out.code, 5, JSON.stringify(out))
  t.match(String(out.msg), /^creating veth eth0\/pintotaken0 in .* failed: .*(File exists|same name exists)/)
  t.same(await lab.links(netns.replace('/run/netns/', '')), ['lo'], 'nothing left in the pod')
  const [taken] = JSON.parse(await lab.ip(lab.hostNs, ['-j', 'link', 'show', 'dev', 'pintotaken0'])) as { ifalias?: string }[]
  t.equal(taken?.ifalias, 'someone-else', 'the host link of that name is left alone')
})

// The agent dies with the assign taken and unanswered: the plugin cannot know whether addresses were
// assigned, so it releases the container's handle, retrying while the agent comes back, and says "try again".
t.test('an assign the agent died in is released, and ADD says try again later', async (t) => {
  const lab = await createLab(t, { service: false })
  mkdirSync(dirname(lab.socket), { recursive: true })
  const netns = await lab.pod('u')
  const seen: string[] = []
  let releases = 0
  const srv = net.createServer((s) => {
    let got = ''
    s.on('data', (d: Buffer) => {
      got += d.toString('latin1')
      const head = got.indexOf('\r\n\r\n')
      const length = Number(/content-length: (\d+)/i.exec(got)?.[1] ?? 0)
      if (head < 0 || got.length < head + 4 + length) return
      const line = got.slice(0, got.indexOf(' HTTP/'))
      seen.push(`${line} ${got.slice(head + 4)}`)
      if (line === 'POST /v1/assign') s.destroy()
      // The first release finds the agent restarting (503), the second is done.
      else if (line === 'POST /v1/release' && releases++ === 0) s.end(httpReply(503, { code: 'not-ready', message: 'starting' }))
      else s.end(httpReply(200, { released: [{ address: '198.18.0.1' }] }))
    })
  })
  await new Promise<void>((resolve) => srv.listen(lab.socket, resolve))
  t.teardown(() => new Promise<void>((resolve) => srv.close(() => resolve())))
  const r = await lab.exec('pinto', 'ADD', pintoConf(lab, '1.0.0'), { containerId: 'u1', netns })
  t.equal(r.json?.['code'], 11, `code 11, try again later (${r.stdout.trim()})`)
  t.match(String(r.json?.['msg']), /went away before answering \(pinto-node IPAM service: POST \/v1\/assign: the connection closed without an answer\); what it may have assigned to this container was released/)
  const handle = JSON.parse(seen[0]!.slice('POST /v1/assign '.length)).handle as string
  t.same(seen.map((l) => l.split(' ').slice(0, 2).join(' ')), ['POST /v1/assign', 'POST /v1/release', 'POST /v1/release'], 'the assign, then its release until it was done')
  t.same(seen.slice(1).map((l) => JSON.parse(l.slice('POST /v1/release '.length)).handle), [handle, handle], 'the release names the assign\'s handle')
  t.same(await lab.links(lab.hostNs), ['lo', 'eth0'], 'no veth on the host')
  t.same(await lab.links(netns.replace('/run/netns/', '')), ['lo'], 'nothing in the pod')
})

function httpReply(status: number, body: unknown): string {
  const text = JSON.stringify(body)
  return `HTTP/1.1 ${status} x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`
}
