// The network configuration pinto and pinto-ipam accept: parsing stdin, validation with messages naming the
// field, defaults, and the per-attachment facts taken from CNI_ARGS. Pure: the caller hands in the text.

import { CniError, ERR, type CniVersion, checkVersion } from './spec.js'

export const DEFAULT_SOCKET = '/var/run/pinto/pinto.sock'
export const DEFAULT_MTU_FILE = '/var/lib/pinto/mtu'
export const DEFAULT_VETH_PREFIX = 'pinto'

export interface PintoIpamConfig {
  readonly type: string
  readonly socket: string
  readonly assignIpv4: boolean
  readonly assignIpv6: boolean
  readonly ipv4Pools: readonly string[]
  readonly ipv6Pools: readonly string[]
  /** The raw section, handed unchanged to a delegated IPAM plugin. */
  readonly raw: Readonly<Record<string, unknown>>
}

export interface NetConf {
  readonly cniVersion: CniVersion
  readonly name: string
  readonly type: string
  /** 0 means: read the MTU the agent wrote to mtuFile (1500 when there is none). */
  readonly mtu: number
  readonly mtuFile: string
  readonly socket: string
  readonly vethPrefix: string
  readonly nodename: string | undefined
  readonly ipam: PintoIpamConfig | undefined
  readonly runtimeConfig: Readonly<Record<string, unknown>>
  readonly prevResult: unknown
  /** The whole document as received, for delegation. */
  readonly raw: Readonly<Record<string, unknown>>
}

/** Keys the spec or libcni may put in any plugin's config; anything else pinto does not know is refused. */
const COMMON_KEYS = ['cniVersion', 'cniVersions', 'name', 'type', 'args', 'ipMasq', 'dns', 'capabilities', 'runtimeConfig', 'prevResult', 'ipam', 'disableCheck', 'disableGC', 'cni.dev/valid-attachments', 'cni.dev/attachments']
const PINTO_KEYS = ['mtu', 'mtu_file', 'socket', 'veth_prefix', 'nodename', 'log_level']
const IPAM_KEYS = ['type', 'socket', 'assign_ipv4', 'assign_ipv6', 'ipv4_pools', 'ipv6_pools', 'nodename']

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
const bad = (field: string, why: string): CniError => new CniError(ERR.invalidConfig, `${field}: ${why}`)

export function decodeJson(text: string): Record<string, unknown> {
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch (e) {
    throw new CniError(ERR.decode, `network config on stdin is not JSON: ${(e as Error).message}`)
  }
  if (!isObject(raw)) throw new CniError(ERR.decode, 'network config on stdin: expected a JSON object')
  return raw
}

function optString(raw: Record<string, unknown>, key: string, field: string, fallback: string): string {
  const v = raw[key]
  if (v === undefined || v === null) return fallback
  if (typeof v !== 'string' || v === '') throw bad(field, `expected a non-empty string, got ${JSON.stringify(v)}`)
  return v
}

function optBool(raw: Record<string, unknown>, key: string, field: string, fallback: boolean): boolean {
  const v = raw[key]
  if (v === undefined) return fallback
  // Calico writes these as "true"/"false" strings; accept both spellings.
  if (v === true || v === 'true') return true
  if (v === false || v === 'false') return false
  throw bad(field, `expected true or false, got ${JSON.stringify(v)}`)
}

function stringList(raw: Record<string, unknown>, key: string, field: string): string[] {
  const v = raw[key]
  if (v === undefined) return []
  if (!Array.isArray(v) || v.some((p) => typeof p !== 'string' || p === '')) throw bad(field, 'expected a list of pool names or CIDRs')
  return v as string[]
}

function refuseUnknown(raw: Record<string, unknown>, known: readonly string[], at: string): void {
  for (const key of Object.keys(raw)) {
    if (!known.includes(key)) throw new CniError(ERR.unsupportedField, `${at}${key}: field not supported by pinto`)
  }
}

/** The pinto-ipam section (also what pinto itself uses when its ipam type is pinto-ipam). */
export function parseIpamSection(raw: unknown, field = 'ipam'): PintoIpamConfig {
  if (!isObject(raw)) throw bad(field, 'expected an object')
  const type = optString(raw, 'type', `${field}.type`, '')
  if (type === '') throw bad(`${field}.type`, 'is missing')
  if (type !== 'pinto-ipam') {
    return { type, socket: DEFAULT_SOCKET, assignIpv4: true, assignIpv6: false, ipv4Pools: [], ipv6Pools: [], raw }
  }
  refuseUnknown(raw, IPAM_KEYS, `${field}.`)
  const assignIpv4 = optBool(raw, 'assign_ipv4', `${field}.assign_ipv4`, true)
  const assignIpv6 = optBool(raw, 'assign_ipv6', `${field}.assign_ipv6`, false)
  if (!assignIpv4 && !assignIpv6) throw bad(`${field}.assign_ipv4`, 'assign_ipv4 and assign_ipv6 are both false: nothing to assign')
  return {
    type,
    socket: optString(raw, 'socket', `${field}.socket`, DEFAULT_SOCKET),
    assignIpv4,
    assignIpv6,
    ipv4Pools: stringList(raw, 'ipv4_pools', `${field}.ipv4_pools`),
    ipv6Pools: stringList(raw, 'ipv6_pools', `${field}.ipv6_pools`),
    raw,
  }
}

