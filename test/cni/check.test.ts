// CHECK holds prevResult against the attachment it is run for: the pod interface prevResult names must be
// CNI_IFNAME in CNI_NETNS, its host interface this attachment's veth, and every address and route it lists
// must be on the pod's interface. A prevResult of another attachment, or one changed, fails with code 100.

import t from 'tap'
import { createLab, pintoConf } from './lab.js'

interface Result { cniVersion: string; interfaces: { name: string; sandbox?: string }[]; ips: { address: string; interface?: number }[]; routes: { dst: string; gw?: string }[] }

t.test('CHECK verifies what prevResult says of this attachment', async (t) => {
  const lab = await createLab(t)
  const conf = pintoConf(lab, '1.1.0')
  const [podA, podB] = await Promise.all([lab.pod('ca'), lab.pod('cb')])
  const a = { containerId: 'chka', netns: podA, args: 'K8S_POD_NAMESPACE=ns1;K8S_POD_NAME=a' }
  const b = { containerId: 'chkb', netns: podB, args: 'K8S_POD_NAMESPACE=ns1;K8S_POD_NAME=b' }
  const addA = await lab.exec('pinto', 'ADD', conf, a)
  const addB = await lab.exec('pinto', 'ADD', conf, b)
  t.equal(addA.code + addB.code, 0, addA.stdout + addB.stdout)
  const ra = addA.json as unknown as Result
  const rb = addB.json as unknown as Result
  const check = (prevResult: unknown) => lab.exec('pinto', 'CHECK', { ...conf, prevResult }, a)
  const own = await check(ra)
  t.equal(own.code, 0, `its own result passes: ${own.stdout}`)

  const [host, pod] = [ra.interfaces[0]!, ra.interfaces[1]!]
  const cases: [string, unknown, RegExp | string][] = [
    ['another pod\'s result', rb, /CHECK failed/],
    ['the pod interface in another netns', { ...ra, interfaces: [host, { ...pod, sandbox: podB }] }, `prevResult.interfaces[1].sandbox is ${podB}, not CNI_NETNS ${podA}`],
    ['another interface name', { ...ra, interfaces: [host, { ...pod, name: 'eth5' }] }, 'prevResult.interfaces[1] is eth5, not CNI_IFNAME eth0'],
    ['another host veth', { ...ra, interfaces: [rb.interfaces[0], pod] }, `prevResult names host veth ${rb.interfaces[0]!.name}, but this attachment's is ${host.name}`],
    ['no interface in a sandbox', { ...ra, interfaces: [host] }, 'prevResult.interfaces names no interface in a sandbox'],
    ['an address the interface lacks', { ...ra, ips: [...ra.ips, rb.ips[0]] }, `lacks ${rb.ips[0]!.address}`],
    ['a route the pod lacks', { ...ra, routes: [...ra.routes, { dst: '203.0.113.0/24', gw: '169.254.1.1' }] }, 'lacks prevResult\'s route 203.0.113.0/24 via 169.254.1.1'],
  ]
  for (const [what, prev, msg] of cases) {
    const r = await check(prev)
    t.equal(r.json?.['code'], 100, `${what}: code 100 (${r.stdout.trim()})`)
    t.match(String(r.json?.['msg']), msg, `${what}: says why`)
  }
  for (const att of [a, b]) t.equal((await lab.exec('pinto', 'DEL', conf, att)).code, 0)
})
