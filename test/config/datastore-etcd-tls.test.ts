// The etcd backend over TLS against a real etcd with client-certificate auth: the shared contract, and every wrong
// certificate or bad setting failing fast with one line that names the variable to fix.
import t, { type Test } from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { openDatastore, openDatastoreFromEnv } from '../../config/datastore-open.js'
import { DatastoreSettingError, type EtcdTlsFiles } from '../../config/etcd-tls.js'
import { etcdPki } from '../harness/certs.js'
import { startEtcd } from '../harness/etcd.js'
import { datastoreContract } from './datastore-contract.js'
import { runPintoctl } from '../agent/pintoctl/run.js'

const pki = await etcdPki(t)
const serverTls = { trustedCa: pki.ca.cert, cert: pki.server.cert, key: pki.server.key, client: pki.client }
const etcd = await startEtcd(t, { tls: serverTls })
const good: EtcdTlsFiles = { ca: pki.ca.cert, cert: pki.client.cert, key: pki.client.key }

/** Opens, expecting failure; returns the error and how long it took. */
async function failure(spec: string, etcdTls: EtcdTlsFiles): Promise<{ err: unknown; ms: number }> {
  const started = Date.now()
  try {
    const store = await openDatastore(spec, { etcdTls })
    await store.close()
    return { err: undefined, ms: Date.now() - started }
  } catch (err) {
    return { err, ms: Date.now() - started }
  }
}

function namesSetting(t: Test, got: { err: unknown; ms: number }, variable: string, why: RegExp): void {
  const { err, ms } = got
  t.ok(err instanceof DatastoreSettingError, `a DatastoreSettingError: ${String(err)}`)
  if (!(err instanceof DatastoreSettingError)) return
  t.equal(err.variable, variable)
  t.equal(err.code, 'invalid')
  t.match(err.message, new RegExp(`^${variable}: `))
  t.match(err.message, why)
  t.notOk(err.message.includes('\n'), `one line: ${err.message}`)
  // A deadline, not a figure: a handshake refused must not turn into minutes of retries.
  t.ok(ms < 5000, `failed within 5 s (${ms} ms)`)
}

t.test('contract over TLS with a client certificate', async (t) => {
  t.match(etcd.datastore, /^https:\/\/127\.0\.0\.1:\d+$/)
  datastoreContract(t, () => openDatastore(etcd.datastore, { etcdTls: good }))
})

t.test('the environment names the files, as pinto-node and pintoctl read it', async (t) => {
  const store = await openDatastoreFromEnv({
    PINTO_DATASTORE: `${etcd.url},${etcd.url}`,
    PINTO_ETCD_CA_CERT_FILE: pki.ca.cert,
    PINTO_ETCD_CERT_FILE: pki.client.cert,
    PINTO_ETCD_KEY_FILE: pki.client.key,
  })
  t.teardown(() => store.close())
  await store.create('/tls-env/k', 'v')
  t.equal((await store.get('/tls-env/k'))?.value, 'v')
})

