// Config rendering: every option of a SpeakerSpec renders into a config the real daemon's own parser accepts
// (bird -p, bgpd -C, gobgpd -d), so a typo in a template fails here and not as a silent session timeout.
import t from 'tap'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { execa } from 'execa'
import { renderBirdConfig } from './bird.js'
import { renderFrrConfig } from './frr.js'
import { renderGobgpConfig, gobgpAddArgs } from './gobgp.js'
import { validateSpec, type SpeakerSpec } from './daemons.js'
import type { NetNode } from './netns.js'

const node: NetNode = { name: 'n1', ns: 'unused', ifname: 'eth0', v4: '192.0.2.1', v6: '2001:db8::1' }

const full: SpeakerSpec = {
  routerId: '192.0.2.1',
  as: 65001,
  holdTime: 90,
  gracefulRestart: true,
  addPath: true,
  clusterId: '192.0.2.100',
  neighbors: [
    { name: 'ebgp_peer', address: '192.0.2.2', as: 65002, families: ['ipv4', 'ipv6'], passive: true },
    { name: 'rr_client', address: '192.0.2.3', as: 65001, families: ['ipv4'], rrClient: true },
    { name: 'v6_peer', address: '2001:db8::4', as: 4200000001, families: ['ipv6'] },
  ],
  originate: [
    { prefix: '198.18.1.0/24', communities: ['65001:1', '65001:2'], largeCommunities: ['65001:1:2'], routeTargets: ['65001:100'], med: 10, localPref: 200, prepend: [65001, 65009] },
    { prefix: '2001:db8:100::/48', med: 5 },
  ],
}

async function withFile(t: Tap, name: string, text: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'pth-render-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const file = join(dir, name)
  await writeFile(file, text)
  return file
}
type Tap = { teardown(fn: () => unknown): void }

t.test('BIRD accepts the rendered bird.conf (bird -p)', async (t) => {
  const conf = renderBirdConfig(full, node, '/tmp/unused')
  t.match(conf, /rr client;\n  rr cluster id 192\.0\.2\.100;/)
  t.match(conf, /bgp_path\.prepend\(65009\); bgp_path\.prepend\(65001\);/, 'prepends fed last-first so the path reads as listed')
  const file = await withFile(t, 'bird.conf', conf)
  const r = await execa('bird', ['-p', '-c', file], { reject: false, all: true })
  t.equal(r.exitCode, 0, String(r.all))
  const as2 = renderBirdConfig({ ...full, as4: false, neighbors: [full.neighbors[0]!] }, node, '/tmp/unused')
  t.match(as2, /enable as4 off;/)
  const noRefresh = renderBirdConfig({ ...full, routeRefresh: false, neighbors: [full.neighbors[0]!] }, node, '/tmp/unused')
  t.match(noRefresh, /enable route refresh off;/)
  const r2 = await execa('bird', ['-p', '-c', await withFile(t, 'bird-no-refresh.conf', noRefresh)], { reject: false, all: true })
  t.equal(r2.exitCode, 0, `BIRD parses enable route refresh off: ${String(r2.all)}`)
})

t.test('FRR accepts the rendered bgpd.conf (bgpd -C, no unknown commands)', async (t) => {
  const conf = renderFrrConfig({ ...full, aggregates: ['198.18.0.0/16'], neighbors: [...full.neighbors, { name: 'old', address: '192.0.2.5', as: 65005, families: ['ipv4'], noCapabilities: true }] }, node, '/tmp/unused')
  t.match(conf, /set large-community 65001:1:2/)
  t.match(conf, /neighbor 192\.0\.2\.5 dont-capability-negotiate/)
  const file = await withFile(t, 'bgpd.conf', conf)
  const dir = file.replace(/\/bgpd\.conf$/, '')
  const r = await execa('/usr/lib/frr/bgpd', ['-C', '-f', file, '-S', '-Z', '-P', '0', '--vty_socket', dir, '-i', join(dir, 'x.pid')], { reject: false, all: true })
  t.equal(r.exitCode, 0)
  // bgpd -C exits 0 even on unknown lines; it reports them as "No such command" or "% ..." instead.
  t.notMatch(String(r.all), /No such command|Unknown command|% /, String(r.all))
})

t.test('GoBGP accepts the rendered gobgpd.toml (gobgpd -d) and the route add arguments are complete', async (t) => {
  const file = await withFile(t, 'gobgpd.toml', renderGobgpConfig(full, node))
  const r = await execa('gobgpd', ['-d', '-f', file], { reject: false, all: true })
  t.equal(r.exitCode, 0, String(r.all))
  t.same(gobgpAddArgs(full.originate![0]!, node), [
    'global', 'rib', 'add', '-a', 'ipv4', '198.18.1.0/24', 'origin', 'igp', 'nexthop', '192.0.2.1',
    'aspath', '65001 65009', 'med', '10', 'local-pref', '200', 'community', '65001:1,65001:2', 'large-community', '65001:1:2', 'rt', '65001:100',
  ])
  t.equal(gobgpAddArgs(full.originate![1]!, node)[9], '2001:db8::1', 'IPv6 routes default to the node v6 address as next hop')
})

t.test('bad specs are refused with the field path', async (t) => {
  t.throws(() => validateSpec({ ...full, routerId: 'x' }), /spec\.routerId/)
  t.throws(() => validateSpec({ ...full, as: 0 }), /spec\.as: 0/)
  t.throws(() => validateSpec({ ...full, neighbors: [{ name: 'Bad', address: '192.0.2.2', as: 1, families: ['ipv4'] }] }), /spec\.neighbors\[0\]\.name/)
  t.throws(() => validateSpec({ ...full, originate: [{ prefix: '198.18.1.0/24', communities: ['1:2:3'] }] }), /spec\.originate\[0\]\.communities: "1:2:3"/)
  t.throws(() => validateSpec({ ...full, holdTime: 2 }), /spec\.holdTime: 2/)
  t.throws(() => renderBirdConfig({ ...full, aggregates: ['198.18.0.0/16'] }, node, '/x'), /only the FRR launcher/)
})
