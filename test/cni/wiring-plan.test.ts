// The pure parts of a pod's wiring and its attachment checks: the veth's owner goes on before the host end
// leaves the pod, the gateway's neighbour entry, what CHECK compares, and the env checks of spec.ts.

import t from 'tap'
import { type SideState, type Wiring, HOST_MAC, aliasNames, checkWiring, foreignWiring, hostBatch, hostOps, ownedBy, podBatch, podOps, podRepairBatch, sameContainer, vethLines, vethOps } from '../../cni/wiring-plan.js'
import { linkOpText } from '../../felix/rtnl-links.js'
import { CniError, parseEnv } from '../../cni/spec.js'

const w: Wiring = { ifname: 'eth0', hostVeth: 'pinto0123456789', mtu: 1450, podMac: '0a:01:02:03:04:05', owner: 'net.c1', containerId: 'c1', v4: '198.18.0.5', v6: undefined }

t.test('the host end gets its owner before it moves to the host netns', async (t) => {
  const lines = vethLines(w, 42).trim().split('\n')
  t.equal(lines.length, 3)
  t.match(lines[0], /^link add eth0 .* type veth peer name pinto0123456789 address ee:ee:ee:ee:ee:ee mtu 1450$/, 'both ends made in the pod netns')
  t.equal(lines[1], 'link set pinto0123456789 alias net.c1', 'the attachment\'s id')
  t.equal(lines[2], 'link set pinto0123456789 netns 42')
})

t.test('the IPv4 gateway gets a permanent neighbour entry before the default route', async (t) => {
  const lines = podBatch(w).trim().split('\n')
  const neigh = lines.indexOf(`neigh replace 169.254.1.1 lladdr ${HOST_MAC} dev eth0 nud permanent`)
  t.ok(neigh > 0, 'written')
  t.ok(neigh < lines.indexOf('route add default via 169.254.1.1 dev eth0'))
  t.notMatch(podBatch({ ...w, v4: undefined, v6: '2001:db8:18::5' }), 'neigh', 'none for IPv6')
})

t.test('the rtnetlink ops are the ip lines, one for one, in their order (the veth made from the host)', async (t) => {
  const lines = (ops: Parameters<typeof linkOpText>[0][]): string => ops.map(linkOpText).join('\n') + '\n'
  t.equal(lines(vethOps(w, '/run/netns/p')), 'link add pinto0123456789 address ee:ee:ee:ee:ee:ee mtu 1450 type veth peer name eth0 address 0a:01:02:03:04:05 mtu 1450 netns /run/netns/p\nlink set pinto0123456789 alias net.c1\n', 'the pod end made in the pod, the owner next')
  for (const x of [w, { ...w, v6: '2001:db8::5' }, { ...w, v4: undefined, v6: '2001:db8::5' }, { ...w, ifname: 'eth1', v6: '2001:db8::5' }]) {
    t.equal(lines(podOps(x)), podBatch(x), `pod side of ${x.ifname} ${x.v4 ?? ''} ${x.v6 ?? ''}`)
    t.equal(lines(hostOps(x)), hostBatch(x), `host side of ${x.v4 ?? ''} ${x.v6 ?? ''}`)
  }
})

t.test('CHECK compares the owner and the neighbour entry', async (t) => {
  const pod: SideState = { link: { mac: w.podMac, up: true, mtu: 1450, owner: '' }, addrs: ['198.18.0.5/32'], routes: ['169.254.1.1', 'default via 169.254.1.1'], neighbours: [`169.254.1.1 ${HOST_MAC} PERMANENT`] }
  const host = (owner: string): SideState => ({ link: { mac: HOST_MAC, up: true, mtu: 1450, owner }, addrs: [], routes: ['198.18.0.5'], neighbours: [] })
  t.same(checkWiring(w, pod, host('net.c1')), [])
  t.same(checkWiring(w, pod, host('')), [], 'a veth without an owner (an earlier pinto) passes')
  t.same(checkWiring(w, pod, host('c1')), [], 'a veth recording the container alone (an earlier pinto) passes')
  t.same(checkWiring(w, pod, host('net.c2')), ['host veth pinto0123456789 belongs to net.c2, not net.c1'])
  t.same(checkWiring(w, pod, host('net.c1:eth1')), ['host veth pinto0123456789 belongs to net.c1:eth1, not net.c1'], 'another interface of the container')
  t.same(checkWiring(w, { ...pod, neighbours: [`169.254.1.1 ${HOST_MAC} REACHABLE`] }, host('net.c1')), [`pod neighbours lacks 169.254.1.1 ${HOST_MAC} PERMANENT`])
  t.ok(ownedBy('net.c1', w) && ownedBy('c1', w) && ownedBy('', w) && !ownedBy('net.c2', w) && !ownedBy('c2', w) && !ownedBy('net.c1:eth1', w))
})

