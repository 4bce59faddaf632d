// `pintoctl apply|get|delete`: projectcalico.org/v3 resources in the datastore named by PINTO_DATASTORE
// (like the agent), with calicoctl's wording. Parsing and validation are config/resources'; this file
// reads files, checks new pools against stored ones, writes with compare-and-swap and formats output.

import { readFileSync } from 'node:fs'
import { stringify } from 'yaml'
import { DatastoreError, type Datastore, openDatastoreFromEnv, API_VERSION, checkPoolOverlap, decodeResource, encodeResource, keyOf, resolveKind, resourceKey, resourceKindPrefix, tryParseResources, RESOURCE_KINDS, type IPPool, type Resource, type ResourceKind } from '../../config/index.js'
import { parseFlags } from './ipam.js'
import { RESOURCES_USAGE as USAGE } from './usage.js'
import { readStdinSync } from '../../cni/index.js'


class UsageError extends Error {}

function readInput(file: string): { text: string; source: string } {
  return file === '-' ? { text: readStdinSync(), source: '<stdin>' } : { text: readFileSync(file, 'utf8'), source: file }
}

/** Parses and validates a file; every fault is printed (path and line), and nothing is written. */
function parseFile(file: string): Resource[] {
  const { text, source } = readInput(file)
  const { resources, errors } = tryParseResources(text, source)
  if (errors.length > 0) throw new Error(`${errors.length === 1 ? 'invalid resource' : `${errors.length} problems`}, nothing applied:\n${errors.map((e) => `  ${e.message}`).join('\n')}`)
  if (resources.length === 0) throw new Error(`${source}: no resources found`)
  return resources
}

/** `Successfully applied 2 'IPPool' resource(s)` for one kind; without the kind for a mix. */
function summary(verb: string, resources: readonly Resource[]): string {
  const kinds = new Set(resources.map((r) => r.kind))
  return `Successfully ${verb} ${resources.length} ${kinds.size === 1 ? `'${resources[0]!.kind}' ` : ''}resource(s)\n`
}

async function storedPools(store: Datastore): Promise<IPPool[]> {
  const { items } = await store.list(resourceKindPrefix('IPPool'))
  return items.map((kv) => decodeResource(kv.value, kv.key, 'IPPool'))
}

async function apply(store: Datastore, resources: readonly Resource[]): Promise<void> {
  // Pools in the file were checked against each other by the parser; here, against the stored ones.
  const existing = await storedPools(store)
  const overlaps = resources.flatMap((r, i) => (r.kind === 'IPPool' ? checkPoolOverlap(r, existing).map((e) => `  documents[${i}].${e.path}: ${e.reason}`) : []))
  if (overlaps.length > 0) throw new Error(`IPPool overlaps a stored pool, nothing applied:\n${overlaps.join('\n')}`)
  for (const r of resources) {
    const key = keyOf(r)
    // Create, or replace what is there with a compare-and-swap so a concurrent change is not lost silently.
    for (let attempt = 0; ; attempt++) {
      const current = await store.get(key)
      try {
        if (current === undefined) await store.create(key, encodeResource(r))
        else await store.update(key, encodeResource(r), current.revision)
        break
      } catch (err) {
        if (!(err instanceof DatastoreError) || (err.code !== 'conflict' && err.code !== 'exists' && err.code !== 'not-found') || attempt >= 3) throw err
      }
    }
  }
}

function kindArg(text: string | undefined): ResourceKind {
  if (text === undefined) throw new UsageError('a KIND is needed')
  const kind = resolveKind(text)
  if (kind === undefined) throw new UsageError(`unknown resource kind ${JSON.stringify(text)}; kinds: ${RESOURCE_KINDS.join(', ')}`)
  return kind
}

/** Columns of the default and wide listings, calicoctl-style (plain, aligned, upper-case headings). */
function columns(r: Resource, wide: boolean): [string, string][] {
  const name: [string, string] = ['NAME', r.metadata.name]
  const s = (v: string | number | boolean | undefined): string => (v === undefined ? '' : String(v))
  switch (r.kind) {
    case 'IPPool':
      return [name, ['CIDR', r.spec.cidr], ['SELECTOR', s(r.spec.nodeSelector ?? 'all()')], ...(wide ? ([['BLOCKSIZE', s(r.spec.blockSize)], ['NAT', s(r.spec.natOutgoing ?? false)], ['IPIPMODE', s(r.spec.ipipMode ?? 'Never')], ['VXLANMODE', s(r.spec.vxlanMode ?? 'Never')], ['DISABLED', s(r.spec.disabled ?? false)]] as [string, string][]) : [])]
    case 'BGPPeer':
      return [name, ['PEERIP', s(r.spec.peerIP)], ['NODE', s(r.spec.node ?? r.spec.nodeSelector ?? '(global)')], ['ASN', s(r.spec.asNumber)], ...(wide ? ([['PEERSELECTOR', s(r.spec.peerSelector)], ['FILTERS', s(r.spec.filters?.join(','))]] as [string, string][]) : [])]
    case 'Node':
      return [name, ...(wide ? ([['ASN', s(r.spec.bgp?.asNumber ?? '(64512)')], ['IPV4', s(r.spec.bgp?.ipv4Address)], ['IPV6', s(r.spec.bgp?.ipv6Address)]] as [string, string][]) : [])]
    case 'BGPConfiguration':
      return [name, ['LOGSEVERITY', s(r.spec.logSeverityScreen)], ['MESHENABLED', s(r.spec.nodeToNodeMeshEnabled)], ['ASNUMBER', s(r.spec.asNumber)]]
    case 'IPAMConfig':
      return [name, ['STRICTAFFINITY', s(r.spec.strictAffinity)], ['MAXBLOCKSPERHOST', s(r.spec.maxBlocksPerHost)]]
    case 'BGPFilter':
      return [name]
  }
}

