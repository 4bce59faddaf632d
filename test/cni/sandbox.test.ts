// A pod whose sandbox is recreated (new container ID and netns, same namespace/name, so the same host veth
// name): the new sandbox's ADD replaces the old veth, and the old sandbox's late DEL (or a second one, as
// the runtime's GC sends) releases only the old container's addresses and leaves the new sandbox wired.
// Both where pinto-node does ADD and DEL and where the plugin does them itself (a config over PIPE_BUF).

import t, { type Test } from 'tap'
import { IpamClient } from '../../cni/ipam-client.js'
import type { CniChannelStatus } from '../../agent/ipam-service.js'
import { type Lab, createLab, pintoConf } from './lab.js'

interface AddResult { ips: { address: string }[]; interfaces: { name: string; mac: string }[] }

const bare = (cidr: string | undefined): string => (cidr ?? '').split('/')[0] as string

async function channel(lab: Lab): Promise<CniChannelStatus | undefined> {
  return ((await new IpamClient(lab.socket).status()) as { cniChannel?: CniChannelStatus }).cniChannel
}

async function reachable(lab: Lab, address: string): Promise<boolean> {
  const r = await lab.topo.exec(lab.hostNs, 'ping', ['-c', '1', '-W', '2', address], { reject: false })
  return r.exitCode === 0
}

async function hostVeths(lab: Lab): Promise<{ ifname: string; ifalias?: string }[]> {
  const links = JSON.parse(await lab.ip(lab.hostNs, ['-j', 'link', 'show'])) as { ifname: string; ifalias?: string }[]
  return links.filter((l) => l.ifname.startsWith('pinto'))
}

async function handles(lab: Lab): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>()
  for (const a of await lab.service!.allocations('')) out.set(a.handle, [...(out.get(a.handle) ?? []), a.address])
  return out
}

