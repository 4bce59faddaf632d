// `pintoctl ipam` run as a real process against a real embedded store named by PINTO_DATASTORE.
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { Ipam } from '../../ipam/ipam.js'
import { embeddedStore } from './stores.js'

const BIN = fileURLToPath(new URL('../../../bin/pintoctl.js', import.meta.url))
const POOL = { apiVersion: 'projectcalico.org/v3', kind: 'IPPool', metadata: { name: 'pods' }, spec: { cidr: '198.18.0.0/24', blockSize: 28 } }

function pintoctl(dir: string, ...args: string[]): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(process.execPath, [BIN, 'ipam', ...args], { encoding: 'utf8', env: { ...process.env, PINTO_DATASTORE: dir } })
}

t.test('show, borrowed, --ip, check and release', async (t) => {
  const { store, spec } = await embeddedStore(t)
  await store.create('/pinto/resources/ippools/pods', JSON.stringify(POOL))
  const ipam = new Ipam(store, { pools: [{ name: 'pods', cidr: '198.18.0.0/24', blockSize: 28 }], config: { maxBlocksPerHost: 1 } })
  const a = await ipam.autoAssign({ handle: 'net.a', node: 'n1', num4: 1, attrs: { namespace: 'default', pod: 'web-1', node: 'n1' } })
  for (let i = 0; i < 15; i++) await ipam.autoAssign({ handle: `net.f${i}`, node: 'n1', num4: 1, attrs: { node: 'n1' } })
  await ipam.autoAssign({ handle: 'net.b', node: 'n2', num4: 1, attrs: { node: 'n2' } })
  const borrowed = await ipam.autoAssign({ handle: 'net.c', node: 'n1', num4: 1, attrs: { namespace: 'default', pod: 'web-2', node: 'n1' } })
  t.equal(borrowed.ipv4[0]!.borrowed, true)

  const show = pintoctl(spec, 'show', '--show-blocks')
  t.equal(show.status, 0, show.stderr)
  t.match(show.stdout, /^\+-{10}\+-{17}\+/)
  t.match(show.stdout, /\| GROUPING \|      CIDR       \| IPS TOTAL \| IPS IN USE \| IPS FREE  \|/)
  t.match(show.stdout, /\| IP Pool  \| 198\.18\.0\.0\/24 +\| 256 +\| 18 \(7%\) +\| 238 \(92%\) \|/)
  t.match(show.stdout, /\| Block    \| [0-9./]+ +\| 16 +\| 16 \(100%\) +\| 0 \(0%\) +\|/)

  const b = pintoctl(spec, 'show', '--show-borrowed')
  t.match(b.stdout, new RegExp(`\\| ${borrowed.ipv4[0]!.address.replace(/\./g, '\\.')} +\\| n1 +\\| ${borrowed.ipv4[0]!.block.replace(/\./g, '\\.')} +\\| n2 +\\| pod +\\| /default/web-2 +\\|`))

  t.same(pintoctl(spec, 'show', `--ip=${a.ipv4[0]!.address}`).stdout, `IP ${a.ipv4[0]!.address} is in use\nHandle ID: net.a\nAttributes:\n  namespace: default\n  pod: web-1\n  node: n1\n`)
  t.equal(pintoctl(spec, 'show', '--ip', '198.18.0.250').stdout, '198.18.0.250 is not assigned\n')

  const clean = pintoctl(spec, 'check', '--nodes=n1,n2')
  t.match(clean.stdout, /Found 2 IPAM blocks\./)
  t.match(clean.stdout, /Check complete; found 0 problems\.\n$/)
  const gone = pintoctl(spec, 'check', '--nodes=n1')
  t.match(gone.stdout, /block [0-9./]+ is affine to deleted node n2/)
  t.match(gone.stdout, /Check complete; found 2 problems\./)

  const rel = pintoctl(spec, 'release', `--ip=${a.ipv4[0]!.address}`)
  t.equal(rel.stdout, `Successfully released IP address ${a.ipv4[0]!.address}\n`)
  const again = pintoctl(spec, 'release', `--ip=${a.ipv4[0]!.address}`)
  t.equal(again.status, 1)
  t.match(again.stderr, /is not assigned \(not-allocated\)/)
  const bad = pintoctl(spec, 'show', '--ip=1.2.3')
  t.equal(bad.status, 1)
  t.match(bad.stderr, /--ip: "1\.2\.3" is not an IPv4 or IPv6 address/)
  t.equal(pintoctl(spec, 'check', '--nodes=n1', '--repair').status, 0)
  t.match(pintoctl(spec, 'check', '--nodes=n1').stdout, /found 0 problems/)
})
