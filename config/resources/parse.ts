// Turns operator text (YAML or JSON; one or many documents; `List`/`<Kind>List` with items) into
// validated resources as written, collecting every fault of the whole set with its path and line.
// No I/O: callers read files or store values and pass the text in; defaults are not applied here.

import { LineCounter, parseAllDocuments, type Document } from 'yaml'
import { Problems, ResourceError, ResourceErrors, formatPath, type PathSegment } from './errors.js'
import { cidrsOverlap, parseIfAddr, type Cidr } from '../../net/index.js'
import { isPlainObject, readField, suggest } from './schema.js'
import { METADATA, SPEC_SCHEMAS, STATUS_SCHEMAS } from './schema-kinds.js'
import { describeValue, parsedOrUndefined } from './scalars.js'
import { API_VERSION, RESOURCE_KINDS, type IPPool, type Resource, type ResourceKind } from './types.js'
import { validateResource } from './validate.js'

/** Kind spellings accepted on input; Calico's v3 API calls the IPAM singleton IPAMConfiguration. */
const KIND_ALIASES: Readonly<Record<string, ResourceKind>> = {
  ...Object.fromEntries(RESOURCE_KINDS.map((k) => [k, k])),
  IPAMConfiguration: 'IPAMConfig',
}

export interface ParseResult {
  readonly resources: Resource[]
  readonly errors: ResourceError[]
}

/** Parses and validates; throws ResourceErrors listing every fault. */
export function parseResources(text: string, source?: string): Resource[] {
  const { resources, errors } = tryParseResources(text, source)
  if (errors.length > 0) throw new ResourceErrors(errors)
  return resources
}

/** Like parseResources but returns the faults instead of throwing (pintoctl prints them all). */
export function tryParseResources(text: string, source?: string): ParseResult {
  const lineCounter = new LineCounter()
  const docs = parseAllDocuments(text, { lineCounter, prettyErrors: false })
  const list = Array.isArray(docs) ? docs : []
  const problems = new Problems()
  const errors: ResourceError[] = []
  const found: { resource: Resource; path: PathSegment[] }[] = []
  list.forEach((doc, d) => {
    const base: PathSegment[] = ['documents', d]
    if (doc.errors.length > 0) {
      for (const e of doc.errors) {
        const line = lineCounter.linePos(e.pos[0]).line
        errors.push(new ResourceError(formatPath(base), `YAML syntax: ${e.message.split('\n')[0] ?? ''}`, line, source))
      }
      return
    }
    const raw: unknown = doc.toJS({ maxAliasCount: 100 })
    if (raw === null || raw === undefined) return // an empty document, e.g. after a trailing ---
    found.push(...readDocument(raw, base, problems))
  })
  checkSet(found, problems)
  for (const p of problems.list) {
    const d = p.path[1]
    const doc = typeof d === 'number' ? list[d] : undefined
    errors.push(new ResourceError(formatPath(p.path), p.reason, doc !== undefined ? lineOf(doc, p.path.slice(2), lineCounter) : undefined, source))
  }
  // Source order: by document, then by line (the sort is stable, so rule order breaks ties).
  errors.sort((a, b) => documentIndex(a.path) - documentIndex(b.path) || (a.line ?? 1e9) - (b.line ?? 1e9))
  return { resources: errors.length > 0 ? [] : found.map((f) => f.resource), errors }
}

function documentIndex(path: string): number {
  return Number(/^documents\[(\d+)\]/.exec(path)?.[1] ?? 0)
}

/** One parsed document: a resource, or a List of them. */
export function readDocument(raw: unknown, base: PathSegment[], problems: Problems): { resource: Resource; path: PathSegment[] }[] {
  if (!isPlainObject(raw)) {
    problems.add(base, `expected a resource mapping, got ${describeValue(raw)}`)
    return []
  }
  const kind = raw['kind']
  const listOf = typeof kind === 'string' && kind.endsWith('List') ? kind.slice(0, -'List'.length) : undefined
  if (listOf === undefined) {
    const r = readResource(raw, base, problems)
    return r === undefined ? [] : [{ resource: r, path: base }]
  }
  const itemKind = listOf === '' ? undefined : KIND_ALIASES[listOf]
  if (listOf !== '' && itemKind === undefined) {
    problems.add([...base, 'kind'], `unknown kind ${JSON.stringify(kind)} (expected List or <Kind>List of ${RESOURCE_KINDS.join(', ')})`)
    return []
  }
  for (const key of Object.keys(raw)) {
    if (!['apiVersion', 'kind', 'metadata', 'items'].includes(key)) problems.add([...base, key], `unknown field ${JSON.stringify(key)} in a list`)
  }
  // Kubernetes' generic List is apiVersion v1; typed lists carry the group version.
  if (listOf !== '' && raw['apiVersion'] !== API_VERSION) problems.add([...base, 'apiVersion'], `apiVersion must be ${API_VERSION}`)
  const items = raw['items']
  if (!Array.isArray(items)) {
    problems.add([...base, 'items'], `expected a list of resources, got ${describeValue(items)}`)
    return []
  }
  const out: { resource: Resource; path: PathSegment[] }[] = []
  items.forEach((item, i) => {
    const path = [...base, 'items', i]
    if (!isPlainObject(item)) {
      problems.add(path, `expected a resource mapping, got ${describeValue(item)}`)
      return
    }
    // Items of a typed list may leave out apiVersion and kind; they are the list's.
    const filled = itemKind === undefined ? item : { apiVersion: API_VERSION, kind: itemKind, ...item }
    if (itemKind !== undefined && KIND_ALIASES[String(filled['kind'])] !== itemKind) {
      problems.add([...path, 'kind'], `a ${String(kind)} holds only ${itemKind} items, got ${JSON.stringify(filled['kind'])}`)
      return
    }
    const r = readResource(filled, path, problems)
    if (r !== undefined) out.push({ resource: r, path })
  })
  return out
}