/** Validates the fields every plugin config has, for `pinto` (main) or `pinto-ipam` (IPAM only). */
export function parseNetConf(raw: Record<string, unknown>, role: 'main' | 'ipam'): NetConf {
  const cniVersion = checkVersion(raw['cniVersion'])
  const name = optString(raw, 'name', 'name', '')
  if (name === '') throw bad('name', 'is missing')
  if (!/^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(name)) throw bad('name', `${JSON.stringify(name)} may hold only letters, digits, '_', '.', '-'`)
  const type = optString(raw, 'type', 'type', '')
  if (type === '') throw bad('type', 'is missing')
  const runtimeConfig = raw['runtimeConfig'] ?? {}
  if (!isObject(runtimeConfig)) throw bad('runtimeConfig', 'expected an object')
  if (role === 'ipam') {
    // An IPAM plugin reads only its own section; the main plugin's other fields are none of its business.
    const ipam = parseIpamSection(raw['ipam'])
    return { cniVersion, name, type, mtu: 0, mtuFile: DEFAULT_MTU_FILE, socket: ipam.socket, vethPrefix: DEFAULT_VETH_PREFIX, nodename: undefined, ipam, runtimeConfig, prevResult: raw['prevResult'], raw }
  }
  refuseUnknown(raw, [...COMMON_KEYS, ...PINTO_KEYS], '')
  const mtuRaw = raw['mtu'] ?? 0
  if (typeof mtuRaw !== 'number' || !Number.isInteger(mtuRaw) || (mtuRaw !== 0 && (mtuRaw < 68 || mtuRaw > 65535))) {
    throw bad('mtu', `${JSON.stringify(mtuRaw)} is not 0 (use the agent's MTU) or an integer in 68..65535`)
  }
  const vethPrefix = optString(raw, 'veth_prefix', 'veth_prefix', DEFAULT_VETH_PREFIX)
  if (!/^[A-Za-z][A-Za-z0-9_-]{0,9}$/.test(vethPrefix)) throw bad('veth_prefix', `${JSON.stringify(vethPrefix)} must be 1-10 of [A-Za-z0-9_-] starting with a letter`)
  const ipam = raw['ipam'] === undefined ? undefined : parseIpamSection(raw['ipam'])
  const nodename = raw['nodename'] === undefined ? undefined : optString(raw, 'nodename', 'nodename', '')
  return {
    cniVersion, name, type, mtu: mtuRaw,
    mtuFile: optString(raw, 'mtu_file', 'mtu_file', DEFAULT_MTU_FILE),
    socket: optString(raw, 'socket', 'socket', ipam?.type === 'pinto-ipam' ? ipam.socket : DEFAULT_SOCKET),
    vethPrefix, nodename, ipam, runtimeConfig, prevResult: raw['prevResult'], raw,
  }
}

/** The pod's Kubernetes identity from CNI_ARGS, when the runtime gave one. */
export function podIdentity(args: Readonly<Record<string, string>>): { namespace: string; pod: string } | undefined {
  const namespace = args['K8S_POD_NAMESPACE']
  const pod = args['K8S_POD_NAME']
  return namespace && pod ? { namespace, pod } : undefined
}

/** The interface a pod's first (and usually only) attachment has. */
export const PRIMARY_IFNAME = 'eth0'

/**
 * The IPAM handle of one attachment: network, container and interface. The primary interface keeps
 * Calico's `<network>.<containerID>`; any other gets `:<ifname>` after it (':' is in neither a network
 * name, a container ID nor an interface name), so each interface of a pod holds and frees its own
 * addresses. It is also the attachment's id on its host veth (the ifalias).
 */
export function handleOf(network: string, containerId: string, ifname: string): string {
  return ifname === PRIMARY_IFNAME ? `${network}.${containerId}` : `${network}.${containerId}:${ifname}`
}

/**
 * `cni.dev/valid-attachments` from a GC config: the handles of the attachments still on network `network`.
 * A container's bare `<network>.<containerID>` stays valid while it has any attachment: an earlier pinto
 * used it for whatever interface it wired.
 */
export function validHandles(raw: Record<string, unknown>, network: string): Set<string> {
  const v = raw['cni.dev/valid-attachments'] ?? raw['cni.dev/attachments']
  if (v === undefined) throw bad('cni.dev/valid-attachments', 'is missing (GC needs the list of live attachments)')
  if (!Array.isArray(v)) throw bad('cni.dev/valid-attachments', 'expected a list')
  const out = new Set<string>()
  for (const [i, a] of v.entries()) {
    if (!isObject(a) || typeof a['containerID'] !== 'string') throw bad(`cni.dev/valid-attachments[${i}].containerID`, 'expected a string')
    const ifname = a['ifname'] ?? PRIMARY_IFNAME
    if (typeof ifname !== 'string') throw bad(`cni.dev/valid-attachments[${i}].ifname`, 'expected a string')
    out.add(handleOf(network, a['containerID'], ifname))
    out.add(handleOf(network, a['containerID'], PRIMARY_IFNAME))
  }
  return out
}
