// The IPAM stress run (stress-run.ts) on the kubernetes datastore, through a real kube-apiserver: without
// transactions, IPAM takes its per-block path (handle first, then each block's compare-and-swap), and no address
// may be held twice, the records must end consistent and `check` clean, as on etcd.
import t from 'tap'
import { stress } from './stress-run.js'
import { kubernetesApi } from './stores.js'

const k8s = await kubernetesApi(t)
if ('skip' in k8s) t.comment(`skipped: ${k8s.skip}`)
else {
  t.test('kubernetes: 4 processes x 100 allocations on 2 nodes, without transactions', async (t) => {
    await stress(t, 'kubernetes', 100, k8s.env)
  })
}