export function listing(resources: readonly Resource[], wide: boolean, kind: ResourceKind): string {
  if (resources.length === 0) {
    // The headings of an empty listing, from a resource of the kind with nothing set.
    const heads = columns({ apiVersion: API_VERSION, kind, metadata: { name: '' }, spec: {} } as unknown as Resource, wide).map(([h]) => h)
    return `${heads.join('   ')}\nno resources of kind ${kind}\n`
  }
  const table = resources.map((r) => columns(r, wide))
  const heads = table[0]!.map(([h]) => h)
  const widths = heads.map((h, i) => Math.max(h.length, ...table.map((row) => row[i]?.[1].length ?? 0)))
  const line = (cells: readonly string[]): string => cells.map((c, i) => c.padEnd(widths[i]!)).join('   ').trimEnd() + '\n'
  return line(heads) + table.map((row) => line(row.map(([, v]) => v))).join('')
}

async function get(store: Datastore, args: readonly string[], o: string | undefined): Promise<void> {
  const kind = kindArg(args[0])
  const name = args[1]
  let found: Resource[]
  if (name !== undefined) {
    const kv = await store.get(resourceKey(kind, name))
    if (kv === undefined) throw new Error(`resource does not exist: ${kind}(${name})`)
    found = [decodeResource(kv.value, kv.key, kind)]
  } else {
    const { items } = await store.list(resourceKindPrefix(kind))
    found = items.map((kv) => decodeResource(kv.value, kv.key, kind)).sort((a, b) => a.metadata.name.localeCompare(b.metadata.name))
  }
  // One named resource prints as itself; a listing as calicoctl's `kind: List`.
  const doc = name !== undefined ? found[0] : { apiVersion: API_VERSION, kind: 'List', items: found }
  if (o === 'yaml') process.stdout.write(stringify(doc))
  else if (o === 'json') process.stdout.write(JSON.stringify(doc, null, 2) + '\n')
  else process.stdout.write(listing(found, o === 'wide', kind))
}

async function remove(store: Datastore, targets: readonly { kind: ResourceKind; name: string }[]): Promise<void> {
  const missing: string[] = []
  for (const { kind, name } of targets) {
    try {
      await store.delete(resourceKey(kind, name))
    } catch (err) {
      if (err instanceof DatastoreError && err.code === 'not-found') missing.push(`resource does not exist: ${kind}(${name})`)
      else throw err
    }
  }
  if (missing.length > 0) throw new Error(missing.join('\n'))
}

async function run(verb: 'apply' | 'get' | 'delete', args: readonly string[]): Promise<number> {
  const { flags, rest } = parseFlags(args, ['-f', '--filename', '-o', '--output'])
  const file = flags.get('-f') ?? flags.get('--filename')
  const o = flags.get('-o') ?? flags.get('--output')
  if (o !== undefined && (verb !== 'get' || !['yaml', 'json', 'wide'].includes(o))) throw new UsageError(`-o ${o}: ${verb === 'get' ? 'expected yaml, json or wide' : `${verb} takes no -o`}`)
  // Validate files before opening the store: a typo never needs the datastore to be reachable.
  const fromFile = file !== undefined ? parseFile(file) : undefined
  if (verb === 'apply' && fromFile === undefined) throw new UsageError('apply needs -f FILE (or -f - for standard input)')
  if (verb === 'delete' && fromFile === undefined && rest.length !== 2) throw new UsageError('delete needs KIND NAME, or -f FILE')
  // Only apply may start a new embedded store; get and delete need one that exists and make none.
  const store = await openDatastoreFromEnv(process.env, { embedded: { create: verb === 'apply' } })
  try {
    if (verb === 'get') await get(store, rest, o)
    else if (verb === 'apply') {
      await apply(store, fromFile!)
      process.stdout.write(summary('applied', fromFile!))
    } else {
      const kind = fromFile === undefined ? kindArg(rest[0]) : undefined
      const targets = fromFile?.map((r) => ({ kind: r.kind, name: r.metadata.name })) ?? [{ kind: kind!, name: rest[1]! }]
      await remove(store, targets)
      process.stdout.write(`Successfully deleted ${targets.length} ${new Set(targets.map((x) => x.kind)).size === 1 ? `'${targets[0]!.kind}' ` : ''}resource(s)\n`)
    }
    return 0
  } finally {
    await store.close()
  }
}

function command(verb: 'apply' | 'get' | 'delete') {
  return async (args: readonly string[]): Promise<number> => {
    if (args[0] === '-h' || args[0] === '--help') {
      process.stdout.write(USAGE)
      return 0
    }
    try {
      return await run(verb, args)
    } catch (err) {
      process.stderr.write(`pintoctl ${verb}: ${(err as Error).message}\n`)
      if (err instanceof UsageError) process.stderr.write(USAGE)
      return err instanceof UsageError ? 2 : 1
    }
  }
}

export const applyCommand = command('apply')
export const getCommand = command('get')
export const deleteCommand = command('delete')
