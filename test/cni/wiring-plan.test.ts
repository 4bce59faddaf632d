// The pure parts of a pod's wiring and its attachment checks: the veth's owner goes on before the host end
// leaves the pod, the gateway's neighbour entry, what CHECK compares, and the env checks of spec.ts.

import t from 'tap'
import { type SideState, type Wiring, HOST_MAC, checkWiring, ownedBy, podBatch, vethLines } from '../../cni/wiring-plan.js'
import { CniError, parseEnv } from '../../cni/spec.js'

const w: Wiring = { ifname: 'eth0', hostVeth: 'pinto0123456789', mtu: 1450, podMac: '0a:01:02:03:04:05', owner: 'c1', v4: '198.18.0.5', v6: undefined }

t.test('the host end gets its owner before it moves to the host netns', async (t) => {
  const lines = vethLines(w, 42).trim().split('\n')
  t.equal(lines.length, 3)
  t.match(lines[0], /^link add eth0 .* type veth peer name pinto0123456789 address ee:ee:ee:ee:ee:ee mtu 1450$/, 'both ends made in the pod netns')
  t.equal(lines[1], 'link set pinto0123456789 alias c1')
  t.equal(lines[2], 'link set pinto0123456789 netns 42')
})

t.test('the IPv4 gateway gets a permanent neighbour entry before the default route', async (t) => {
  const lines = podBatch(w).trim().split('\n')
  const neigh = lines.indexOf(`neigh replace 169.254.1.1 lladdr ${HOST_MAC} dev eth0 nud permanent`)
  t.ok(neigh > 0, 'written')
  t.ok(neigh < lines.indexOf('route add default via 169.254.1.1 dev eth0'))
  t.notMatch(podBatch({ ...w, v4: undefined, v6: '2001:db8:18::5' }), 'neigh', 'none for IPv6')
})

t.test('CHECK compares the owner and the neighbour entry', async (t) => {
  const pod: SideState = { link: { mac: w.podMac, up: true, mtu: 1450, owner: '' }, addrs: ['198.18.0.5/32'], routes: ['169.254.1.1', 'default via 169.254.1.1'], neighbours: [`169.254.1.1 ${HOST_MAC} PERMANENT`] }
  const host = (owner: string): SideState => ({ link: { mac: HOST_MAC, up: true, mtu: 1450, owner }, addrs: [], routes: ['198.18.0.5'], neighbours: [] })
  t.same(checkWiring(w, pod, host('c1')), [])
  t.same(checkWiring(w, pod, host('')), [], 'a veth without an owner (an earlier pinto) passes')
  t.same(checkWiring(w, pod, host('c2')), ['host veth pinto0123456789 belongs to container c2, not c1'])
  t.same(checkWiring(w, { ...pod, neighbours: [`169.254.1.1 ${HOST_MAC} REACHABLE`] }, host('c1')), [`pod neighbours lacks 169.254.1.1 ${HOST_MAC} PERMANENT`])
  t.ok(ownedBy('c1', 'c1') && ownedBy('', 'c1') && !ownedBy('c2', 'c1'))
})

t.test('parseEnv: container ID and ifname refused for ADD and CHECK, recorded for DEL', async (t) => {
  const env = (command: string, id: string, ifname = 'eth0'): Record<string, string> => ({ CNI_COMMAND: command, CNI_CONTAINERID: id, CNI_NETNS: '/run/netns/x', CNI_IFNAME: ifname })
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
