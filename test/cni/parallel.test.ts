// One node, 100 pods: ADDs run concurrently (bounded, the machine has 2 cores), then 100 DELs; every
// address distinct, every veth gone, and the IPAM records clean.

import t from 'tap'
import { checkIpam } from '../../ipam/check.js'
import { pool } from '../harness/pool.js'
import { createLab, pintoConf } from './lab.js'

const PODS = 100
const PARALLEL = 16

t.test(`${PODS} ADDs in parallel, then ${PODS} DELs`, async (t) => {
  const lab = await createLab(t)
  const conf = pintoConf(lab, '1.1.0')
  const netns = await pool(PODS, 8, (i) => lab.pod(`q${i}`))
  const att = (i: number): { containerId: string; netns: string; args: string } => ({ containerId: `par${i}`, netns: netns[i] as string, args: `K8S_POD_NAMESPACE=load;K8S_POD_NAME=pod-${i}` })
  const adds = await pool(PODS, PARALLEL, (i) => lab.exec('pinto', 'ADD', conf, att(i)))
  const failed = adds.filter((r) => r.code !== 0)
  t.same(failed.map((r) => r.stdout), [], 'every ADD succeeded')
  const addrs = adds.map((r) => (r.json as { ips: { address: string }[] } | undefined)?.ips[0]?.address)
  t.equal(new Set(addrs).size, PODS, 'all addresses distinct')
  t.equal((await lab.links(lab.hostNs)).filter((l) => l.startsWith('pinto')).length, PODS, `${PODS} host veths`)
  t.equal((await lab.service!.allocations('')).length, PODS)
  const dels = await pool(PODS, PARALLEL, (i) => lab.exec('pinto', 'DEL', conf, att(i)))
  t.same(dels.filter((r) => r.code !== 0).map((r) => r.stdout + r.stderr), [], 'every DEL succeeded')
  t.same(await lab.links(lab.hostNs), ['lo', 'eth0'], 'every veth gone')
  t.same(await lab.service!.allocations(''), [], 'every address released')
  const report = await checkIpam(lab.service!.ipam)
  t.same(report.problems, [], 'checkIpam clean')
})
