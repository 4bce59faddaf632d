#!/usr/bin/env node
// Renders deploy/kubernetes/kustomization.yaml into deploy/kubernetes/pinto.yaml, and kdd/kustomization.yaml
// into kdd/pinto.yaml: the one file for `kubectl apply -f`; and the Helm chart deploy/helm/pinto (its crds/,
// templates/ and values.yaml) from the same two variants, so that the chart renders the same objects. Knows Kustomize's `resources` (files, and
// directories holding a kustomization) and `images` (name, newName, newTag), and orders the objects as kustomize
// does; it refuses any other field, so the two ways of applying cannot drift apart. `--check` only compares.
// YAML is read as 1.1, as kubectl reads it (0400 is octal, yes is true); comments are kept.
import { mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Document, isMap, isSeq, parseAllDocuments, parseDocument } from 'yaml'

const KUSTOMIZATION_FIELDS = new Set(['apiVersion', 'kind', 'resources', 'images'])
const IMAGE_FIELDS = new Set(['name', 'newName', 'newTag'])

function fail(message) {
  process.stderr.write(`render-manifests: ${message}\n`)
  process.exit(1)
}

/** `name[:tag]` or `name@digest` split as Kustomize matches images: by the name alone. */
function splitImage(image) {
  const at = image.indexOf('@')
  if (at >= 0) return { name: image.slice(0, at), tag: image.slice(at) }
  const colon = image.lastIndexOf(':')
  if (colon > image.lastIndexOf('/')) return { name: image.slice(0, colon), tag: image.slice(colon) }
  return { name: image, tag: '' }
}

function readKustomization(dir) {
  const file = join(dir, 'kustomization.yaml')
  const k = parseDocument(readFileSync(file, 'utf8'), { version: '1.1' }).toJS()
  if (k?.apiVersion !== 'kustomize.config.k8s.io/v1beta1' || k?.kind !== 'Kustomization') fail(`${file}: not a kustomize.config.k8s.io/v1beta1 Kustomization`)
  for (const key of Object.keys(k)) if (!KUSTOMIZATION_FIELDS.has(key)) fail(`${file}: field ${key} is not one this renderer applies (only ${[...KUSTOMIZATION_FIELDS].join(', ')})`)
  if (!Array.isArray(k.resources) || k.resources.some((r) => typeof r !== 'string')) fail(`${file}: resources must be a list of file names`)
  const images = k.images ?? []
  if (!Array.isArray(images)) fail(`${file}: images must be a list`)
  images.forEach((img, i) => {
    for (const key of Object.keys(img ?? {})) if (!IMAGE_FIELDS.has(key)) fail(`${file}: images[${i}].${key} is not one this renderer applies`)
    if (typeof img?.name !== 'string') fail(`${file}: images[${i}].name is missing`)
    if (img.newTag !== undefined && typeof img.newTag !== 'string') fail(`${file}: images[${i}].newTag must be a string (quote it)`)
  })
  return { resources: k.resources, images }
}

/** Kustomize's image transformer over a pod template's containers and init containers, in place. */
function setImages(doc, images) {
  const spec = doc.getIn(['spec', 'template', 'spec']) ?? (doc.get('kind') === 'Pod' ? doc.get('spec') : undefined)
  if (!isMap(spec)) return
  for (const list of ['initContainers', 'containers']) {
    const containers = spec.get(list)
    if (!isSeq(containers)) continue
    for (const c of containers.items) {
      const current = c.get('image')
      if (typeof current !== 'string') continue
      const { name, tag } = splitImage(current)
      const rule = images.find((img) => img.name === name)
      if (!rule) continue
      const next = `${rule.newName ?? name}${rule.newTag !== undefined ? `:${rule.newTag}` : tag}`
      if (next !== current) c.set('image', next)
    }
  }
}

/**
 * Kustomize's legacy output order (its default): these kinds first, in this order, the webhooks last, every other
 * kind between them; within a kind, by group, version, namespace and name.
 */
const ORDER_FIRST = ['Namespace', 'ResourceQuota', 'StorageClass', 'CustomResourceDefinition', 'ServiceAccount', 'PodSecurityPolicy', 'Role', 'ClusterRole', 'RoleBinding', 'ClusterRoleBinding', 'ConfigMap', 'Secret', 'Endpoints', 'Service', 'LimitRange', 'PriorityClass', 'PersistentVolume', 'PersistentVolumeClaim', 'Deployment', 'StatefulSet', 'CronJob', 'PodDisruptionBudget']
const ORDER_LAST = ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration']

