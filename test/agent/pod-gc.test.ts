// Pod GC by a real agent on etcd, its Kubernetes credentials from KUBECONFIG, against a real kube-apiserver: a pod
// force-deleted with no CNI DEL has its address freed and its host veth removed once the grace period is over (not
// before), while a living pod keeps its address, and so does one the agent's cache of its node's pods never holds
// (bound to another node) but the apiserver has. Calico's annotations are honoured in this mode too. With the
// apiserver frozen, an ADD whose pod the agent watched goes through (from its cache), and one whose pod must be read
// answers "try again later" (11) and holds nothing.
import t from 'tap'
import { waitFor } from '../harness/wait.js'
import { addressOf, kubePodLab } from './kube-pods-lab.js'

const GRACE_S = 4
const L = await kubePodLab(t, 'etcd', [{ name: 'pods-v4', cidr: '198.18.0.0/24' }], { PINTO_POD_GC_GRACE_SECONDS: String(GRACE_S) })
if ('skip' in L) t.comment(`skipped: ${L.skip}`)
else {
  await L.namespace('gc')

  t.test('etcd mode: the ipAddrs annotation is honoured', async (t) => {
    await L.pod('gc', 'alive', { annotations: { 'cni.projectcalico.org/ipAddrs': '["198.18.0.200"]' } })
    const r = await L.cni('ADD', 'gc', 'alive', 'a11ve001')
    t.equal(r.code, 0, r.stdout)
    t.equal(addressOf(r), '198.18.0.200')
  })

  t.test('a force-deleted pod\'s address is freed after the grace period, its veth removed; living pods keep theirs', async (t) => {
    await L.pod('gc', 'doomed')
    await L.pod('gc', 'elsewhere', { nodeName: 'node2' }) // in the API, never in this node's cache
    const doomed = await L.cni('ADD', 'gc', 'doomed', 'd00med01')
    t.equal(doomed.code, 0, doomed.stdout)
    t.equal((await L.cni('ADD', 'gc', 'elsewhere', 'e15e0001')).code, 0)
    const veth = ((doomed.json?.['interfaces'] ?? []) as { name: string }[])[0]?.name ?? ''
    t.ok((await L.lab.links(L.lab.hostNs)).includes(veth), `host veth ${veth} wired`)
    t.equal((await L.held('d00med01')).length, 1)

    const after = await L.forceDeleteUntilFreed('gc', 'doomed', 'd00med01')
    t.ok(after >= GRACE_S - 0.5, `freed ${after.toFixed(1)} s after the delete, not before the ${GRACE_S} s grace`)
    t.notOk((await L.lab.links(L.lab.hostNs)).includes(veth), 'its host veth removed')

    // A second force delete, released in its turn: by then the living pods have been looked at over and over.
    await L.pod('gc', 'doomed2')
    t.equal((await L.cni('ADD', 'gc', 'doomed2', 'd00med02')).code, 0)
    await L.forceDeleteUntilFreed('gc', 'doomed2', 'd00med02')
    t.same(await L.held('a11ve001'), ['198.18.0.200'], 'the living pod keeps its address')
    t.equal((await L.held('e15e0001')).length, 1, 'the pod the cache never had keeps its address: the GET before release found it')
    t.match(L.agent.log(), /released the addresses of a pod gone from the Kubernetes API without a CNI DEL .*"handle":"k8s-pod-network\.d00med01".*"pod":"gc\/doomed"/)
  })

  t.test('the apiserver frozen: an ADD whose pod the agent watched goes through; one whose pod it must read answers try-again-later and holds nothing; after, that one goes through', async (t) => {
    // Listed by the agent at its start: certainly in its cache of this node's pods.
    await L.pod('gc', 'patient')
    await L.pod('gc', 'faraway', { nodeName: 'node2' }) // never in this node's cache: an ADD of it reads it
    await L.restartAgent()
    await waitFor(() => /this node's pods listed from the Kubernetes API/.test(L.agent.log()) || undefined, { timeoutMs: 30_000, what: "the restarted agent's list of its node's pods" })
    L.api.freeze()
    let cached, read
    try {
      cached = await L.cni('ADD', 'gc', 'patient', 'pa7ie001')
      read = await L.cni('ADD', 'gc', 'faraway', 'fa7a0001')
    } finally {
      L.api.thaw()
    }
    t.equal(cached.code, 0, `the watched pod's ADD needs no apiserver on etcd: ${cached.stdout}`)
    t.equal((await L.held('pa7ie001')).length, 1)
    t.equal(read.json?.['code'], 11, read.stdout)
    t.match(read.json?.['msg'], /reading pod gc\/faraway for its cni\.projectcalico\.org annotations/)
    t.same(await L.held('fa7a0001'), [], 'nothing held')
    const again = await L.cni('ADD', 'gc', 'faraway', 'fa7a0001')
    t.equal(again.code, 0, again.stdout)
  })
}
