// PINTO_DATASTORE parsing and backend choice: a directory is the embedded store, etcd:// lists endpoints,
// and every bad value is an 'invalid' error that names PINTO_DATASTORE and what is wrong.
import t from 'tap'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { DatastoreError } from '../../config/datastore.js'
import { EmbeddedDatastore } from '../../config/datastore-embedded.js'
import { kubeSourceFromEnv, openDatastore, openDatastoreFromEnv, parseDatastoreSpec } from '../../config/datastore-open.js'

t.test('good values', async (t) => {
  t.same(parseDatastoreSpec('/var/lib/pinto/store'), { kind: 'embedded', dir: '/var/lib/pinto/store' })
  t.same(parseDatastoreSpec('relative/store'), { kind: 'embedded', dir: 'relative/store' })
  t.same(parseDatastoreSpec('etcd://127.0.0.1:2379'), { kind: 'etcd', endpoints: ['127.0.0.1:2379'], tls: false })
  t.same(parseDatastoreSpec('etcd://a.example:2379,10.0.0.2:22379/'), { kind: 'etcd', endpoints: ['a.example:2379', '10.0.0.2:22379'], tls: false })
  t.same(parseDatastoreSpec('etcd://[2001:db8::1]:2379'), { kind: 'etcd', endpoints: ['[2001:db8::1]:2379'], tls: false })
  // Calico's ETCD_ENDPOINTS shape: https is TLS, http plain.
  t.same(parseDatastoreSpec('https://etcd-0.example:2379,https://10.0.0.2:2379/'), { kind: 'etcd', endpoints: ['etcd-0.example:2379', '10.0.0.2:2379'], tls: true })
  t.same(parseDatastoreSpec('http://127.0.0.1:2379'), { kind: 'etcd', endpoints: ['127.0.0.1:2379'], tls: false })
  t.same(parseDatastoreSpec('https://[2001:db8::1]:2379'), { kind: 'etcd', endpoints: ['[2001:db8::1]:2379'], tls: true })
  t.same(parseDatastoreSpec('kubernetes'), { kind: 'kubernetes' })
  t.same(parseDatastoreSpec('./kubernetes'), { kind: 'embedded', dir: './kubernetes' }, 'a directory of that name is written as a path')
})

t.test('kubernetes: credentials from KUBECONFIG or the in-cluster ServiceAccount, named when missing', async (t) => {
  t.same(kubeSourceFromEnv({ KUBECONFIG: '/etc/pinto/kubeconfig', KUBERNETES_SERVICE_HOST: '198.51.100.1' }), { kubeconfig: '/etc/pinto/kubeconfig' })
  t.same(kubeSourceFromEnv({ KUBERNETES_SERVICE_HOST: '198.51.100.1', KUBERNETES_SERVICE_PORT: '443' }), { inCluster: true })
  const failure = async (p: Promise<unknown>): Promise<string> => p.then(() => 'opened', (e: Error) => `${(e as DatastoreError).code}: ${e.message}`)
  t.match(await failure(openDatastore('kubernetes', { kubeEnv: {} })), /^invalid: PINTO_DATASTORE=kubernetes needs credentials: set KUBECONFIG .* or run in a pod/)
  t.match(await failure(openDatastore('kubernetes', { kubeEnv: { KUBECONFIG: '/a:/b' } })), /^invalid: KUBECONFIG="\/a:\/b": .*one kubeconfig file, not a list/)
  t.match(await failure(openDatastore('kubernetes', { kubeEnv: { KUBECONFIG: '/nonexistent/kubeconfig' } })), /^invalid: kubernetes datastore: cannot use KUBECONFIG=\/nonexistent\/kubeconfig: /)
  t.match(await failure(openDatastore('kubernetes', { kubeEnv: { KUBERNETES_SERVICE_HOST: '198.51.100.1', KUBERNETES_SERVICE_PORT: '443' } })), /^invalid: kubernetes datastore: cannot use the in-cluster ServiceAccount .*: /)
})

t.test('bad values name PINTO_DATASTORE and the problem', async (t) => {
  const cases: Array<[string, RegExp]> = [
    ['', /is empty/],
    [' /store', /spaces/],
    ['ftp://127.0.0.1:2379', /scheme ftp:\/\/ is not supported/],
    ['https://127.0.0.1:2379,http://127.0.0.2:2379', /endpoint 2 .* is http:\/\/ but endpoint 1 is https:\/\//],
    ['https://127.0.0.1:2379,127.0.0.2:2379', /endpoint 2 .* must be https:\/\/host:port/],
    ['https://127.0.0.1:2379/v3', /endpoint 1 .* no path/],
    ['https://127.0.0.1', /endpoint 1 .* needs host:port/],
    ['http://', /endpoint 1 .* needs host:port/],
    ['etcd://', /at least one host:port/],
    ['etcd://127.0.0.1', /endpoint 1 .* needs host:port/],
    ['etcd://127.0.0.1:2379,127.0.0.1:0', /endpoint 2 .* port "0"/],
    ['etcd://127.0.0.1:99999', /port "99999"/],
    ['etcd://host:2379/prefix', /no path/],
    ['etcd://bad host:2379', /endpoint 1/],
  ]
  for (const [spec, why] of cases) {
    let err: unknown
    try {
      parseDatastoreSpec(spec)
    } catch (e) {
      err = e
    }
    t.ok(err instanceof DatastoreError && err.code === 'invalid', `${JSON.stringify(spec)} is invalid`)
    t.match((err as Error).message, /^PINTO_DATASTORE=/)
    t.match((err as Error).message, why)
  }
})

t.test('a directory opens the embedded store', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pinto-open-'))
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }))
  const store = await openDatastore(path.join(dir, 'store'))
  t.teardown(() => store.close())
  t.ok(store instanceof EmbeddedDatastore)
  await store.create('/k', 'v')
  t.equal((await store.get('/k'))?.value, 'v')
})

t.test('a reader (embedded.create false) finds no store: not-found naming the path and PINTO_DATASTORE, nothing made', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pinto-open-'))
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }))
  const missing = path.join(dir, 'a', 'store')
  await t.rejects(openDatastore(missing, { embedded: { create: false } }), { code: 'not-found', message: `store directory ${missing} does not exist` })
  await t.rejects(openDatastoreFromEnv({ PINTO_DATASTORE: missing }, { embedded: { create: false } }), {
    code: 'not-found',
    message: `the datastore ${missing} does not exist (PINTO_DATASTORE=${missing}); set PINTO_DATASTORE to the agents' store: its directory, etcd://host:port, or kubernetes`,
  })
  t.notOk(fs.existsSync(path.join(dir, 'a')), 'no directory made')
  const made = await openDatastoreFromEnv({ PINTO_DATASTORE: missing })
  await made.close()
  t.ok(fs.existsSync(missing), 'a writer (the default) still makes it')
  const again = await openDatastore(missing, { embedded: { create: false } })
  t.ok(again instanceof EmbeddedDatastore, 'and then a reader opens it')
  await again.close()
})