t.test('what a host veth\'s alias says of an attachment and its container', async (t) => {
  t.ok(sameContainer('net.c1:eth1', 'c1') && sameContainer('other.c1', 'c1') && sameContainer('c1', 'c1'))
  t.notOk(sameContainer('net.c12', 'c1') || sameContainer('net.c2', 'c1') || sameContainer('', 'c1'))
  t.ok(aliasNames('net.c1', 'net.c1') && aliasNames('net.c1:eth1', 'net.c1:eth1'), 'the attachment\'s own id')
  t.ok(aliasNames('c1', 'net.c1') && aliasNames('c1', 'net.c1:eth1'), 'an earlier pinto\'s container ID names every attachment of it')
  t.notOk(aliasNames('net.c1', 'net.c1:eth1') || aliasNames('net.c1:eth1', 'net.c1') || aliasNames('', 'net.c1') || aliasNames('c2', 'net.c1'))
})

t.test('a repeated ADD repairs only its own wiring, and adds rather than removes', async (t) => {
  const pod: SideState = { link: { mac: w.podMac, up: false, mtu: 1450, owner: '', index: 2, peer: 7 }, addrs: ['198.18.0.5/32'], routes: [], neighbours: [] }
  const host: SideState = { link: { mac: HOST_MAC, up: true, mtu: 1450, owner: 'net.c1', index: 7 }, addrs: [], routes: ['198.18.0.5', 'fe80::/64'], neighbours: [] }
  t.equal(foreignWiring(w, '/run/netns/p', pod, host), undefined, 'drifted, its own: repairable')
  t.match(foreignWiring(w, '/run/netns/p', { ...pod, link: undefined }, host), /eth0 is not in \/run\/netns\/p/)
  t.match(foreignWiring(w, '/run/netns/p', { ...pod, link: { ...pod.link!, peer: 9 } }, host), /not the peer of host veth/)
  t.match(foreignWiring(w, '/run/netns/p', { ...pod, addrs: ['198.18.0.9/32'] }, host), /carries 198\.18\.0\.9\/32, which IPAM does not hold for net\.c1/)
  t.match(foreignWiring(w, '/run/netns/p', pod, { ...host, routes: ['198.18.0.9'] }), /routes 198\.18\.0\.9/)
  for (const line of podRepairBatch({ ...w, v6: '2001:db8:18::5' }).trim().split('\n')) t.notMatch(line, /\b(del|delete|flush)\b/, `${line}: adds or replaces`)
})

t.test('parseEnv: container ID and ifname refused for ADD and CHECK, recorded for DEL', async (t) => {
  const env = (command: string, id: string, ifname = 'eth0'): Record<string, string> => ({ CNI_COMMAND: command, CNI_CONTAINERID: id, CNI_NETNS: '/run/netns/x', CNI_IFNAME: ifname, CNI_PATH: '/opt/cni/bin' })
  for (const command of ['ADD', 'CHECK']) {
    t.throws(() => parseEnv(env(command, 'a/b')), new CniError(4, 'CNI_CONTAINERID: "a/b" has "/" at byte 1; a container ID is letters, digits, \'_\', \'.\' and \'-\', starting with a letter or digit'))
    t.throws(() => parseEnv(env(command, 'c1', 'lo')), { code: 4, message: 'CNI_IFNAME: "lo" is the pod\'s loopback, never pinto\'s interface' })
  }
  t.match(parseEnv(env('DEL', 'a/b')).notOurs, /^CNI_CONTAINERID: /)
  t.match(parseEnv(env('DEL', 'c1', 'lo')).notOurs, /^CNI_IFNAME: /)
  t.equal(parseEnv(env('DEL', 'c1')).notOurs, undefined)
  t.equal(parseEnv({ CNI_COMMAND: 'GC', CNI_IFNAME: 'lo' }).notOurs, undefined, 'GC does not name an attachment')
  t.throws(() => parseEnv({ CNI_COMMAND: 'DEL', CNI_CONTAINERID: '', CNI_IFNAME: 'eth0' }), { code: 4, message: 'CNI_CONTAINERID is not set (needed for DEL)' })
})

t.test('parseEnv: CNI_PATH is needed where the reference plugins\' skeleton needs it', async (t) => {
  const env = { CNI_CONTAINERID: 'c1', CNI_NETNS: '/run/netns/x', CNI_IFNAME: 'eth0' }
  for (const command of ['ADD', 'DEL', 'CHECK']) {
    t.throws(() => parseEnv({ ...env, CNI_COMMAND: command }), { code: 4, message: `CNI_PATH is not set (needed for ${command})` })
    t.throws(() => parseEnv({ ...env, CNI_COMMAND: command, CNI_PATH: '' }), { code: 4, message: `CNI_PATH is not set (needed for ${command})` })
  }
  for (const command of ['GC', 'STATUS', 'VERSION']) t.equal(parseEnv({ CNI_COMMAND: command }).command, command, `${command} without it`)
})
