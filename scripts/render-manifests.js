#!/usr/bin/env node
// Renders deploy/kubernetes/kustomization.yaml into deploy/kubernetes/pinto.yaml, and kdd/kustomization.yaml
// into kdd/pinto.yaml: the one file for `kubectl apply -f`. Knows Kustomize's `resources` (files, and
// directories holding a kustomization) and `images` (name, newName, newTag), and orders the objects as kustomize
// does; it refuses any other field, so the two ways of applying cannot drift apart. `--check` only compares.
// YAML is read as 1.1, as kubectl reads it (0400 is octal, yes is true); comments are kept.
import { readFileSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { isMap, isSeq, parseAllDocuments, parseDocument } from 'yaml'

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

const isMain = process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]
if (isMain) {
  const args = process.argv.slice(2)
  const check = args.includes('--check')
  const dirAt = args.indexOf('--dir')
  const root = join(dirname(fileURLToPath(import.meta.url)), '..')
  const base = dirAt >= 0 ? args[dirAt + 1] : join(root, 'deploy', 'kubernetes')
  if (base === undefined) fail('--dir needs a directory')
  for (const variant of VARIANTS) {
    const dir = join(base, variant)
    const out = join(dir, 'pinto.yaml')
    const text = render(dir)
    if (check) {
      let current = ''
      try {
        current = readFileSync(out, 'utf8')
      } catch {
        fail(`${out} is missing: run node scripts/render-manifests.js`)
      }
      if (current !== text) fail(`${out} is not what kustomization.yaml renders to: run node scripts/render-manifests.js`)
    } else {
      writeFileSync(out, text)
      process.stdout.write(`wrote ${out}\n`)
    }
  }
}
