// Calico's CNI annotations as the IPAM service honours them: on the pod, or else on its namespace, which pools an
// ADD takes from (cni.projectcalico.org/ipv4pools, ipv6pools) and which families (ipFamilies); on the pod only, the
// fixed addresses it gets (ipAddrs). Pure: parsing, and checking against the pools; the reads of the pod and the
// assignment are the caller's. Every refusal names the annotation, the object it is on and its value.

import { type Family, cidrContains, parseAddr, parseCidr, tryAddr, AddrError, formatAddr } from '../net/index.js'
import { IpamError, type PoolSpec } from '../ipam/index.js'

export const POD_ANNOTATIONS = {
  ipv4Pools: 'cni.projectcalico.org/ipv4pools',
  ipv6Pools: 'cni.projectcalico.org/ipv6pools',
  ipFamilies: 'cni.projectcalico.org/ipFamilies',
  ipAddrs: 'cni.projectcalico.org/ipAddrs',
  ipAddrsNoIpam: 'cni.projectcalico.org/ipAddrsNoIpam',
  /** Written back by the ADD: the pod's first address, all of them, and the container (sandbox) that has them. */
  podIP: 'cni.projectcalico.org/podIP',
  podIPs: 'cni.projectcalico.org/podIPs',
  containerID: 'cni.projectcalico.org/containerID',
} as const

/** An annotation as found: its name, its value and where ("pod ns/name", or "namespace ns (of pod ns/name)"). */
export interface Found {
  readonly name: string
  readonly value: string
  readonly on: string
}

/** What a pod's annotations (over its namespace's) ask of its ADD; nothing set: an ordinary ADD. */
export interface PodIpamAsk {
  /** ipAddrs: exactly these addresses, whatever the network config's assign_ipv4/assign_ipv6 say. */
  readonly fixed?: { readonly found: Found; readonly addresses: readonly { readonly address: string; readonly family: Family }[] }
  /** Per family, the pools named (names or CIDRs), in place of the network config's ipv4_pools / ipv6_pools. */
  readonly pools: { readonly 4?: { readonly found: Found; readonly entries: readonly string[] }; readonly 6?: { readonly found: Found; readonly entries: readonly string[] } }
  /** ipFamilies: the families assigned, in place of assign_ipv4 / assign_ipv6. */
  readonly families?: { readonly found: Found; readonly v4: boolean; readonly v6: boolean }
}

export interface AnnotatedObject {
  /** "pod ns/name" or "namespace ns (of pod ns/name)", as refusals name it. */
  readonly on: string
  readonly annotations: Readonly<Record<string, string>>
}

/** A refusal of an annotation: the ADD's error, answered as a bad network config (CNI code 7). */
export function refuse(f: Found, why: string): IpamError {
  const value = f.value.length > 200 ? `${f.value.slice(0, 200)}...` : f.value
  return new IpamError('invalid', `annotation ${f.name}=${value} on ${f.on}: ${why}`)
}

/** The annotation on the pod, else on its namespace (an empty value counts as unset, as Calico takes it). */
function lookup(name: string, pod: AnnotatedObject, ns: AnnotatedObject | undefined): Found | undefined {
  for (const o of [pod, ns]) {
    const value = o?.annotations[name]
    if (o !== undefined && value !== undefined && value !== '') return { name, value, on: o.on }
  }
  return undefined
}

function stringList(f: Found, what: string): string[] {
  let v: unknown
  try {
    v = JSON.parse(f.value)
  } catch (err) {
    throw refuse(f, `not JSON (${(err as Error).message}); expected a JSON list of ${what}`)
  }
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string' || x === '')) throw refuse(f, `expected a JSON list of ${what}`)
  return v as string[]
}

/**
 * Whether the namespace's annotations can matter: not when the pod asks for fixed addresses, or sets all of
 * ipv4pools, ipv6pools and ipFamilies itself. Saves reading the namespace on most ADDs.
 */
export function namespaceMatters(pod: Readonly<Record<string, string>>): boolean {
  const set = (n: string): boolean => (pod[n] ?? '') !== ''
  if (set(POD_ANNOTATIONS.ipAddrs) || set(POD_ANNOTATIONS.ipAddrsNoIpam)) return false
  return !(set(POD_ANNOTATIONS.ipv4Pools) && set(POD_ANNOTATIONS.ipv6Pools) && set(POD_ANNOTATIONS.ipFamilies))
}

/**
 * Reads the annotations an ADD honours, with Calico's precedence: ipv4pools, ipv6pools and ipFamilies each from the
 * pod, else from its namespace; ipAddrs from the pod only, and then the pools are not used. ipAddrsNoIpam (an
 * address with no IPAM record) is refused, as Calico refuses it unless its feature flag is on: pinto has no such flag.
 */
