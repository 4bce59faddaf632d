// VXLAN for real: node namespaces on a fabric bridge, two subnets joined by a router namespace, a pod on
// each node wired like the CNI does it. Pods ping each other directly (same subnet, CrossSubnet) and
// through vxlan.pinto (across the router); felix's routes are compared exactly. Then natOutgoing.

import t from 'tap'
import { execa } from 'execa'
import { createTopology } from '../harness/netns.js'
import { applyNat, ExecaRunner, type DesiredState, type RemoteVtep } from '../../felix/index.js'
import { addPod, ourRoutes, pingWorks, pool, startVxlanNode } from './lab.js'

const vteps: Record<'a' | 'b' | 'c', RemoteVtep> = {
  a: { nodeName: 'a', nodeAddress: '192.0.2.11', tunnelAddress: '198.18.0.1', mac: '66:00:00:00:00:0a' },
  b: { nodeName: 'b', nodeAddress: '192.0.2.12', tunnelAddress: '198.18.0.65', mac: '66:00:00:00:00:0b' },
  c: { nodeName: 'c', nodeAddress: '198.51.100.13', tunnelAddress: '198.18.0.129', mac: '66:00:00:00:00:0c' },
}
const blocks = { a: '198.18.0.0/26', b: '198.18.0.64/26', c: '198.18.0.128/26' }

async function vxCount(ns: string): Promise<number> {
  const r = await execa('ip', ['-n', ns, '-s', '-json', 'link', 'show', 'dev', 'vxlan.pinto'])
  return (JSON.parse(r.stdout) as { stats64: { tx: { packets: number } } }[])[0]?.stats64.tx.packets ?? -1
}

t.test('VXLAN CrossSubnet: direct in the subnet, vxlan.pinto across the router, pods ping', async (t) => {
  const topo = await createTopology(t)
  const r = await topo.addNode({ name: 'r', v4: '192.0.2.1/24' })
  await topo.exec(r.ns, 'ip', ['addr', 'add', '198.51.100.1/24', 'dev', 'eth0'])
  await topo.exec(r.ns, 'sysctl', ['-q', '-w', 'net.ipv4.ip_forward=1', 'net.ipv4.conf.all.send_redirects=0', 'net.ipv4.conf.eth0.send_redirects=0'])
  const a = await topo.addNode({ name: 'a', v4: '192.0.2.11/24' })
  const b = await topo.addNode({ name: 'b', v4: '192.0.2.12/24' })
  const c = await topo.addNode({ name: 'c', v4: '198.51.100.13/24' })
  for (const [n, gw] of [[a, '192.0.2.1'], [b, '192.0.2.1'], [c, '198.51.100.1']] as const) await topo.exec(n.ns, 'ip', ['route', 'add', 'default', 'via', gw])

  const pools = [pool('vx', '198.18.0.0/16', { vxlanMode: 'CrossSubnet' })]
  const names = ['a', 'b', 'c'] as const
  const nodes = { a, b, c }
  const subnets = { a: '192.0.2.11/24', b: '192.0.2.12/24', c: '198.51.100.13/24' }
  const pods = {
    a: await addPod(t, topo, a, 'pa', '198.18.0.2', 'pinto0a'),
    b: await addPod(t, topo, b, 'pb', '198.18.0.66', 'pinto0b'),
    c: await addPod(t, topo, c, 'pc', '198.18.0.130', 'pinto0c'),
  }
  for (const me of names) {
    const others = names.filter((n) => n !== me)
    const state: DesiredState = {
      pools,
      routes: others.map((o) => ({ prefix: blocks[o], nextHops: [{ nodeName: o, address: vteps[o].nodeAddress }] })),
      localBlocks: [blocks[me]],
      vteps: others.map((o) => vteps[o]),
      localNode: { name: me, ipv4Address: subnets[me], parentInterface: 'eth0' },
    }
    await startVxlanNode(t, nodes[me], vteps[me], state, { monitor: false })
  }

  t.same(await ourRoutes(a.ns), [
    'route replace 198.18.0.128/26 via 198.18.0.129 dev vxlan.pinto onlink proto 87',
    'route replace 198.18.0.64/26 via 192.0.2.12 dev eth0 onlink proto 87',
    'route replace blackhole 198.18.0.0/26 proto 87',
  ])
  t.same(await ourRoutes(c.ns), [
    'route replace 198.18.0.0/26 via 198.18.0.1 dev vxlan.pinto onlink proto 87',
    'route replace 198.18.0.64/26 via 198.18.0.65 dev vxlan.pinto onlink proto 87',
    'route replace blackhole 198.18.0.128/26 proto 87',
  ])
  const neigh = await execa('ip', ['-n', a.ns, '-json', 'neigh', 'show', 'dev', 'vxlan.pinto'])
  const entries = (JSON.parse(neigh.stdout) as { dst: string }[]).sort((x, y) => x.dst.localeCompare(y.dst))
  t.match(entries, [{ dst: '198.18.0.129', lladdr: '66:00:00:00:00:0c', state: ['PERMANENT'] }, { dst: '198.18.0.65', lladdr: '66:00:00:00:00:0b', state: ['PERMANENT'] }])
  const fdb = await execa('ip', ['netns', 'exec', a.ns, 'bridge', '-json', 'fdb', 'show', 'dev', 'vxlan.pinto'])
  t.same((JSON.parse(fdb.stdout) as { mac: string; dst?: string }[]).filter((f) => f.dst !== undefined).map((f) => `${f.mac} ${f.dst}`).sort(), ['66:00:00:00:00:0b 192.0.2.12', '66:00:00:00:00:0c 198.51.100.13'])
  const link = await execa('ip', ['-n', a.ns, '-d', '-json', 'link', 'show', 'dev', 'vxlan.pinto'])
  t.match(JSON.parse(link.stdout), [{ mtu: 1450, address: '66:00:00:00:00:0a', linkinfo: { info_kind: 'vxlan', info_data: { id: 4096, port: 4789, local: '192.0.2.11', learning: false } } }])

  const before = await vxCount(a.ns)
  t.ok(await pingWorks(pods.a.ns, pods.b.address), 'pa -> pb, same subnet, direct')
  const afterDirect = await vxCount(a.ns)
  t.ok(await pingWorks(pods.a.ns, pods.c.address), 'pa -> pc through vxlan.pinto and the router')
  t.ok(await pingWorks(pods.b.ns, pods.c.address), 'pb -> pc through vxlan.pinto')
  t.ok(await pingWorks(pods.c.ns, pods.a.address), 'pc -> pa back through vxlan.pinto')
  const afterVxlan = await vxCount(a.ns)
  t.equal(afterDirect, before, 'the same-subnet ping did not use the tunnel')
  t.ok(afterVxlan > afterDirect, `the cross-subnet pings did (${afterDirect} -> ${afterVxlan} packets)`)
})