function rank(kind) {
  const first = ORDER_FIRST.indexOf(kind)
  if (first >= 0) return first
  const last = ORDER_LAST.indexOf(kind)
  return last >= 0 ? ORDER_FIRST.length + 1 + last : ORDER_FIRST.length
}

function sortKey(doc) {
  const [group, version] = String(doc.get('apiVersion') ?? '').includes('/') ? String(doc.get('apiVersion')).split('/') : ['', String(doc.get('apiVersion') ?? '')]
  const kind = String(doc.get('kind') ?? '')
  return [rank(kind), kind, group, version, String(doc.getIn(['metadata', 'namespace']) ?? ''), String(doc.getIn(['metadata', 'name']) ?? '')]
}

function compareKeys(a, b) {
  for (let i = 0; i < a.length; i++) {
    if (a[i] < b[i]) return -1
    if (a[i] > b[i]) return 1
  }
  return 0
}

/** Every document of a kustomization, its own resources and those of the kustomizations it names, images set. */
function documents(dir) {
  const { resources, images } = readKustomization(dir)
  const out = []
  for (const resource of resources) {
    const path = join(dir, resource)
    if (statSync(path).isDirectory()) {
      out.push(...documents(path))
      continue
    }
    for (const doc of parseAllDocuments(readFileSync(path, 'utf8'), { version: '1.1' })) {
      if (doc.errors.length > 0) fail(`${path}: ${doc.errors[0].message}`)
      out.push(doc)
    }
  }
  for (const doc of out) setImages(doc, images)
  return out
}

function render(dir) {
  const docs = documents(dir)
    .map((doc) => ({ doc, key: sortKey(doc) }))
    .sort((a, b) => compareKeys(a.key, b.key))
  const header = [
    '# pinto for `kubectl apply -f`: every object of kustomization.yaml in one file, in the order kustomize gives.',
    '# Generated by `node scripts/render-manifests.js` from the files kustomization.yaml names; edit those, not this.',
  ].join('\n')
  return `${header}\n---\n${docs.map(({ doc }) => String(doc).trimEnd()).join('\n---\n')}\n`
}

/** The kustomizations rendered: the etcd variant and the kubernetes-datastore variant, each into its pinto.yaml. */
export const VARIANTS = ['.', 'kdd']

const GENERATED = '# Generated by `node scripts/render-manifests.js` from deploy/kubernetes; edit those files, not this.'
const IMAGE = '{{ .Values.image.repository }}:{{ .Values.image.tag }}'
const ifDatastore = (ds, text) => `{{- if eq .Values.datastore "${ds}" }}\n${text}\n{{- end }}`
const objectKey = (doc) => `${doc.get('kind')}/${doc.getIn(['metadata', 'namespace']) ?? ''}/${doc.getIn(['metadata', 'name'])}`
const same = (a, b) => JSON.stringify(a.toJS()) === JSON.stringify(b.toJS())

/** The pod template's images as the chart's values name them. */
function chartImages(doc, image) {
  const spec = doc.getIn(['spec', 'template', 'spec'])
  if (!isMap(spec)) return
  for (const list of ['initContainers', 'containers']) {
    const containers = spec.get(list)
    if (!isSeq(containers)) continue
    for (const c of containers.items) {
      if (c.get('image') !== image) fail(`${objectKey(doc)}: image ${c.get('image')} is not the kustomization's ${image}`)
      c.set('image', IMAGE)
    }
  }
}

