// Devices and host settings: IPIP by the exact commands and routes it produces (and for real where the
// kernel has ipip), vxlan.pinto created once and recreated only when incompatible, host MTU detection,
// the pod MTU file, and the forwarding sysctls read back from a namespace.

import t from 'tap'
import { execa } from 'execa'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createTopology } from '../harness/netns.js'
import {
  detectHostMtu,
  detectParentInterface,
  enableForwarding,
  ensureTunl0,
  ensureVxlan,
  ExecaRunner,
  podMtu,
  RecordingRunner,
  renderDesired,
  RouteReconciler,
  writePodMtu,
  type DesiredState,
} from '../../felix/index.js'
import { ourRoutes, pool, PROTO } from './lab.js'

const ipipState: DesiredState = {
  pools: [pool('ipip', '198.18.0.0/16', { ipipMode: 'Always' }), pool('ipipx', '198.19.0.0/16', { ipipMode: 'CrossSubnet' })],
  routes: [
    { prefix: '198.18.0.64/26', nextHops: [{ address: '192.0.2.12' }] },
    { prefix: '198.19.0.64/26', nextHops: [{ address: '192.0.2.12' }] },
    { prefix: '198.19.0.128/26', nextHops: [{ address: '198.51.100.13' }] },
  ],
  localBlocks: ['198.18.0.0/26'],
  vteps: [],
  localNode: { name: 'a', ipv4Address: '192.0.2.11/24', parentInterface: 'eth0' },
}
const IPIP_LINES = [
  'route replace 198.18.0.64/26 via 192.0.2.12 dev tunl0 onlink proto 87',
  'route replace 198.19.0.128/26 via 198.51.100.13 dev tunl0 onlink proto 87',
  'route replace 198.19.0.64/26 via 192.0.2.12 dev eth0 onlink proto 87',
  'route replace blackhole 198.18.0.0/26 proto 87',
]

async function kernelHasIpip(): Promise<string | undefined> {
  const ns = `pth${process.pid}-ipipprobe`
  await execa('ip', ['netns', 'add', ns])
  try {
    // `name` spelled out: a bare `t` would be read as an abbreviation of `txqueuelen`.
    const r = await execa('ip', ['-n', ns, 'link', 'add', 'name', 't', 'type', 'ipip'], { reject: false })
    return r.exitCode === 0 ? undefined : `this kernel cannot make ipip links (${String(r.stderr).trim()})`
  } finally {
    await execa('ip', ['netns', 'del', ns], { reject: false })
  }
}

t.test('IPIP: tunl0 by its exact commands (missing device, stale address)', async (t) => {
  const rec = new RecordingRunner((c) => {
    const line = c.args.join(' ')
    if (line === '-d -json link show dev tunl0') return { stdout: '', stderr: 'Device "tunl0" does not exist.\n', exitCode: 1 }
    if (line === '-json addr show dev tunl0') return { stdout: '[{"ifname":"tunl0","addr_info":[{"family":"inet","local":"198.18.0.9","prefixlen":32,"scope":"global"}]}]', stderr: '', exitCode: 0 }
    return { stdout: '', stderr: '', exitCode: 0 }
  })
  await ensureTunl0({ runner: rec, netns: 'n1' }, { address: '198.18.0.1', mtu: podMtu(1500, { ipip: true }) })
  t.same(rec.lines(), [
    '[n1] ip -d -json link show dev tunl0',
    '[n1] ip link add name tunl0 type ipip',
    '[n1] ip link set dev tunl0 mtu 1480 up',
    '[n1] ip -json addr show dev tunl0',
    '[n1] ip addr del 198.18.0.9/32 dev tunl0',
    '[n1] ip addr add 198.18.0.1/32 dev tunl0',
  ])
})

t.test('IPIP: the routes it programs, exactly (Always via tunl0 onlink, CrossSubnet direct in the subnet)', async (t) => {
  const rec = new RecordingRunner((c) => ({ stdout: c.args.includes('show') ? '[]' : '', stderr: '', exitCode: 0 }))
  // Hops named in each route (as on a kernel without nexthop objects): the form to read.
  const r = new RouteReconciler({ runner: rec, protocol: PROTO, monitor: false, nexthopObjects: false })
  r.setDesired(renderDesired(ipipState, { protocol: PROTO }).routes)
  await r.apply()
  t.same(rec.calls[1]?.input?.split('\n').filter((l) => l !== '').sort(), IPIP_LINES)
})