t.test('natOutgoing: pod traffic leaving all pools is masqueraded, and only then answered', async (t) => {
  const topo = await createTopology(t)
  const r = await topo.addNode({ name: 'r', v4: '192.0.2.1/24' })
  const a = await topo.addNode({ name: 'a', v4: '192.0.2.11/24' })
  // Proxy ARP answers for 169.254.1.1 only when the host has a route for it: its default route.
  await topo.exec(a.ns, 'ip', ['route', 'add', 'default', 'via', '192.0.2.1'])
  const pods = await addPod(t, topo, a, 'pa', '198.18.0.2', 'pinto0a')
  const ctx = { runner: new ExecaRunner(), netns: a.ns }
  await startVxlanNode(t, a, vteps.a, { pools: [pool('p', '198.18.0.0/16', { natOutgoing: true })], routes: [], localBlocks: [blocks.a], vteps: [], localNode: { name: 'a', ipv4Address: '192.0.2.11/24', parentInterface: 'eth0' } }, { monitor: false })
  // r has no route back to the pods: without NAT the reply has nowhere to go.
  t.notOk(await pingWorks(pods.ns, r.v4 ?? '', 1200), 'no reply before NAT')
  const script = await applyNat(ctx, [pool('p', '198.18.0.0/16', { natOutgoing: true }), pool('q', '198.19.0.0/16')])
  t.match(script, /ip saddr @masq4 ip daddr != @pools4 masquerade/)
  t.ok(await pingWorks(pods.ns, r.v4 ?? ''), 'replies once masqueraded')
  const list = await execa('ip', ['netns', 'exec', a.ns, 'nft', '-j', 'list', 'set', 'inet', 'pinto', 'pools4'])
  t.match(list.stdout, /198\.19\.0\.0/)
  // Re-applying is an atomic replace, and no natOutgoing pool removes the table.
  await applyNat(ctx, [pool('q', '198.19.0.0/16')])
  const tables = await execa('ip', ['netns', 'exec', a.ns, 'nft', 'list', 'tables'])
  t.notMatch(tables.stdout, /pinto/)
})
