// pinto's Helm chart (deploy/helm/pinto) against helm itself, built from its Go module: it lints, it renders the
// same objects as the manifests of deploy/kubernetes (the kubernetes datastore by default, etcd with
// datastore=etcd), its values reach the objects, and a value it does not use is refused naming its path.

import t from 'tap'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { execa } from 'execa'
import { parseAllDocuments } from 'yaml'
import { ROOT } from '../../agent/demo/cluster-spec.js'
import { kubernetesBin, kubernetesUnavailable } from '../harness/kubernetes-bin.js'

const CHART = join(ROOT, 'deploy', 'helm', 'pinto')
const unavailable = await kubernetesUnavailable()

type Obj = Record<string, unknown> & { kind: string; metadata: { name: string; namespace?: string } }

const key = (o: Obj): string => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`

/** The objects of a YAML stream, by kind/namespace/name. */
function objects(text: string): Map<string, Obj> {
  const out = new Map<string, Obj>()
  for (const doc of parseAllDocuments(text, { version: '1.1' })) {
    const v = doc.toJS() as Obj | null
    if (v !== null) out.set(key(v), v)
  }
  return out
}

const manifest = (file: string): Map<string, Obj> => objects(readFileSync(join(ROOT, 'deploy', 'kubernetes', file), 'utf8'))

/** The file's own tap object: its timeout is the test process's (a subtest's would not lift it for a build). */
const file = t

t.test('the chart renders the manifests\' objects and honours its values', { skip: unavailable ?? false }, async (t) => {
  const bin = await kubernetesBin(['helm'], file)
  const helm = async (...args: string[]): Promise<{ code: number; out: string; err: string }> => {
    const r = await execa(join(bin, 'helm'), args, { reject: false, env: { HELM_CACHE_HOME: '/nonexistent', HELM_CONFIG_HOME: '/nonexistent', HELM_DATA_HOME: '/nonexistent' } })
    return { code: r.exitCode ?? -1, out: String(r.stdout), err: String(r.stderr) }
  }
  const template = (...set: string[]): Promise<{ code: number; out: string; err: string }> => helm('template', 'pinto', CHART, '--namespace', 'kube-system', ...set)

  for (const values of [[], ['--set', 'datastore=etcd']]) {
    const lint = await helm('lint', CHART, '--strict', ...values)
    t.equal(lint.code, 0, `helm lint --strict ${values.join(' ')}: ${lint.err.trim() || 'clean'}`)
  }

  const kdd = await template('--include-crds')
  t.equal(kdd.code, 0, kdd.err)
  t.same(objects(kdd.out), manifest('kdd/pinto.yaml'), 'default values: the objects of deploy/kubernetes/kdd/pinto.yaml, CRDs included')
  const etcd = await template('--set', 'datastore=etcd')
  t.equal(etcd.code, 0, etcd.err)
  t.same(objects(etcd.out), manifest('pinto.yaml'), 'datastore=etcd: the objects of deploy/kubernetes/pinto.yaml')

  const set = await template('--set', 'datastore=etcd', '--set', 'etcd.endpoints=https://192.0.2.10:2379', '--set', 'config.ipv4pool_cidr=198.18.0.0/16', '--set', 'image.tag=9.9.9', '--set-string', 'etcd.tls.ca=PEM-TEXT', '--set', 'config.etcd_ca=/etc/pinto/etcd-secrets/etcd-ca')
  t.equal(set.code, 0, set.err)
  const o = objects(set.out)
  const config = o.get('ConfigMap/kube-system/pinto-config') as unknown as { data: Record<string, string> }
  t.equal(config.data['datastore'], 'https://192.0.2.10:2379', 'etcd.endpoints becomes pinto-config\'s datastore')
  t.equal(config.data['ipv4pool_cidr'], '198.18.0.0/16', 'config.ipv4pool_cidr reaches pinto-config')
  t.equal(config.data['etcd_ca'], '/etc/pinto/etcd-secrets/etcd-ca', 'config.etcd_ca too')
  const secret = o.get('Secret/kube-system/pinto-etcd-secrets') as unknown as { data: Record<string, string> }
  t.equal(Buffer.from(secret.data['etcd-ca'] ?? '', 'base64').toString(), 'PEM-TEXT', 'etcd.tls.ca goes into the Secret, base64')
  const ds = o.get('DaemonSet/kube-system/pinto-node') as unknown as { spec: { template: { spec: { containers: { image: string }[]; initContainers: { image: string }[] } } } }
  t.same([...ds.spec.template.spec.initContainers, ...ds.spec.template.spec.containers].map((c) => c.image), ['localhost/pinto-node:9.9.9', 'localhost/pinto-node:9.9.9'], 'image.tag sets both containers\' image')

  const refused: [string[], RegExp][] = [
    [['--set', 'datastore=consul'], /datastore/],
    [['--set', 'config.ipv4pool_cidrs=10.0.0.0/8'], /ipv4pool_cidrs/],
    [['--set', 'replicas=2'], /replicas/],
    [['--set', 'image.pullPolicy=Always'], /pullPolicy/],
  ]
  for (const [args, path] of refused) {
    const r = await template(...args)
    t.not(r.code, 0, `${args.join(' ')}: refused`)
    t.match(r.err, path, `${args.join(' ')}: the error names the value`)
  }
})

t.test('the chart\'s version is pinto\'s, and its generated files are current', async (t) => {
  const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version
  const chart = (parseAllDocuments(readFileSync(join(CHART, 'Chart.yaml'), 'utf8'))[0]?.toJS() ?? {}) as { version?: string; appVersion?: string }
  t.equal(chart.appVersion, version, 'appVersion is package.json\'s version')
  t.equal(chart.version, version, 'and so is the chart\'s own')
  const check = await execa(process.execPath, [join(ROOT, 'scripts', 'render-manifests.js'), '--check'], { reject: false })
  t.equal(check.exitCode, 0, `render-manifests --check covers the chart: ${String(check.stderr)}`)
})
