// pintoctl with PINTO_DATASTORE=kubernetes, as calicoctl with DATASTORE_TYPE=kubernetes, against a real
// kube-apiserver: Calico 3.32's published examples (test/fixtures/calico-3.32) applied through it read back equal
// to what was applied, sit in the API as Calico keeps them (crd.projectcalico.org/v1, the core Node's
// annotations), delete; and `pintoctl ipam check` reads the API's IPAM.
import t from 'tap'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { tryParseResources } from '../../config/resources/index.js'
import { openDatastore } from '../../config/datastore-open.js'
import { Ipam } from '../../ipam/ipam.js'
import { runPintoctl } from '../agent/pintoctl/run.js'
import { kubernetesApi } from '../ipam/stores.js'

const root = fileURLToPath(new URL('../../../', import.meta.url))
const fixtures = join(root, 'test/fixtures/calico-3.32')
/** The examples pinto takes unchanged (calico-examples.test.ts holds which those are). */
const EXAMPLES = ['bgpconfig-1.yaml', 'bgpfilter-1.yaml', 'bgppeer-1.yaml', 'bgppeer-2.yaml', 'ippool-1.yaml', 'node-1.yaml']

const calicoDocuments = (text: string): string[] => text.split(/^---[ \t]*$/m).filter((d) => /^apiVersion: projectcalico\.org\/v3$/m.test(d))

const k8s = await kubernetesApi(t)
if ('skip' in k8s) t.comment(`skipped: ${k8s.skip}`)
else {
  const { api, env: kubeEnv } = k8s
  const env = { PINTO_DATASTORE: 'kubernetes', ...kubeEnv }
  const dir = mkdtempSync(join(tmpdir(), 'pinto-kdd-examples-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  // pinto never creates a Node: the kubelet registers it. node-1.yaml's, as a kubelet would.
  await api.kubectlWithInput('{"apiVersion":"v1","kind":"Node","metadata":{"name":"node-hostname"}}', 'create', '-f', '-')

  t.test("Calico's examples applied with pintoctl read back equal", async (t) => {
    for (const file of EXAMPLES) {
      const docs = calicoDocuments(readFileSync(join(fixtures, file), 'utf8'))
      const path = join(dir, file)
      writeFileSync(path, docs.join('---\n'))
      const applied = await runPintoctl(['apply', '-f', path], { env })
      t.equal(applied.status, 0, `${file}: ${applied.stderr}`)
      for (const doc of docs) {
        const { resources, errors } = tryParseResources(doc, file)
        t.same(errors, [], `${file} parses`)
        for (const want of resources) {
          const got = await runPintoctl(['get', want.kind, want.metadata.name, '-o', 'json'], { env })
          t.equal(got.status, 0, `${file}: get ${want.kind} ${want.metadata.name}: ${got.stderr}`)
          const back = tryParseResources(got.stdout, `${file} read back`)
          t.same(back.errors, [], `${file}: what pintoctl prints parses`)
          const read = back.resources[0]
          // A Node also carries what Kubernetes derives (its addresses, orchestrator reference): compare what was written.
          if (want.kind === 'Node') t.same((read?.spec as { bgp?: unknown }).bgp, (want.spec as { bgp?: unknown }).bgp, `${file}: Node ${want.metadata.name}'s BGP fields read back equal`)
          else t.same(read, want, `${file}: ${want.kind} ${want.metadata.name} reads back equal`)
        }
      }
    }
  })

  t.test("they sit in the API as Calico keeps them", async (t) => {
    const pool = JSON.parse(await api.kubectl('get', 'ippools.crd.projectcalico.org', '-o', 'json')) as { items: { spec: Record<string, unknown> }[] }
    t.equal(pool.items.length, 1)
    t.match(pool.items[0]?.spec, { cidr: String }, 'an IPPool in crd.projectcalico.org/v1 with Calico field names')
    t.equal(await api.kubectl('get', 'node', 'node-hostname', '-o', 'jsonpath={.metadata.annotations.projectcalico\\.org/ASNumber}'), '64512', "the Node's AS number is its projectcalico.org/ASNumber annotation")
    t.ok((await api.kubectl('get', 'bgppeers.crd.projectcalico.org', '-o', 'name')).trim().split('\n').length >= 3, 'the BGPPeers')
  })

  t.test('pintoctl delete removes a resource from the API', async (t) => {
    const peers = await runPintoctl(['get', 'bgppeers', '-o', 'json'], { env })
    const name = (JSON.parse(peers.stdout) as { items: { metadata: { name: string } }[] }).items[0]?.metadata.name ?? ''
    const del = await runPintoctl(['delete', 'bgppeer', name], { env })
    t.equal(del.status, 0, del.stderr)
    const gone = await api.kubectl('get', 'bgppeers.crd.projectcalico.org', name, '--ignore-not-found', '-o', 'name')
    t.equal(gone.trim(), '', `${name} is gone from the API`)
  })

  t.test("pintoctl ipam check reads the API's IPAM", async (t) => {
    const store = await openDatastore('kubernetes', { kubeEnv })
    t.teardown(() => store.close())
    // ippool-1.yaml's pool, as pinto-node would use it (only records are written: no address is used).
    const ipam = new Ipam(store, { pools: [{ name: 'my.ippool-1', cidr: '10.1.0.0/16', blockSize: 24 }] })
    for (let i = 0; i < 3; i++) await ipam.autoAssign({ handle: `k8s-pod-network.c${i}`, node: 'node-hostname', num4: 1, attrs: { namespace: 'default', pod: `p${i}`, node: 'node-hostname' } })
    const check = await runPintoctl(['ipam', 'check'], { env })
    t.equal(check.status, 0, check.stderr)
    t.match(check.stdout, /Allocated IPs: 3\n/)
    t.match(check.stdout, /Check complete; found 0 problems\./)
    const show = await runPintoctl(['ipam', 'show'], { env })
    t.match(show.stdout, /\| IP Pool +\| 10\.1\.0\.0\/16 \| 65536 +\| 3 \(0%\)/, `ipam show: ${show.stdout}`)
  })
}
