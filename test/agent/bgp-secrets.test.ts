// BGP passwords from a directory laid out like a mounted Secret volume: what each file means as a
// TCP-MD5 key, every refusal naming the resource's field and the path, and change detection.

import t from 'tap'
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BgpSecrets, passwordFrom, secretPath } from '../../agent/bgp-secrets.js'

const field = 'BGPPeer tor-1: spec.password.secretKeyRef'
const ref = (name: string | undefined, key: string, optional?: boolean) => ({ ref: { ...(name !== undefined ? { name } : {}), key, ...(optional !== undefined ? { optional } : {}) }, field })

t.test('the path of a reference, and names that are not one path element', async (t) => {
  t.same(secretPath('/etc/pinto/secrets', ref('bgp', 'tor')), { path: '/etc/pinto/secrets/bgp/tor' })
  t.same(secretPath('/d', ref(undefined, 'k')), { error: `${field}.name: required (the Secret's name)` })
  t.same(secretPath('/d', ref('..', 'k')), { error: `${field}.name: ".." is not a Secret name (letters, digits, '-', '_', '.')` })
  t.same(secretPath('/d', ref('s', 'a/b')), { error: `${field}.key: "a/b" is not a Secret key (letters, digits, '-', '_', '.')` })
})

t.test('what a key file means', async (t) => {
  t.same(passwordFrom(ref('s', 'k'), '/d/s/k', Buffer.from('s3cret')), { password: 's3cret' })
  t.same(passwordFrom(ref('s', 'k'), '/d/s/k', undefined), { error: `${field}: /d/s/k does not exist` })
  t.same(passwordFrom(ref('s', 'k', true), '/d/s/k', undefined), { password: undefined }, 'optional and absent: no password, as Calico')
  t.same(passwordFrom(ref('s', 'k', true), '/d/s/k', Buffer.alloc(0)), { error: `${field}: /d/s/k is empty (a TCP-MD5 key has 1 to 80 bytes)` })
  t.same(passwordFrom(ref('s', 'k'), '/d/s/k', Buffer.alloc(80, 0x61)), { password: 'a'.repeat(80) })
  t.same(passwordFrom(ref('s', 'k'), '/d/s/k', Buffer.alloc(81, 0x61)), { error: `${field}: /d/s/k holds 81 bytes; a TCP-MD5 key has at most 80` })
})

t.test('reads the files and notices a change', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'pinto-secrets-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  await mkdir(join(dir, 'bgp'))
  await writeFile(join(dir, 'bgp', 'tor'), 'one')
  const s = new BgpSecrets(dir)
  s.begin()
  t.same(await s.resolve(ref('bgp', 'tor')), { password: 'one' })
  t.same(await s.resolve(ref('bgp', 'gone')), { error: `${field}: ${dir}/bgp/gone does not exist` })
  t.equal(await s.changed(), false)
  await writeFile(join(dir, 'bgp', 'tor'), 'two')
  t.equal(await s.changed(), true, 'a changed key')
  s.begin()
  t.same(await s.resolve(ref('bgp', 'tor')), { password: 'two' })
  await s.resolve(ref('bgp', 'gone'))
  t.equal(await s.changed(), false)
  await writeFile(join(dir, 'bgp', 'gone'), 'here')
  t.equal(await s.changed(), true, 'a key that appeared')
})