/** pinto-config: each setting from config.<key>, the datastore's from `datastore` and etcd.endpoints. */
function configMapTemplate(etcdDoc, kddDoc) {
  const doc = etcdDoc.clone()
  const data = doc.get('data')
  const kdd = kddDoc.toJS().data
  const etcd = etcdDoc.toJS().data
  for (const key of Object.keys(kdd)) if (!(key in etcd)) fail(`pinto-config: ${key} is in kdd/ only; the chart expects every kdd setting in the etcd variant too`)
  for (const pair of data.items) {
    const key = String(pair.key.value)
    if (key === 'datastore') pair.value.value = `@@datastore@@`
    else if (key in kdd) {
      if (kdd[key] !== etcd[key]) fail(`pinto-config: ${key} is ${JSON.stringify(etcd[key])} in the etcd variant and ${JSON.stringify(kdd[key])} in kdd/; the chart has one default`)
      pair.value.value = `@@config.${key}@@`
    } else pair.value.value = `@@etcd-only.${key}@@`
  }
  let text = String(doc).trimEnd()
  text = text.replace(/"?@@datastore@@"?/, '{{ if eq .Values.datastore "kubernetes" }}"kubernetes"{{ else }}{{ .Values.etcd.endpoints | quote }}{{ end }}')
  text = text.replace(/"?@@config\.(\w+)@@"?/g, '{{ .Values.config.$1 | quote }}')
  // A setting of the etcd variant alone is written only with that datastore.
  text = text.replace(/^( +)(\w+): "?@@etcd-only\.(\w+)@@"?$/gm, '$1{{- if eq .Values.datastore "etcd" }}\n$1$2: {{ .Values.config.$3 | quote }}\n$1{{- end }}')
  return { text, defaults: etcd, kddKeys: Object.keys(kdd) }
}

/** The etcd TLS Secret: each PEM from etcd.tls, base64 as a Secret's data is. */
function secretTemplate(doc) {
  const out = doc.clone()
  for (const pair of out.get('data').items) {
    const key = String(pair.key.value)
    if (!key.startsWith('etcd-')) fail(`pinto-etcd-secrets: data.${key} is not an etcd-* key the chart maps to etcd.tls`)
    pair.value.value = `@@tls.${key.slice(5)}@@`
  }
  return String(out).trimEnd().replace(/"?@@tls\.(\w+)@@"?/g, '{{ .Values.etcd.tls.$1 | b64enc | quote }}')
}

/** values.yaml: the datastore, the image, etcd's endpoints and TLS, and every pinto-config setting with its comment. */
function valuesFile(etcdConfig, image, endpoints) {
  const [repository, tag] = [image.slice(0, image.lastIndexOf(':')), image.slice(image.lastIndexOf(':') + 1)]
  const config = etcdConfig.get('data').clone()
  config.items = config.items.filter((p) => String(p.key.value) !== 'datastore')
  // The first setting's comment, the datastore's, sits on the map: it is about the setting left out.
  config.commentBefore = undefined
  const doc = new Document({ datastore: 'kubernetes', image: { repository, tag }, etcd: { endpoints, tls: { ca: '', cert: '', key: '' } }, config: {} })
  doc.set('config', config)
  doc.get('image').get('tag', true).type = 'QUOTE_DOUBLE'
  const comment = (map, key, text) => {
    map.items.find((p) => p.key.value === key).key.commentBefore = text
  }
  comment(doc.contents, 'datastore', ' kubernetes: the Kubernetes API (the chart\'s crds/ are its CRDs), or etcd (install with --skip-crds)')
  comment(doc.get('etcd'), 'endpoints', ' With datastore etcd: its client URLs, comma-separated')
  comment(doc.get('etcd'), 'tls', ' With datastore etcd: PEM text, put into the pinto-etcd-secrets Secret (config.etcd_ca, etcd_cert and\n etcd_key name the files it is mounted as); empty: none')
  comment(doc.contents, 'config', ' pinto-config: the settings pinto-node and install-cni read (deploy/kubernetes/config-map.yaml)')
  return `${GENERATED}\n${String(doc)}`
}

/** values.schema.json: Helm refuses any value the chart does not use, naming its path, and a datastore it does not know. */
function valuesSchema(configKeys) {
  const string = { type: 'string' }
  const object = (properties) => ({ type: 'object', additionalProperties: false, properties })
  return `${JSON.stringify({
    $schema: 'https://json-schema.org/draft-07/schema#',
    ...object({
      datastore: { type: 'string', enum: ['kubernetes', 'etcd'] },
      image: object({ repository: string, tag: string }),
      etcd: object({ endpoints: string, tls: object({ ca: string, cert: string, key: string }) }),
      config: object(Object.fromEntries(configKeys.map((k) => [k, string]))),
    }),
  }, null, 2)}\n`
}

