// The namespace topology: two nodes on the fabric reach each other over IPv4 and IPv6, nothing lands in the
// machine's own namespace, and destroy() leaves no namespace, process or temp dir behind.
import t from 'tap'
import { existsSync } from 'node:fs'
import { execa } from 'execa'
import { createTopology, sweepStaleNamespaces } from './netns.js'
import { isAlive } from './pid.js'

async function namespaces(): Promise<string[]> {
  return String((await execa('ip', ['netns', 'list'])).stdout)
    .split('\n')
    .map((l) => l.split(' ')[0] ?? '')
    .filter((n) => n !== '')
}

/**
 * The links of the machine's own namespace with the names a topology gives its links (br0, p-<node>):
 * what it would have left there by mistake. Other programs add and remove links there at will (podman's
 * veths, say), so the rest is not compared.
 */
async function rootLinks(): Promise<string> {
  const names = String((await execa('ip', ['-o', 'link', 'show'])).stdout).replace(/^\d+: /gm, '').split('\n').map((l) => (l.split(':')[0] ?? '').split('@')[0] ?? '')
  return names.filter((n) => n === 'br0' || n.startsWith('p-')).sort().join(',')
}

t.test('two nodes ping each other over v4 and v6; destroy removes namespaces, processes and dirs', async (t) => {
  const before = await rootLinks()
  const topo = await createTopology(t)
  const a = await topo.addNode({ name: 'a', v4: '192.0.2.11/24', v6: '2001:db8:ff::11/64' })
  const b = await topo.addNode({ name: 'b', v4: '192.0.2.12/24', v6: '2001:db8:ff::12/64' })
  t.equal(a.v4, '192.0.2.11')
  t.not(a.ns, b.ns)
  t.match(a.ns, new RegExp(`^pth${process.pid}-${topo.id}-a$`), 'namespace names carry pid and run id, so parallel tests do not collide')
  const ping4 = await topo.exec(a.ns, 'ping', ['-c', '1', '-W', '2', '192.0.2.12'], { reject: false })
  t.equal(ping4.exitCode, 0, `ping v4: ${String(ping4.stdout)}`)
  const ping6 = await topo.exec(b.ns, 'ping', ['-6', '-c', '1', '-W', '2', '2001:db8:ff::11'], { reject: false })
  t.equal(ping6.exitCode, 0, `ping v6: ${String(ping6.stdout)}`)
  t.equal(await rootLinks(), before, "no link was added to the machine's own namespace")

  const sleeper = topo.spawn(a.ns, 'sleep', ['600'])
  const dir = await topo.tempDir('probe')
  t.ok(existsSync(dir))
  await topo.destroy()
  t.notOk(isAlive(sleeper.pid!), 'processes started in the namespaces are killed')
  const left = (await namespaces()).filter((n) => n.includes(topo.id))
  t.same(left, [], 'all namespaces of this topology are gone')
  t.notOk(existsSync(dir), 'temp dirs are removed')
  await topo.destroy() // a second call (t.teardown runs it again) must be harmless
})

t.test('bad node specs are refused with the field named', async (t) => {
  const topo = await createTopology(t)
  await t.rejects(topo.addNode({ name: 'x', v4: '10.0.0.1/24' }), /node x\.v4: 10\.0\.0\.1\/24 is outside the documentation ranges/)
  await t.rejects(topo.addNode({ name: 'x', v6: 'fd00::1/64' }), /node x\.v6/)
  await t.rejects(topo.addNode({ name: 'Bad-Name' }), /node\.name/)
  await topo.addNode({ name: 'x' })
  await t.rejects(topo.addNode({ name: 'x' }), /already exists/)
})

t.test('a namespace left by a dead harness process is swept; live ones are not', async (t) => {
  // PIDs never reach 4194304 (the kernel maximum), so this creator is certainly dead.
  const stale = 'pth4194399-abcdef-stale'
  await execa('ip', ['netns', 'add', stale])
  t.teardown(() => execa('ip', ['netns', 'del', stale], { reject: false }))
  const topo = await createTopology(t)
  const removed = await sweepStaleNamespaces()
  t.ok(removed.includes(stale))
  t.ok((await namespaces()).includes(topo.fabric), "this process's own namespace survives the sweep")
})
