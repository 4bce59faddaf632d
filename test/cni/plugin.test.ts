// pinto in real namespaces: ADD, CHECK and DEL for IPv4 and dual-stack under every spec version, the kernel
// state each leaves, a repeated ADD, CHECK catching drift, idempotent DEL, GC and STATUS.

import t from 'tap'
import { checkIpam } from '../../ipam/check.js'
import { type Lab, createLab, pintoConf } from './lab.js'

const VERSIONS = ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0']

async function podState(lab: Lab, netns: string): Promise<{ addrs: string; routes4: string; routes6: string }> {
  const ns = netns.replace('/run/netns/', '')
  return {
    addrs: await lab.ip(ns, ['addr', 'show', 'dev', 'eth0']),
    routes4: await lab.ip(ns, ['route', 'show']),
    routes6: await lab.ip(ns, ['-6', 'route', 'show']),
  }
}

t.test('ADD, CHECK, DEL under every version, IPv4 and dual-stack', async (t) => {
  const lab = await createLab(t)
  let n = 0
  for (const version of VERSIONS) {
    for (const dual of [false, true]) {
      await t.test(`${version} ${dual ? 'dual-stack' : 'IPv4'}`, async (t) => {
        n++
        const netns = await lab.pod(`p${n}`)
        const att = { containerId: `c${n}`, netns, args: `K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-${n}` }
        const conf = pintoConf(lab, version, dual)
        const add = await lab.exec('pinto', 'ADD', conf, att)
        t.equal(add.code, 0, add.stdout + add.stderr)
        const r = add.json as { cniVersion: string; interfaces: { name: string; mac: string; mtu?: number; sandbox?: string }[]; ips: { address: string; version?: string; interface: number }[] }
        t.equal(r.cniVersion, version)
        t.equal(r.ips.length, dual ? 2 : 1)
        const v4 = r.ips[0]?.address ?? ''
        t.match(v4, /^198\.1[89]\.\d+\.\d+\/32$/)
        if (version < '1.0.0') t.equal(r.ips[0]?.version, '4', 'legacy results carry the IP version')
        else t.notOk('version' in (r.ips[0] ?? {}))
        const hostVeth = r.interfaces[0]?.name ?? ''
        t.match(hostVeth, /^pinto[0-9a-f]{10}$/, 'prefix + sha1 hex, 15 characters')
        t.equal(r.interfaces[0]?.mac, 'ee:ee:ee:ee:ee:ee')
        t.equal(r.interfaces[1]?.sandbox, netns)
        t.equal(r.interfaces[1]?.mtu, version === '1.1.0' ? 1450 : undefined, 'mtu from the agent\'s file, shown from 1.1.0')
        // Kernel, pod side.
        const pod = await podState(lab, netns)
        t.match(pod.addrs, `inet ${v4} `)
        t.match(pod.addrs, 'mtu 1450')
        t.match(pod.routes4, 'default via 169.254.1.1 dev eth0')
        t.match(pod.routes4, '169.254.1.1 dev eth0 scope link')
        // Kernel, host side.
        const link = await lab.ip(lab.hostNs, ['link', 'show', 'dev', hostVeth])
        t.match(link, 'link/ether ee:ee:ee:ee:ee:ee')
        t.match(link, /state UP|LOWER_UP/)
        t.match(await lab.ip(lab.hostNs, ['route', 'show', 'dev', hostVeth]), `${v4.split('/')[0]} scope link`)
        const proxyArp = await lab.topo.exec(lab.hostNs, 'cat', [`/proc/sys/net/ipv4/conf/${hostVeth}/proxy_arp`])
        t.equal(String(proxyArp.stdout).trim(), '1', 'proxy_arp on the host veth')
        if (dual) {
          const v6 = r.ips[1]?.address ?? ''
          t.match(v6, /^2001:db8:18:[0-9a-f:]+\/128$/)
          t.match(pod.addrs, `inet6 ${v6} `)
          t.match(pod.routes6, 'default via fe80::ecee:eeff:feee:eeee dev eth0')
          t.match(await lab.ip(lab.hostNs, ['-6', 'route', 'show', 'dev', hostVeth]), v6.split('/')[0])
          const ll = await lab.ip(lab.hostNs, ['-6', 'addr', 'show', 'dev', hostVeth])
          t.match(ll, 'fe80::ecee:eeff:feee:eeee', 'host link-local is the EUI-64 the pod routes to')
        }
        // Traffic both ways: host -> pod over the /32 route, pod -> host via 169.254.1.1 and proxy ARP.
        await lab.topo.exec(lab.hostNs, 'ping', ['-c', '1', '-W', '2', v4.split('/')[0] as string])
        await lab.topo.exec(netns.replace('/run/netns/', ''), 'ping', ['-c', '1', '-W', '2', '192.0.2.1'])
        if (version >= '0.4.0') {
          const check = await lab.exec('pinto', 'CHECK', { ...conf, prevResult: r }, att)
          t.equal(check.code, 0, `CHECK passes: ${check.stdout}`)
        }
        const del = await lab.exec('pinto', 'DEL', conf, att)
        t.equal(del.code, 0, del.stdout)
        // DEL returns once the kernel has unlisted the veth, before its teardown's grace period ends:
        // by then both ends and the host routes must already be gone.
        t.same(await lab.links(lab.hostNs), ['lo', 'eth0'], 'host veth gone')
        t.same(await lab.links(netns.replace('/run/netns/', '')), ['lo'], 'pod eth0 gone')
        t.notMatch(await lab.ip(lab.hostNs, ['route', 'show']), v4.split('/')[0], 'host route to the pod gone')
        if (dual) t.notMatch(await lab.ip(lab.hostNs, ['-6', 'route', 'show']), (r.ips[1]?.address ?? '').split('/')[0], 'IPv6 host route gone')
        t.same(await lab.service?.allocations(''), [], 'addresses released')
        const again = await lab.exec('pinto', 'DEL', conf, att)
        t.equal(again.code, 0, 'a second DEL succeeds')
      })
    }
  }
  const report = await checkIpam(lab.service!.ipam)
  t.same(report.problems, [], 'checkIpam clean')
})

