// A pod's attachments against a real agent (its IPAM service and CNI channel in the lab's host namespace),
// through the channel and through the plugins' own path: a repeated ADD that fails (eth0 already in the pod
// because CNI_ARGS are missing, a CNI_NETNS that is no namespace, the netns of another pod with its own eth0)
// leaves the live attachment as it was: its address allocated to it, its veth and host route there, the pod
// reachable from the host. eth0 and eth1 of one pod are two attachments, each with its own address and DEL.
// `pintoctl ipam check` finds a live interface's address that no handle holds, and --repair gives it back.

import t, { type Test } from 'tap'
import { spawnSync } from 'node:child_process'
import { rmSync, writeFileSync } from 'node:fs'
import { basename, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { IpamClient } from '../../cni/ipam-client.js'
import type { CniChannelStatus } from '../../agent/ipam-service.js'
import { type Attachment, type Lab, createLab, pintoConf } from './lab.js'

const PINTOCTL = fileURLToPath(new URL('../../../bin/pintoctl.js', import.meta.url))

interface Wired {
  readonly address: string
  readonly hostVeth: string
  readonly handle: string
  readonly result: Record<string, unknown>
}

async function channel(lab: Lab): Promise<CniChannelStatus> {
  const s = (await new IpamClient(lab.socket).status()) as { cniChannel?: CniChannelStatus }
  if (s.cniChannel === undefined) throw new Error('the IPAM service reports no CNI channel')
  return s.cniChannel
}

/** ADD that must succeed; what it wired. */
async function add(t: Test, lab: Lab, conf: unknown, att: Attachment, handle: string): Promise<Wired> {
  const r = await lab.exec('pinto', 'ADD', conf, att)
  t.equal(r.code, 0, `ADD ${att.containerId} ${att.ifname ?? 'eth0'}: ${r.stdout}${r.stderr}`)
  const res = r.json as { ips: { address: string }[]; interfaces: { name: string }[] }
  return { address: res.ips[0]!.address.split('/')[0]!, hostVeth: res.interfaces[0]!.name, handle, result: r.json! }
}

/** The attachment is as its ADD left it: allocated to its handle alone, veth and host route there, reachable. */
async function intact(t: Test, lab: Lab, w: Wired, podNs: string, ifname = 'eth0'): Promise<void> {
  const holders = (await lab.service!.allocations('')).filter((a) => a.address === w.address).map((a) => a.handle)
  t.same(holders, [w.handle], `${w.address} is allocated to ${w.handle}, once`)
  t.ok((await lab.links(lab.hostNs)).includes(w.hostVeth), `host veth ${w.hostVeth} is there`)
  t.match(await lab.ip(lab.hostNs, ['route', 'show', 'dev', w.hostVeth]), `${w.address} scope link`, 'its host route is there')
  t.match(await lab.ip(basename(podNs), ['addr', 'show', 'dev', ifname]), `inet ${w.address}/32`, `the pod's ${ifname} keeps it`)
  const ping = await lab.topo.exec(lab.hostNs, 'ping', ['-c', '1', '-W', '2', w.address], { reject: false })
  t.equal(ping.exitCode, 0, `the host reaches ${w.address}`)
}

for (const path of ['channel', 'plugin'] as const) {
  t.test(`a failed repeated ADD leaves the live attachment as it was (${path})`, async (t) => {
    const lab = await createLab(t)
    // Without the channel's FIFO the plugins do ADD and DEL themselves, over the IPAM socket.
    if (path === 'plugin') rmSync(`${lab.socket}.requests`)
    const conf = pintoConf(lab, '1.0.0')
    const podA = await lab.pod('live')
    const att = { containerId: 'live1', netns: podA, args: 'K8S_POD_NAMESPACE=ns1;K8S_POD_NAME=live' }
    const w = await add(t, lab, conf, att, 'k8s-pod-network.live1')
    await intact(t, lab, w, podA)
    const before = await channel(lab)

    // CNI_ARGS missing: another host veth name, and the pod's eth0 is there already.
    const bare = await lab.exec('pinto', 'ADD', conf, { containerId: 'live1', netns: podA })
    t.equal(bare.json?.['code'], 5, `without CNI_ARGS: code 5 (${bare.stdout.trim()})`)
    t.match(String(bare.json?.['msg']), `this attachment is wired already (host veth ${w.hostVeth})`, 'and it says what it left')
    await intact(t, lab, w, podA)

    // CNI_NETNS names a file that is no namespace.
    const file = join(lab.dir, 'not-a-netns')
    writeFileSync(file, '')
    const notNs = await lab.exec('pinto', 'ADD', conf, { ...att, netns: file })
    t.equal(notNs.json?.['code'], 4, `a file as CNI_NETNS: code 4 (${notNs.stdout.trim()})`)
    t.match(String(notNs.json?.['msg']), `CNI_NETNS: ${file} is not a network namespace`)
    await intact(t, lab, w, podA)

    // CNI_NETNS names another pod's namespace, which has an eth0 of its own.
    const podB = await lab.pod('other')
    await lab.ip(basename(podB), ['link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'eth0p'])
    const other = await lab.exec('pinto', 'ADD', conf, { ...att, netns: podB })
    t.equal(other.json?.['code'], 5, `another pod's netns: code 5 (${other.stdout.trim()})`)
    t.match(String(other.json?.['msg']), 'the attachment is left as it is')
    t.same((await lab.links(basename(podB))).sort(), ['eth0', 'eth0p', 'lo'], 'the other pod\'s eth0 is left too')
    await intact(t, lab, w, podA)

    // Other pods come and go meanwhile; none is given the live pod's address.
    for (let i = 0; i < 3; i++) {
      const ns = await lab.pod(`next${i}`)
      const next = { containerId: `next${i}`, netns: ns, args: `K8S_POD_NAMESPACE=ns1;K8S_POD_NAME=next-${i}` }
      const n = await add(t, lab, conf, next, `k8s-pod-network.next${i}`)
      t.not(n.address, w.address, `pod next-${i} got an address of its own`)
      t.equal((await lab.exec('pinto', 'DEL', conf, next)).code, 0)
    }
    await intact(t, lab, w, podA)
    // The same ADD again is answered with the same result.
    const again = await lab.exec('pinto', 'ADD', conf, att)
    t.same(again.json, w.result, 'a repeated ADD of the wired attachment answers what the first did')

    const after = await channel(lab)
    // The file as CNI_NETNS is refused by the plugin before it asks pinto-node.
    if (path === 'channel') t.equal(after.failed, before.failed + 2, 'pinto-node did the other failed ADDs')
    else t.same(after, before, 'the plugins did every ADD themselves')
    t.equal((await lab.exec('pinto', 'DEL', conf, att)).code, 0, 'DEL')
    t.same((await lab.links(lab.hostNs)).filter((l) => l.startsWith('pinto')), [], 'no host veth left')
    t.same(await lab.service!.allocations(''), [], 'nothing allocated')
  })

  t.test(`eth0 and eth1 of one pod are two attachments (${path})`, async (t) => {
    const lab = await createLab(t)
    if (path === 'plugin') rmSync(`${lab.socket}.requests`)
    const conf = pintoConf(lab, '1.1.0')
    const pod = await lab.pod('two')
    const base = { containerId: 'two1', netns: pod, args: 'K8S_POD_NAMESPACE=ns1;K8S_POD_NAME=two' }
    const eth0 = await add(t, lab, conf, { ...base, ifname: 'eth0' }, 'k8s-pod-network.two1')
    const eth1 = await add(t, lab, conf, { ...base, ifname: 'eth1' }, 'k8s-pod-network.two1:eth1')
    t.not(eth1.address, eth0.address, 'each interface has its own address')
    t.not(eth1.hostVeth, eth0.hostVeth, 'and its own host veth')
    t.same((await lab.links(basename(pod))).sort(), ['eth0', 'eth1', 'lo'], 'both in the pod')
    await intact(t, lab, eth0, pod, 'eth0')
    await intact(t, lab, eth1, pod, 'eth1')
    t.match(await lab.ip(basename(pod), ['route', 'show', 'default']), 'default via 169.254.1.1 dev eth0', 'the default route stays on eth0')
    t.same((eth1.result as { routes?: unknown[] }).routes ?? [], [], 'eth1\'s result routes nothing')
    for (const [ifname, w] of [['eth0', eth0], ['eth1', eth1]] as const) {
      const check = await lab.exec('pinto', 'CHECK', { ...conf, prevResult: w.result }, { ...base, ifname })
      t.equal(check.code, 0, `CHECK ${ifname}: ${check.stdout}`)
    }

    const del1 = await lab.exec('pinto', 'DEL', conf, { ...base, ifname: 'eth1' })
    t.equal(del1.code, 0, `DEL eth1: ${del1.stdout}`)
    t.same((await lab.links(basename(pod))).sort(), ['eth0', 'lo'], 'eth1 gone, eth0 left')
    t.notOk((await lab.links(lab.hostNs)).includes(eth1.hostVeth), 'eth1\'s host veth gone')
    t.same((await lab.service!.allocations('')).filter((a) => a.address === eth1.address), [], 'eth1\'s address released')
    await intact(t, lab, eth0, pod, 'eth0')
    t.equal((await lab.exec('pinto', 'DEL', conf, { ...base, ifname: 'eth0' })).code, 0, 'DEL eth0')
    t.same((await lab.links(lab.hostNs)).filter((l) => l.startsWith('pinto')), [], 'no host veth left')
    t.same(await lab.service!.allocations(''), [], 'nothing allocated')
  })
}

t.test('pintoctl ipam check finds a live interface\'s address that no handle holds; --repair gives it back', async (t) => {
  const lab = await createLab(t)
  const conf = pintoConf(lab, '1.0.0')
  const pod = await lab.pod('lost')
  const att = { containerId: 'lost1', netns: pod, args: 'K8S_POD_NAMESPACE=ns1;K8S_POD_NAME=lost' }
  const w = await add(t, lab, conf, att, 'k8s-pod-network.lost1')
  // The damage a failed ADD used to do: the live pod's handle released, its wiring left.
  await lab.service!.ipam.releaseByHandle(w.handle)
  t.same(await lab.service!.allocations(''), [], 'the address is free in IPAM while the pod uses it')

  // pintoctl on the node: in the host namespace, over the agent's datastore.
  const pintoctl = (...args: string[]): { status: number | null; stdout: string; stderr: string } =>
    spawnSync('ip', ['netns', 'exec', lab.hostNs, process.execPath, PINTOCTL, 'ipam', ...args], { encoding: 'utf8', env: { ...process.env, PINTO_DATASTORE: join(lab.dir, 'store') } })
  const check = pintoctl('check')
  t.equal(check.status, 0, check.stderr)
  t.match(check.stdout, `${w.address} is in use by ${w.hostVeth} (${w.handle}) but allocated to no handle`)
  t.match(check.stdout, 'Addresses of pod interfaces on this host: 1')
  t.match(check.stdout, /Check complete; found 1 problems\./)
  const repair = pintoctl('check', '--repair')
  t.equal(repair.status, 0, repair.stdout + repair.stderr)
  t.match(repair.stdout, 'Repaired 1 problems.')
  t.match(pintoctl('check').stdout, /Check complete; found 0 problems\./, 'clean after the repair')
  await intact(t, lab, w, pod)
  t.equal((await lab.exec('pinto', 'DEL', conf, att)).code, 0, 'DEL')
  t.same(await lab.service!.allocations(''), [], 'the pod\'s DEL frees it')
})
