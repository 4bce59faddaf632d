// `pintoctl apply|get|delete` as real processes against an embedded store in a temp dir (PINTO_DATASTORE):
// files and stdin, YAML and JSON out, calicoctl's wording, every validation fault with its path and line,
// pools overlapping stored ones refused before anything is written, and missing resources reported.
import t from 'tap'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parse } from 'yaml'
import { runPintoctl } from './run.js'

const dir = mkdtempSync(join(tmpdir(), 'pinto-res-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))
const env = { PINTO_DATASTORE: join(dir, 'store') }
const ctl = (args: string[], input?: string) => runPintoctl(args, { env, ...(input !== undefined ? { input } : {}) })

const pools = `apiVersion: projectcalico.org/v3
kind: IPPool
metadata:
  name: pool-a
spec:
  cidr: 198.18.0.0/16
  ipipMode: Always
  natOutgoing: true
---
apiVersion: projectcalico.org/v3
kind: IPPool
metadata:
  name: pool-b
spec:
  cidr: 2001:db8:1::/48
`
const peer = JSON.stringify({ apiVersion: 'projectcalico.org/v3', kind: 'BGPPeer', metadata: { name: 'tor' }, spec: { peerIP: '192.0.2.254', asNumber: 65001 } })

t.test('apply from a file and stdin, then get in every format', async (t) => {
  const file = join(dir, 'pools.yaml')
  writeFileSync(file, pools)
  const a = await ctl(['apply', '-f', file])
  t.equal(a.status, 0, a.stderr)
  t.equal(a.stdout, "Successfully applied 2 'IPPool' resource(s)\n")
  const b = await ctl(['apply', '-f', '-'], peer)
  t.equal(b.stdout, "Successfully applied 1 'BGPPeer' resource(s)\n", b.stderr)

  const list = await ctl(['get', 'ippools'])
  t.equal(list.stdout, ['NAME     CIDR              SELECTOR', 'pool-a   198.18.0.0/16     all()', 'pool-b   2001:db8:1::/48   all()', ''].join('\n'), 'aligned columns, by name')
  const wide = await ctl(['get', 'ippool', '-o', 'wide'])
  t.match(wide.stdout, /^NAME\s+CIDR\s+SELECTOR\s+BLOCKSIZE\s+NAT\s+IPIPMODE\s+VXLANMODE\s+DISABLED\npool-a\s+198\.18\.0\.0\/16\s+all\(\)\s+true\s+Always\s+Never\s+false\n/)
  const one = await ctl(['get', 'IPPool', 'pool-a', '-o', 'yaml'])
  t.same(parse(one.stdout), { apiVersion: 'projectcalico.org/v3', kind: 'IPPool', metadata: { name: 'pool-a' }, spec: { cidr: '198.18.0.0/16', ipipMode: 'Always', natOutgoing: true } }, 'stored as written')
  const all = JSON.parse((await ctl(['get', 'bgppeers', '-o', 'json'])).stdout)
  t.match(all, { apiVersion: 'projectcalico.org/v3', kind: 'List', items: [{ kind: 'BGPPeer', metadata: { name: 'tor' }, spec: { peerIP: '192.0.2.254', asNumber: 65001 } }] })
  t.equal((await ctl(['get', 'bgppeer'])).stdout, 'NAME   PEERIP        NODE       ASN\ntor    192.0.2.254   (global)   65001\n')

  // Applying again replaces (a compare-and-swap update), it does not fail on "exists".
  const again = await ctl(['apply', '-f', '-'], pools.replace('natOutgoing: true', 'natOutgoing: false'))
  t.equal(again.status, 0, again.stderr)
  t.match(parse((await ctl(['get', 'ippool', 'pool-a', '-o', 'yaml'])).stdout), { spec: { natOutgoing: false } })
})

t.test('invalid input: every fault with its path and line, nothing written', async (t) => {
  const bad = `apiVersion: projectcalico.org/v3
kind: IPPool
metadata:
  name: pool-c
spec:
  cidr: 203.0.113.0/24
  ipipMode: Sometimes
  colour: blue
`
  const r = await ctl(['apply', '-f', '-'], bad)
  t.equal(r.status, 1)
  t.match(r.stderr, /^pintoctl apply: 2 problems, nothing applied:\n/)
  t.match(r.stderr, /<stdin>: documents\[0\]\.spec\.ipipMode \(line 7\): /)
  t.match(r.stderr, /<stdin>: documents\[0\]\.spec\.colour \(line 8\): /)
  t.equal((await ctl(['get', 'ippool', 'pool-c'])).status, 1, 'not stored')
})

t.test('a pool overlapping a stored pool is refused', async (t) => {
  const r = await ctl(['apply', '-f', '-'], pools.replace('pool-b', 'pool-d').replace('name: pool-a', 'name: pool-e').replace('198.18.0.0/16', '198.18.4.0/24').replace('2001:db8:1::/48', '2001:db8:2::/48'))
  t.equal(r.status, 1)
  t.match(r.stderr, /IPPool overlaps a stored pool, nothing applied:\n  documents\[0\]\.spec\.cidr: 198\.18\.4\.0\/24 overlaps IPPool "pool-a" \(198\.18\.0\.0\/16\)/)
  t.equal((await ctl(['get', 'ippool', 'pool-d'])).status, 1, 'the non-overlapping one in the same file was not written either')
})

t.test('delete by name and by file; missing resources', async (t) => {
  const d = await ctl(['delete', 'bgppeer', 'tor'])
  t.equal(d.stdout, "Successfully deleted 1 'BGPPeer' resource(s)\n", d.stderr)
  const missing = await ctl(['delete', 'bgppeer', 'tor'])
  t.equal(missing.status, 1)
  t.equal(missing.stderr, 'pintoctl delete: resource does not exist: BGPPeer(tor)\n')
  const byFile = await ctl(['delete', '-f', '-'], pools)
  t.equal(byFile.stdout, "Successfully deleted 2 'IPPool' resource(s)\n", byFile.stderr)
  t.equal((await ctl(['get', 'ippools'])).stdout, 'NAME   CIDR   SELECTOR\nno resources of kind IPPool\n', 'an empty listing: the headings and a line saying so')
  const gone = await ctl(['get', 'ippool', 'pool-a'])
  t.equal(gone.stderr, 'pintoctl get: resource does not exist: IPPool(pool-a)\n')
})

t.test('usage errors exit 2 with the usage', async (t) => {
  const k = await ctl(['get', 'widgets'])
  t.equal(k.status, 2)
  t.match(k.stderr, /unknown resource kind "widgets"; kinds: BGPConfiguration, BGPPeer/)
  t.equal((await ctl(['apply'])).status, 2)
  t.match((await ctl(['get', 'ippools', '-o', 'xml'])).stderr, /-o xml: expected yaml, json or wide/)
})
