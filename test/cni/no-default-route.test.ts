// Pods on nodes without a default route: proxy ARP answers for 169.254.1.1 only while the host has a route
// to it, so the pod's first hop rests on the permanent neighbour entry ADD writes. Two node namespaces on
// the fabric bridge, static routes between their pods' addresses, no default route on either; IPv6 needs
// no such help (its gateway is the host veth's own link-local address). CHECK notices the entry missing.
// The pods' veths go with their node namespaces at teardown.

import t from 'tap'
import { createLab, pintoConf } from './lab.js'

interface AddResult { ips: { address: string }[] }

const bare = (cidr: string | undefined): string => (cidr ?? '').split('/')[0] as string

t.test('pods reach their node and the other node\'s pods with no default route anywhere', async (t) => {
  const lab = await createLab(t, { defaultRoute: false, hostV6: '2001:db8:1::1/64' })
  const other = await lab.topo.addNode({ name: 'node2', v4: '192.0.2.2/24', v6: '2001:db8:1::2/64' })
  const nodes = [lab.hostNs, other.ns]
  for (const ns of nodes) {
    t.notMatch(await lab.ip(ns, ['route', 'show']), /default/, `${ns}: no IPv4 default route`)
    t.notMatch(await lab.ip(ns, ['-6', 'route', 'show']), /default/, `${ns}: no IPv6 default route`)
    // What felix does on a node: forward between the pods' veths and eth0.
    await lab.topo.exec(ns, 'sysctl', ['-q', '-w', 'net.ipv4.ip_forward=1', 'net.ipv6.conf.all.forwarding=1'])
  }
  const conf = pintoConf(lab, '1.1.0', true)
  const pods: { ns: string; v4: string; v6: string; result: unknown; att: { containerId: string; netns: string; args: string } }[] = []
  for (const [i, nodeNs] of nodes.entries()) {
    const netns = await lab.pod(`ndr${i}`)
    const att = { containerId: `ndr${i}`, netns, args: `K8S_POD_NAMESPACE=default;K8S_POD_NAME=ndr-${i}` }
    // On node2 the plugin runs in node2's namespace (pinto-node hands it back) with the same IPAM service.
    const add = await lab.exec('pinto', 'ADD', conf, att, {}, nodeNs)
    t.equal(add.code, 0, add.stdout + add.stderr)
    const r = add.json as unknown as AddResult
    pods.push({ ns: netns.replace('/run/netns/', ''), v4: bare(r.ips[0]?.address), v6: bare(r.ips[1]?.address), result: add.json, att })
  }
  const [p0, p1] = pods as [(typeof pods)[0], (typeof pods)[0]]
  // Each node routes the other node's pod over the fabric, by hand.
  await lab.ip(lab.hostNs, ['route', 'add', `${p1.v4}/32`, 'via', '192.0.2.2'])
  await lab.ip(lab.hostNs, ['-6', 'route', 'add', `${p1.v6}/128`, 'via', '2001:db8:1::2'])
  await lab.ip(other.ns, ['route', 'add', `${p0.v4}/32`, 'via', '192.0.2.1'])
  await lab.ip(other.ns, ['-6', 'route', 'add', `${p0.v6}/128`, 'via', '2001:db8:1::1'])

  const ping = async (fromNs: string, to: string): Promise<boolean> => (await lab.topo.exec(fromNs, 'ping', ['-c', '1', '-W', '2', to], { reject: false })).exitCode === 0
  t.match(await lab.ip(p0.ns, ['neigh', 'show', 'dev', 'eth0']), '169.254.1.1 lladdr ee:ee:ee:ee:ee:ee PERMANENT', 'the gateway\'s neighbour entry')
  t.ok(await ping(p0.ns, '192.0.2.1'), 'pod -> its node over IPv4')
  t.ok(await ping(p1.ns, '192.0.2.2'), 'pod on node2 -> node2 over IPv4')
  t.ok(await ping(p0.ns, p1.v4), 'pod -> pod on the other node over IPv4')
  t.ok(await ping(p1.ns, p0.v4), 'and back')
  t.ok(await ping(p0.ns, '2001:db8:1::1'), 'pod -> its node over IPv6')
  t.ok(await ping(p0.ns, p1.v6), 'pod -> pod on the other node over IPv6')
  t.ok(await ping(p1.ns, p0.v6), 'and back')
  const proxyArp = await lab.topo.exec(lab.hostNs, 'sh', ['-c', 'cat /proc/sys/net/ipv4/conf/pinto*/proxy_arp'])
  t.equal(String(proxyArp.stdout).trim(), '1', 'proxy ARP stays on, as Calico has it')

  // CHECK passes, and notices the entry gone.
  t.equal((await lab.exec('pinto', 'CHECK', { ...conf, prevResult: p0.result }, p0.att)).code, 0, 'CHECK passes')
  await lab.ip(p0.ns, ['neigh', 'del', '169.254.1.1', 'dev', 'eth0'])
  const check = await lab.exec('pinto', 'CHECK', { ...conf, prevResult: p0.result }, p0.att)
  t.equal(check.json?.['code'], 100, check.stdout)
  t.match(String(check.json?.['msg']), 'pod neighbours lacks 169.254.1.1 ee:ee:ee:ee:ee:ee PERMANENT')
})
