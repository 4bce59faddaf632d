// `pintoctl bgp decode` from outside, as an operator runs it: hex and raw input, options learned
// from the stream's OPEN, and malformed input reported with code, subcode and byte offset (exit 1).
import t from 'tap'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { codecOptions, encodeMessage, makeOpen, packUpdates, parsePrefix } from '../../../bgp/index.js'

const pintoctl = fileURLToPath(new URL('../../../../bin/pintoctl.js', import.meta.url))
const run = (args: string[], input?: Buffer | string) => spawnSync(process.execPath, [pintoctl, 'bgp', 'decode', ...args], { input, encoding: 'utf8' })
const lines = (s: string) => s.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>)

const dir = mkdtempSync(join(tmpdir(), 'pinto-decode-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))

t.test('raw bytes from a file; a 2-octet OPEN makes the rest decode with 2-octet AS numbers', async (t) => {
  const as2 = codecOptions({ as4: false })
  const open = encodeMessage(makeOpen({ asn: 65001, holdTime: 90, bgpId: '192.0.2.1', capabilities: [{ kind: 'multiprotocol', afi: 1, safi: 1 }] }), as2)
  const updates = packUpdates({ afi: 1, attributes: { origin: 0, asPath: [{ type: 2, asns: [65001, 65002] }], nextHop: '192.0.2.1' }, announce: [parsePrefix('198.18.0.0/26')] }, as2)
  const file = join(dir, 'stream.bin')
  writeFileSync(file, Buffer.concat([open, ...updates]))
  const r = run([file])
  t.equal(r.status, 0, r.stderr)
  const out = lines(r.stdout)
  t.equal(out.length, 2)
  t.match(out[0], { offset: 0, type: 'open', myAs: 65001 })
  t.match(out[1], { offset: open.length, type: 'update', nlri: ['198.18.0.0/26'], attributes: { asPath: [{ type: 'sequence', asns: [65001, 65002] }] } })
})

t.test('hex text with comments on standard input', async (t) => {
  const r = run(['--hex'], '# a keepalive\nffffffffffffffffffffffffffffffff 0013 04\n')
  t.equal(r.status, 0, r.stderr)
  t.same(lines(r.stdout), [{ offset: 0, type: 'keepalive' }])
})

t.test('a bad header: the error with code, subcode and byte offset, exit 1', async (t) => {
  const r = run(['--hex'], 'ffffffffffffffffffffffffffffffff 0013 04\nffffffffffffffffffffffffffffffff 0013 09\n')
  t.equal(r.status, 1)
  const out = lines(r.stdout)
  t.match(out[1], { type: 'error', code: 1, subcode: 3, offset: 19 + 18 })
  t.match(r.stderr, /byte 37: Message Header Error \/ Bad Message Type \(code 1, subcode 3/)
})

t.test('a treat-as-withdraw UPDATE is printed with its error and still exits 1', async (t) => {
  const r = run(['--hex'], 'ffffffffffffffffffffffffffffffff 0029 02 0000 000e 40010103 400200 400304c0000201 18c61200')
  t.equal(r.status, 1)
  const out = lines(r.stdout)
  t.match(out[0], { type: 'update', nlri: ['198.18.0.0/24'], error: { code: 3, subcode: 6, action: 'treat-as-withdraw', offset: 23 } })
  t.match(out[1], { type: 'error', code: 3, subcode: 6, offset: 23 })
})

t.test('a message cut short and bad hex are reported, not thrown', async (t) => {
  const cut = run(['--hex'], 'ffffffffffffffffffffffffffffffff 0017 02 00')
  t.equal(cut.status, 1)
  t.match(cut.stderr, /cut short/)
  const bad = run(['--hex'], 'ffzz')
  t.equal(bad.status, 1)
  t.match(bad.stderr, /line 1, column 3/)
})