/** Checks one resource object; returns it (as written, kind normalized) when it has no faults. */
export function readResource(raw: Record<string, unknown>, base: PathSegment[], problems: Problems): Resource | undefined {
  const before = problems.count
  if (raw['apiVersion'] !== API_VERSION) {
    problems.add([...base, 'apiVersion'], `apiVersion must be ${API_VERSION}, got ${describeValue(raw['apiVersion'])}`)
  }
  const kind = typeof raw['kind'] === 'string' ? KIND_ALIASES[raw['kind']] : undefined
  if (kind === undefined) {
    problems.add([...base, 'kind'], typeof raw['kind'] === 'string' && suggest(raw['kind'], RESOURCE_KINDS).startsWith(' (did')
      ? `unknown kind ${JSON.stringify(raw['kind'])}${suggest(raw['kind'], RESOURCE_KINDS)}`
      : `unknown kind ${describeValue(raw['kind'])} (expected one of ${RESOURCE_KINDS.join(', ')})`)
    return undefined
  }
  const status = STATUS_SCHEMAS[kind]
  for (const key of Object.keys(raw)) {
    if (key === 'status' && status !== undefined) continue
    if (!['apiVersion', 'kind', 'metadata', 'spec'].includes(key)) problems.add([...base, key], `unknown field ${JSON.stringify(key)}`)
  }
  const metadata = readField(raw['metadata'] ?? {}, METADATA, [...base, 'metadata'], problems)
  const beforeSpec = problems.count
  const spec = readField(raw['spec'] ?? {}, SPEC_SCHEMAS[kind], [...base, 'spec'], problems)
  const specClean = problems.count === beforeSpec
  const resource = { apiVersion: API_VERSION, kind, metadata, spec } as Resource
  if (status !== undefined && raw['status'] !== undefined && raw['status'] !== null) {
    const s = readField(raw['status'], status, [...base, 'status'], problems)
    if (resource.kind === 'Node' && s !== undefined) resource.status = s as { podCIDRs?: string[] }
  }
  if (metadata !== undefined && spec !== undefined) {
    const named = { ...resource, metadata: { name: '', ...(metadata as object) } } as Resource
    if (specClean) validateResource(named, base, problems)
    else crossCheckPartial(named, base, problems, faultyFields(problems.list.slice(beforeSpec), base.length + 1))
  }
  return problems.count > before ? undefined : resource
}

/** The top-level spec fields the schema walk found faults in (and so left out of the spec). */
function faultyFields(found: readonly { path: readonly PathSegment[] }[], depth: number): Set<string> {
  return new Set(found.map((p) => p.path[depth]).filter((k): k is string => typeof k === 'string'))
}

/**
 * Cross-field rules on a spec that lost some faulty fields, so that one run reports every problem: a
 * rule's problem is kept only if the rule read none of the faulty fields since the previous problem
 * (a left-out field reads as absent, and a rule comparing it would raise a second, false error).
 */
function crossCheckPartial(r: Resource, base: PathSegment[], problems: Problems, faulty: ReadonlySet<string>): void {
  const read = new Set<string>()
  const spec = new Proxy(r.spec as Record<string, unknown>, {
    get(target, key, receiver) {
      if (typeof key === 'string') read.add(key)
      return Reflect.get(target, key, receiver) as unknown
    },
  })
  const guarded = {
    add(path: readonly PathSegment[], reason: string): void {
      if (![...read].some((k) => faulty.has(k))) problems.add(path, reason)
      read.clear()
    },
  } as Problems
  validateResource({ ...r, spec } as Resource, base, guarded)
}

/** Rules across one document set: a kind/name given twice, and IPPools that overlap each other. */
function checkSet(found: readonly { resource: Resource; path: PathSegment[] }[], problems: Problems): void {
  const seen = new Map<string, PathSegment[]>()
  const pools: { pool: IPPool; cidr: Cidr; path: PathSegment[] }[] = []
  for (const { resource, path } of found) {
    const id = `${resource.kind}/${resource.metadata.name}`
    const first = seen.get(id)
    if (first !== undefined) problems.add([...path, 'metadata', 'name'], `${id} is already defined at ${formatPath(first)}`)
    else seen.set(id, path)
    if (resource.kind !== 'IPPool') continue
    // A pool CIDR with host bits is reported by its own check; its overlaps are still found.
    const mine = parsedOrUndefined(() => parseIfAddr(resource.spec.cidr, 'spec.cidr', { bare: true }).cidr)
    if (mine === undefined) continue
    for (const other of pools) {
      if (cidrsOverlap(mine, other.cidr)) {
        problems.add([...path, 'spec', 'cidr'], `${resource.spec.cidr} overlaps IPPool ${JSON.stringify(other.pool.metadata.name)} (${other.pool.spec.cidr}) at ${formatPath(other.path)}`)
      }
    }
    pools.push({ pool: resource, cidr: mine, path })
  }
}

/** The 1-based line of the deepest node on `path` that exists in the YAML document. */
function lineOf(doc: Document, path: readonly PathSegment[], lineCounter: LineCounter): number | undefined {
  for (let n = path.length; n >= 0; n--) {
    const node: unknown = n === 0 ? doc.contents : doc.getIn(path.slice(0, n), true)
    const range = (node as { range?: [number, number, number] } | undefined)?.range
    if (range !== undefined) return lineCounter.linePos(range[0]).line
  }
  return undefined
}
