// The node controller's rules, off the kubernetes datastore: which Kubernetes Node a pinto Node is tied to (Calico's
// orchRef), whom an agent asks before it leads, which pinto Nodes are left without their Kubernetes Node, and a
// Node's readiness.
import t from 'tap'
import type { Node } from '../../../config/index.js'
import { askBefore, isReady, kubeNodeOf, orphans, tiedNodes } from '../../../agent/controllers/kube-nodes.js'

const node = (name: string, orchRefs?: Node['spec']['orchRefs']): Node => ({ apiVersion: 'projectcalico.org/v3', kind: 'Node', metadata: { name }, spec: orchRefs ? { orchRefs } : {} })
const k8s = (name: string, nodeName = name): Node => node(name, [{ nodeName, orchestrator: 'k8s' }])

t.test('the Kubernetes Node of a pinto Node is its k8s orchRef', async (t) => {
  t.equal(kubeNodeOf(k8s('n1')), 'n1')
  t.equal(kubeNodeOf(k8s('calico-name', 'kubelet-name')), 'kubelet-name', 'the orchRef names the Kubernetes Node')
  t.equal(kubeNodeOf(node('n2', [{ orchestrator: 'k8s' }])), 'n2', 'an orchRef without a name: the Node\'s own')
  t.equal(kubeNodeOf(node('n3', [{ nodeName: 'n3', orchestrator: 'openstack' }])), undefined, 'another orchestrator')
  t.equal(kubeNodeOf(node('n4')), undefined, 'no orchRef: a Node written by hand')
})

t.test('an agent asks about the tied Nodes named before its own, nearest first', async (t) => {
  const nodes = [k8s('c'), k8s('a'), node('b'), k8s('e'), k8s('d', 'kube-d')]
  t.same(askBefore(nodes, 'e'), ['kube-d', 'c', 'a'], 'the untied b is not asked about')
  t.same(askBefore(nodes, 'a'), [], 'the first asks no one')
  t.same(askBefore(nodes, 'bb'), ['a'])
})

t.test('orphans: tied Nodes whose Kubernetes Node is not there; untied ones never', async (t) => {
  const nodes = [k8s('a'), k8s('b'), node('hand-made'), k8s('c', 'kube-c')]
  t.same(orphans(nodes, new Set(['a', 'kube-c'])).map((n) => n.metadata.name), ['b'])
  t.same(orphans(nodes, new Set(['a', 'b', 'c'])).map((n) => n.metadata.name), ['c'], 'by the name in the orchRef')
  t.same(orphans(nodes, new Set()).map((n) => n.metadata.name), ['a', 'b', 'c'])
})

t.test('Ready is the Ready condition at True, nothing else', async (t) => {
  const cond = (status: string): unknown => ({ status: { conditions: [{ type: 'MemoryPressure', status: 'False' }, { type: 'Ready', status }] } })
  t.ok(isReady(cond('True')))
  t.notOk(isReady(cond('False')))
  t.notOk(isReady(cond('Unknown')))
  t.notOk(isReady({ status: {} }), 'no conditions')
  t.notOk(isReady('garbage'))
})

t.test('what a change of the cluster must change for the rule to be asked again: the tied Nodes only', async (t) => {
  const before = tiedNodes([k8s('b'), k8s('a'), node('hand-made')])
  t.equal(before, 'a=a,b=b', 'sorted, the untied left out')
  const relabelled = k8s('a')
  relabelled.metadata.labels = { rack: 'r1' }
  t.equal(tiedNodes([k8s('b'), relabelled, node('hand-made'), node('another')]), before, 'labels and untied Nodes change nothing')
  t.not(tiedNodes([k8s('b')]), before, 'a tied Node gone does')
  t.not(tiedNodes([k8s('b'), k8s('a', 'kube-a')]), before, 'a tied Node tied elsewhere does')
})
