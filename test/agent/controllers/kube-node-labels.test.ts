// withKubeLabels: a Kubernetes Node's labels onto a pinto Node as Calico's kube-controllers sync them, the labels
// set through pinto kept and the ones Kubernetes dropped removed, by the projectcalico.org/kube-labels record.
import t from 'tap'
import type { Node } from '../../../config/index.js'
import { KUBE_LABELS_ANNOTATION, withKubeLabels } from '../../../agent/controllers/kube-node-labels.js'

const node = (labels?: Record<string, string>, synced?: Record<string, string>): Node => ({
  apiVersion: 'projectcalico.org/v3',
  kind: 'Node',
  metadata: { name: 'n1', ...(labels ? { labels } : {}), ...(synced ? { annotations: { [KUBE_LABELS_ANNOTATION]: JSON.stringify(synced), other: 'x' } } : {}) },
  spec: { bgp: { ipv4Address: '192.0.2.1/24' } },
})

t.test('a first sync adds the labels and records them; labels set through pinto stay', async (t) => {
  const out = withKubeLabels(node({ mine: '1' }), { rack: 'a', zone: 'z' })
  t.same(out.metadata.labels, { mine: '1', rack: 'a', zone: 'z' })
  t.same(JSON.parse(out.metadata.annotations?.[KUBE_LABELS_ANNOTATION] ?? ''), { rack: 'a', zone: 'z' })
  t.same(out.spec, node().spec, 'the spec is untouched')
})

t.test('a label Kubernetes changed is changed, one it removed is removed, others kept', async (t) => {
  const out = withKubeLabels(node({ mine: '1', rack: 'a', zone: 'z' }, { rack: 'a', zone: 'z' }), { rack: 'b' })
  t.same(out.metadata.labels, { mine: '1', rack: 'b' })
  t.equal(out.metadata.annotations?.['other'], 'x', 'other annotations kept')
  t.same(JSON.parse(out.metadata.annotations?.[KUBE_LABELS_ANNOTATION] ?? ''), { rack: 'b' })
})

t.test('Kubernetes wins over a label of the same key set through pinto', async (t) => {
  t.same(withKubeLabels(node({ rack: 'mine' }), { rack: 'k8s' }).metadata.labels, { rack: 'k8s' })
})

t.test('every label removed: no labels field; a sync that changes nothing gives the same Node', async (t) => {
  const out = withKubeLabels(node({ rack: 'a' }, { rack: 'a' }), {})
  t.equal(out.metadata.labels, undefined)
  const again = withKubeLabels(out, {})
  t.same(again, out)
})

t.test('a record that is not a JSON object counts as nothing synced before', async (t) => {
  const n = node({ rack: 'a' })
  n.metadata.annotations = { [KUBE_LABELS_ANNOTATION]: 'not json' }
  t.same(withKubeLabels(n, {}).metadata.labels, { rack: 'a' })
})
