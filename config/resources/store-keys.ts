// Where resources live in the datastore and how they are (de)serialized, shared by pintoctl, the
// agent and the IPAM: `/pinto/resources/<plural>/<name>`, values are the resource as written, in JSON.
// Decoding re-validates, so a hand-edited or older value fails loudly with the key in the message.

import { Problems, ResourceError, ResourceErrors, formatPath } from './errors.js'
import { readDocument } from './parse.js'
import { RESOURCE_KINDS, type Resource, type ResourceKind, type ResourceOfKind } from './types.js'

export const RESOURCE_KEY_PREFIX = '/pinto/resources/'

const PLURALS: Readonly<Record<ResourceKind, string>> = {
  BGPConfiguration: 'bgpconfigurations',
  BGPPeer: 'bgppeers',
  BGPFilter: 'bgpfilters',
  Node: 'nodes',
  IPPool: 'ippools',
  IPAMConfig: 'ipamconfigs',
}

/** `resourceKey('IPPool', 'default-ipv4-ippool')` -> `/pinto/resources/ippools/default-ipv4-ippool`. */
export function resourceKey(kind: ResourceKind, name: string): string {
  // Names are DNS subdomains (validated on parse), so they never contain '/'.
  if (name === '' || name.includes('/')) throw new Error(`invalid resource name ${JSON.stringify(name)} for a datastore key`)
  return `${resourceKindPrefix(kind)}${name}`
}

/** The prefix to list or watch every resource of one kind, ending in '/'. */
export function resourceKindPrefix(kind: ResourceKind): string {
  return `${RESOURCE_KEY_PREFIX}${PLURALS[kind]}/`
}

/** The inverse of resourceKey; undefined for keys outside the scheme. */
export function parseResourceKey(key: string): { kind: ResourceKind; name: string } | undefined {
  if (!key.startsWith(RESOURCE_KEY_PREFIX)) return undefined
  const [plural, name, ...rest] = key.slice(RESOURCE_KEY_PREFIX.length).split('/')
  const kind = RESOURCE_KINDS.find((k) => PLURALS[k] === plural)
  if (kind === undefined || name === undefined || name === '' || rest.length > 0) return undefined
  return { kind, name }
}

export function keyOf(resource: Resource): string {
  return resourceKey(resource.kind, resource.metadata.name)
}

/** The stored form: the resource as written (no defaults), as JSON. */
export function encodeResource(resource: Resource): string {
  return JSON.stringify(resource)
}

/**
 * Parses and re-validates a stored value. With `key`, also checks that kind and name match it;
 * with `kind`, narrows the type. Throws ResourceErrors whose source is the key.
 */
export function decodeResource<K extends ResourceKind = ResourceKind>(value: string, key?: string, kind?: K): ResourceOfKind<K> {
  const fail = (path: string, reason: string): never => {
    throw new ResourceErrors([new ResourceError(path, reason, undefined, key)])
  }
  let raw: unknown
  try {
    raw = JSON.parse(value)
  } catch (e) {
    return fail('value', `not JSON: ${(e as Error).message}`)
  }
  const problems = new Problems()
  const found = readDocument(raw, [], problems)
  if (problems.count > 0) {
    throw new ResourceErrors(problems.list.map((p) => new ResourceError(formatPath(p.path) || 'value', p.reason, undefined, key)))
  }
  const resource = found[0]?.resource
  if (found.length !== 1 || resource === undefined) return fail('value', 'expected exactly one resource')
  const expected = key !== undefined ? parseResourceKey(key) : undefined
  if (key !== undefined && expected === undefined) return fail('key', `${JSON.stringify(key)} is not a resource key`)
  if (expected !== undefined && (expected.kind !== resource.kind || expected.name !== resource.metadata.name)) {
    return fail('kind', `value is ${resource.kind}/${resource.metadata.name} but the key names ${expected.kind}/${expected.name}`)
  }
  if (kind !== undefined && resource.kind !== kind) return fail('kind', `expected ${kind}, got ${resource.kind}`)
  return resource as ResourceOfKind<K>
}

const CLI_ALIASES: Readonly<Record<string, ResourceKind>> = {
  bgpconfig: 'BGPConfiguration',
  bgpconfigs: 'BGPConfiguration',
  bgppeer: 'BGPPeer',
  bgpfilter: 'BGPFilter',
  pool: 'IPPool',
  pools: 'IPPool',
  ipamconfiguration: 'IPAMConfig',
  ipamconfigurations: 'IPAMConfig',
}

/** The kind a user typed on the command line: `ippool`, `ippools`, `IPPool`, `bgpPeers`, `bgpconfig`... */
export function resolveKind(text: string): ResourceKind | undefined {
  const t = text.toLowerCase()
  return RESOURCE_KINDS.find((k) => k.toLowerCase() === t || PLURALS[k] === t) ?? CLI_ALIASES[t]
}
