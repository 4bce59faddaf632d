// Pod wiring through rtnetlink (the agent's way: felix/netns-rtnl.ts behind cni/wiring.ts Dataplane), in
// real namespaces: a node process in the lab's host namespace wires pods made by the test, and `ip` reads
// back what it made; failures undo what they made and leave what was there.
import t from 'tap'
import { basename } from 'node:path'
import { createLab, type Lab } from './lab.js'

const WIRING = new URL('../../cni/wiring.js', import.meta.url).href
const FELIX = new URL('../../felix/index.js', import.meta.url).href

interface Out {
  readonly wired?: boolean
  readonly code?: number
  readonly msg?: string
  /** Whether the main thread ended in the namespace it started in. */
  readonly home?: boolean
}

/**
 * Runs `body` (statements using `dp`, a Dataplane with the rtnetlink port) in a node process in the lab's
 * host namespace; its `out` object is printed as JSON.
 */
async function inHost(lab: Lab, body: string): Promise<Out> {
  const script = `
    import { statSync } from 'node:fs'
    const { Dataplane } = await import(${JSON.stringify(WIRING)})
    const { NetnsRtnl } = await import(${JSON.stringify(FELIX)})
    const ino = () => statSync('/proc/thread-self/ns/net').ino
    const start = ino()
    const dp = new Dataplane(undefined, { open: (ns) => NetnsRtnl.open(ns) })
    let out = {}
    try {
      ${body}
    } catch (e) {
      out = { code: e.code, msg: e.message }
    }
    console.log(JSON.stringify({ ...out, home: ino() === start && ino() === statSync('/proc/self/ns/net').ino }))`
  const r = await lab.topo.exec(lab.hostNs, process.execPath, ['--input-type=module', '-e', script], { reject: false })
  if (r.exitCode !== 0) throw new Error(`the wiring script failed: ${String(r.stderr)}`)
  return JSON.parse(String(r.stdout)) as Out
}

const veth = (hostVeth: string, owner: string, ifname = 'eth0'): string =>
  JSON.stringify({ ifname, hostVeth, mtu: 1400, podMac: '0a:00:00:00:00:09', owner, containerId: owner })

t.test('ADD: the veth made with its pod end straight in the pod, its owner recorded, both sides wired; DEL removes it', async (t) => {
  const lab = await createLab(t, { service: false })
  const netns = await lab.pod('rt')
  const pod = basename(netns)
  const out = await inHost(lab, `
    await dp.wire(${veth('pintort0', 'net.c1')}, ${JSON.stringify(netns)}, Promise.resolve({ v4: '198.18.7.7', v6: '2001:db8:18::7' }))
    out = { wired: true }`)
  t.same(out, { wired: true, home: true }, 'wired, and the thread is back in its own namespace')

  const [eth0] = JSON.parse(await lab.ip(pod, ['-j', 'addr', 'show', 'dev', 'eth0'])) as { address: string; mtu: number; flags: string[]; addr_info: { local: string; prefixlen: number }[] }[]
  t.equal(eth0?.address, '0a:00:00:00:00:09')
  t.equal(eth0?.mtu, 1400)
  t.ok(eth0?.flags.includes('UP'), 'eth0 is up')
  t.same(eth0?.addr_info.filter((a) => !a.local.startsWith('fe80')).map((a) => `${a.local}/${a.prefixlen}`), ['198.18.7.7/32', '2001:db8:18::7/128'])
  t.match(await lab.ip(pod, ['route', 'show']), /^default via 169\.254\.1\.1 dev eth0[^]*169\.254\.1\.1 dev eth0 scope link/m)
  t.match(await lab.ip(pod, ['-6', 'route', 'show', 'default']), 'default via fe80::ecee:eeff:feee:eeee dev eth0')
  t.match(await lab.ip(pod, ['neigh', 'show', 'dev', 'eth0']), '169.254.1.1 lladdr ee:ee:ee:ee:ee:ee PERMANENT')
  t.same((await lab.links(pod)).sort(), ['eth0', 'lo'], 'only eth0 in the pod')

  const [host] = JSON.parse(await lab.ip(lab.hostNs, ['-j', 'link', 'show', 'dev', 'pintort0'])) as { address: string; ifalias?: string; flags: string[]; mtu: number }[]
  t.equal(host?.ifalias, 'net.c1', 'the host end records its attachment')
  t.equal(host?.address, 'ee:ee:ee:ee:ee:ee')
  t.equal(host?.mtu, 1400)
  t.ok(host?.flags.includes('UP'))
  t.match(await lab.ip(lab.hostNs, ['route', 'show', 'dev', 'pintort0']), '198.18.7.7 scope link', 'the host route, as ip route add makes it')
  t.match(await lab.ip(lab.hostNs, ['-6', 'route', 'show', 'dev', 'pintort0']), /^2001:db8:18::7 metric 1024/m)
  const sysctl = async (path: string): Promise<string> => String((await lab.topo.exec(lab.hostNs, 'cat', [`/proc/sys/net/${path}`])).stdout).trim()
  t.equal(await sysctl('ipv4/conf/pintort0/proxy_arp'), '1', 'host sysctls set in the host namespace')
  t.equal(await sysctl('ipv6/conf/pintort0/proxy_ndp'), '1')

  const del = await inHost(lab, `await dp.unwire('pintort0', 'eth0', ${JSON.stringify(netns)}); out = { wired: false }`)
  t.same(del, { wired: false, home: true })
  t.same(await lab.links(pod), ['lo'], 'the pod end went with it')
  t.notOk((await lab.links(lab.hostNs)).includes('pintort0'), 'the host end is gone')
})