t.test('a veth is free to make again once DEL returns, before the kernel has finished with the old one', async (t) => {
  // DEL returns when the host end's /proc/sys entry is gone, not when `ip link del` ends (the kernel then
  // still waits out a grace period). What it relies on: at that point the name can be made again, while
  // the old `ip link del` is still waiting. Shown in a pod namespace, by a shell fast enough to hit the wait.
  const lab = await createLab(t)
  const ns = (await lab.pod('reuse')).replace('/run/netns/', '')
  const script = [
    'ip link add h0 type veth peer name p0',
    'ip link del h0 & del=$!',
    'while [ -e /proc/sys/net/ipv4/conf/h0 ]; do :; done',
    'ip link add h0 type veth peer name p0 && echo made',
    // Still running: the new veth was made inside the old one's teardown, not after it.
    'kill -0 $del 2>/dev/null && echo during',
    'wait $del && echo deleted',
  ].join('\n')
  const out = String((await lab.topo.exec(ns, 'sh', ['-c', script])).stdout)
  t.match(out, /^made$/m, 'the name was free as soon as the entry went')
  t.match(out, /^deleted$/m, 'the old ip link del ended well')
  t.comment(/^during$/m.test(out) ? 'made again while the old teardown was still running' : 'the old teardown had ended first this time')
  t.same((await lab.links(ns)).sort(), ['h0', 'lo', 'p0'], 'the new pair is there')

  // And the plugin: DEL, then ADD of the same container, five times over.
  const netns = await lab.pod('again')
  const att = { containerId: 'again1', netns, args: 'K8S_POD_NAMESPACE=ns1;K8S_POD_NAME=again' }
  const conf = pintoConf(lab, '1.1.0')
  for (let i = 0; i < 5; i++) {
    const add = await lab.exec('pinto', 'ADD', conf, att)
    t.equal(add.code, 0, `ADD ${i}: ${add.stdout}`)
    const del = await lab.exec('pinto', 'DEL', conf, att)
    t.equal(del.code, 0, `DEL ${i}: ${del.stdout}`)
  }
  t.same(await lab.links(lab.hostNs), ['lo', 'eth0'], 'no veth left')
  t.same(await lab.service!.allocations(''), [], 'nothing left allocated')
})