async function recreatedSandbox(t: Test, path: 'agent' | 'plugin'): Promise<void> {
  const lab = await createLab(t)
  const base = pintoConf(lab, '1.1.0', true)
  // Over PIPE_BUF the channel cannot carry it: the plugin does ADD and DEL itself.
  const conf = path === 'agent' ? base : { ...base, args: { cni: { note: 'x'.repeat(5000) } } }
  const args = 'K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0'
  const a = { containerId: 'sandboxa1', netns: await lab.pod('sa'), args }
  const b = { containerId: 'sandboxb2', netns: await lab.pod('sb'), args }
  const doneBefore = (await channel(lab))?.done ?? 0

  const addA = await lab.exec('pinto', 'ADD', conf, a)
  t.equal(addA.code, 0, addA.stdout + addA.stderr)
  const rA = addA.json as unknown as AddResult
  t.same((await hostVeths(lab)).map((l) => l.ifalias), ['k8s-pod-network.sandboxa1'], 'the host veth records its attachment')

  // The new sandbox comes before the old one's DEL: it takes the veth name over.
  const addB = await lab.exec('pinto', 'ADD', conf, b)
  t.equal(addB.code, 0, addB.stdout + addB.stderr)
  const rB = addB.json as unknown as AddResult
  const v4B = bare(rB.ips[0]?.address)
  const v6B = bare(rB.ips[1]?.address)
  t.equal(rB.interfaces[0]?.name, rA.interfaces[0]?.name, 'same host veth name: it comes from namespace/pod')
  t.not(v4B, bare(rA.ips[0]?.address), 'the new sandbox has its own addresses, not the old wiring')
  t.same((await hostVeths(lab)).map((l) => [l.ifname, l.ifalias]), [[rB.interfaces[0]?.name, 'k8s-pod-network.sandboxb2']], 'one host veth, the new sandbox\'s')
  t.same(await lab.links(a.netns.replace('/run/netns/', '')), ['lo'], 'the old sandbox\'s eth0 went with its veth')
  t.notMatch(await lab.ip(lab.hostNs, ['route', 'show']), `${bare(rA.ips[0]?.address)} `, 'no host route to the old address')
  t.ok(await reachable(lab, v4B), 'the new sandbox is reachable')
  t.same((await handles(lab)).get('k8s-pod-network.sandboxa1')?.length, 2, 'the old container keeps its addresses until its DEL')

  // The old sandbox's DEL, late, then again without its netns (as GC sends it).
  for (const netns of [a.netns, '']) {
    const del = await lab.exec('pinto', 'DEL', conf, { ...a, netns })
    t.equal(del.code, 0, `DEL of the old sandbox (netns ${JSON.stringify(netns)}): ${del.stdout}`)
    t.ok(await reachable(lab, v4B), 'the new sandbox is still reachable')
    t.ok(await reachable(lab, v6B), 'over IPv6 too')
    const held = await handles(lab)
    t.same([...held.keys()], ['k8s-pod-network.sandboxb2'], 'only the old container\'s addresses were released')
    t.same(new Set(held.get('k8s-pod-network.sandboxb2')), new Set([v4B, v6B]), 'the new sandbox\'s addresses stay allocated')
    t.same((await hostVeths(lab)).map((l) => l.ifalias), ['k8s-pod-network.sandboxb2'], 'its host veth is left')
  }
  const check = await lab.exec('pinto', 'CHECK', { ...base, prevResult: addB.json }, b)
  t.equal(check.code, 0, `CHECK of the new sandbox passes: ${check.stdout}`)
  // CHECK of the old one, with its old result, finds the veth is not its own.
  const checkA = await lab.exec('pinto', 'CHECK', { ...base, prevResult: addA.json }, a)
  t.equal(checkA.json?.['code'], 100, checkA.stdout)
  t.match(String(checkA.json?.['msg']), 'belongs to k8s-pod-network.sandboxb2, not k8s-pod-network.sandboxa1')

  // GC listing only the new sandbox leaves it alone.
  const gc = await lab.exec('pinto', 'GC', { ...base, 'cni.dev/valid-attachments': [{ containerID: 'sandboxb2', ifname: 'eth0' }] })
  t.equal(gc.code, 0, gc.stdout)
  t.same([...(await handles(lab)).keys()], ['k8s-pod-network.sandboxb2'], 'GC kept the listed attachment')
  t.ok(await reachable(lab, v4B), 'reachable after GC')

  const spawnedBefore = (await channel(lab))?.ipSpawnedOnDemand
  const delB = await lab.exec('pinto', 'DEL', conf, b)
  t.equal(delB.code, 0, delB.stdout)
  // The owner came from /sys: the DEL took the waiting `ip -batch -` and started no other process.
  if (path === 'agent') t.equal((await channel(lab))?.ipSpawnedOnDemand, spawnedBefore, 'DEL read the owner without a process')
  t.same(await hostVeths(lab), [], 'no veth left')
  t.same(await lab.links(b.netns.replace('/run/netns/', '')), ['lo'], 'nothing in the pod')
  t.notMatch(await lab.ip(lab.hostNs, ['route', 'show']), `${v4B} `, 'no IPv4 host route left')
  t.notMatch(await lab.ip(lab.hostNs, ['-6', 'route', 'show']), `${v6B} `, 'no IPv6 host route left')
  t.same(await lab.service!.allocations(''), [], 'nothing allocated')
  const done = ((await channel(lab))?.done ?? 0) - doneBefore
  // ADD A, ADD B, DEL A twice, DEL B.
  t.equal(done, path === 'agent' ? 5 : 0, path === 'agent' ? 'pinto-node did every ADD and DEL' : 'the plugin did every ADD and DEL itself')
}

t.test('a recreated sandbox survives its old sandbox\'s DEL, through pinto-node', (t) => recreatedSandbox(t, 'agent'))
t.test('a recreated sandbox survives its old sandbox\'s DEL, the plugin doing it itself', (t) => recreatedSandbox(t, 'plugin'))

t.test('a DEL for the old container before the new sandbox exists still removes its own veth', async (t) => {
  const lab = await createLab(t)
  const conf = pintoConf(lab, '1.0.0')
  const att = { containerId: 'solo1', netns: await lab.pod('solo'), args: 'K8S_POD_NAMESPACE=default;K8S_POD_NAME=solo' }
  t.equal((await lab.exec('pinto', 'ADD', conf, att)).code, 0)
  t.equal((await lab.exec('pinto', 'DEL', conf, { ...att, netns: '' })).code, 0, 'DEL without netns')
  t.same(await hostVeths(lab), [], 'its veth is gone')
  t.same(await lab.service!.allocations(''), [], 'its addresses are released')
})