export function readPodIpamAsk(pod: AnnotatedObject, ns: AnnotatedObject | undefined): PodIpamAsk {
  const poolsOf = (name: string): { found: Found; entries: string[] } | undefined => {
    const f = lookup(name, pod, ns)
    return f === undefined ? undefined : { found: f, entries: stringList(f, 'IP pool names or CIDRs') }
  }
  const v4 = poolsOf(POD_ANNOTATIONS.ipv4Pools)
  const v6 = poolsOf(POD_ANNOTATIONS.ipv6Pools)
  const pools = { ...(v4 !== undefined ? { 4: v4 } : {}), ...(v6 !== undefined ? { 6: v6 } : {}) }
  const fam = lookup(POD_ANNOTATIONS.ipFamilies, pod, ns)
  let families: PodIpamAsk['families']
  if (fam !== undefined) {
    const list = stringList(fam, 'IP families ("IPv4", "IPv6")')
    const bad = list.find((x) => x !== 'IPv4' && x !== 'IPv6')
    if (bad !== undefined) throw refuse(fam, `${JSON.stringify(bad)} is not an IP family; expected "IPv4" or "IPv6"`)
    families = { found: fam, v4: list.includes('IPv4'), v6: list.includes('IPv6') }
  }
  const own = (name: string): Found | undefined => lookup(name, pod, undefined)
  const addrs = own(POD_ANNOTATIONS.ipAddrs)
  const noIpam = own(POD_ANNOTATIONS.ipAddrsNoIpam)
  if (addrs !== undefined && noIpam !== undefined) throw refuse(noIpam, `cannot be used together with ${POD_ANNOTATIONS.ipAddrs}`)
  if (noIpam !== undefined) throw refuse(noIpam, 'not supported: every pod address pinto gives is recorded in its IPAM (use cni.projectcalico.org/ipAddrs)')
  if (addrs === undefined) return { pools, ...(families !== undefined ? { families } : {}) }
  const list = stringList(addrs, 'IP addresses')
  if (list.length === 0) throw refuse(addrs, 'is empty; expected one IPv4 and/or one IPv6 address')
  const addresses: { address: string; family: Family }[] = []
  for (const text of list) {
    const a = tryAddr(() => parseAddr(text, 'address'))
    if (a instanceof AddrError) throw refuse(addrs, `${JSON.stringify(text)} is not an IP address`)
    if (addresses.some((x) => x.family === a.family)) throw refuse(addrs, `more than one IPv${a.family} address; a pod interface takes one of each family`)
    addresses.push({ address: formatAddr(a.family, a.value), family: a.family })
  }
  return { pools, fixed: { found: addrs, addresses } }
}

/**
 * The names of the pools an annotation names for `family`, each an existing, enabled pool of that family, named by
 * its name or its CIDR. Refuses, naming the entry, one that is not.
 */
export function resolveAnnotatedPools(a: { readonly found: Found; readonly entries: readonly string[] }, family: Family, pools: readonly PoolSpec[]): string[] {
  return a.entries.map((entry) => {
    const cidr = tryAddr(() => parseCidr(entry, 'pool'))
    const pool = cidr instanceof AddrError
      ? pools.find((p) => p.name === entry)
      : pools.find((p) => {
          const c = tryAddr(() => parseCidr(p.cidr, 'pool'))
          return !(c instanceof AddrError) && c.family === cidr.family && c.base === cidr.base && c.prefix === cidr.prefix
        })
    if (pool === undefined) throw refuse(a.found, cidr instanceof AddrError ? `IP pool ${JSON.stringify(entry)} does not exist` : `no IP pool has CIDR ${entry}`)
    const poolFamily = pool.cidr.includes(':') ? 6 : 4
    if (poolFamily !== family) throw refuse(a.found, `IP pool ${pool.name} (${pool.cidr}) is an IPv${poolFamily} pool, not IPv${family}`)
    if (pool.disabled === true) throw refuse(a.found, `IP pool ${pool.name} (${pool.cidr}) is disabled`)
    return pool.name
  })
}

/** The enabled pool holding each fixed address; refuses, naming it, an address in none. */
export function checkFixedAddresses(fixed: NonNullable<PodIpamAsk['fixed']>, pools: readonly PoolSpec[]): void {
  for (const { address } of fixed.addresses) {
    const { family, value } = parseAddr(address)
    const holding = pools.filter((p) => {
      const c = tryAddr(() => parseCidr(p.cidr, 'pool'))
      return !(c instanceof AddrError) && cidrContains(c, family, value)
    })
    if (holding.length === 0) throw refuse(fixed.found, `${address} is outside every IP pool`)
    if (holding.every((p) => p.disabled === true)) throw refuse(fixed.found, `${address} is in IP pool ${holding.map((p) => p.name).join(', ')}, which is disabled`)
  }
}

/**
 * The per-family pool lists of an ADD whose annotations name pools: the annotation's for its family, else the
 * network config's entries of that family (an entry whose family is unknown, a pool that does not exist, stays in
 * both lists, where the allocator refuses it as before); a family left with no list takes from any pool.
 */
export function familyPools(configured: readonly string[] | undefined, annotated: Partial<Record<Family, readonly string[]>>, pools: readonly PoolSpec[]): { 4?: readonly string[]; 6?: readonly string[] } {
  const familyOf = (entry: string): Family | undefined => {
    const c = tryAddr(() => parseCidr(entry, 'pool'))
    if (!(c instanceof AddrError)) return c.family
    const p = pools.find((x) => x.name === entry)
    return p === undefined ? undefined : p.cidr.includes(':') ? 6 : 4
  }
  const out: { 4?: readonly string[]; 6?: readonly string[] } = {}
  for (const f of [4, 6] as const) {
    const list = annotated[f] ?? (configured ?? []).filter((e) => (familyOf(e) ?? f) === f)
    if (list.length > 0) out[f] = list
  }
  return out
}