const noIpip = await kernelHasIpip()
if (noIpip !== undefined) console.log(`# skipping the real IPIP part: ${noIpip}`)

t.test('IPIP on a real kernel', { skip: noIpip ?? false }, async (t) => {
  const topo = await createTopology(t)
  const a = await topo.addNode({ name: 'a', v4: '192.0.2.11/24' })
  const runner = new ExecaRunner()
  await ensureTunl0({ runner, netns: a.ns }, { address: '198.18.0.1', mtu: 1480 })
  const link = await execa('ip', ['-n', a.ns, '-json', 'addr', 'show', 'dev', 'tunl0'])
  t.match(JSON.parse(link.stdout), [{ mtu: 1480, addr_info: [{ local: '198.18.0.1', prefixlen: 32 }] }])
  const r = new RouteReconciler({ runner, netns: a.ns, protocol: PROTO, monitor: false })
  r.setDesired(renderDesired(ipipState, { protocol: PROTO }).routes)
  t.same((await r.apply()).errors, [])
  t.same(await ourRoutes(a.ns), IPIP_LINES)
})

t.test('vxlan.pinto: created, then left alone when compatible, recreated when the VNI changes', async (t) => {
  const topo = await createTopology(t)
  const a = await topo.addNode({ name: 'a', v4: '192.0.2.11/24' })
  const rec = new RecordingRunner((c) => new ExecaRunner().run(c.cmd, c.args, { ...(c.input !== undefined ? { input: c.input } : {}), ...(c.netns !== undefined ? { netns: c.netns } : {}) }))
  const ctx = { runner: rec, netns: a.ns }
  const spec = { mtu: 1450, mac: '66:00:00:00:00:0a', address: '198.18.0.1', localAddress: '192.0.2.11', parentInterface: 'eth0' }
  await ensureVxlan(ctx, spec)
  t.ok(rec.lines().some((l) => l.endsWith('ip link add name vxlan.pinto type vxlan id 4096 dstport 4789 local 192.0.2.11 dev eth0 nolearning')))
  rec.calls.length = 0
  await ensureVxlan(ctx, spec)
  t.same(rec.lines(), [`[${a.ns}] ip -d -json link show dev vxlan.pinto`, `[${a.ns}] ip -json addr show dev vxlan.pinto`], 'a second call only reads')
  rec.calls.length = 0
  await ensureVxlan(ctx, { ...spec, vni: 4097 })
  t.ok(rec.lines().includes(`[${a.ns}] ip link del dev vxlan.pinto`), 'an incompatible device is recreated')
  const link = await execa('ip', ['-n', a.ns, '-d', '-json', 'link', 'show', 'dev', 'vxlan.pinto'])
  t.match(JSON.parse(link.stdout), [{ mtu: 1450, address: '66:00:00:00:00:0a', linkinfo: { info_data: { id: 4097 } } }])
})

t.test('host MTU from the parent interface, pod MTU file, forwarding sysctls', async (t) => {
  const topo = await createTopology(t)
  const a = await topo.addNode({ name: 'a', v4: '192.0.2.11/24' })
  await topo.exec(a.ns, 'ip', ['link', 'set', 'eth0', 'mtu', '1400'])
  const ctx = { runner: new ExecaRunner(), netns: a.ns }
  t.equal(await detectParentInterface(ctx, '192.0.2.11'), 'eth0')
  await t.rejects(detectParentInterface(ctx, '192.0.2.99'), /node address 192\.0\.2\.99: no interface has it/)
  const host = await detectHostMtu(ctx, 'eth0')
  t.equal(host, 1400)
  await t.rejects(detectHostMtu(ctx, 'eth9'), /parentInterface: no interface named "eth9"/)
  t.equal(podMtu(host, { vxlan: true }), 1350)
  t.equal(podMtu(host, { ipip: true, vxlan: true }), 1350, 'the larger overhead wins')
  t.equal(podMtu(host, {}), 1400)
  const dir = await mkdtemp(join(tmpdir(), 'pinto-mtu-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const path = join(dir, 'lib', 'pinto', 'mtu')
  await writePodMtu(path, podMtu(host, { vxlan: true }))
  t.equal(await readFile(path, 'utf8'), '1350\n')
  await enableForwarding(ctx, true)
  const r = await topo.exec(a.ns, 'sysctl', ['-n', 'net.ipv4.ip_forward', 'net.ipv6.conf.all.forwarding'])
  t.same(String(r.stdout).split('\n'), ['1', '1'])
})
