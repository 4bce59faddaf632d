// The suite's background build (scripts/run-tests.js) builds scripts/kubernetes.js's SUITE_COMPONENTS: every
// component a test file asks for must be among them, or that file builds it itself while its runner slot waits.
import t from 'tap'
import { CLUSTER_BINARIES } from '../../agent/demo/kube/cluster.js'
import { KUBE_APISERVER_BINARIES } from './kube-apiserver.js'

const script = (await import(new URL('../../../scripts/kubernetes.js', import.meta.url).href)) as { SUITE_COMPONENTS: readonly string[]; COMPONENTS: Record<string, unknown> }

t.test('the suite\'s background build covers what the test files ask for', async (t) => {
  const asked = [...KUBE_APISERVER_BINARIES, ...CLUSTER_BINARIES, 'helm']
  t.same(asked.filter((n) => !script.SUITE_COMPONENTS.includes(n)), [], 'every component the harness and the cluster tests ask for')
  t.same(script.SUITE_COMPONENTS.filter((n) => !(n in script.COMPONENTS)), [], 'and each is a component the script knows')
  t.equal(script.SUITE_COMPONENTS.indexOf('kube-apiserver') < script.SUITE_COMPONENTS.indexOf('kubelet'), true, 'the API server\'s harness first: more files need it, and sooner')
})
