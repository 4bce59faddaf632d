// Checks Kubernetes objects offline against the API schema of Kubernetes 1.36 (the `kubernetes-models`
// package: its OpenAPI schemas compiled into validators, and its TypeScript interfaces), the way an API
// server with strict field validation would: wrong types, missing required fields and values outside an
// enum are refused by the schema; fields the schema does not have are refused by walking each object
// beside its interface. It owns no I/O beyond loading those packages; the manifests are given as text.
import ts from 'typescript'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { KubeObject } from '../../agent/demo/kube-manifest.js'
import { validate as validateConfigMap } from 'kubernetes-models/_schemas/IoK8sApiCoreV1ConfigMap'
import { validate as validateSecret } from 'kubernetes-models/_schemas/IoK8sApiCoreV1Secret'
import { validate as validateServiceAccount } from 'kubernetes-models/_schemas/IoK8sApiCoreV1ServiceAccount'
import { validate as validatePod } from 'kubernetes-models/_schemas/IoK8sApiCoreV1Pod'
import { validate as validateDaemonSet } from 'kubernetes-models/_schemas/IoK8sApiAppsV1DaemonSet'
import { validate as validateClusterRole } from 'kubernetes-models/_schemas/IoK8sApiRbacV1ClusterRole'
import { validate as validateClusterRoleBinding } from 'kubernetes-models/_schemas/IoK8sApiRbacV1ClusterRoleBinding'

export interface SchemaProblem {
  /** Where, as Kubernetes names a field: `spec.template.spec.containers[0].image`. */
  readonly path: string
  readonly message: string
}

export { parseManifest, type KubeObject } from '../../agent/demo/kube-manifest.js'

interface SchemaError {
  readonly instancePath: string
  readonly keyword: string
  readonly params: Record<string, unknown>
}
type CompiledValidator = ((data: unknown) => boolean) & { errors?: SchemaError[] | null }