/** The chart's generated files by their path in the chart: crds/, templates/, values.yaml and its schema. */
export function renderChart(base) {
  const etcd = documents(base)
  const kdd = documents(join(base, 'kdd'))
  const byKey = (docs) => new Map(docs.map((d) => [objectKey(d), d]))
  const etcdByKey = byKey(etcd)
  const kddByKey = byKey(kdd)
  const ds = etcd.find((d) => d.get('kind') === 'DaemonSet')
  const image = ds?.getIn(['spec', 'template', 'spec', 'containers', 0, 'image'])
  if (typeof image !== 'string') fail('the etcd variant has no DaemonSet with an image')
  const crds = []
  const parts = []
  let values = ''
  let schema = ''
  for (const { doc } of [...etcd, ...kdd].map((doc) => ({ doc, key: sortKey(doc) })).sort((a, b) => compareKeys(a.key, b.key))) {
    const key = objectKey(doc)
    const inEtcd = etcdByKey.get(key)
    const inKdd = kddByKey.get(key)
    if (doc.get('kind') === 'CustomResourceDefinition') {
      if (inEtcd !== undefined) fail(`${key}: a CRD in the etcd variant; the chart's crds/ are the kubernetes datastore's`)
      crds.push(String(doc).trimEnd())
      continue
    }
    // Each object once: where both variants have it, from the etcd pass.
    if (inEtcd !== undefined && inKdd !== undefined && doc === inKdd) continue
    const copy = doc.clone()
    chartImages(copy, image)
    if (inEtcd !== undefined && inKdd !== undefined) {
      if (key === 'ConfigMap/kube-system/pinto-config') {
        const t = configMapTemplate(inEtcd, inKdd)
        parts.push(t.text)
        values = valuesFile(inEtcd, image, t.defaults['datastore'])
        schema = valuesSchema(Object.keys(t.defaults).filter((k) => k !== 'datastore'))
      } else if (same(inEtcd, inKdd)) parts.push(String(copy).trimEnd())
      else fail(`${key} differs between the two variants; the chart knows how to template pinto-config only`)
    } else if (inEtcd !== undefined) parts.push(ifDatastore('etcd', key === 'Secret/kube-system/pinto-etcd-secrets' ? secretTemplate(copy) : String(copy).trimEnd()))
    else parts.push(ifDatastore('kubernetes', String(copy).trimEnd()))
  }
  if (values === '') fail('neither variant has ConfigMap pinto-config')
  return {
    'crds/crds.yaml': `${GENERATED}\n---\n${crds.join('\n---\n')}\n`,
    'templates/pinto.yaml': `${GENERATED}\n---\n${parts.join('\n---\n')}\n`,
    'values.yaml': values,
    'values.schema.json': schema,
  }
}

function writeOrCheck(out, text, check, source) {
  if (check) {
    let current = ''
    try {
      current = readFileSync(out, 'utf8')
    } catch {
      fail(`${out} is missing: run node scripts/render-manifests.js`)
    }
    if (current !== text) fail(`${out} is not what ${source} renders to: run node scripts/render-manifests.js`)
  } else {
    mkdirSync(dirname(out), { recursive: true })
    writeFileSync(out, text)
    process.stdout.write(`wrote ${out}\n`)
  }
}

const isMain = process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]
if (isMain) {
  const args = process.argv.slice(2)
  const check = args.includes('--check')
  const dirAt = args.indexOf('--dir')
  const chartAt = args.indexOf('--chart')
  const root = join(dirname(fileURLToPath(import.meta.url)), '..')
  const base = dirAt >= 0 ? args[dirAt + 1] : join(root, 'deploy', 'kubernetes')
  if (base === undefined) fail('--dir needs a directory')
  const chart = chartAt >= 0 ? args[chartAt + 1] : dirAt >= 0 ? undefined : join(root, 'deploy', 'helm', 'pinto')
  for (const variant of VARIANTS) {
    const dir = join(base, variant)
    writeOrCheck(join(dir, 'pinto.yaml'), render(dir), check, 'kustomization.yaml')
  }
  if (chart !== undefined) for (const [path, text] of Object.entries(renderChart(base))) writeOrCheck(join(chart, path), text, check, 'deploy/kubernetes')
}