t.test('DEL of a pod end whose host end is not this attachment\'s: only the pod end goes; a missing one is success', async (t) => {
  const lab = await createLab(t, { service: false })
  const netns = await lab.pod('rtdel')
  const pod = basename(netns)
  await lab.ip(pod, ['link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'other0'])
  const out = await inHost(lab, `
    await dp.unwire(undefined, 'eth0', ${JSON.stringify(netns)})
    await dp.unwire(undefined, 'eth0', ${JSON.stringify(netns)})
    await dp.unwire(undefined, 'eth0', '/run/netns/no-such-netns-here')
    out = { wired: false }`)
  t.same(out, { wired: false, home: true })
  t.same(await lab.links(pod), ['lo'])
})

t.test('failures: each undoes what it made and leaves what was there', async (t) => {
  const lab = await createLab(t, { service: false })

  // CNI_IFNAME taken in the pod: nothing is made.
  const taken = await lab.pod('rttaken')
  await lab.ip(basename(taken), ['link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'eth0p'])
  let out = await inHost(lab, `await dp.wire(${veth('pintort1', 'net.c2')}, ${JSON.stringify(taken)}, Promise.resolve({ v4: '198.18.7.8', v6: undefined }))`)
  t.equal(out.code, 5, JSON.stringify(out))
  t.match(String(out.msg), /^creating veth eth0\/pintort1 in .* failed: link add pintort1 address ee:ee:ee:ee:ee:ee mtu 1400 type veth peer name eth0 address \S+ mtu 1400 netns \S+: File exists/)
  t.same((await lab.links(basename(taken))).sort(), ['eth0', 'eth0p', 'lo'], 'the pod\'s own links are left')
  t.equal(out.home, true)

  // The host end's name taken on the host: nothing is made.
  const moved = await lab.pod('rtmoved')
  await lab.ip(lab.hostNs, ['link', 'add', 'pintort2', 'type', 'veth', 'peer', 'name', 'pintort2p'])
  await lab.ip(lab.hostNs, ['link', 'set', 'pintort2', 'alias', 'someone-else'])
  out = await inHost(lab, `await dp.wire(${veth('pintort2', 'net.c3')}, ${JSON.stringify(moved)}, Promise.resolve({ v4: '198.18.7.9', v6: undefined }))`)
  t.equal(out.code, 5, JSON.stringify(out))
  t.match(String(out.msg), /^creating veth eth0\/pintort2 in .* failed: link add pintort2 .*: File exists/)
  t.same(await lab.links(basename(moved)), ['lo'], 'nothing left in the pod')
  const [other] = JSON.parse(await lab.ip(lab.hostNs, ['-j', 'link', 'show', 'dev', 'pintort2'])) as { ifalias?: string }[]
  t.equal(other?.ifalias, 'someone-else', 'the host link of that name is left alone')

  // The pod side refused (a default route already there): the veth goes, both ends.
  const busy = await lab.pod('rtbusy')
  await lab.ip(basename(busy), ['link', 'add', 'x0', 'type', 'veth', 'peer', 'name', 'x1'])
  await lab.ip(basename(busy), ['link', 'set', 'x0', 'up'])
  await lab.ip(basename(busy), ['route', 'add', 'default', 'dev', 'x0'])
  out = await inHost(lab, `await dp.wire(${veth('pintort3', 'net.c4')}, ${JSON.stringify(busy)}, Promise.resolve({ v4: '198.18.7.10', v6: undefined }))`)
  t.equal(out.code, 5, JSON.stringify(out))
  t.match(String(out.msg), /^wiring eth0 in .* failed: route add default via 169\.254\.1\.1 dev eth0: File exists/)
  t.same((await lab.links(basename(busy))).sort(), ['lo', 'x0', 'x1'], 'no eth0 left in the pod')
  t.notOk((await lab.links(lab.hostNs)).includes('pintort3'), 'nor its host end')

  // The addresses never came (IPAM failed): the veth goes, and the caller reports the IPAM failure.
  const noAddr = await lab.pod('rtnoaddr')
  out = await inHost(lab, `await dp.wire(${veth('pintort4', 'net.c5')}, ${JSON.stringify(noAddr)}, Promise.reject(new Error('no address'))); out = { wired: 'returned' }`)
  t.same(out, { wired: 'returned', home: true })
  t.same(await lab.links(basename(noAddr)), ['lo'])
  t.notOk((await lab.links(lab.hostNs)).includes('pintort4'))

  // A netns path that is gone: the error names it, nothing is made.
  out = await inHost(lab, `await dp.wire(${veth('pintort5', 'net.c6')}, '/run/netns/no-such-netns-here', Promise.resolve({ v4: '198.18.7.11', v6: undefined }))`)
  t.equal(out.code, 5)
  t.match(String(out.msg), /^creating veth eth0\/pintort5 in \/run\/netns\/no-such-netns-here failed: .*ENOENT/)
  t.equal(out.home, true)
  t.notOk((await lab.links(lab.hostNs)).includes('pintort5'))
})