/** Each kind the checks know: its compiled schema and the interface that lists its fields. */
const KINDS: Record<string, { readonly schema: CompiledValidator; readonly module: string; readonly iface: string }> = {
  'v1/ConfigMap': { schema: validateConfigMap, module: 'kubernetes-models/v1/ConfigMap', iface: 'IConfigMap' },
  'v1/Secret': { schema: validateSecret, module: 'kubernetes-models/v1/Secret', iface: 'ISecret' },
  'v1/ServiceAccount': { schema: validateServiceAccount, module: 'kubernetes-models/v1/ServiceAccount', iface: 'IServiceAccount' },
  'v1/Pod': { schema: validatePod, module: 'kubernetes-models/v1/Pod', iface: 'IPod' },
  'apps/v1/DaemonSet': { schema: validateDaemonSet, module: 'kubernetes-models/apps/v1/DaemonSet', iface: 'IDaemonSet' },
  'rbac.authorization.k8s.io/v1/ClusterRole': { schema: validateClusterRole, module: 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole', iface: 'IClusterRole' },
  'rbac.authorization.k8s.io/v1/ClusterRoleBinding': { schema: validateClusterRoleBinding, module: 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding', iface: 'IClusterRoleBinding' },
}

function kindKey(obj: KubeObject): string {
  return `${String(obj.apiVersion)}/${String(obj.kind)}`
}

/** Every problem the API server would refuse this object for, on the checks above; [] when valid. */
export function validateObject(obj: KubeObject): SchemaProblem[] {
  const kind = KINDS[kindKey(obj)]
  if (!kind) return [{ path: 'kind', message: `${kindKey(obj)} is not a kind these checks know (${Object.keys(KINDS).join(', ')})` }]
  const problems: SchemaProblem[] = []
  if (!kind.schema(obj)) for (const e of kind.schema.errors ?? []) problems.push(schemaProblem(e))
  walk(obj, interfaceType(kindKey(obj)), '', problems)
  return problems
}

function fieldPath(instancePath: string): string {
  let path = ''
  for (const part of instancePath.split('/').slice(1)) {
    const name = part.replace(/~1/g, '/').replace(/~0/g, '~')
    path += /^\d+$/.test(name) ? `[${name}]` : path === '' ? name : `.${name}`
  }
  return path
}

function schemaProblem(e: SchemaError): SchemaProblem {
  const path = fieldPath(e.instancePath)
  const p = e.params
  switch (e.keyword) {
    case 'required':
      return { path: path === '' ? String(p.missingProperty) : `${path}.${String(p.missingProperty)}`, message: 'Required value' }
    case 'type':
      return { path, message: `must be of type ${String(p.type)}` }
    case 'enum':
      return { path, message: `Unsupported value: must be one of ${(p.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}` }
    case 'format':
      return { path, message: `must be a valid ${String(p.format)}` }
    default:
      return { path, message: `${e.keyword} ${JSON.stringify(p)}` }
  }
}

// ---- unknown fields, from the package's interfaces --------------------------------------------------

let checker: ts.TypeChecker | undefined
const rootTypes = new Map<string, ts.Type>()

/** One program over a file that names each kind's interface; built once, on first use, since building it is slow. */
function interfaceType(key: string): ts.Type {
  const known = rootTypes.get(key)
  if (known) return known
  const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..')
  const file = join(root, '__kube_schema_kinds__.ts')
  const entries = Object.entries(KINDS)
  const source = [
    ...entries.map(([, k], i) => `import type { ${k.iface} as K${i} } from '${k.module}'`),
    `export interface Kinds {`,
    ...entries.map(([name], i) => `  ${JSON.stringify(name)}: K${i}`),
    `}`,
  ].join('\n')
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: [],
    lib: ['lib.es2022.d.ts'],
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022,
  }
  const host = ts.createCompilerHost(options)
  const getSourceFile = host.getSourceFile.bind(host)
  const fileExists = host.fileExists.bind(host)
  host.getSourceFile = (name, lang, ...rest) => (name === file ? ts.createSourceFile(name, source, lang) : getSourceFile(name, lang, ...rest))
  host.fileExists = (name) => name === file || fileExists(name)
  const program = ts.createProgram([file], options, host)
  const errors = ts.getPreEmitDiagnostics(program)
  if (errors.length > 0) throw new Error(`loading kubernetes-models' interfaces: ${ts.flattenDiagnosticMessageText(errors[0]!.messageText, '\n')}`)
  checker = program.getTypeChecker()
  const kinds = program.getSourceFile(file)!.statements.find(ts.isInterfaceDeclaration)!
  const kindsType = checker.getTypeAtLocation(kinds)
  for (const [name] of entries) rootTypes.set(name, checker.getTypeOfSymbol(kindsType.getProperty(name)!))
  return rootTypes.get(key)!
}

/** The member of a union that can describe `value` (an object or an array); undefined for primitives. */
function shapeFor(type: ts.Type, value: object): ts.Type | undefined {
  const c = checker!
  const members = type.isUnion() ? type.types : [type]
  for (const m of members) {
    if (m.flags & (ts.TypeFlags.Any | ts.TypeFlags.Unknown)) return undefined
    if (!(m.flags & ts.TypeFlags.Object)) continue
    const isArray = c.getIndexTypeOfType(m, ts.IndexKind.Number) !== undefined && m.getProperty('length') !== undefined
    if (isArray === Array.isArray(value)) return m
  }
  return undefined
}

function walk(value: unknown, type: ts.Type, path: string, problems: SchemaProblem[]): void {
  if (value === null || typeof value !== 'object') return
  const shape = shapeFor(type, value)
  if (!shape) return
  const c = checker!
  if (Array.isArray(value)) {
    const element = c.getIndexTypeOfType(shape, ts.IndexKind.Number)!
    value.forEach((v, i) => walk(v, element, `${path}[${i}]`, problems))
    return
  }
  const index = c.getIndexTypeOfType(shape, ts.IndexKind.String)
  for (const [key, v] of Object.entries(value)) {
    const at = path === '' ? key : `${path}.${key}`
    const prop = shape.getProperty(key)
    if (prop) walk(v, c.getTypeOfSymbol(prop), at, problems)
    else if (index) walk(v, index, at, problems)
    else problems.push({ path: at, message: `unknown field "${at}"` })
  }
}
