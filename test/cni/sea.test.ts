// The single-executable plugins (dist/sea/pinto, installed by install-cni under both names) in real
// namespaces against a real IPAM service, exec'd with the CNI variables only (no PATH, no Node.js
// reachable): ADD and DEL of a pod, the name exec'd as choosing the plugin, and Node.js's own variables
// (NODE_OPTIONS, NODE_COMPILE_CACHE) in the runtime's environment changing nothing, and the executable built
// without the release binary's symbol table and debug sections.

import t, { type Test } from 'tap'
import { copyFileSync, mkdirSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import { execa } from 'execa'
import { seaExecutable } from '../../agent/install-cni.js'
import { type Lab, createLab, pintoConf } from './lab.js'

const SKIP = seaExecutable() === undefined ? 'dist/sea/pinto is not built: run `node scripts/sea.js` (npm test does)' : false

async function addAndDel(t: Test, lab: Lab, n: number, extraEnv: Record<string, string> = {}): Promise<void> {
  const netns = await lab.pod(`s${n}`)
  const att = { containerId: `sea${n}`, netns, args: `K8S_POD_NAMESPACE=default;K8S_POD_NAME=sea-${n}` }
  const conf = pintoConf(lab, '1.0.0')
  const add = await lab.exec('pinto', 'ADD', conf, att, extraEnv)
  t.equal(add.code, 0, add.stdout + add.stderr)
  const r = add.json as { interfaces: { name: string }[]; ips: { address: string }[] }
  const v4 = r.ips[0]?.address ?? ''
  t.match(v4, /^198\.1[89]\.\d+\.\d+\/32$/)
  const hostVeth = r.interfaces[0]?.name ?? ''
  t.match(await lab.ip(netns.replace('/run/netns/', ''), ['addr', 'show', 'dev', 'eth0']), `inet ${v4} `)
  t.match(await lab.ip(lab.hostNs, ['route', 'show', 'dev', hostVeth]), `${v4.split('/')[0]} scope link`)
  t.equal((await lab.service?.allocations(`k8s-pod-network.sea${n}`))?.length, 1, 'one address allocated')
  const del = await lab.exec('pinto', 'DEL', conf, att, extraEnv)
  t.equal(del.code, 0, del.stdout + del.stderr)
  t.notOk((await lab.links(lab.hostNs)).includes(hostVeth), 'host veth gone')
  t.same(await lab.service?.allocations(`k8s-pod-network.sea${n}`), [], 'address released')
}

t.test('ADD and DEL with no Node.js on PATH', { skip: SKIP }, async (t) => {
  const lab = await createLab(t, { plugins: 'sea' })
  await addAndDel(t, lab, 1)
})

t.test('NODE_OPTIONS and Node.js\'s other variables in the runtime\'s environment change nothing', { skip: SKIP }, async (t) => {
  const lab = await createLab(t, { plugins: 'sea' })
  const coverage = join(lab.dir, 'coverage')
  mkdirSync(coverage)
  const env = { NODE_OPTIONS: '--require=/nonexistent', NODE_V8_COVERAGE: coverage, NODE_DEBUG: 'module,net,child_process' }
  await addAndDel(t, lab, 2, env)
  const v = await lab.exec('pinto-ipam', 'VERSION', { cniVersion: '1.0.0' }, {}, env)
  t.equal(v.code, 0, v.stdout + v.stderr)
  t.equal(v.stderr, '', 'NODE_DEBUG printed nothing')
  t.same(readdirSync(coverage), [], 'NODE_V8_COVERAGE wrote nothing')
})

t.test('the name exec\'d as picks the plugin', { skip: SKIP }, async (t) => {
  const lab = await createLab(t, { plugins: 'sea' })
  const netns = await lab.pod('ipam')
  const conf = { cniVersion: '1.0.0', name: 'k8s-pod-network', type: 'pinto-ipam', ipam: { type: 'pinto-ipam', socket: lab.socket } }
  const att = { containerId: 'sea-ipam', netns }
  const add = await lab.exec('pinto-ipam', 'ADD', conf, att)
  t.equal(add.code, 0, add.stdout + add.stderr)
  const r = add.json as { ips: { address: string }[]; interfaces?: unknown }
  t.match(r.ips[0]?.address, /^198\.1[89]\./, 'pinto-ipam answers with addresses')
  t.same(r.interfaces ?? [], [], 'and names no interface: it is the IPAM plugin')
  t.same(await lab.links(netns.replace('/run/netns/', '')), ['lo'], 'the pod namespace untouched')
  t.equal((await lab.exec('pinto-ipam', 'DEL', conf, att)).code, 0)
  t.same(await lab.service?.allocations('k8s-pod-network.sea-ipam'), [])
  // Under any other name it refuses to guess.
  copyFileSync(join(lab.binDir, 'pinto'), join(lab.binDir, 'pinto-copy'))
  const other = await lab.topo.exec(lab.hostNs, join(lab.binDir, 'pinto-copy'), [], { input: '{}', env: { CNI_COMMAND: 'VERSION' }, extendEnv: false, reject: false })
  t.equal(other.exitCode, 1)
  t.match(JSON.parse(String(other.stdout)), { code: 7, msg: /exec'd as "pinto-copy": this executable serves only the plugin types "pinto" and "pinto-ipam"/ })
})

t.test('the executable carries no symbol table or debug sections, and runs without them', { skip: SKIP }, async (t) => {
  const exe = seaExecutable() as string
  // readelf is binutils', as is the strip scripts/sea.js builds with.
  const sections = String((await execa('readelf', ['-S', '-W', exe])).stdout)
  const names = [...sections.matchAll(/^\s*\[\s*\d+\]\s+(\S+)/gm)].map((m) => m[1] as string)
  t.ok(names.includes('.dynsym'), 'the dynamic symbols stay (native addons and stack traces use them)')
  t.same(names.filter((n) => n === '.symtab' || n === '.strtab' || n.startsWith('.debug_')), [], 'no .symtab, .strtab or .debug_*')
  const lab = await createLab(t, { plugins: 'sea' })
  await addAndDel(t, lab, 4)
})