t.test('repeated ADD, CHECK drift, DEL without netns, GC and STATUS', async (t) => {
  const lab = await createLab(t)
  const netns = await lab.pod('a')
  const att = { containerId: 'ca', netns, args: 'K8S_POD_NAMESPACE=ns1;K8S_POD_NAME=api' }
  const conf = pintoConf(lab, '1.1.0', true)
  const first = await lab.exec('pinto', 'ADD', conf, att)
  t.equal(first.code, 0, first.stdout)
  const second = await lab.exec('pinto', 'ADD', conf, att)
  t.equal(second.code, 0, second.stdout)
  t.same(second.json, first.json, 'ADD of a wired container returns the same addresses and wiring')
  t.equal((await lab.service!.allocations('')).length, 2, 'no second allocation')

  // Drift: remove the pod's default route; CHECK must notice.
  const ns = netns.replace('/run/netns/', '')
  await lab.ip(ns, ['route', 'del', 'default'])
  const check = await lab.exec('pinto', 'CHECK', { ...conf, prevResult: first.json }, att)
  t.equal(check.code, 1)
  t.equal(check.json?.['code'], 100)
  t.match(String(check.json?.['msg']), 'pod routes lacks default via 169.254.1.1')
  // A re-ADD repairs it.
  const third = await lab.exec('pinto', 'ADD', conf, att)
  t.equal(third.code, 0, third.stdout)
  t.same((third.json as { ips: unknown }).ips, (first.json as { ips: unknown }).ips, 'same addresses after repair')
  t.equal((await lab.exec('pinto', 'CHECK', { ...conf, prevResult: third.json }, att)).code, 0, 'CHECK passes after the repair')

  // STATUS while the agent is up and ready.
  t.equal((await lab.exec('pinto', 'STATUS', conf)).code, 0, 'STATUS ok')

  // GC: a second attachment, then GC with only the first valid.
  const netnsB = await lab.pod('b')
  const b = await lab.exec('pinto', 'ADD', conf, { containerId: 'cb', netns: netnsB, args: 'K8S_POD_NAMESPACE=ns1;K8S_POD_NAME=db' })
  t.equal(b.code, 0, b.stdout)
  const gc = await lab.exec('pinto', 'GC', { ...conf, 'cni.dev/valid-attachments': [{ containerID: 'ca', ifname: 'eth0' }] })
  t.equal(gc.code, 0, gc.stdout)
  const left = await lab.service!.allocations('')
  t.same(new Set(left.map((a) => a.handle)), new Set(['k8s-pod-network.ca']), 'GC released only the stale attachment')

  // DEL after the netns is gone: success, host veth removed, addresses released.
  await lab.topo.exec(lab.hostNs, 'true', [])
  const { execa } = await import('execa')
  await execa('ip', ['netns', 'del', ns])
  const del = await lab.exec('pinto', 'DEL', conf, att)
  t.equal(del.code, 0, del.stdout)
  t.same((await lab.service!.allocations('')).filter((a) => a.handle.endsWith('.ca')), [])
  t.notOk((await lab.links(lab.hostNs)).some((l) => l.startsWith('pinto') && l === (first.json as { interfaces: { name: string }[] }).interfaces[0]?.name))

  // STATUS with the agent stopped: code 50.
  await lab.stopService()
  const st = await lab.exec('pinto', 'STATUS', conf)
  t.equal(st.code, 1)
  t.equal(st.json?.['code'], 50)
  t.match(String(st.json?.['msg']), 'pinto-node is not running')
})

t.test('a runtime PATH without node or ip: the installed plugin finds both', async (t) => {
  const lab = await createLab(t)
  const netns = await lab.pod('path')
  const att = { containerId: 'cpath', netns, args: 'K8S_POD_NAMESPACE=default;K8S_POD_NAME=path' }
  const conf = pintoConf(lab, '1.0.0')
  const env = { PATH: '/nonexistent' }
  const add = await lab.exec('pinto', 'ADD', conf, att, env)
  t.equal(add.code, 0, add.stdout + add.stderr)
  t.match(await lab.ip(netns.replace('/run/netns/', ''), ['route', 'show']), 'default via 169.254.1.1 dev eth0')
  const del = await lab.exec('pinto', 'DEL', conf, att, env)
  t.equal(del.code, 0, del.stdout + del.stderr)
  t.same(await lab.links(lab.hostNs).then((l) => l.filter((n) => n.startsWith('pinto'))), [], 'the veth is gone')
})