t.test('wrong certificates: one line naming the setting, quickly', async (t) => {
  t.test('a client certificate signed by another CA', async (t) => {
    namesSetting(t, await failure(etcd.datastore, { ca: pki.ca.cert, cert: pki.otherClient.cert, key: pki.otherClient.key }), 'PINTO_ETCD_CERT_FILE', /refused the client certificate in .*other-client\.crt/)
  })
  t.test('no client certificate where etcd asks for one', async (t) => {
    namesSetting(t, await failure(etcd.datastore, { ca: pki.ca.cert }), 'PINTO_ETCD_CERT_FILE', /requires a client certificate/)
  })
  t.test('a CA that did not sign etcd', async (t) => {
    const got = await failure(etcd.datastore, { ca: pki.otherCa.cert, cert: pki.client.cert, key: pki.client.key })
    namesSetting(t, got, 'PINTO_ETCD_CA_CERT_FILE', new RegExp(`etcd at ${etcd.url} presented a certificate not signed by the CA in .*other-ca\\.crt`))
  })
  t.test('no CA file: Node bundled roots, which did not sign a private CA', async (t) => {
    namesSetting(t, await failure(etcd.datastore, { cert: pki.client.cert, key: pki.client.key }), 'PINTO_ETCD_CA_CERT_FILE', /bundled root CAs/)
  })
  t.test('etcd with a certificate for another name', async (t) => {
    const other = await startEtcd(t, { tls: { ...serverTls, cert: pki.wrongName.cert, key: pki.wrongName.key } })
    namesSetting(t, await failure(other.datastore, good), 'PINTO_DATASTORE', /certificate for another name \(IP: 127\.0\.0\.1 is not in the cert's list: 127\.0\.0\.2\)/)
  })
  t.test('https:// to an etcd without TLS', async (t) => {
    const plain = await startEtcd(t)
    namesSetting(t, await failure(`https://${plain.endpoint}`, good), 'PINTO_DATASTORE', /during the TLS handshake; if it does not answer TLS, use etcd:\/\/ or http:\/\//)
  })
})

t.test('bad settings: one line naming the variable, before any connection', async (t) => {
  const junk = join(pki.dir, 'junk.pem')
  writeFileSync(junk, 'not a certificate\n')
  const broken = join(pki.dir, 'broken.crt')
  writeFileSync(broken, '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n')
  const cases: Array<[string, string, EtcdTlsFiles, string, RegExp]> = [
    ['cert without key', etcd.datastore, { ca: pki.ca.cert, cert: pki.client.cert }, 'PINTO_ETCD_KEY_FILE', /is not set but PINTO_ETCD_CERT_FILE is/],
    ['key without cert', etcd.datastore, { ca: pki.ca.cert, key: pki.client.key }, 'PINTO_ETCD_CERT_FILE', /is not set but PINTO_ETCD_KEY_FILE is/],
    ['CA with etcd://', `etcd://${etcd.endpoint}`, { ca: pki.ca.cert }, 'PINTO_ETCD_CA_CERT_FILE', /PINTO_DATASTORE names a plain/],
    ['cert and key with http://', `http://${etcd.endpoint}`, { cert: pki.client.cert, key: pki.client.key }, 'PINTO_ETCD_CERT_FILE', /PINTO_DATASTORE names a plain/],
    ['CA with a directory', join(pki.dir, 'store'), { ca: pki.ca.cert }, 'PINTO_ETCD_CA_CERT_FILE', /embedded datastore/],
    ['missing CA file', etcd.datastore, { ...good, ca: join(pki.dir, 'absent.crt') }, 'PINTO_ETCD_CA_CERT_FILE', /cannot read .*absent\.crt: ENOENT/],
    ['a directory as cert file', etcd.datastore, { ...good, cert: pki.dir }, 'PINTO_ETCD_CERT_FILE', /cannot read .*: EISDIR/],
    ['CA file that is no certificate', etcd.datastore, { ...good, ca: junk }, 'PINTO_ETCD_CA_CERT_FILE', /holds no PEM certificate/],
    ['a key as certificate', etcd.datastore, { ...good, cert: pki.client.key }, 'PINTO_ETCD_CERT_FILE', /holds no PEM certificate/],
    ['a corrupt certificate', etcd.datastore, { ...good, cert: broken }, 'PINTO_ETCD_CERT_FILE', /is not a valid PEM certificate/],
    ['a key that is no key', etcd.datastore, { ...good, key: junk }, 'PINTO_ETCD_KEY_FILE', /is not a usable unencrypted PEM private key/],
    ['the key of another certificate', etcd.datastore, { ...good, key: pki.otherClient.key }, 'PINTO_ETCD_KEY_FILE', /is not the key of the certificate in PINTO_ETCD_CERT_FILE/],
  ]
  for (const [name, spec, files, variable, why] of cases) {
    t.test(name, async (t) => namesSetting(t, await failure(spec, files), variable, why))
  }
})

t.test('pintoctl finds the TLS datastore through the same variables', async (t) => {
  const env = { PINTO_DATASTORE: etcd.datastore, PINTO_ETCD_CA_CERT_FILE: pki.ca.cert, PINTO_ETCD_CERT_FILE: pki.client.cert, PINTO_ETCD_KEY_FILE: pki.client.key }
  const ok = await runPintoctl(['get', 'ippools', '-o', 'json'], { env })
  t.equal(ok.status, 0, ok.stderr)
  const refused = await runPintoctl(['get', 'ippools'], { env: { ...env, PINTO_ETCD_CA_CERT_FILE: pki.otherCa.cert } })
  t.not(refused.status, 0)
  t.match(refused.stderr, /^pintoctl get: PINTO_ETCD_CA_CERT_FILE: etcd at https:\/\/127\.0\.0\.1:\d+ presented a certificate not signed by the CA in \S+other-ca\.crt \(unable to verify the first certificate\)\n$/)
})
