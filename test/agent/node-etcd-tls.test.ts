// pinto-node against a real etcd with TLS and client-certificate auth, both in the node's namespace: it starts and
// registers itself with the right files, and stops at once with one line naming the setting for each wrong one.
import t from 'tap'
import { Topology } from '../harness/netns.js'
import { etcdPki } from '../harness/certs.js'
import { startEtcd } from '../harness/etcd.js'
import { startAgent, type AgentProcess } from './agent-process.js'

const topo = await Topology.create(t)
const node = await topo.addNode({ name: 'tls', v4: '192.0.2.21/24' })
const pki = await etcdPki(t)
const wrap = ['ip', 'netns', 'exec', node.ns]
const serverTls = { trustedCa: pki.ca.cert, cert: pki.server.cert, key: pki.server.key, client: pki.client }
// Fixed ports: the namespace is the test's own, so nothing else listens there.
const etcd = await startEtcd(t, { wrap, clientPort: 2379, peerPort: 2380, tls: serverTls })
const wrongName = await startEtcd(t, { wrap, clientPort: 2479, peerPort: 2480, tls: { ...serverTls, cert: pki.wrongName.cert, key: pki.wrongName.key } })
const goodFiles = { PINTO_ETCD_CA_CERT_FILE: pki.ca.cert, PINTO_ETCD_CERT_FILE: pki.client.cert, PINTO_ETCD_KEY_FILE: pki.client.key }
const base = { PINTO_IP: '192.0.2.21/24', PINTO_BGP_PORT: '1179' }

const ownLines = (a: AgentProcess): string[] => a.stderr().split('\n').filter((l) => l !== '')

t.test('starts against TLS etcd and registers its Node there', async (t) => {
  t.equal(etcd.datastore, 'https://127.0.0.1:2379')
  const agent = startAgent(t, node.ns, { ...base, PINTO_DATASTORE: etcd.datastore, ...goodFiles })
  await agent.ready()
  const status = await agent.get('/v1/status')
  t.match(status.body, { node: 'n1' })
  t.match(agent.stdout(), /etcd TLS files read once now/)
  const nodes = await topo.exec(node.ns, '/usr/bin/etcdctl', [
    `--endpoints=${etcd.url}`, `--cacert=${pki.ca.cert}`, `--cert=${pki.client.cert}`, `--key=${pki.client.key}`, 'get', '--prefix', '--keys-only', '/',
  ], { env: { ETCDCTL_API: '3' } })
  t.match(String(nodes.stdout), /n1/, 'the agent wrote its Node resource through TLS')
  await agent.stop()
  t.equal(await agent.exited, 0)
})

const wrong: Array<[string, Record<string, string>, number, RegExp]> = [
  ['a client certificate signed by another CA', { PINTO_DATASTORE: etcd.datastore, ...goodFiles, PINTO_ETCD_CERT_FILE: pki.otherClient.cert, PINTO_ETCD_KEY_FILE: pki.otherClient.key }, 1,
    /^pinto-node: PINTO_ETCD_CERT_FILE: etcd at https:\/\/127\.0\.0\.1:2379 refused the client certificate in \S+other-client\.crt/],
  ['a CA that did not sign etcd', { PINTO_DATASTORE: etcd.datastore, ...goodFiles, PINTO_ETCD_CA_CERT_FILE: pki.otherCa.cert }, 1,
    /^pinto-node: PINTO_ETCD_CA_CERT_FILE: etcd at https:\/\/127\.0\.0\.1:2379 presented a certificate not signed by the CA in \S+other-ca\.crt/],
  ['etcd with a certificate for another name', { PINTO_DATASTORE: wrongName.datastore, ...goodFiles }, 1,
    /^pinto-node: PINTO_DATASTORE: etcd at https:\/\/127\.0\.0\.1:2479 presented a certificate for another name/],
  ['no client certificate', { PINTO_DATASTORE: etcd.datastore, PINTO_ETCD_CA_CERT_FILE: pki.ca.cert }, 1,
    /^pinto-node: PINTO_ETCD_CERT_FILE: etcd at https:\/\/127\.0\.0\.1:2379 requires a client certificate/],
  ['a missing CA file', { PINTO_DATASTORE: etcd.datastore, ...goodFiles, PINTO_ETCD_CA_CERT_FILE: `${pki.dir}/absent.crt` }, 1,
    /^pinto-node: PINTO_ETCD_CA_CERT_FILE: cannot read \S+absent\.crt: ENOENT$/],
  ['a certificate without its key', { PINTO_DATASTORE: etcd.datastore, PINTO_ETCD_CA_CERT_FILE: pki.ca.cert, PINTO_ETCD_CERT_FILE: pki.client.cert }, 2,
    /^pinto-node: PINTO_ETCD_KEY_FILE: is not set but PINTO_ETCD_CERT_FILE is/],
  ['TLS files with a plain etcd:// datastore', { PINTO_DATASTORE: `etcd://${etcd.endpoint}`, ...goodFiles }, 2,
    /^pinto-node: PINTO_ETCD_CA_CERT_FILE: is set but PINTO_DATASTORE names a plain/],
]
for (const [name, env, code, line] of wrong) {
  t.test(`${name}: one line naming the setting, and exit ${code}`, async (t) => {
    const started = Date.now()
    const agent = startAgent(t, node.ns, { ...base, ...env })
    const deadline = setTimeout(() => void agent.stop(), 90_000)
    const exit = await agent.exited
    clearTimeout(deadline)
    t.equal(exit, code, agent.stderr())
    const lines = ownLines(agent)
    t.equal(lines.length, 1, `one line: ${JSON.stringify(lines)}`)
    t.match(lines[0], line)
    t.ok(Date.now() - started < 60_000, `stopped within a minute (${Date.now() - started} ms), not after minutes of retries`)
  })
}
